#include "ui/planner/set_pin_command.h"

#include "ui/planner/planner_document.h"

#include <QCoreApplication>

namespace remat::ui {

SetPinCommand::SetPinCommand(PlannerDocument *document, QString tensor,
                             std::optional<core::solvers::PinKind> kind, QUndoCommand *parent)
    : QUndoCommand(parent), m_document(document), m_tensor(std::move(tensor)), m_kind(kind)
{
    setText(kind ? QCoreApplication::translate("SetPinCommand", "Pin %1 to %2")
                       .arg(m_tensor, QString::fromLatin1(core::solvers::pinKindName(*kind)))
                 : QCoreApplication::translate("SetPinCommand", "Clear pin of %1").arg(m_tensor));
}

void SetPinCommand::swap()
{
    // Self-inverting: apply the stored value and remember the one it replaced.
    const auto previous = m_document->pin(m_tensor);
    m_document->setPin(m_tensor, m_kind);
    m_kind = previous;
}

} // namespace remat::ui
