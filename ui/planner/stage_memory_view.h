#pragma once
// The plan's memory per stage, drawn under an R or S matrix with the same horizontal scale (column
// j of the matrix is stage j), so a column and the memory it costs line up; the budget is a dashed
// line, the peak a marked point, the current stage a red line.
//   StageMemoryView m(rMatrix);  m.setMemory(analysis, plan.timeline, budget);  m.setCurrentStage(k);

#include "core/sim/timeline.h"
#include "ui/planner/plan_analysis.h"

#include <QWidget>

#include <vector>

namespace remat::ui {

class RsMatrixView;

class StageMemoryView : public QWidget
{
    Q_OBJECT
public:
    /// `align`: the matrix whose columns this view follows (zoom and left margin); must outlive it.
    explicit StageMemoryView(const RsMatrixView *align, QWidget *parent = nullptr);

    /// Bytes in use per stage: the most any step of the stage needs (its peakDuringStep).
    /// `budget` <= 0: none drawn. An empty timeline clears the view.
    void setMemory(const PlanAnalysis &analysis, const core::sim::Timeline &timeline,
                   int64_t budget);
    void setCurrentStage(int stage);
    const std::vector<int64_t> &stageBytes() const { return m_bytes; }
    /// The stage holding the plan's peak, -1 without data.
    int peakStage() const { return m_peakStage; }
    int64_t budget() const { return m_budget; }
    QSize sizeHint() const override;
    /// The strip's height (72 px by default; the Schedule tab makes it shorter on short screens).
    void setStripHeight(int pixels);
    int stripHeight() const { return m_height; }

protected:
    void paintEvent(QPaintEvent *event) override;

private:
    const RsMatrixView *m_align;
    int m_height = 72;
    std::vector<int64_t> m_bytes;
    int64_t m_budget = 0;
    int m_peakStage = -1;
    int m_stage = -1;
};

} // namespace remat::ui
