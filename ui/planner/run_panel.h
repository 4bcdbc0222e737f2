#pragma once
// Run the current plan: backend, iterations, Run / Stop; live bytes-in-use and step-time charts
// (measured beside predicted), drained from the run's sample buffer ~30 times a second with one
// replace() per series; the gradient check against store-all when the run ends; an OOM is shown
// at the step it happened and the panel stays usable.
//   RunPanel panel(&runController);
//   panel.setRequestProvider([&] { return makeRunRequest(); });
//   panel.setPredicted(plan.timeline);

#include "ui/planner/run_controller.h"

#include "core/sim/timeline.h"

#include <QTimer>
#include <QWidget>

#include <functional>
#include <optional>

class QChartView;
class QComboBox;
class QLabel;
class QLineSeries;
class QPushButton;
class QSpinBox;
class QValueAxis;

namespace remat::ui {

class RunPanel : public QWidget
{
    Q_OBJECT
public:
    explicit RunPanel(RunController *controller, QWidget *parent = nullptr);

    void setRequestProvider(std::function<std::optional<RunRequest>()> provider);
    /// The simulator's figures for the plan about to run, drawn beside the measured curves.
    void setPredicted(const core::sim::Timeline &timeline);
    void refreshBackends();
    int iterations() const;
    void setIterations(int n);
    void setBackend(const QString &id);
    /// Measured points drawn so far in the current iteration (tests).
    int measuredPointCount() const;
    const RunSummary &lastSummary() const { return m_summary; }
    QString statusText() const;

public slots:
    void run();
    void stop();

signals:
    void runFinished(const remat::ui::RunSummary &summary);

private:
    void drain();
    void finished(const RunSummary &summary);

    RunController *m_controller;
    std::function<std::optional<RunRequest>()> m_provider;
    QComboBox *m_backend;
    QSpinBox *m_iterations;
    QPushButton *m_run, *m_stop;
    QLabel *m_status, *m_gradients;
    QChartView *m_memoryView, *m_timeView;
    QLineSeries *m_memMeasured, *m_memPredicted, *m_timeMeasured, *m_timePredicted, *m_oom;
    QValueAxis *m_memX, *m_memY, *m_timeX, *m_timeY;
    QList<QPointF> m_memPoints, m_timePoints;
    QTimer m_drain;
    int m_iteration = 0;
    double m_memMax = 1, m_timeMax = 1e-6;
    int m_stepCount = 1;
    RunSummary m_summary;
};

} // namespace remat::ui
