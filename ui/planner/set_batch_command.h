#pragma once
// Undoable batch change. Plans solved at the old batch do not apply at the new one, so the
// command takes them away and undo gives them back. A budget given with the batch (the largest
// batch found for a memory: that memory) is set in the same step, and undo restores the old one.
//   doc.undoStack()->push(new SetBatchCommand(&doc, 64));
//   doc.undoStack()->push(new SetBatchCommand(&doc, 96, 24 * GiB));

#include "core/solvers/solver.h"

#include <QUndoCommand>

#include <vector>

namespace remat::ui {

class PlannerDocument;

class SetBatchCommand : public QUndoCommand
{
public:
    SetBatchCommand(PlannerDocument *document, int64_t batch, int64_t budgetBytes = 0,
                    QUndoCommand *parent = nullptr);

    void undo() override { swap(); }
    void redo() override { swap(); }

private:
    void swap();

    PlannerDocument *m_document;
    int64_t m_batch;                          // to apply next
    int64_t m_budget = 0;                     // to apply next (0: the budget stays)
    std::vector<core::solvers::Plan> m_plans; // to apply next
    int m_current = -1;
};

} // namespace remat::ui
