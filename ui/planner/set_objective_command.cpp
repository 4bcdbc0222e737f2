#include "ui/planner/set_objective_command.h"

#include "ui/planner/planner_document.h"

#include <QCoreApplication>

namespace remat::ui {

SetObjectiveCommand::SetObjectiveCommand(PlannerDocument *document,
                                         core::solvers::Objective objective, QUndoCommand *parent)
    : QUndoCommand(parent), m_document(document), m_old(document->objective()), m_new(objective)
{
    setText(QCoreApplication::translate("SetObjectiveCommand", "Set objective to %1")
                .arg(QString::fromLatin1(core::solvers::objectiveName(objective))));
}

void SetObjectiveCommand::undo() { m_document->setObjective(m_old); }
void SetObjectiveCommand::redo() { m_document->setObjective(m_new); }

} // namespace remat::ui
