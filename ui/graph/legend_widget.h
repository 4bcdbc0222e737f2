#pragma once
// The colour legend under the graph: categories as swatches, or a heat scale with end labels.
//   LegendWidget legend;  legend.setLegend(document.colours().legend());

#include "ui/colour_mode.h"

#include <QWidget>

namespace remat::ui {

class LegendWidget : public QWidget
{
    Q_OBJECT
public:
    explicit LegendWidget(QWidget *parent = nullptr);
    void setLegend(const Legend &legend);
    QSize sizeHint() const override;

protected:
    void paintEvent(QPaintEvent *event) override;

private:
    Legend m_legend;
};

} // namespace remat::ui
