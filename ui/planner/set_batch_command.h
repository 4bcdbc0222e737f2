#pragma once
// Undoable batch change. Plans solved at the old batch do not apply at the new one, so the
// command takes them away and undo gives them back.
//   doc.undoStack()->push(new SetBatchCommand(&doc, 64));

#include "core/solvers/solver.h"

#include <QUndoCommand>

#include <vector>

namespace remat::ui {

class PlannerDocument;

class SetBatchCommand : public QUndoCommand
{
public:
    SetBatchCommand(PlannerDocument *document, int64_t batch, QUndoCommand *parent = nullptr);

    void undo() override { swap(); }
    void redo() override { swap(); }

private:
    void swap();

    PlannerDocument *m_document;
    int64_t m_batch;                          // to apply next
    std::vector<core::solvers::Plan> m_plans; // to apply next
    int m_current = -1;
};

} // namespace remat::ui
