#include "ui/planner/pins_widget.h"

#include "ui/planner/clear_pins_command.h"
#include "ui/planner/planner_document.h"
#include "ui/planner/set_pin_command.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace remat::ui {

PinsWidget::PinsWidget(PlannerDocument *document, QWidget *parent)
    : QWidget(parent), m_document(document), m_list(new QTreeWidget(this)),
      m_clear(new QPushButton(tr("Clear pin"), this)),
      m_clearAll(new QPushButton(tr("Clear all"), this))
{
    setObjectName(QStringLiteral("plannerPins"));
    m_list->setColumnCount(2);
    m_list->setHeaderLabels({tr("Tensor"), tr("Pin")});
    m_list->setRootIsDecorated(false);
    m_list->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_list->header()->setSectionResizeMode(0, QHeaderView::Stretch);
    // Its header and a row at the least (the view's own minimum, ~70 px, kept the window too
    // tall for a 700 px screen with its frame; the dock gets 130 px by default).
    m_list->setMinimumHeight(44);
    auto *buttons = new QHBoxLayout;
    buttons->addWidget(m_clear);
    buttons->addWidget(m_clearAll);
    buttons->addStretch();
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    // Wrapped: one long line set the right column's (and so the window's) minimum width.
    auto *intro =
        new QLabel(tr("Decisions every solver must honour (right-click a node to pin it)."), this);
    intro->setWordWrap(true);
    layout->addWidget(intro);
    layout->addWidget(m_list);
    layout->addLayout(buttons);
    connect(m_clear, &QPushButton::clicked, this, &PinsWidget::clearSelected);
    connect(m_clearAll, &QPushButton::clicked, this, [this] {
        if (!m_document->pins().isEmpty())
            m_document->undoStack()->push(new ClearPinsCommand(m_document));
    });
    connect(m_list, &QTreeWidget::itemDoubleClicked, this, [this](QTreeWidgetItem *item) {
        const QString tensor = item->text(0);
        emit nodeActivated(m_nodeOfTensor ? m_nodeOfTensor(tensor) : tensor);
    });
    connect(document, &PlannerDocument::changed, this, [this](PlannerChange c) {
        if (c == PlannerChange::Pins || c == PlannerChange::Model)
            rebuild();
    });
    rebuild();
}

void PinsWidget::setNodeOfTensor(std::function<QString(const QString &)> nodeOfTensor)
{
    m_nodeOfTensor = std::move(nodeOfTensor);
}

int PinsWidget::pinCount() const { return m_list->topLevelItemCount(); }

void PinsWidget::rebuild()
{
    m_list->clear();
    const PinMap &pins = m_document->pins();
    for (auto it = pins.cbegin(); it != pins.cend(); ++it)
        m_list->addTopLevelItem(new QTreeWidgetItem(
            {it.key(), QString::fromLatin1(core::solvers::pinKindName(it.value()))}));
    m_clearAll->setEnabled(!pins.isEmpty());
    m_clear->setEnabled(!pins.isEmpty());
}

void PinsWidget::clearSelected()
{
    const auto items = m_list->selectedItems();
    if (items.isEmpty())
        return;
    QStringList tensors;
    for (QTreeWidgetItem *item : items)
        tensors << item->text(0);
    QUndoStack *stack = m_document->undoStack();
    stack->beginMacro(tr("Clear %n pin(s)", nullptr, int(tensors.size())));
    for (const QString &t : tensors)
        stack->push(new SetPinCommand(m_document, t, std::nullopt));
    stack->endMacro();
}

} // namespace remat::ui
