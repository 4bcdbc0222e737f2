#pragma once
// Step through a plan's schedule: play, pause, step, scrub. Each step says what ran, what was
// freed and what is resident (for the graph to light up), moves the memory chart's cursor and the
// red row of the R and S matrices, and explains why the tensors involved are kept or recomputed.
// Keys (once its tab, a matrix, the slider or the view was clicked): Left / Right step, Page Up /
// Page Down jump a stage, Home / End, Space plays / pauses; stepperKeys() lists them for Help.
//   TeachingView v;  v.setAnalysis(analysis);  v.setStep(812);
//   connect(&v, &TeachingView::stepStateChanged, graph, [](const StepState &s) { highlight(s); });

#include "core/sim/timeline.h"
#include "ui/planner/plan_analysis.h"

#include <QTimer>
#include <QWidget>

class QLabel;
class QPushButton;
class QSlider;
class QSpinBox;
class QTextBrowser;

namespace remat::ui {

class RsMatrixView;
class StageMemoryView;

class TeachingView : public QWidget
{
    Q_OBJECT
public:
    explicit TeachingView(QWidget *parent = nullptr);

    void setAnalysis(const PlanAnalysis &analysis);
    const PlanAnalysis &analysis() const { return m_analysis; }
    int step() const { return m_step; }
    bool isPlaying() const { return m_timer.isActive(); }
    const StepState &state() const { return m_state; }
    RsMatrixView *rView() const { return m_r; }
    RsMatrixView *sView() const { return m_s; }
    /// The memory strips under the R and S matrices.
    StageMemoryView *rMemory() const { return m_rMemory; }
    StageMemoryView *sMemory() const { return m_sMemory; }
    /// The plan's predicted timeline (and its budget, 0 for none) for the memory strips; call
    /// after setAnalysis() with the same plan.
    void setMemory(const core::sim::Timeline &timeline, int64_t budget);
    /// The stepper's keys as {keys, what they do} rows, for Help > Keyboard Shortcuts.
    static QList<QStringList> stepperKeys();

public slots:
    void setStep(int step);
    void play();
    void pause();
    void stepForward();
    void stepBack();
    /// Explains a graph node the user selected (its decision, recomputes, backward users).
    void explainNode(const QString &nodeName);

signals:
    void stepChanged(int step);
    void stepStateChanged(const remat::ui::StepState &state);

protected:
    void showEvent(QShowEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;
    /// Left / Right: a step; Page Up / Page Down: a stage; Home / End: first / last step;
    /// Space: play / pause. A click on a matrix or the slider gives the stepper the keys.
    void keyPressEvent(QKeyEvent *event) override;

private:
    void refreshExplanation();
    void fitMatrices();

    PlanAnalysis m_analysis;
    StepState m_state;
    int m_step = -1;
    QString m_selectedNode;
    QTimer m_timer;
    QPushButton *m_back, *m_play, *m_forward;
    QSlider *m_slider;
    QSpinBox *m_speed;
    QLabel *m_label;
    QTextBrowser *m_text;
    RsMatrixView *m_r, *m_s;
    StageMemoryView *m_rMemory, *m_sMemory;
    QPushButton *m_first, *m_last;
    QLabel *m_legend;
    bool m_fitPending = false;
};

} // namespace remat::ui
