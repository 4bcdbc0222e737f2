#include "ui/planner/step_comparison_view.h"

#include "core/util/bytes.h"
#include "ui/node_metrics.h"
#include "ui/planner/memory_chart_view.h"

#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>

namespace remat::ui {

using core::pipeline::FigureUnit;

QString figureText(FigureUnit unit, double value, bool signedDelta)
{
    const QString sign = signedDelta && value > 0 ? QStringLiteral("+") : QString();
    switch (unit) {
    case FigureUnit::Bytes: {
        const double v = std::abs(value);
        const QString text = QString::fromStdString(core::formatBytes(int64_t(std::llround(v))));
        return (value < 0 ? QStringLiteral("-") : sign) + text;
    }
    case FigureUnit::Seconds: {
        const double v = std::abs(value);
        const QString text = v >= 1 ? QStringLiteral("%1 s").arg(v, 0, 'f', 3)
                                    : QStringLiteral("%1 ms").arg(v * 1e3, 0, 'f', 3);
        return (value < 0 ? QStringLiteral("-") : sign) + text;
    }
    case FigureUnit::Percent: return sign + QStringLiteral("%1 %").arg(value, 0, 'f', 1);
    case FigureUnit::Count: return sign + QLocale::system().toString(qint64(std::llround(value)));
    case FigureUnit::Flops: {
        const QString text = QString::fromStdString(formatFlops(std::abs(value)));
        return (value < 0 ? QStringLiteral("-") : sign) + text;
    }
    }
    return {};
}

StepComparisonView::StepComparisonView(QWidget *parent) : QWidget(parent)
{
    m_chart = new MemoryChartView(this);
    m_chart->setObjectName(QStringLiteral("comparisonChart"));
    m_chart->setMinimumHeight(240);
    m_table = new QTableWidget(0, 4, this);
    m_table->setObjectName(QStringLiteral("comparisonTable"));
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
    m_table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    m_caption = new QLabel(this);
    m_caption->setWordWrap(true);
    auto *split = new QSplitter(Qt::Vertical, this);
    split->addWidget(m_chart);
    split->addWidget(m_table);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_caption);
    layout->addWidget(split, 1);
    clear();
}

void StepComparisonView::clear()
{
    m_rows.clear();
    m_table->setRowCount(0);
    m_table->setHorizontalHeaderLabels({tr("figure"), tr("A"), tr("B"), tr("B - A")});
    m_chart->clearTimelines();
    m_caption->setText(tr("Nothing compared yet."));
}

void StepComparisonView::setSteps(const core::sim::Timeline &a, const QString &nameA,
                                  const core::sim::Timeline &b, const QString &nameB)
{
    m_rows = core::pipeline::differenceRows(a, b);
    fillDifferenceTable(*m_table, m_rows, nameA, nameB, tr("B - A"));
    // A stacked by category, B's total as a line over it: where the two differ shows step by
    // step (the steps differ in number when the options add update ops; each curve keeps its own).
    m_chart->setTimelines(a, nullptr, 0, nameA, {{nameB, &b}});
    m_caption->setText(
        tr("A (areas): %1.  B (line): %2.  Peak %3 against %4 (%5).")
            .arg(nameA, nameB, figureText(FigureUnit::Bytes, double(a.peakBytes)),
                 figureText(FigureUnit::Bytes, double(b.peakBytes)),
                 figureText(FigureUnit::Bytes, double(b.peakBytes - a.peakBytes), true)));
}

void fillDifferenceTable(QTableWidget &table,
                         const std::vector<core::pipeline::DifferenceRow> &rows,
                         const QString &nameA, const QString &nameB, const QString &deltaName)
{
    table.setHorizontalHeaderLabels({QObject::tr("figure"), nameA, nameB, deltaName});
    table.setRowCount(int(rows.size()));
    for (size_t i = 0; i < rows.size(); ++i) {
        const auto &r = rows[i];
        const QString texts[] = {QString::fromStdString(r.what), figureText(r.unit, r.a),
                                 figureText(r.unit, r.b), figureText(r.unit, r.delta(), true)};
        for (int c = 0; c < 4; ++c) {
            auto *item = new QTableWidgetItem(texts[c]);
            if (c > 0)
                item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            table.setItem(int(i), c, item);
        }
    }
    table.resizeColumnsToContents();
    table.horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
}

QString StepComparisonView::cellText(int row, int column) const
{
    const QTableWidgetItem *item = m_table->item(row, column);
    return item ? item->text() : QString();
}

} // namespace remat::ui
