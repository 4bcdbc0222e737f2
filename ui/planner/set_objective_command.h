#pragma once
// Undoable objective change (min-peak, min-peak within X% of store-all's step time, or min-time
// under the budget).
//   doc.undoStack()->push(new SetObjectiveCommand(&doc, Objective::MinPeak));
//   doc.undoStack()->push(new SetObjectiveCommand(&doc, Objective::MinPeak, 35.0));

#include "core/solvers/solver.h"

#include <QUndoCommand>

namespace remat::ui {

class PlannerDocument;

class SetObjectiveCommand : public QUndoCommand
{
public:
    /// `maxOverheadPercent` < 0: no limit (the only value min-time takes).
    SetObjectiveCommand(PlannerDocument *document, core::solvers::Objective objective,
                        double maxOverheadPercent = -1, QUndoCommand *parent = nullptr);

    void undo() override;
    void redo() override;

private:
    PlannerDocument *m_document;
    core::solvers::Objective m_old, m_new;
    double m_oldOverhead, m_newOverhead;
};

} // namespace remat::ui
