#include "ui/planner/set_objective_command.h"

#include "ui/planner/planner_document.h"

#include <QCoreApplication>

namespace remat::ui {

SetObjectiveCommand::SetObjectiveCommand(PlannerDocument *document,
                                         core::solvers::Objective objective,
                                         double maxOverheadPercent, QUndoCommand *parent)
    : QUndoCommand(parent), m_document(document), m_old(document->objective()), m_new(objective),
      m_oldOverhead(document->maxOverheadPercent()),
      m_newOverhead(objective == core::solvers::Objective::MinPeak && maxOverheadPercent >= 0
                        ? maxOverheadPercent
                        : -1)
{
    const QString name = QString::fromLatin1(core::solvers::objectiveName(objective));
    setText(
        m_newOverhead >= 0
            ? QCoreApplication::translate("SetObjectiveCommand",
                                          "Set objective to %1 within %2% slower")
                  .arg(name)
                  .arg(m_newOverhead)
            : QCoreApplication::translate("SetObjectiveCommand", "Set objective to %1").arg(name));
    if (m_old == m_new && m_oldOverhead == m_newOverhead)
        setObsolete(true);
}

void SetObjectiveCommand::undo()
{
    m_document->setMaxOverheadPercent(m_oldOverhead);
    m_document->setObjective(m_old);
}
void SetObjectiveCommand::redo()
{
    m_document->setMaxOverheadPercent(m_newOverhead);
    m_document->setObjective(m_new);
}

} // namespace remat::ui
