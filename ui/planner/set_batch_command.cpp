#include "ui/planner/set_batch_command.h"

#include "ui/planner/planner_document.h"

#include <QCoreApplication>

namespace remat::ui {

SetBatchCommand::SetBatchCommand(PlannerDocument *document, int64_t batch, int64_t budgetBytes,
                                 QUndoCommand *parent)
    : QUndoCommand(parent), m_document(document), m_batch(batch), m_budget(budgetBytes)
{
    setText(QCoreApplication::translate("SetBatchCommand", "Set batch to %1").arg(batch));
}

void SetBatchCommand::swap()
{
    const int64_t oldBatch = m_document->batch();
    std::vector<core::solvers::Plan> oldPlans = m_document->plans();
    const int oldCurrent = m_document->currentPlanIndex();
    // Plans first, so listeners of the batch change see a consistent document.
    m_document->setPlans(std::move(m_plans), m_current);
    if (m_budget > 0) {
        const int64_t oldBudget = m_document->budgetBytes();
        m_document->setBudgetBytes(m_budget);
        m_budget = oldBudget;
    }
    m_document->setBatch(m_batch);
    m_batch = oldBatch;
    m_plans = std::move(oldPlans);
    m_current = oldCurrent;
}

} // namespace remat::ui
