#include "ui/planner/chart_empty_state.h"

#include <QAbstractAxis>
#include <QBrush>
#include <QChart>
#include <QColor>
#include <QGraphicsTextItem>
#include <QLegend>
#include <QTextDocument>
#include <QTextOption>

#include <algorithm>

namespace remat::ui {

ChartEmptyState::ChartEmptyState(QChart *chart, const QString &hint, QObject *parent)
    : QObject(parent), m_chart(chart), m_hint(new QGraphicsTextItem(hint, chart))
{
    m_hint->setDefaultTextColor(QColor(0x70, 0x78, 0x88));
    QTextOption centred(Qt::AlignHCenter);
    centred.setWrapMode(QTextOption::WordWrap);
    m_hint->document()->setDefaultTextOption(centred);
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

QString ChartEmptyState::text() const
{
    return m_hint->isVisible() ? m_hint->toPlainText() : QString();
}

QRectF ChartEmptyState::hintRect() const { return m_hint->mapRectToScene(m_hint->boundingRect()); }

void ChartEmptyState::place()
{
    if (!m_hint->isVisible())
        return;
    // Wrapped to the plot area (a docked chart at 1366x768 is narrower than one line of hint).
    const QRectF area = m_chart->plotArea();
    m_hint->setTextWidth(std::max(80.0, area.width()));
    m_hint->setPos(area.center() - m_hint->boundingRect().center());
}

} // namespace remat::ui
