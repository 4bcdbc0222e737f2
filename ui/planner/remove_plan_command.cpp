#include "ui/planner/remove_plan_command.h"

#include "ui/planner/planner_document.h"

#include <QCoreApplication>

namespace remat::ui {

RemovePlanCommand::RemovePlanCommand(PlannerDocument *document, int index, QUndoCommand *parent)
    : QUndoCommand(parent), m_document(document), m_index(index),
      m_plan(document->plans().at(size_t(index))),
      m_wasCurrent(document->currentPlanIndex() == index)
{
    setText(QCoreApplication::translate("RemovePlanCommand", "Delete plan %1 (%2)")
                .arg(index + 1)
                .arg(QString::fromStdString(m_plan.solver)));
}

void RemovePlanCommand::undo()
{
    m_document->insertPlan(m_index, m_plan);
    if (m_wasCurrent)
        m_document->setCurrentPlanIndex(m_index);
}

void RemovePlanCommand::redo() { m_document->removePlan(m_index); }

} // namespace remat::ui
