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
    : QDialog(parent), m_current(current), m_result(current), m_signature(signature)
{
    setWindowTitle(tr("Model Inputs"));
    setObjectName(QStringLiteral("inputSettingsDialog"));
    auto *layout = new QVBoxLayout(this);
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
    // Sizes the names do not suggest (paddle2onnx's "p2o.DynamicDimension.2") come from where
    // the dim sits: the last two dims of an image input [N, C, H, W] (C given) are its height
    // and width, 224 as the torchvision models take, not 1 (a 1x1 image is no model to study).
    std::map<std::string, int64_t> byPlace;
    for (const ox::DeclaredInput &in : signature.inputs) {
        const auto &d = in.shape.dims;
        if (d.size() == 4 && d[1].isStatic() && d[1].value >= 1 && d[1].value <= 4)
            for (size_t i = 2; i < 4; ++i)
                if (!d[i].isStatic() && !d[i].symbol.empty())
                    byPlace.emplace(d[i].symbol, 224);
    }
    for (const std::string &name : signature.freeDimNames) {
        auto *spin = new QSpinBox(this);
        spin->setObjectName(QStringLiteral("dim:") + qs(name));
        spin->setRange(1, 1 << 30);
        auto it = current.dimValues.find(name);
        int64_t suggested = ox::suggestDimValue(name);
        if (suggested == 1 && byPlace.count(name))
            suggested = byPlace[name];
        spin->setValue(int(it != current.dimValues.end() ? it->second : suggested));
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
                for (size_t i = 0; i < in.shape.dims.size(); ++i) {
                    const core::ir::Dim &d = in.shape.dims[i];
                    dims.push_back(
                        d.isStatic()
                            ? d.value
                            : ox::suggestDimValue(d.symbol.empty() && i == 0 ? "batch" : d.symbol));
                }
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
    m_semantics = new QComboBox(this);
    m_semantics->setObjectName(QStringLiteral("semantics"));
    m_semantics->addItem(tr("Training step (BatchNorm on batch statistics)"));
    m_semantics->addItem(tr("As exported (the file's inference semantics)"));
    m_semantics->setCurrentIndex(current.semantics == ox::Semantics::Training ? 0 : 1);
    form->addRow(tr("Semantics"), m_semantics);
    m_error = new QLabel(this);
    m_error->setObjectName(QStringLiteral("inputSettingsError"));
    m_error->setWordWrap(true);
    m_error->setStyleSheet(QStringLiteral("color: #b00020;"));
    m_error->hide();
    layout->addWidget(m_error);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Import"));
    connect(buttons, &QDialogButtonBox::accepted, this, &InputSettingsDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
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

void InputSettingsDialog::accept()
{
    // Parsed with the command line's own parsers: the dialog accepts exactly what `remat` does,
    // and a typo stays in the dialog with its message instead of becoming an import error.
    ox::ImportOptions s;
    s.batch = m_current.batch;
    s.kindOverrides = m_current.kindOverrides;
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
    if (!st.isOk()) {
        m_error->setText(guiWording(qs(st.message())));
        m_error->show();
        return;
    }
    // A size of 1 where the file leaves one open imports a degenerate model silently: say so
    // once; Import again keeps it.
    if (const QStringList degenerate = degenerateInputs(s);
        !degenerate.isEmpty() && !m_warnedDegenerate) {
        m_warnedDegenerate = true;
        m_error->setText(tr("%1: an open size set to 1 (a 1x1 image, a one-sample clip) gives a "
                            "degenerate model. Give the size the model takes (e.g. 224 for an "
                            "image's height and width), or press Import again to keep 1.")
                             .arg(degenerate.join(QStringLiteral(", "))));
        m_error->show();
        return;
    }
    m_result = std::move(s);
    QDialog::accept();
}

QStringList InputSettingsDialog::degenerateInputs(const ox::ImportOptions &settings) const
{
    QStringList out;
    for (const ox::DeclaredInput &in : m_signature.inputs) {
        if (isScalar(in.shape))
            continue;
        std::vector<int64_t> dims;
        bool openOne = false;
        const auto whole = settings.inputShapes.find(in.name);
        for (size_t i = 0; i < in.shape.dims.size(); ++i) {
            const core::ir::Dim &d = in.shape.dims[i];
            int64_t v = d.isStatic() ? d.value : 0;
            if (whole != settings.inputShapes.end() && i < whole->second.size())
                v = whole->second[i];
            else if (!d.isStatic())
                if (auto it = settings.dimValues.find(d.symbol); it != settings.dimValues.end())
                    v = it->second;
            dims.push_back(v);
            openOne = openOne || (i > 0 && !d.isStatic() && v == 1);
        }
        if (openOne)
            out << QStringLiteral("%1: %2").arg(qs(in.name), qs(ox::formatDims(dims)));
    }
    return out;
}

} // namespace remat::ui
