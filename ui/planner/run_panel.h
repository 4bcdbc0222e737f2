#pragma once
// Run the current plan: backend, iterations, Run / Stop; live bytes-in-use and step-time charts
// (measured beside predicted), drained from the run's sample buffer ~30 times a second with one
// replace() per series; the gradient check against store-all when the run ends; an OOM is shown
// at the step it happened and the panel stays usable. "Calibrate on this device" runs store-all on
// the selected backend and hands each op's measured time (a cost::Profile) to the planner, which
// then times every plan with it; a label says which time source is in use.
//   RunPanel panel(&runController);
//   panel.setRequestProvider([&] { return makeRunRequest(); });
//   panel.setPredicted(plan.timeline);

#include "ui/planner/run_controller.h"

#include "core/cost/profile.h"
#include "core/io/session_file.h"
#include "core/sim/timeline.h"

#include <QTimer>
#include <QWidget>

#include <functional>
#include <memory>
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
    /// The store-all request "Calibrate on this device" runs (schedule = reference = store-all).
    void setCalibrationProvider(std::function<std::optional<RunRequest>()> provider);
    /// "Times: estimate (roofline)", "Times: profile (CPU reference)", ...
    void setTimeSource(const QString &text);
    QString timeSourceText() const;
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
    /// Whether the memory chart marks a failing step ("failed here"): after an error, never
    /// after the user's Stop.
    bool failureMarked() const;
    /// Forgets the last run (measured curves, gradient check, status) and the predicted curves;
    /// a run under way is stopped and its result dropped. For another model or batch.
    void clearResults();
    /// The gradient check's line ("Gradient check passed: ..."), empty before a run.
    QString gradientText() const;
    /// The last run (not a calibration) as a session keeps it: the summary and the last
    /// iteration's measured curves; nullopt before any run and after clearResults().
    std::optional<core::io::SessionRun> sessionRun() const;
    /// Shows a run a session kept: status and gradient lines (marked as restored) and the
    /// measured curves beside the prediction already set. `planLabel` names the plan that ran
    /// ("plan 2: chen-sqrtn"), empty when unknown.
    void restoreRun(const core::io::SessionRun &run, const QString &planLabel);
    /// The bytes-in-use chart's unit ("KiB", "MiB", ...: the predicted peak's, as tables print it).
    QString memoryUnit() const;

public slots:
    void run();
    void stop();
    /// Runs store-all max(3, iterations) times on the selected backend (the controller's
    /// reference step warms up) and emits calibrated() with each op's median time.
    void calibrate();

signals:
    void runFinished(const remat::ui::RunSummary &summary);
    /// `device`: the backend's label, for the time-source label.
    void calibrated(const remat::core::cost::Profile &profile, const QString &device);

protected:
    /// The backend list's first click, key or focus lists the devices (the controller's pending
    /// discovery), before its popup opens.
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    void startRun(RunRequest request);
    void drain();
    /// The axes' ranges from the data's (m_stepCount, m_memMax, m_timeMax), rounded; the
    /// predicted curves' new points, when given, go in after the axes moved.
    void updateAxes(const QList<QPointF> *memPredicted = nullptr,
                    const QList<QPointF> *timePredicted = nullptr);
    void finished(const RunSummary &summary);
    void finishCalibration(const RunSummary &summary);
    /// The status and gradient lines for a finished run.
    void showSummary(const RunSummary &summary, const QString &prefix);

    RunController *m_controller;
    std::function<std::optional<RunRequest>()> m_provider, m_calibrationProvider;
    QComboBox *m_backend;
    QSpinBox *m_iterations;
    QPushButton *m_run, *m_stop, *m_calibrate;
    QLabel *m_status, *m_gradients, *m_timeSource;
    QChartView *m_memoryView, *m_timeView;
    QLineSeries *m_memMeasured, *m_memPredicted, *m_timeMeasured, *m_timePredicted, *m_oom;
    QValueAxis *m_memX, *m_memY, *m_timeX, *m_timeY;
    QList<QPointF> m_memPoints, m_timePoints;
    QTimer m_drain;
    int m_iteration = 0;
    double m_memMax = 1, m_timeMax = 1e-6;
    double m_memUnit = double(1 << 20); ///< bytes per unit of the bytes-in-use axis
    int m_stepCount = 1;
    RunSummary m_summary;
    /// The last run's backend and its last iteration's raw samples (for sessions).
    bool m_hasRun = false;
    QString m_runBackend;
    std::vector<std::pair<int, int64_t>> m_lastBytes;
    std::vector<std::pair<int, double>> m_lastSeconds;
    bool m_dropRun = false; ///< the run under way was for a model no longer loaded
    // The calibration run under way: its graph, schedule and every sample drained.
    std::shared_ptr<const core::training::TrainingGraph> m_calibrationGraph;
    core::schedule::Schedule m_calibrationSchedule;
    std::vector<RunSample> m_calibrationSamples;
    QString m_calibrationDevice;
};

} // namespace remat::ui
