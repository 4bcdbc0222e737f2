#include "ui/planner/set_budget_command.h"

#include "core/util/bytes.h"
#include "ui/planner/planner_document.h"

#include <QCoreApplication>

namespace remat::ui {

namespace {
QString budgetText(int64_t bytes)
{
    return QCoreApplication::translate("SetBudgetCommand", "Set budget to %1")
        .arg(QString::fromStdString(core::formatBytes(bytes)));
}
} // namespace

SetBudgetCommand::SetBudgetCommand(PlannerDocument *document, int64_t bytes, int mergeKey,
                                   QUndoCommand *parent)
    : QUndoCommand(parent), m_document(document), m_old(document->budgetBytes()), m_new(bytes),
      m_mergeKey(mergeKey)
{
    setText(budgetText(bytes));
}

void SetBudgetCommand::undo() { m_document->setBudgetBytes(m_old); }
void SetBudgetCommand::redo() { m_document->setBudgetBytes(m_new); }

bool SetBudgetCommand::mergeWith(const QUndoCommand *other)
{
    const auto *o = static_cast<const SetBudgetCommand *>(other);
    if (m_mergeKey == 0 || o->m_mergeKey != m_mergeKey || o->m_document != m_document)
        return false;
    m_new = o->m_new;
    setText(budgetText(m_new));
    setObsolete(m_new == m_old);
    return true;
}

} // namespace remat::ui
