#pragma once
// Undoable removal of one plan row (Delete in the plans table); undo puts it back where it was
// and makes it current again.
//   doc.undoStack()->push(new RemovePlanCommand(&doc, 2));

#include "core/solvers/solver.h"

#include <QUndoCommand>

namespace remat::ui {

class PlannerDocument;

class RemovePlanCommand : public QUndoCommand
{
public:
    RemovePlanCommand(PlannerDocument *document, int index, QUndoCommand *parent = nullptr);

    void undo() override;
    void redo() override;

private:
    PlannerDocument *m_document;
    int m_index;
    core::solvers::Plan m_plan; ///< the removed plan, for undo
    bool m_wasCurrent = false;
};

} // namespace remat::ui
