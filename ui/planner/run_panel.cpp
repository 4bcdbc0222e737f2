#include "ui/planner/run_panel.h"

#include "ui/planner/chart_empty_state.h"
#include "ui/planner/memory_curves.h"

#include "core/exec/profile_recorder.h"
#include "core/util/bytes.h"

#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QEvent>
#include <QFormLayout>
#include <QGraphicsLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QPushButton>
#include <QScreen>
#include <QSpinBox>
#include <QSplitter>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>

namespace remat::ui {

namespace {

QChartView *makeChart(const QString &title, const QString &yTitle, QValueAxis **x, QValueAxis **y,
                      QLineSeries **measured, QLineSeries **predicted, QWidget *parent)
{
    auto *chart = new QChart();
    chart->setTitle(title);
    chart->setAnimationOptions(QChart::NoAnimation);
    chart->legend()->setAlignment(Qt::AlignBottom);
    chart->setMargins(QMargins(2, 0, 2, 0));
    // No inset around the chart's background (as the Memory tab's chart): at 1366x768 the Run
    // tab's charts are about 125 px tall, and the inset left their plots 20 px.
    chart->layout()->setContentsMargins(0, 0, 0, 0);
    chart->setBackgroundRoundness(0);
    *x = new QValueAxis(chart);
    (*x)->setTitleText(QObject::tr("schedule step"));
    (*x)->setLabelFormat(QStringLiteral("%d"));
    *y = new QValueAxis(chart);
    (*y)->setTitleText(yTitle);
    (*y)->setLabelFormat(QStringLiteral("%g")); // round ticks print as "400", not "400.0"
    chart->addAxis(*x, Qt::AlignBottom);
    chart->addAxis(*y, Qt::AlignLeft);
    *predicted = new QLineSeries(chart);
    (*predicted)->setName(QObject::tr("predicted"));
    (*predicted)->setPen(QPen(QColor(0x90, 0x90, 0x90), 1.5, Qt::DashLine));
    *measured = new QLineSeries(chart);
    (*measured)->setName(QObject::tr("measured"));
    (*measured)->setPen(QPen(QColor(0x42, 0x85, 0xf4), 1.5));
    for (QLineSeries *s : {*predicted, *measured}) {
        chart->addSeries(s);
        s->attachAxis(*x);
        s->attachAxis(*y);
    }
    auto *view = new QChartView(chart, parent);
    view->setRenderHint(QPainter::Antialiasing);
    // Nothing to plot yet: a hint instead of axes over an arbitrary range ("2e-09").
    auto *empty = new ChartEmptyState(
        chart, QObject::tr("Select a plan and press Run: the predicted and measured curves"), view);
    empty->setObjectName(QStringLiteral("runChartEmptyState"));
    empty->setEmpty(true);
    return view;
}

/// Sets `label`'s text and shows it only with some: the gradient check's line is empty until a
/// run ends, and an empty line took the Run tab's charts' height at 1366x768.
void setShownText(QLabel *label, const QString &text)
{
    label->setText(text);
    label->setVisible(!text.isEmpty());
}

/// Shows `view`'s hint while `series` are all empty.
void showEmptyState(QChartView *view, std::initializer_list<const QLineSeries *> series)
{
    bool empty = true;
    for (const QLineSeries *s : series)
        empty = empty && s->count() == 0;
    if (auto *state = view->findChild<ChartEmptyState *>(QStringLiteral("runChartEmptyState")))
        state->setEmpty(empty);
}
} // namespace

RunPanel::RunPanel(RunController *controller, QWidget *parent)
    : QWidget(parent), m_controller(controller), m_backend(new QComboBox(this)),
      m_iterations(new QSpinBox(this)), m_run(new QPushButton(tr("Run"), this)),
      m_stop(new QPushButton(tr("Stop"), this)),
      m_calibrate(new QPushButton(tr("Calibrate on this device"), this)),
      m_status(new QLabel(this)), m_gradients(new QLabel(this)), m_timeSource(new QLabel(this))
{
    m_backend->installEventFilter(this);
    m_calibrate->setObjectName(QStringLiteral("plannerCalibrate"));
    m_calibrate->setToolTip(
        tr("Run store-all on the selected backend and time every plan with each op's "
           "measured time instead of the roofline estimate"));
    m_timeSource->setObjectName(QStringLiteral("plannerTimeSource"));
    m_timeSource->setText(tr("Times: estimate (roofline)"));
    setObjectName(QStringLiteral("plannerRun"));
    m_iterations->setRange(1, 1000);
    m_iterations->setValue(3);
    m_stop->setEnabled(false);
    m_status->setWordWrap(true);
    m_gradients->setWordWrap(true);
    m_gradients->hide(); // until a run's gradient check has something to say
    m_memoryView = makeChart(tr("Bytes in use"), tr("MiB"), &m_memX, &m_memY, &m_memMeasured,
                             &m_memPredicted, this);
    m_timeView = makeChart(tr("Step time"), tr("ms"), &m_timeX, &m_timeY, &m_timeMeasured,
                           &m_timePredicted, this);
    m_oom = new QLineSeries(m_memoryView->chart());
    m_oom->setName(tr("failed here"));
    m_oom->setPen(QPen(QColor(0xc6, 0x28, 0x28), 2));
    m_memoryView->chart()->addSeries(m_oom);
    m_oom->attachAxis(m_memX);
    m_oom->attachAxis(m_memY);

    auto *form = new QFormLayout;
    form->addRow(tr("Backend"), m_backend);
    form->addRow(tr("Iterations"), m_iterations);
    auto *buttons = new QHBoxLayout;
    buttons->addWidget(m_run);
    buttons->addWidget(m_stop);
    buttons->addWidget(m_calibrate);
    buttons->addStretch();
    auto *charts = new QSplitter(Qt::Horizontal, this);
    charts->addWidget(m_memoryView);
    charts->addWidget(m_timeView);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    // The fields, then the buttons and the status under them: side by side they made the
    // bottom docks (and so the window) at least 600 px wide.
    auto *top = new QHBoxLayout;
    top->addLayout(form);
    top->addWidget(m_status, 1);
    layout->addLayout(top);
    layout->addLayout(buttons);
    layout->addWidget(m_timeSource);
    layout->addWidget(m_gradients);
    layout->addWidget(charts, 1);

    connect(m_run, &QPushButton::clicked, this, &RunPanel::run);
    connect(m_stop, &QPushButton::clicked, this, &RunPanel::stop);
    connect(m_calibrate, &QPushButton::clicked, this, &RunPanel::calibrate);
    connect(controller, &RunController::finished, this, &RunPanel::finished);
    m_drain.setInterval(33); // ~30 times a second, whatever the step rate
    connect(&m_drain, &QTimer::timeout, this, &RunPanel::drain);
    refreshBackends();
    m_status->setText(tr("Idle."));
}

void RunPanel::setRequestProvider(std::function<std::optional<RunRequest>()> provider)
{
    m_provider = std::move(provider);
}

void RunPanel::setCalibrationProvider(std::function<std::optional<RunRequest>()> provider)
{
    m_calibrationProvider = std::move(provider);
}

void RunPanel::setTimeSource(const QString &text) { m_timeSource->setText(text); }
QString RunPanel::timeSourceText() const { return m_timeSource->text(); }

void RunPanel::calibrate()
{
    if (m_controller->isRunning() || !m_calibrationProvider)
        return;
    std::optional<RunRequest> request = m_calibrationProvider();
    if (!request || !request->problem || !request->problem->training) {
        m_status->setText(tr("Nothing to calibrate on: load an ONNX model first."));
        return;
    }
    m_calibrationGraph = request->problem->training;
    m_calibrationSchedule = request->schedule;
    m_calibrationSamples.clear();
    m_calibrationDevice = m_backend->currentText();
    request->iterations = std::max(3, m_iterations->value());
    const int iterations = request->iterations;
    startRun(std::move(*request));
    if (m_controller->isRunning())
        m_status->setText(
            tr("Calibrating on %1: store-all, %n timed step(s)...", nullptr, iterations)
                .arg(m_calibrationDevice));
    else
        m_calibrationGraph.reset();
}

void RunPanel::refreshBackends()
{
    const QString current = m_backend->currentData().toString();
    m_backend->clear();
    for (const BackendChoice &b : m_controller->backends())
        m_backend->addItem(b.label, b.id);
    const int i = m_backend->findData(current);
    if (i >= 0)
        m_backend->setCurrentIndex(i);
    m_run->setEnabled(m_backend->count() > 0 && !m_controller->isRunning());
}

int RunPanel::iterations() const { return m_iterations->value(); }
void RunPanel::setIterations(int n) { m_iterations->setValue(n); }
bool RunPanel::eventFilter(QObject *watched, QEvent *event)
{
    // The device list is filled the first time the user reaches for it (before the popup opens).
    if (watched == m_backend &&
        (event->type() == QEvent::MouseButtonPress || event->type() == QEvent::KeyPress ||
         event->type() == QEvent::FocusIn) &&
        m_controller->discoverBackends())
        refreshBackends();
    return QWidget::eventFilter(watched, event);
}

void RunPanel::setBackend(const QString &id)
{
    if (m_backend->findData(id) < 0 && m_controller->discoverBackends())
        refreshBackends();
    const int i = m_backend->findData(id);
    if (i >= 0)
        m_backend->setCurrentIndex(i);
}
int RunPanel::measuredPointCount() const { return int(m_memPoints.size()); }
QString RunPanel::statusText() const { return m_status->text(); }
bool RunPanel::failureMarked() const { return m_oom->count() > 0; }
QString RunPanel::gradientText() const { return m_gradients->text(); }
QString RunPanel::memoryUnit() const { return m_memY->titleText(); }

void RunPanel::clearResults()
{
    if (m_controller->isRunning()) {
        m_dropRun = true;
        m_controller->stop();
    }
    m_controller->takeSamples();
    m_memPoints.clear();
    m_timePoints.clear();
    for (QLineSeries *s : {m_memMeasured, m_timeMeasured, m_memPredicted, m_timePredicted, m_oom})
        s->clear();
    m_summary = RunSummary();
    m_hasRun = false;
    m_lastBytes.clear();
    m_lastSeconds.clear();
    m_iteration = 0;
    m_calibrationGraph.reset();
    m_calibrationSamples.clear();
    setShownText(m_gradients, QString());
    m_status->setText(tr("Idle."));
    // Another model's run must not leave its axes behind (the walkthrough saw the old ranges).
    m_memMax = 1e-9;
    m_timeMax = 1e-6;
    m_stepCount = 1;
    updateAxes();
}

void RunPanel::updateAxes(const QList<QPointF> *memPredicted, const QList<QPointF> *timePredicted)
{
    // QtCharts lays a series out again (maps and strokes every point) at each change of an
    // axis' range, eight of them below: the series are emptied while the axes move and filled
    // once after (a slider move on the 8B decoder spent 60 ms here).
    QLineSeries *const series[] = {m_memMeasured, m_timeMeasured, m_memPredicted, m_timePredicted,
                                   m_oom};
    QList<QPointF> kept[std::size(series)];
    for (size_t i = 0; i < std::size(series); ++i) {
        kept[i] = series[i]->points();
        if (!kept[i].isEmpty())
            series[i]->clear();
    }
    if (memPredicted)
        kept[2] = *memPredicted;
    if (timePredicted)
        kept[3] = *timePredicted;
    m_memX->setRange(0, m_stepCount);
    m_memX->applyNiceNumbers(); // steps 0, 100, 200 (it printed 0, 110, 220, 330, 441)
    m_timeX->setRange(0, m_stepCount);
    m_timeX->applyNiceNumbers();
    // Round ticks (0, 200, 400 KiB), not a tenth of an odd maximum (908.8).
    m_memY->setRange(0, m_memMax * 1.05);
    m_memY->applyNiceNumbers();
    m_timeY->setRange(0, m_timeMax * 1.05);
    m_timeY->applyNiceNumbers();
    for (size_t i = 0; i < std::size(series); ++i)
        if (!kept[i].isEmpty())
            series[i]->replace(kept[i]);
    showEmptyState(m_memoryView, {m_memMeasured, m_memPredicted});
    showEmptyState(m_timeView, {m_timeMeasured, m_timePredicted});
}

void RunPanel::setPredicted(const core::sim::Timeline &t)
{
    m_memMax = 1e-9;
    m_timeMax = 1e-6;
    // The unit of the predicted peak, as the planner's tables and charts print it.
    const core::ByteUnit unit = core::byteUnitFor(t.peakBytes);
    m_memUnit = unit.bytes;
    m_memY->setTitleText(QLatin1String(unit.name));
    std::vector<double> stepMs(t.points.size());
    double prevEnd = 0;
    for (size_t i = 0; i < t.points.size(); ++i) {
        const auto &p = t.points[i];
        stepMs[i] = std::max(0.0, p.endSeconds - prevEnd) * 1e3;
        prevEnd = std::max(prevEnd, p.endSeconds);
        m_memMax = std::max(m_memMax, double(p.peakDuringStep) / m_memUnit);
        m_timeMax = std::max(m_timeMax, stepMs[i]);
    }
    // Drawn thinned to the screen's width (the lowest and highest step of each pixel column:
    // every peak at its height): the chart is never wider, and 15,000 points of an 8B decoder's
    // schedule cost QtCharts tens of milliseconds a slider move.
    const int columns = std::max(width(), screen() ? screen()->geometry().width() : 1920);
    QList<QPointF> mem, time;
    for (size_t i : memoryCurveSteps(t.points, columns))
        mem.append(QPointF(double(i), double(t.points[i].peakDuringStep) / m_memUnit));
    for (size_t i : columnExtremes(stepMs.size(), columns, [&](size_t i) { return stepMs[i]; }))
        time.append(QPointF(double(i), stepMs[i]));
    m_stepCount = std::max<int>(1, int(t.points.size()));
    updateAxes(&mem, &time);
}

void RunPanel::run()
{
    if (m_controller->isRunning() || !m_provider)
        return;
    std::optional<RunRequest> request = m_provider();
    if (!request) {
        m_status->setText(tr("Nothing to run: load an ONNX model and solve a plan first."));
        return;
    }
    request->iterations = m_iterations->value();
    startRun(std::move(*request));
}

void RunPanel::startRun(RunRequest request)
{
    request.backend = m_backend->currentData().toString();
    m_runBackend = request.backend;
    m_memPoints.clear();
    m_timePoints.clear();
    m_lastBytes.clear();
    m_lastSeconds.clear();
    m_memMeasured->clear();
    m_timeMeasured->clear();
    m_oom->clear();
    m_iteration = 0;
    setShownText(m_gradients, QString());
    if (!m_controller->start(std::move(request))) {
        m_status->setText(tr("Could not start the run (no backend or no model)."));
        return;
    }
    m_status->setText(
        tr("Running on %1: reference step, then %n iteration(s)...", nullptr, m_iterations->value())
            .arg(m_backend->currentText()));
    m_run->setEnabled(false);
    m_calibrate->setEnabled(false);
    m_stop->setEnabled(true);
    m_drain.start();
}

void RunPanel::stop()
{
    m_controller->stop();
    m_status->setText(tr("Stopping..."));
}

void RunPanel::drain()
{
    std::vector<RunSample> samples = m_controller->takeSamples();
    if (samples.empty())
        return;
    if (m_calibrationGraph)
        m_calibrationSamples.insert(m_calibrationSamples.end(), samples.begin(), samples.end());
    for (const RunSample &s : samples) {
        if (s.iteration != m_iteration) {
            // A new iteration redraws from the left; the previous one stays in the summary.
            m_iteration = s.iteration;
            m_memPoints.clear();
            m_timePoints.clear();
            m_lastBytes.clear();
            m_lastSeconds.clear();
        }
        m_lastBytes.emplace_back(s.step, s.peakDuringStep);
        m_lastSeconds.emplace_back(s.step, s.seconds);
        const double mem = double(s.peakDuringStep) / m_memUnit, ms = s.seconds * 1e3;
        m_memPoints.append(QPointF(s.step, mem));
        m_timePoints.append(QPointF(s.step, ms));
        m_memMax = std::max(m_memMax, mem);
        m_timeMax = std::max(m_timeMax, ms);
        m_stepCount = std::max(m_stepCount, s.step + 1);
    }
    m_memMeasured->replace(m_memPoints);
    m_timeMeasured->replace(m_timePoints);
    updateAxes();
    m_status->setText(tr("Iteration %1, step %2 of %3")
                          .arg(m_iteration + 1)
                          .arg(int(m_memPoints.isEmpty() ? 0 : m_memPoints.back().x()))
                          .arg(m_stepCount));
}

void RunPanel::finished(const RunSummary &summary)
{
    if (m_dropRun) { // stopped by clearResults(): nothing of it belongs to the model shown now
        m_dropRun = false;
        m_drain.stop();
        m_controller->takeSamples();
        m_run->setEnabled(true);
        m_calibrate->setEnabled(true);
        m_stop->setEnabled(false);
        return;
    }
    drain();
    m_drain.stop();
    m_summary = summary;
    m_run->setEnabled(true);
    m_calibrate->setEnabled(true);
    m_stop->setEnabled(false);
    if (m_calibrationGraph) {
        finishCalibration(summary);
        emit runFinished(summary);
        return;
    }
    m_hasRun = true;
    showSummary(summary, QString());
    emit runFinished(summary);
}

void RunPanel::showSummary(const RunSummary &summary, const QString &prefix)
{
    if (!summary.ok) {
        // A Stop ends the run where it was; only an error (an OOM, a backend failure) marks the
        // step that failed.
        if (summary.failedStep >= 0 && !summary.cancelled)
            m_oom->replace(
                {QPointF(summary.failedStep, 0), QPointF(summary.failedStep, m_memMax * 1.1)});
        m_status->setText(
            prefix +
            (summary.cancelled
                 ? (summary.failedStep >= 0 ? tr("Stopped at step %1.").arg(summary.failedStep)
                                            : tr("Stopped."))
                 : tr("Failed%1: %2")
                       .arg(summary.failedStep >= 0 ? tr(" at step %1").arg(summary.failedStep)
                                                    : QString(),
                            summary.error)));
    } else {
        m_status->setText(
            prefix +
            tr("Done: %n iteration(s), %1 per step, measured peak %2.", nullptr, summary.iterations)
                .arg(summary.stepSeconds < 1
                         ? QStringLiteral("%1 ms").arg(summary.stepSeconds * 1e3, 0, 'f', 1)
                         : QStringLiteral("%1 s").arg(summary.stepSeconds, 0, 'f', 2),
                     QString::fromStdString(core::formatBytes(summary.measuredPeakBytes))));
        if (summary.gradientsChecked)
            setShownText(m_gradients,
                         summary.gradientsMatch
                             ? tr("Gradient check passed: max relative error %1 against store-all.")
                                   .arg(summary.maxRelativeError, 0, 'g', 3)
                             : tr("Gradient check FAILED: max relative error %1 in %2.")
                                   .arg(summary.maxRelativeError, 0, 'g', 3)
                                   .arg(summary.worstEntry));
        else
            setShownText(m_gradients, tr("Gradients not compared: %1").arg(summary.error));
    }
}

std::optional<core::io::SessionRun> RunPanel::sessionRun() const
{
    if (!m_hasRun)
        return std::nullopt;
    core::io::SessionRun r;
    r.backend = m_runBackend.toStdString();
    r.ok = m_summary.ok;
    r.cancelled = m_summary.cancelled;
    r.error = m_summary.error.toStdString();
    r.failedStep = m_summary.failedStep;
    r.iterations = m_summary.iterations;
    r.measuredPeakBytes = m_summary.measuredPeakBytes;
    r.stepSeconds = m_summary.stepSeconds;
    r.gradientsChecked = m_summary.gradientsChecked;
    r.gradientsMatch = m_summary.gradientsMatch;
    r.maxRelativeError = m_summary.maxRelativeError;
    r.worstEntry = m_summary.worstEntry.toStdString();
    r.bytesInUse = m_lastBytes;
    r.stepTimes = m_lastSeconds;
    return r;
}

void RunPanel::restoreRun(const core::io::SessionRun &run, const QString &planLabel)
{
    if (m_controller->isRunning())
        return; // a live run's figures win over a saved one's
    RunSummary s;
    s.ok = run.ok;
    s.cancelled = run.cancelled;
    s.error = QString::fromStdString(run.error);
    s.failedStep = run.failedStep;
    s.iterations = run.iterations;
    s.measuredPeakBytes = run.measuredPeakBytes;
    s.stepSeconds = run.stepSeconds;
    s.gradientsChecked = run.gradientsChecked;
    s.gradientsMatch = run.gradientsMatch;
    s.maxRelativeError = run.maxRelativeError;
    s.worstEntry = QString::fromStdString(run.worstEntry);
    m_summary = s;
    m_hasRun = true;
    m_runBackend = QString::fromStdString(run.backend);
    m_lastBytes = run.bytesInUse;
    m_lastSeconds = run.stepTimes;
    m_memPoints.clear();
    m_timePoints.clear();
    for (const auto &[step, bytes] : run.bytesInUse) {
        m_memPoints.append(QPointF(step, double(bytes) / m_memUnit));
        m_memMax = std::max(m_memMax, double(bytes) / m_memUnit);
        m_stepCount = std::max(m_stepCount, step + 1);
    }
    for (const auto &[step, seconds] : run.stepTimes) {
        m_timePoints.append(QPointF(step, seconds * 1e3));
        m_timeMax = std::max(m_timeMax, seconds * 1e3);
    }
    m_memMeasured->replace(m_memPoints);
    m_timeMeasured->replace(m_timePoints);
    m_oom->clear(); // showSummary marks a failing step
    setShownText(m_gradients, QString());
    updateAxes();
    const QString where = QString::fromStdString(run.backend);
    showSummary(s, planLabel.isEmpty() ? tr("Saved run (%1): ").arg(where)
                                       : tr("Saved run of %1 (%2): ").arg(planLabel, where));
}

void RunPanel::finishCalibration(const RunSummary &summary)
{
    const std::shared_ptr<const core::training::TrainingGraph> graph =
        std::move(m_calibrationGraph);
    m_calibrationGraph.reset();
    if (!summary.ok) {
        m_status->setText(summary.cancelled ? tr("Calibration stopped.")
                                            : tr("Calibration failed: %1").arg(summary.error));
        return;
    }
    // The samples carry each step's time per iteration: the recorder turns the Compute steps into
    // per-op medians, as `remat run --profile-out` does.
    core::exec::ProfileRecorder recorder(*graph);
    int iteration = -1;
    double stepSeconds = 0;
    for (const RunSample &s : m_calibrationSamples) {
        if (s.iteration != iteration) {
            if (iteration >= 0)
                recorder.commitIteration(stepSeconds);
            iteration = s.iteration;
            stepSeconds = 0;
        }
        stepSeconds += s.seconds;
        if (s.step < 0 || size_t(s.step) >= m_calibrationSchedule.steps.size())
            continue;
        core::schedule::StepEvent e;
        e.index = core::StepIndex{size_t(s.step)};
        e.step = m_calibrationSchedule.steps[size_t(s.step)];
        e.endSeconds = s.seconds;
        recorder.onStepEnd(e);
    }
    if (iteration >= 0)
        recorder.commitIteration(stepSeconds);
    m_calibrationSamples.clear();
    const core::cost::Profile profile = recorder.profile(
        {m_calibrationDevice.toStdString(), m_calibrationDevice.toStdString(), "store-all"});
    if (profile.ops.empty()) {
        m_status->setText(tr("Calibration timed no op."));
        return;
    }
    m_status->setText(tr("Calibrated on %1: %2 ops timed, median step %3 ms.")
                          .arg(m_calibrationDevice)
                          .arg(profile.ops.size())
                          .arg(profile.stepSeconds * 1e3, 0, 'f', 2));
    emit calibrated(profile, m_calibrationDevice);
}

} // namespace remat::ui
