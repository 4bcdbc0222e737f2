#include "ui/planner/clear_pins_command.h"

#include <QCoreApplication>

namespace remat::ui {

ClearPinsCommand::ClearPinsCommand(PlannerDocument *document, QUndoCommand *parent)
    : QUndoCommand(parent), m_document(document)
{
    setText(QCoreApplication::translate("ClearPinsCommand", "Clear all pins"));
}

void ClearPinsCommand::swap()
{
    PinMap previous = m_document->pins();
    m_document->setPins(m_pins);
    m_pins = std::move(previous);
}

} // namespace remat::ui
