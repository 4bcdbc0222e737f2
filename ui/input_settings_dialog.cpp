#include "ui/input_settings_dialog.h"

#include "ui/gui_wording.h"

#include "core/onnx/input_spec.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QStringList>
#include <QVBoxLayout>

namespace remat::ui {

namespace ox = core::onnx;

namespace {

QString qs(const std::string &s) { return QString::fromStdString(s); }

bool isScalar(const core::ir::Shape &shape)
{
    for (const core::ir::Dim &d : shape.dims)
        if (!d.isStatic() || d.value != 1)
            return false;
    return true;
}

} // namespace

InputSettingsDialog::InputSettingsDialog(const ox::ModelSignature &signature,
                                         const ox::ImportOptions &current, const QString &problem,
                                         QWidget *parent)
    : QDialog(parent), m_current(current), m_result(current)
{
    setWindowTitle(tr("Model Inputs"));
    setObjectName(QStringLiteral("inputSettingsDialog"));
    auto *layout = new QVBoxLayout(this);
    // The dialog grows when the warning or the error line appears, instead of squashing the
    // fields.
    layout->setSizeConstraint(QLayout::SetMinimumSize);
    auto *intro =
        new QLabel(tr("This model leaves some input sizes open. Give the values to study it at; "
                      "they are remembered for this file and saved in sessions."),
                   this);
    intro->setWordWrap(true);
    layout->addWidget(intro);
    if (!problem.isEmpty()) {
        auto *why = new QLabel(problem, this);
        why->setWordWrap(true);
        why->setTextInteractionFlags(Qt::TextSelectableByMouse);
        why->setStyleSheet(QStringLiteral("color: palette(mid);"));
        layout->addWidget(why);
    }
    auto *form = new QFormLayout;
    layout->addLayout(form);
    for (const std::string &name : signature.freeDimNames) {
        auto *spin = new QSpinBox(this);
        spin->setObjectName(QStringLiteral("dim:") + qs(name));
        spin->setRange(1, 1 << 30);
        auto it = current.dimValues.find(name);
        spin->setValue(
            int(it != current.dimValues.end() ? it->second : ox::suggestNamedDim(signature, name)));
        spin->setToolTip(
            tr("Every input dim named '%1' takes this value (remat --dim %1=N)").arg(qs(name)));
        form->addRow(tr("dim %1").arg(qs(name)), spin);
        m_dims[name] = spin;
    }
    for (const ox::DeclaredInput &in : signature.inputs) {
        bool unnamed = false;
        for (const core::ir::Dim &d : in.shape.dims)
            unnamed = unnamed || (!d.isStatic() && d.symbol.empty());
        if (unnamed || current.inputShapes.count(in.name)) {
            std::vector<int64_t> dims;
            auto it = current.inputShapes.find(in.name);
            if (it != current.inputShapes.end())
                dims = it->second;
            else
                dims = ox::suggestInputShape(signature, in);
            auto *edit = new QLineEdit(qs(ox::formatDims(dims)), this);
            edit->setObjectName(QStringLiteral("shape:") + qs(in.name));
            edit->setToolTip(
                tr("The whole shape of input '%1', as D0xD1x... (file: %2; remat --input-shape)")
                    .arg(qs(in.name), qs(in.shape.toString())));
            form->addRow(tr("shape of %1").arg(qs(in.name)), edit);
            m_shapes[in.name] = edit;
        }
        if (in.dtype != core::ir::DataType::String && isScalar(in.shape)) {
            auto it = current.inputValues.find(in.name);
            auto *edit = new QLineEdit(
                it != current.inputValues.end() ? QString::number(it->second) : QString(), this);
            edit->setObjectName(QStringLiteral("value:") + qs(in.name));
            edit->setPlaceholderText(tr("fed at run time"));
            edit->setToolTip(
                tr("Fix scalar input '%1' to a number: an If that branches on it is decided and "
                   "trained through the taken branch (remat --input-value)")
                    .arg(qs(in.name)));
            form->addRow(tr("value of %1").arg(qs(in.name)), edit);
            m_values[in.name] = edit;
        }
    }
    for (const std::string &node : signature.ifNodes) {
        auto *box = new QComboBox(this);
        box->setObjectName(QStringLiteral("branch:") + qs(node));
        box->addItem(tr("As its condition decides"));
        box->addItem(tr("Then branch"));
        box->addItem(tr("Else branch"));
        auto it = current.branches.find(node);
        box->setCurrentIndex(it == current.branches.end() ? 0 : it->second ? 1 : 2);
        box->setToolTip(tr("If node '%1': when its condition is computed from data, train through "
                           "the branch chosen here (remat --branch %1=then|else)")
                            .arg(qs(node)));
        form->addRow(tr("branch of %1").arg(qs(node)), box);
        m_branches[node] = box;
    }
    m_semantics = new QComboBox(this);
    m_semantics->setObjectName(QStringLiteral("semantics"));
    m_semantics->addItem(tr("Training step (BatchNorm on batch statistics)"));
    m_semantics->addItem(tr("As exported (the file's inference semantics)"));
    m_semantics->setCurrentIndex(current.semantics == ox::Semantics::Training ? 0 : 1);
    form->addRow(tr("Semantics"), m_semantics);
    // A free height, width or length left at 1 imports a degenerate model (every conv sees one
    // pixel, an audio net one sample): said beside the fields as they change, and Import asks
    // once more before using it.
    m_warning = new QLabel(this);
    m_warning->setObjectName(QStringLiteral("inputSettingsWarning"));
    m_warning->setWordWrap(true);
    m_warning->setStyleSheet(QStringLiteral("color: #9a5b00;"));
    layout->addWidget(m_warning);
    for (const auto &[name, spin] : m_dims)
        connect(spin, &QSpinBox::valueChanged, this, &InputSettingsDialog::updateWarning);
    for (const auto &[name, edit] : m_shapes)
        connect(edit, &QLineEdit::textChanged, this, &InputSettingsDialog::updateWarning);
    m_error = new QLabel(this);
    m_error->setObjectName(QStringLiteral("inputSettingsError"));
    m_error->setWordWrap(true);
    m_error->setStyleSheet(QStringLiteral("color: #b00020;"));
    m_error->hide();
    layout->addWidget(m_error);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    m_import = buttons->button(QDialogButtonBox::Ok);
    m_import->setText(tr("Import"));
    connect(buttons, &QDialogButtonBox::accepted, this, &InputSettingsDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
    m_signature = signature;
    updateWarning();
}

QStringList InputSettingsDialog::degenerateInputs() const
{
    QStringList out;
    for (const ox::DeclaredInput &in : m_signature.inputs) {
        std::vector<int64_t> dims;
        if (auto it = m_shapes.find(in.name); it != m_shapes.end()) {
            auto parsed = ox::parseDims(it->second->text().trimmed().toStdString());
            if (!parsed.hasValue() || parsed->size() != in.shape.dims.size())
                continue; // a typo: accept() names it
            dims = *parsed;
        } else {
            bool known = true;
            for (const core::ir::Dim &d : in.shape.dims) {
                auto field = m_dims.find(d.symbol);
                known = known && (d.isStatic() || field != m_dims.end());
                dims.push_back(d.isStatic()            ? d.value
                               : field != m_dims.end() ? field->second->value()
                                                       : 0);
            }
            if (!known)
                continue;
        }
        // The free dims besides the batch (the first free one); a name that says "batch" or
        // "channel" may well be 1.
        QStringList ones;
        for (size_t i = 0; i < in.shape.dims.size(); ++i) {
            const core::ir::Dim &d = in.shape.dims[i];
            if (d.isStatic() || ox::isBatchDim(in, i) || dims[i] != 1)
                continue;
            const int64_t byName = d.symbol.empty() ? 0 : ox::suggestDimValue(d.symbol);
            if (byName == 1 && !d.symbol.empty() &&
                QString::fromStdString(d.symbol).contains(QStringLiteral("batch"),
                                                          Qt::CaseInsensitive))
                continue;
            if (byName == 3) // a channel count named as such
                continue;
            ones << (d.symbol.empty() ? tr("dim %1").arg(i) : qs(d.symbol));
        }
        if (!ones.isEmpty())
            out << tr("%1 would be %2 (%3 left at 1)")
                       .arg(qs(in.name), qs(ox::formatDims(dims)), ones.join(QStringLiteral(", ")));
    }
    return out;
}

void InputSettingsDialog::updateWarning()
{
    const QStringList bad = degenerateInputs();
    m_confirmed = false;
    m_import->setText(tr("Import"));
    m_warning->setVisible(!bad.isEmpty());
    if (!bad.isEmpty())
        m_warning->setText(
            tr("%1. A height, width or length of 1 makes a degenerate model (every "
               "convolution sees one pixel, an audio net one sample): its memory and time say "
               "nothing about the real one. Give the sizes the model is used at.")
                .arg(bad.join(QStringLiteral("; "))));
}

QSpinBox *InputSettingsDialog::dimField(const QString &name) const
{
    auto it = m_dims.find(name.toStdString());
    return it == m_dims.end() ? nullptr : it->second;
}

QLineEdit *InputSettingsDialog::shapeField(const QString &input) const
{
    auto it = m_shapes.find(input.toStdString());
    return it == m_shapes.end() ? nullptr : it->second;
}

QLineEdit *InputSettingsDialog::valueField(const QString &input) const
{
    auto it = m_values.find(input.toStdString());
    return it == m_values.end() ? nullptr : it->second;
}

QComboBox *InputSettingsDialog::branchField(const QString &node) const
{
    auto it = m_branches.find(node.toStdString());
    return it == m_branches.end() ? nullptr : it->second;
}

void InputSettingsDialog::accept()
{
    // Parsed with the command line's own parsers: the dialog accepts exactly what `remat` does,
    // and a typo stays in the dialog with its message instead of becoming an import error.
    ox::ImportOptions s;
    s.batch = m_current.batch;
    s.kindOverrides = m_current.kindOverrides;
    // branches of Ifs the dialog does not list (nested in a taken branch) stay as they were
    for (const auto &[node, then] : m_current.branches)
        if (!m_branches.count(node))
            s.branches[node] = then;
    s.semantics =
        m_semantics->currentIndex() == 0 ? ox::Semantics::Training : ox::Semantics::AsExported;
    core::Status st;
    for (const auto &[name, spin] : m_dims)
        if (st.isOk())
            st = ox::addDimValue(s, name + "=" + std::to_string(spin->value()));
    for (const auto &[name, edit] : m_shapes)
        if (st.isOk())
            st = ox::addInputShape(s, name + "=" + edit->text().trimmed().toStdString());
    for (const auto &[name, edit] : m_values)
        if (st.isOk() && !edit->text().trimmed().isEmpty())
            st = ox::addInputValue(s, name + "=" + edit->text().trimmed().toStdString());
    for (const auto &[node, box] : m_branches)
        if (st.isOk() && box->currentIndex() > 0)
            st = ox::addBranch(s, node + (box->currentIndex() == 1 ? "=then" : "=else"));
    if (!st.isOk()) {
        m_error->setText(guiWording(qs(st.message())));
        m_error->show();
        return;
    }
    if (!m_confirmed && !degenerateInputs().isEmpty()) {
        // Said once more, on the button: the second press imports what was typed.
        m_confirmed = true;
        m_import->setText(tr("Import anyway"));
        m_warning->show();
        return;
    }
    m_result = std::move(s);
    QDialog::accept();
}

} // namespace remat::ui
