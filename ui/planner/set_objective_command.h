#pragma once
// Undoable objective change (min-peak or min-time under the budget).
//   doc.undoStack()->push(new SetObjectiveCommand(&doc, Objective::MinPeak));

#include "core/solvers/solver.h"

#include <QUndoCommand>

namespace remat::ui {

class PlannerDocument;

class SetObjectiveCommand : public QUndoCommand
{
public:
    SetObjectiveCommand(PlannerDocument *document, core::solvers::Objective objective,
                        QUndoCommand *parent = nullptr);

    void undo() override;
    void redo() override;

private:
    PlannerDocument *m_document;
    core::solvers::Objective m_old, m_new;
};

} // namespace remat::ui
