#include "ui/planner/training_options_dialog.h"

#include "core/onnx/trainability.h"
#include "core/pipeline/problem.h"
#include "core/training/tensor_parallel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QEvent>
#include <QFormLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QVBoxLayout>

namespace remat::ui {

using namespace core::training;

namespace {

constexpr Optimizer kOptimizers[] = {Optimizer::None, Optimizer::Sgd,   Optimizer::SgdMomentum,
                                     Optimizer::Adam, Optimizer::AdamW, Optimizer::Adafactor};
constexpr Precision kPrecisions[] = {
    Precision::Fp32,     Precision::Bf16Mixed,  Precision::Fp16Mixed, Precision::Bf16True,
    Precision::Fp16True, Precision::Bf16Master, Precision::Fp16Master};
constexpr AutocastDevice kAutocastDevices[] = {AutocastDevice::Cuda, AutocastDevice::Cpu};
constexpr Sharding kShardings[] = {Sharding::None, Sharding::Zero1, Sharding::Zero2,
                                   Sharding::Zero3};

/// Bytes per parameter element of the optimizer state, in the state's dtype size `s`
/// (adafactor's factored state is per matrix shape: not a per-parameter figure).
QString stateText(Optimizer o)
{
    switch (o) {
    case Optimizer::None: return QObject::tr("no optimizer step (the graph as built)");
    case Optimizer::Sgd: return QObject::tr("SGD: no state");
    case Optimizer::SgdMomentum: return QObject::tr("SGD with momentum: one buffer per parameter");
    case Optimizer::Adam:
    case Optimizer::AdamW: return QObject::tr("exp_avg and exp_avg_sq: two buffers per parameter");
    case Optimizer::Adafactor:
        return QObject::tr("Adafactor: a row and a column vector per matrix");
    }
    return {};
}

} // namespace

QString tensorParallelRefusal(const core::pipeline::Problem *problem, const TrainingOptions &o)
{
    if (o.tensorParallel <= 1 || !problem || !problem->training)
        return {};
    // The split reads the forward ops' logical shapes, which no option changes: the step shown
    // (whatever its options) has the heads the new options would split. Copies: only the
    // verdict is kept.
    const TrainingGraph &tg = *problem->training;
    std::vector<Op> ops = tg.ops();
    std::vector<Tensor> tensors = tg.tensors();
    const core::Status s =
        shardTensorParallel(tg, ops, tensors, o.tensorParallel, o.sequenceParallel);
    return s.isOk() ? QString() : QString::fromStdString(s.message());
}

TrainingOptionsForm::TrainingOptionsForm(QWidget *parent) : QWidget(parent)
{
    m_optimizer = new QComboBox(this);
    m_optimizer->setObjectName(QStringLiteral("trainingOptimizer"));
    for (Optimizer o : kOptimizers)
        m_optimizer->addItem(QString::fromLatin1(optimizerName(o)), int(o));
    m_precision = new QComboBox(this);
    m_precision->setObjectName(QStringLiteral("trainingPrecision"));
    for (Precision p : kPrecisions)
        m_precision->addItem(QString::fromLatin1(precisionName(p)), int(p));
    m_autocastDevice = new QComboBox(this);
    m_autocastDevice->setObjectName(QStringLiteral("trainingAutocastDevice"));
    for (AutocastDevice d : kAutocastDevices)
        m_autocastDevice->addItem(QString::fromLatin1(autocastDeviceName(d)), int(d));
    m_shard = new QComboBox(this);
    m_shard->setObjectName(QStringLiteral("trainingShard"));
    for (Sharding s : kShardings)
        m_shard->addItem(QString::fromLatin1(shardingName(s)), int(s));
    m_attention = new QComboBox(this);
    m_attention->setObjectName(QStringLiteral("trainingAttention"));
    for (Attention a : {Attention::Eager, Attention::Sdpa})
        m_attention->addItem(QString::fromLatin1(attentionName(a)), int(a));
    m_attention->setToolTip(
        tr("eager: attention as the file writes it (the S x S scores kept); sdpa: fused as "
           "F.scaled_dot_product_attention runs it (Q, K, V, output and log-sum-exp kept)"));
    m_ranks = new QSpinBox(this);
    m_ranks->setObjectName(QStringLiteral("trainingRanks"));
    m_ranks->setRange(1, 65536);
    m_microBatches = new QSpinBox(this);
    m_microBatches->setObjectName(QStringLiteral("trainingMicroBatches"));
    m_microBatches->setRange(1, 65536);
    m_tensorParallel = new QSpinBox(this);
    m_tensorParallel->setObjectName(QStringLiteral("trainingTensorParallel"));
    m_tensorParallel->setRange(1, 1024);
    m_tensorParallel->setToolTip(
        tr("Megatron-LM tensor parallelism over this many GPUs (1: none): attention heads and "
           "the FFN split column / row parallel; it must divide the heads (K/V heads too)"));
    m_sequenceParallel = new QCheckBox(tr("split along the sequence too"), this);
    m_sequenceParallel->setObjectName(QStringLiteral("trainingSequenceParallel"));
    m_sequenceParallel->setToolTip(
        tr("Megatron-LM sequence parallelism (Korthikanti et al.): layer norms, dropout and "
           "residual adds, replicated under tensor parallelism, split along the sequence; needs "
           "tensor parallel > 1"));
    m_explanation = new QLabel(this);
    m_explanation->setObjectName(QStringLiteral("trainingExplanation"));
    m_explanation->setWordWrap(true);
    m_explanation->setMinimumWidth(360);

    m_optimizer->setToolTip(tr("The optimizer step after the backward; its state is resident all "
                               "step and its update ops are in the timeline"));
    m_precision->setToolTip(
        tr("Named as Lightning names them. bf16-mixed / 16-mixed: PyTorch autocast (float32 "
           "weights; each op in the dtype its device's autocast list gives); bf16-true / "
           "16-true: every floating tensor half; bf16-master / 16-master: half weights and "
           "activations with float32 master weights, gradients and optimizer state"));
    m_autocastDevice->setToolTip(tr("Whose autocast lists bf16-mixed / 16-mixed follow "
                                    "(torch.autocast's device_type); CUDA and CPU differ"));
    m_shard->setToolTip(tr("ZeRO over the ranks: zero1 shards the optimizer state (and master "
                           "weights), zero2 also the gradients, zero3 (FSDP) also the weights"));
    m_microBatches->setToolTip(tr("Gradient accumulation steps per optimizer step: the batch is "
                                  "per micro-batch, the effective batch is their product"));

    auto *form = new QFormLayout;
    form->addRow(tr("&Optimizer"), m_optimizer);
    form->addRow(tr("&Precision"), m_precision);
    form->addRow(tr("&Autocast device"), m_autocastDevice);
    form->addRow(tr("&Sharding"), m_shard);
    form->addRow(tr("&Ranks"), m_ranks);
    form->addRow(tr("&Micro-batches"), m_microBatches);
    form->addRow(tr("&Attention"), m_attention);
    form->addRow(tr("&Tensor parallel"), m_tensorParallel);
    form->addRow(tr("Se&quence parallel"), m_sequenceParallel);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(form);
    layout->addWidget(m_explanation);

    for (QComboBox *c : {m_optimizer, m_precision, m_autocastDevice, m_shard, m_attention})
        connect(c, &QComboBox::currentIndexChanged, this, &TrainingOptionsForm::updateExplanation);
    connect(m_sequenceParallel, &QCheckBox::toggled, this, &TrainingOptionsForm::updateExplanation);
    for (QSpinBox *s : {m_ranks, m_microBatches, m_tensorParallel}) {
        connect(s, &QSpinBox::valueChanged, this, &TrainingOptionsForm::updateExplanation);
        // Another count (arrows, wheel) clears what was rejected before; the box's own revert
        // to the previous value does not.
        connect(s, &QSpinBox::valueChanged, this, [this, s](int v) {
            if (auto it = m_rejected.find(s); it != m_rejected.end() && it->second.second != v)
                m_rejected.erase(it);
        });
        // The focus may sit in the box's line edit (its focus proxy) or the box itself.
        s->installEventFilter(this);
        if (auto *edit = s->findChild<QLineEdit *>())
            edit->installEventFilter(this);
    }
    setOptions({});
}

bool TrainingOptionsForm::eventFilter(QObject *watched, QEvent *event)
{
    // Before the box reverts out-of-range text to its previous value on losing focus (a click
    // on OK), remember what was typed so OK can say so instead of keeping the old value.
    // Return does the same (then reaches the dialog's OK). Typing starts over.
    for (QSpinBox *s : {m_ranks, m_microBatches, m_tensorParallel}) {
        if (watched != s && watched != s->findChild<QLineEdit *>())
            continue;
        bool leaving = event->type() == QEvent::FocusOut;
        if (event->type() == QEvent::KeyPress) {
            const int key = static_cast<QKeyEvent *>(event)->key();
            leaving = key == Qt::Key_Return || key == Qt::Key_Enter;
            if (!leaving)
                m_rejected.erase(s);
        }
        if (leaving && !s->hasAcceptableInput())
            m_rejected[s] = {s->cleanText(), s->value()};
    }
    return QWidget::eventFilter(watched, event);
}

QString TrainingOptionsForm::inputError() const
{
    const std::pair<QSpinBox *, QString> boxes[] = {{m_ranks, tr("Ranks")},
                                                    {m_microBatches, tr("Micro-batches")},
                                                    {m_tensorParallel, tr("Tensor parallel")}};
    for (const auto &[box, name] : boxes) {
        QString typed;
        if (!box->hasAcceptableInput())
            typed = box->cleanText();
        else if (auto it = m_rejected.find(box); it != m_rejected.end())
            typed = it->second.first;
        else
            continue;
        return tr("%1: '%2' is not a count from %3 to %4. Type one (1 = %5), or Cancel to keep "
                  "%6.")
            .arg(name, typed)
            .arg(box->minimum())
            .arg(box->maximum())
            .arg(box == m_ranks          ? tr("one GPU")
                 : box == m_microBatches ? tr("no gradient accumulation")
                                         : tr("no tensor parallelism"))
            .arg(box == m_ranks          ? m_base.ranks
                 : box == m_microBatches ? m_base.microBatches
                                         : m_base.tensorParallel);
    }
    return {};
}

TrainingOptionsDialog::TrainingOptionsDialog(QWidget *parent) : QDialog(parent)
{
    setWindowTitle(tr("Training options"));
    setObjectName(QStringLiteral("trainingOptionsDialog"));
    m_form = new TrainingOptionsForm(this);
    // Which weights train: the model's --freeze / --trainable, re-imported when changed.
    m_freeze = new QLineEdit(this);
    m_freeze->setObjectName(QStringLiteral("freezePatterns"));
    m_freeze->setPlaceholderText(tr("none (e.g. ^encoder\\. ^embed)"));
    m_freeze->setToolTip(tr("Parameters whose name contains a match of any of these regular "
                            "expressions (ECMAScript, separated by spaces) are frozen: no "
                            "gradient, no optimizer state (--freeze)"));
    m_trainable = new QLineEdit(this);
    m_trainable->setObjectName(QStringLiteral("trainablePatterns"));
    m_trainable->setPlaceholderText(tr("every parameter (e.g. ^fc\\. or lora_)"));
    m_trainable->setToolTip(tr("When given, only the parameters matching one of these regular "
                               "expressions train; every other one is frozen (--trainable)"));
    m_patternError = new QLabel(this);
    m_patternError->setWordWrap(true);
    m_patternError->setStyleSheet(QStringLiteral("color:#b00020"));
    m_patternError->hide();
    auto *weights = new QFormLayout;
    weights->addRow(tr("Freeze:"), m_freeze);
    weights->addRow(tr("Train only:"), m_trainable);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &TrainingOptionsDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    m_error = new QLabel(this);
    m_error->setObjectName(QStringLiteral("trainingOptionsError"));
    m_error->setWordWrap(true);
    m_error->setStyleSheet(QStringLiteral("color: #b00020;"));
    m_error->hide();
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(m_form);
    layout->addLayout(weights);
    layout->addWidget(m_patternError);
    layout->addWidget(m_error);
    layout->addWidget(buttons);
}

namespace {

QString joined(const std::vector<std::string> &patterns)
{
    QStringList out;
    for (const std::string &p : patterns)
        out << QString::fromStdString(p);
    return out.join(QLatin1Char(' '));
}

std::vector<std::string> split(const QString &text)
{
    std::vector<std::string> out;
    for (const QString &p : text.split(QLatin1Char(' '), Qt::SkipEmptyParts))
        out.push_back(p.toStdString());
    return out;
}

} // namespace

void TrainingOptionsDialog::setPatterns(const std::vector<std::string> &freeze,
                                        const std::vector<std::string> &trainable)
{
    m_freeze->setText(joined(freeze));
    m_trainable->setText(joined(trainable));
}

std::vector<std::string> TrainingOptionsDialog::freezePatterns() const
{
    return split(m_freeze->text());
}

std::vector<std::string> TrainingOptionsDialog::trainablePatterns() const
{
    return split(m_trainable->text());
}

void TrainingOptionsDialog::accept()
{
    if (const QString error = m_form->inputError(); !error.isEmpty()) {
        m_error->setText(error);
        m_error->show();
        return;
    }
    m_error->hide();
    // Whether a pattern matches any parameter is the import's to say (the model re-imports);
    // an expression that does not compile is refused here, nothing lost.
    core::onnx::ImportOptions check;
    check.freezePatterns = freezePatterns();
    check.trainablePatterns = trainablePatterns();
    if (core::Status s = core::onnx::checkTrainabilityPatterns(check); !s.isOk()) {
        m_patternError->setText(QString::fromStdString(s.message()));
        m_patternError->show();
        return;
    }
    m_patternError->hide();
    // Options the model cannot take (heads a tensor-parallel size does not divide): said here,
    // the dialog stays open.
    const TrainingOptions o = options();
    QString refused;
    if (core::Status s = validateTrainingOptions(o); !s.isOk())
        refused = QString::fromStdString(s.message());
    else if (m_checker)
        refused = m_checker(o);
    if (!refused.isEmpty()) {
        m_error->setText(refused);
        m_error->show();
        return;
    }
    QDialog::accept();
}

void TrainingOptionsForm::setOptions(const TrainingOptions &o)
{
    m_base = o;
    m_rejected.clear();
    m_optimizer->setCurrentIndex(m_optimizer->findData(int(o.optimizer)));
    m_precision->setCurrentIndex(m_precision->findData(int(o.precision)));
    m_autocastDevice->setCurrentIndex(m_autocastDevice->findData(int(o.autocastDevice)));
    m_shard->setCurrentIndex(m_shard->findData(int(o.shard)));
    m_attention->setCurrentIndex(m_attention->findData(int(o.attention)));
    m_ranks->setValue(int(std::clamp<int64_t>(o.ranks, 1, m_ranks->maximum())));
    m_microBatches->setValue(
        int(std::clamp<int64_t>(o.microBatches, 1, m_microBatches->maximum())));
    m_tensorParallel->setValue(
        int(std::clamp<int64_t>(o.tensorParallel, 1, m_tensorParallel->maximum())));
    m_sequenceParallel->setChecked(o.sequenceParallel);
    updateExplanation();
}

TrainingOptions TrainingOptionsForm::options() const
{
    TrainingOptions o = m_base;
    o.optimizer = Optimizer(m_optimizer->currentData().toInt());
    o.precision = Precision(m_precision->currentData().toInt());
    // read only under autocast: other precisions keep the default, so they stay "default"
    o.autocastDevice = isAutocast(o.precision)
                           ? AutocastDevice(m_autocastDevice->currentData().toInt())
                           : AutocastDevice::Cuda;
    o.shard = Sharding(m_shard->currentData().toInt());
    o.attention = Attention(m_attention->currentData().toInt());
    o.ranks = m_ranks->value();
    o.microBatches = m_microBatches->value();
    o.tensorParallel = m_tensorParallel->value();
    // one tensor-parallel rank has nothing to split along the sequence
    o.sequenceParallel = o.tensorParallel > 1 && m_sequenceParallel->isChecked();
    if (o.shard == Sharding::None || o.ranks == 1) {
        o.shard = Sharding::None; // one rank holds everything: nothing is sharded
        o.ranks = 1;
    }
    return o;
}

void TrainingOptionsForm::updateExplanation()
{
    const TrainingOptions o = options();
    m_ranks->setEnabled(Sharding(m_shard->currentData().toInt()) != Sharding::None);
    m_autocastDevice->setEnabled(isAutocast(o.precision));
    m_sequenceParallel->setEnabled(o.tensorParallel > 1);
    QStringList lines;
    lines << stateText(o.optimizer);
    switch (o.precision) {
    case Precision::Fp32: lines << tr("float32 weights, gradients and activations"); break;
    case Precision::Bf16Mixed:
    case Precision::Fp16Mixed:
        lines << tr("PyTorch autocast on %1: float32 weights, gradients and optimizer state; "
                    "convolutions and matrix products in %2, with the weight copies they keep "
                    "(weight casts in the chart)")
                     .arg(QString::fromLatin1(autocastDeviceName(o.autocastDevice)))
                     .arg(o.precision == Precision::Bf16Mixed ? QStringLiteral("bfloat16")
                                                              : QStringLiteral("float16"));
        break;
    case Precision::Bf16True: lines << tr("everything bfloat16, no master weights"); break;
    case Precision::Fp16True: lines << tr("everything float16, no master weights"); break;
    case Precision::Bf16Master:
    case Precision::Fp16Master:
        lines << tr("half-precision weights and activations; float32 master weights, gradients "
                    "and optimizer state");
        break;
    }
    if (o.shard != Sharding::None)
        lines << tr("per-rank bytes: %1 divided over %2 ranks")
                     .arg(o.shard == Sharding::Zero1   ? tr("optimizer state and master weights")
                          : o.shard == Sharding::Zero2 ? tr("state, master weights and gradients")
                                                       : tr("every model state"))
                     .arg(o.ranks);
    else if (Sharding(m_shard->currentData().toInt()) != Sharding::None)
        lines << tr("one rank: nothing is sharded");
    if (o.tensorParallel > 1)
        lines << (o.sequenceParallel
                      ? tr("per-GPU bytes of %1-way tensor parallelism with sequence "
                           "parallelism: attention heads and the FFN split over %1 GPUs, layer "
                           "norms and dropout split along the sequence")
                      : tr("per-GPU bytes of %1-way tensor parallelism: attention heads and the "
                           "FFN split over %1 GPUs, layer norms and dropout replicated"))
                     .arg(o.tensorParallel);
    if (o.microBatches > 1)
        lines << tr("gradients accumulate over %1 micro-batches (effective batch: %1 x batch)")
                     .arg(o.microBatches);
    m_explanation->setText(lines.join(QLatin1Char('\n')));
    emit changed();
}

} // namespace remat::ui
