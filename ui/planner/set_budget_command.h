#pragma once
// Undoable budget change. Changes that carry the same non-zero merge key (one slider drag) merge
// into one undo step.
//   doc.undoStack()->push(new SetBudgetCommand(&doc, int64_t(4) << 30));
//   doc.undoStack()->push(new SetBudgetCommand(&doc, bytes, dragId));   // merges within a drag

#include <QUndoCommand>

#include <cstdint>

namespace remat::ui {

class PlannerDocument;

class SetBudgetCommand : public QUndoCommand
{
public:
    SetBudgetCommand(PlannerDocument *document, int64_t bytes, int mergeKey = 0,
                     QUndoCommand *parent = nullptr);

    void undo() override;
    void redo() override;
    int id() const override { return 0x52424447; } // 'RBDG'
    bool mergeWith(const QUndoCommand *other) override;

private:
    PlannerDocument *m_document;
    int64_t m_old = 0, m_new = 0;
    int m_mergeKey = 0;
};

} // namespace remat::ui
