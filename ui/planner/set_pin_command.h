#pragma once
// Undoable pin edit: always keep / always recompute / offload a tensor, or clear its pin.
//   doc.undoStack()->push(new SetPinCommand(&doc, "relu1_out", PinKind::Keep));
//   doc.undoStack()->push(new SetPinCommand(&doc, "relu1_out", std::nullopt));   // clear

#include "core/solvers/solver.h"

#include <QString>
#include <QUndoCommand>

#include <optional>

namespace remat::ui {

class PlannerDocument;

class SetPinCommand : public QUndoCommand
{
public:
    SetPinCommand(PlannerDocument *document, QString tensor,
                  std::optional<core::solvers::PinKind> kind, QUndoCommand *parent = nullptr);

    void undo() override { swap(); }
    void redo() override { swap(); }

private:
    void swap();

    PlannerDocument *m_document;
    QString m_tensor;
    std::optional<core::solvers::PinKind> m_kind; // the value to apply next
};

} // namespace remat::ui
