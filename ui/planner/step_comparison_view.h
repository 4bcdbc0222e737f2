#pragma once
// Two training steps side by side: step A's memory stacked by category with step B's total
// drawn over it (MemoryChartView's overlay), and the difference table (pipeline::differenceRows:
// the peak, each category at each step's peak, model state, activation peak, time, recompute,
// and B - A). Used by "Compare training options..." and "Compare the two selected plans".
//   StepComparisonView v;  v.setSteps(a.timeline, "A: adam fp32", b.timeline, "B: adam bf16-mixed");

#include "core/pipeline/compare.h"
#include "core/sim/timeline.h"

#include <QString>
#include <QWidget>

#include <vector>

class QLabel;
class QTableWidget;

namespace remat::ui {

class MemoryChartView;

class StepComparisonView : public QWidget
{
    Q_OBJECT
public:
    explicit StepComparisonView(QWidget *parent = nullptr);

    void setSteps(const core::sim::Timeline &a, const QString &nameA, const core::sim::Timeline &b,
                  const QString &nameB);
    void clear();
    /// The table's rows as shown (tests compare them with pipeline::differenceRows).
    const std::vector<core::pipeline::DifferenceRow> &rows() const { return m_rows; }
    /// A cell's text: column 0 the figure's name, 1 step A, 2 step B, 3 B - A.
    QString cellText(int row, int column) const;
    MemoryChartView *chart() const { return m_chart; }
    QTableWidget *table() const { return m_table; }

private:
    MemoryChartView *m_chart;
    QTableWidget *m_table;
    QLabel *m_caption;
    std::vector<core::pipeline::DifferenceRow> m_rows;
};

/// Fills a four-column table (figure, A, B, difference) with `rows`, numbers right-aligned.
void fillDifferenceTable(QTableWidget &table,
                         const std::vector<core::pipeline::DifferenceRow> &rows,
                         const QString &nameA, const QString &nameB, const QString &deltaName);

/// "12.5 MiB", "3.21 ms", "25.0 %", "1,234", "4.1 GFLOP"; a difference gets its sign
/// ("+1.50 GiB", "-0.2 %").
QString figureText(core::pipeline::FigureUnit unit, double value, bool signedDelta = false);

} // namespace remat::ui
