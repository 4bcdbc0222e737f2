#include "ui/graph/legend_widget.h"

#include <QPainter>

namespace remat::ui {

LegendWidget::LegendWidget(QWidget *parent) : QWidget(parent)
{
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

void LegendWidget::setLegend(const Legend &legend)
{
    m_legend = legend;
    updateGeometry();
    update();
}

QSize LegendWidget::sizeHint() const { return QSize(400, 26); }

void LegendWidget::paintEvent(QPaintEvent *)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    p.fillRect(rect(), QColor(0xf4, 0xf5, 0xf8));
    const QFontMetrics fm = fontMetrics();
    int x = 8;
    const int h = height();
    p.setPen(QColor(0x30, 0x36, 0x44));
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    const QString title = m_legend.title + QStringLiteral(":");
    p.drawText(QRect(x, 0, width(), h), Qt::AlignVCenter | Qt::AlignLeft, title);
    x += QFontMetrics(bold).horizontalAdvance(title) + 10;
    p.setFont(font());
    if (m_legend.continuous) {
        p.drawText(QRect(x, 0, width(), h), Qt::AlignVCenter | Qt::AlignLeft, m_legend.lowLabel);
        x += fm.horizontalAdvance(m_legend.lowLabel) + 6;
        const int w = 180;
        QLinearGradient grad(x, 0, x + w, 0);
        for (int i = 0; i < m_legend.entries.size(); ++i)
            grad.setColorAt(double(i) / std::max(1, int(m_legend.entries.size()) - 1),
                            m_legend.entries[i].colour);
        p.setPen(QColor(0x80, 0x80, 0x80));
        p.setBrush(grad);
        p.drawRect(QRect(x, h / 2 - 6, w, 12));
        x += w + 6;
        p.setPen(QColor(0x30, 0x36, 0x44));
        p.drawText(QRect(x, 0, width(), h), Qt::AlignVCenter | Qt::AlignLeft, m_legend.highLabel);
        return;
    }
    for (const LegendEntry &e : m_legend.entries) {
        p.setPen(QColor(0x60, 0x60, 0x60));
        p.setBrush(e.colour);
        p.drawRoundedRect(QRect(x, h / 2 - 6, 12, 12), 2, 2);
        x += 16;
        p.setPen(QColor(0x30, 0x36, 0x44));
        p.drawText(QRect(x, 0, width(), h), Qt::AlignVCenter | Qt::AlignLeft, e.label);
        x += fm.horizontalAdvance(e.label) + 14;
    }
}

} // namespace remat::ui
