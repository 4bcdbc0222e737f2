#pragma once
// Undoable removal of every pin at once.
//   doc.undoStack()->push(new ClearPinsCommand(&doc));

#include "ui/planner/planner_document.h"

#include <QUndoCommand>

namespace remat::ui {

class ClearPinsCommand : public QUndoCommand
{
public:
    explicit ClearPinsCommand(PlannerDocument *document, QUndoCommand *parent = nullptr);

    void undo() override { swap(); }
    void redo() override { swap(); }

private:
    void swap();

    PlannerDocument *m_document;
    PinMap m_pins; // the pins to apply next (empty on the first redo)
};

} // namespace remat::ui
