#pragma once
// The Pareto chart's legend: every entry whole, in as many columns as the chart's height needs,
// a long entry wrapped onto more lines, drawn in the chart's scene (so exports have it). QLegend
// lays its entries out in a single column or row and cuts what does not fit: docked at 1366x768
// the chart showed five of its sixteen entries and left a 117x81 px plot.
//   auto *legend = new ParetoLegend(chart);
//   legend->setEntries(entries);
//   const QSizeF size = legend->layout(availableHeight, maxTextWidth);
//   legend->setPos(chart->size().width() - size.width(), top);   chart->setMargins(...);

#include <QBrush>
#include <QFont>
#include <QGraphicsObject>
#include <QList>
#include <QPen>
#include <QString>

namespace remat::ui {

/// One entry: its marker (drawn as the series draws its points, or a line) and its text.
struct ParetoLegendEntry
{
    enum class Marker : unsigned char { Circle, Rectangle, Star, Triangle, Line };
    QString text;
    QString toolTip; ///< shown on hover (the longer explanation); "" for none
    QBrush brush;
    QPen pen;
    Marker marker = Marker::Circle;
};

class ParetoLegend : public QGraphicsObject
{
    Q_OBJECT
public:
    explicit ParetoLegend(QGraphicsItem *parent = nullptr);

    void setEntries(const QList<ParetoLegendEntry> &entries);
    /// The entries' font (the chart's legend font); call layout() after.
    void setFont(const QFont &font);
    QList<ParetoLegendEntry> entries() const { return m_entries; }
    /// Lays the entries out top to bottom in columns no taller than `height`, each text wrapped
    /// at `maxTextWidth`; returns the legend's size (empty without entries).
    QSizeF layout(qreal height, qreal maxTextWidth);
    /// Where each entry (marker and text) is drawn, in scene coordinates, in entry order.
    QList<QRectF> entryRects() const;

    QRectF boundingRect() const override;
    void paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *widget) override;

protected:
    void hoverMoveEvent(QGraphicsSceneHoverEvent *event) override;

private:
    QList<ParetoLegendEntry> m_entries;
    QFont m_font;
    QList<QRectF> m_rects; ///< each entry's rect, in item coordinates
    QSizeF m_size;
    qreal m_textWidth = 0; ///< the wrapping width of the last layout
};

} // namespace remat::ui
