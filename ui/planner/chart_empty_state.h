#pragma once
// The empty state of a planner chart: with nothing to plot, axes, grid and legend would only
// show an arbitrary 0..1 range, so they are hidden and a grey hint sits in the plot area instead.
//   m_empty = new ChartEmptyState(chart(), tr("Solve a plan to see its memory"), this);
//   m_empty->setEmpty(points.isEmpty());  m_empty->text();  // "" while data is shown

#include <QObject>
#include <QRectF>
#include <QString>

class QChart;
class QGraphicsTextItem;

namespace remat::ui {

class ChartEmptyState : public QObject
{
    Q_OBJECT
public:
    ChartEmptyState(QChart *chart, const QString &hint, QObject *parent);

    /// Hides the chart's axes and legend and shows the hint (or the reverse).
    void setEmpty(bool empty);
    /// The hint while it is shown, else empty.
    QString text() const;
    /// Where the hint is drawn, in scene coordinates (tests: it wraps inside the plot area).
    QRectF hintRect() const;

private:
    void place();

    QChart *m_chart;
    QGraphicsTextItem *m_hint;
};

} // namespace remat::ui
