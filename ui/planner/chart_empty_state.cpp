#include "ui/planner/chart_empty_state.h"

#include <QAbstractAxis>
#include <QBrush>
#include <QChart>
#include <QColor>
#include <QGraphicsSimpleTextItem>
#include <QLegend>

namespace remat::ui {

ChartEmptyState::ChartEmptyState(QChart *chart, const QString &hint, QObject *parent)
    : QObject(parent), m_chart(chart), m_hint(new QGraphicsSimpleTextItem(hint, chart))
{
    m_hint->setBrush(QColor(0x70, 0x78, 0x88));
    connect(chart, &QChart::plotAreaChanged, this, [this] { place(); });
}

void ChartEmptyState::setEmpty(bool empty)
{
    for (QAbstractAxis *axis : m_chart->axes())
        axis->setVisible(!empty);
    m_chart->legend()->setVisible(!empty);
    m_hint->setVisible(empty);
    place();
}

QString ChartEmptyState::text() const { return m_hint->isVisible() ? m_hint->text() : QString(); }

void ChartEmptyState::place()
{
    if (!m_hint->isVisible())
        return;
    const QRectF area = m_chart->plotArea();
    m_hint->setPos(area.center() - m_hint->boundingRect().center());
}

} // namespace remat::ui
