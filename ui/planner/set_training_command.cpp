#include "ui/planner/set_training_command.h"

#include "ui/planner/planner_document.h"

#include <QCoreApplication>

namespace remat::ui {

QString trainingSummary(const core::training::TrainingOptions &t)
{
    using namespace core::training;
    QStringList parts;
    parts << (t.optimizer == Optimizer::None
                  ? QCoreApplication::translate("SetTrainingCommand", "no optimizer")
                  : QString::fromLatin1(optimizerName(t.optimizer)));
    parts << (isAutocast(t.precision) && t.autocastDevice != AutocastDevice::Cuda
                  ? QStringLiteral("%1 (%2 autocast)")
                        .arg(QString::fromLatin1(precisionName(t.precision)),
                             QString::fromLatin1(autocastDeviceName(t.autocastDevice)))
                  : QString::fromLatin1(precisionName(t.precision)));
    if (t.shard != Sharding::None)
        parts << QCoreApplication::translate("SetTrainingCommand", "%1 over %2 ranks")
                     .arg(QString::fromLatin1(shardingName(t.shard)))
                     .arg(t.ranks);
    if (t.microBatches > 1)
        parts << QCoreApplication::translate("SetTrainingCommand", "%1 micro-batches")
                     .arg(t.microBatches);
    // Megatron-LM tensor (and sequence) parallelism split every activation and weight: the
    // status bar's summary must say so, as `fit` does in its table.
    if (t.tensorParallel > 1)
        parts << (t.sequenceParallel
                      ? QCoreApplication::translate("SetTrainingCommand",
                                                    "tensor parallel over %1 + sequence parallel")
                      : QCoreApplication::translate("SetTrainingCommand",
                                                    "tensor parallel over %1"))
                     .arg(t.tensorParallel);
    if (t.attention != Attention::Eager)
        parts << QCoreApplication::translate("SetTrainingCommand", "%1 attention")
                     .arg(QString::fromLatin1(attentionName(t.attention)));
    return parts.join(QStringLiteral(", "));
}

SetTrainingCommand::SetTrainingCommand(PlannerDocument *document,
                                       const core::training::TrainingOptions &training,
                                       QUndoCommand *parent)
    : QUndoCommand(parent), m_document(document), m_training(training)
{
    setText(QCoreApplication::translate("SetTrainingCommand", "Train with %1")
                .arg(trainingSummary(training)));
}

void SetTrainingCommand::swap()
{
    core::training::TrainingOptions old = m_document->training();
    std::vector<core::solvers::Plan> oldPlans = m_document->plans();
    const int oldCurrent = m_document->currentPlanIndex();
    // Plans first, so listeners of the change see a consistent document.
    m_document->setPlans(std::move(m_plans), m_current);
    m_document->setTraining(m_training);
    m_training = old;
    m_plans = std::move(oldPlans);
    m_current = oldCurrent;
}

} // namespace remat::ui
