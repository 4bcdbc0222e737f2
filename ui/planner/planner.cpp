#include "ui/planner/planner.h"

#include "core/cost/calibrated.h"
#include "core/exec/cpu/cpu_backend.h"
#include "core/exec/executor.h"
#include "core/exec/profile_recorder.h"
#include "core/io/plan_file.h"
#include "core/io/timeline_csv.h"
#include "core/sim/copy_stalls.h"
#include "core/sim/simulator.h"
#include "core/solvers/chain_support.h"
#include "core/solvers/lowering.h"
#include "core/solvers/registry.h"
#include "core/util/bytes.h"
#include "ui/byte_text.h"
#include "ui/gui_wording.h"
#include "ui/planner/fit_dialog.h"
#include "ui/planner/memory_chart_view.h"
#include "ui/planner/pareto_chart_view.h"
#include "ui/planner/pins_widget.h"
#include "ui/planner/plan_node_colors.h"
#include "ui/planner/plan_table_model.h"
#include "ui/planner/remove_plan_command.h"
#include "ui/planner/run_panel.h"
#include "ui/planner/set_batch_command.h"
#include "ui/planner/set_budget_command.h"
#include "ui/planner/set_objective_command.h"
#include "ui/planner/set_pin_command.h"
#include "ui/planner/set_training_command.h"
#include "ui/planner/step_comparison_view.h"
#include "ui/planner/teaching_view.h"
#include "ui/planner/training_compare_dialog.h"
#include "ui/planner/training_options_dialog.h"

#include <QAction>
#include <QApplication>
#include <QChartView>
#include <QDialogButtonBox>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QMainWindow>
#include <QMenu>
#include <QMessageBox>
#include <QPainter>
#include <QSaveFile>
#include <QSvgGenerator>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace remat::ui {

using core::solvers::Objective;
using core::solvers::PinKind;
using core::solvers::Plan;

namespace {
QString qs(const std::string &s) { return QString::fromStdString(s); }
constexpr int kSweepBudgets = 20;
constexpr int kMinChartPngWidth = 1600;
// Slider moves within one event-loop pass collapse into one solve; the controller drops stale ones.
constexpr int kLiveDebounceMs = 5;
} // namespace

Planner::Planner(QObject *parent)
    : QObject(parent), m_colors(new PlanNodeColors(this)),
      m_tableModel(new PlanTableModel(&m_document, this)),
      m_docks(&m_document, m_tableModel, &m_runs)
{
    pinsWidget()->setNodeOfTensor([this](const QString &t) { return nodeOfTensor(t); });
    runPanel()->setRequestProvider([this] { return makeRunRequest(); });
    runPanel()->setCalibrationProvider([this] { return makeCalibrationRequest(); });
    connect(runPanel(), &RunPanel::calibrated, this,
            [this](const core::cost::Profile &p, const QString &device) {
                if (core::Status s = useProfile(p, device); !s.isOk())
                    runPanel()->setTimeSource(
                        tr("Times: estimate (calibration not used: %1)").arg(qs(s.message())));
                else
                    timeSecondBatch(p, device);
            });
    setBackends({cpuBackendChoice()});

    m_undo = m_document.undoStack()->createUndoAction(this, tr("&Undo"));
    m_undo->setShortcut(QKeySequence::Undo);
    m_redo = m_document.undoStack()->createRedoAction(this, tr("&Redo"));
    // The platform's Redo keys (Ctrl+Y, Ctrl+Shift+Z, ...), plus Ctrl+Shift+Z where it has none,
    // each once: a key bound twice is an "ambiguous shortcut" and then does nothing at all.
    QList<QKeySequence> redoKeys = QKeySequence::keyBindings(QKeySequence::Redo);
    // Ctrl+Y too where the platform binds only Ctrl+Shift+Z (Linux desktops): users of every
    // other editor press it.
    for (const QKeySequence &key :
         {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z), QKeySequence(Qt::CTRL | Qt::Key_Y)})
        if (!redoKeys.contains(key))
            redoKeys << key;
    m_redo->setShortcuts(redoKeys);
    m_trainingAction = new QAction(tr("Tra&ining..."), this);
    m_trainingAction->setObjectName(QStringLiteral("plannerTrainingAction"));
    auto trainingTip = [this] {
        m_trainingAction->setToolTip(
            tr("Optimizer, precision, sharding and micro-batches of the training step (now: %1)")
                .arg(trainingSummary(m_document.training())));
    };
    trainingTip();
    // Restores change the options too (while documentChanged ignores them).
    connect(&m_document, &PlannerDocument::changed, this, [trainingTip](PlannerChange c) {
        if (c == PlannerChange::Training)
            trainingTip();
    });
    connect(m_trainingAction, &QAction::triggered, this, [this] {
        auto *parent = qobject_cast<QWidget *>(m_trainingAction->parent());
        TrainingOptionsDialog dialog(parent ? parent : QApplication::activeWindow());
        dialog.setOptions(m_document.training());
        // A tensor-parallel size the model's heads cannot take is refused in the dialog, with
        // the sizes that divide them (the step's own check, on the problem shown).
        dialog.setChecker([this](const core::training::TrainingOptions &o) {
            return tensorParallelRefusal(m_problem.get(), o);
        });
        const core::onnx::ImportOptions current = m_document.importSettings();
        dialog.setPatterns(current.freezePatterns, current.trainablePatterns);
        if (dialog.exec() != QDialog::Accepted)
            return;
        setTraining(dialog.options());
        if (dialog.freezePatterns() != current.freezePatterns ||
            dialog.trainablePatterns() != current.trainablePatterns) {
            core::onnx::ImportOptions next = current;
            next.freezePatterns = dialog.freezePatterns();
            next.trainablePatterns = dialog.trainablePatterns();
            emit importSettingsRequested(next);
        }
    });

    connect(&m_document, &PlannerDocument::changed, this, &Planner::documentChanged);
    connect(&m_solves, &SolveController::solved, this, &Planner::onSolved);
    connect(&m_solves, &SolveController::failed, this, &Planner::onFailed);
    connect(&m_solves, &SolveController::progress, solverPanel(),
            [this](quint64, const SolveProgressInfo &info) { solverPanel()->showProgress(info); });
    connect(&m_solves, &SolveController::busyChanged, solverPanel(), &SolverPanel::setBusy);
    connect(&m_solves, &SolveController::sweepPoint, paretoChart(),
            [this](quint64, const ParetoPoint &p) { paretoChart()->addPoint(p); });
    connect(&m_solves, &SolveController::sweepFinished, this, [this](quint64, bool cancelled) {
        if (solverPanel())
            solverPanel()->showMessage(cancelled ? tr("Sweep cancelled.") : tr("Sweep done."));
    });
    connect(paretoChart(), &ParetoChartView::pointClicked, this, &Planner::showParetoPlan);
    // Every plan of the Plans table is a point on the Pareto chart (Compare all fills it); a
    // new model or batch empties the table and so the points. Not gated by m_restoring: the
    // points follow the table whatever changed it. Clicking a point selects its row.
    connect(&m_document, &PlannerDocument::changed, this, [this](PlannerChange change) {
        if (change == PlannerChange::Plans)
            paretoChart()->setPlans(
                ParetoChartView::planPointsOf(m_document.plans(), m_tableModel->bestRow()));
    });
    connect(paretoChart(), &ParetoChartView::planClicked, this,
            [this](int plan) { m_docks.selectPlan(plan); });
    connect(solverPanel(), &SolverPanel::solveRequested, this, &Planner::solve);
    connect(solverPanel(), &SolverPanel::compareAllRequested, this, &Planner::compareAll);
    connect(solverPanel(), &SolverPanel::sweepRequested, this, &Planner::sweep);
    connect(solverPanel(), &SolverPanel::cancelRequested, this, &Planner::cancel);
    connect(planTable()->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex &current) {
                if (current.isValid())
                    m_document.setCurrentPlanIndex(m_docks.planIndexOfRow(current.row()));
            });
    // Several rows selected: the memory chart overlays the others' curves on the current one.
    connect(planTable()->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            [this] { updateMemoryChart(); });
    connect(&m_runs, &RunController::started, this,
            [this] { m_runPlan = m_document.currentPlanIndex(); });
    // Delete removes the selected plan rows, one undo step.
    auto *remove = new QAction(tr("Delete plan"), planTable());
    remove->setShortcut(QKeySequence::Delete);
    remove->setShortcutContext(Qt::WidgetShortcut);
    connect(remove, &QAction::triggered, this, &Planner::deleteSelectedPlans);
    planTable()->addAction(remove);
    planTable()->setContextMenuPolicy(Qt::ActionsContextMenu);
    connect(memoryChart(), &MemoryChartView::stepSelected, teachingView(), &TeachingView::setStep);
    connect(teachingView(), &TeachingView::stepChanged, this, [this](int step) {
        if (memoryChart())
            memoryChart()->setCursorStep(step);
        emit stepSelected(step, m_analysis.nodeAtStep(step));
    });
    connect(teachingView(), &TeachingView::stepStateChanged, this, &Planner::stepStateChanged);
    m_liveTimer.setSingleShot(true);
    m_liveTimer.setInterval(kLiveDebounceMs);
    connect(&m_liveTimer, &QTimer::timeout, this, [this] { resolveCurrent(true); });
}

Planner::~Planner()
{
    m_loads.stopAll();
    m_solves.cancelAll();
    m_runs.stop();
    m_loads.waitForWorkers();
    m_solves.waitForIdle();
    m_runs.waitForDone();
}

QList<QDockWidget *> Planner::createDocks(QMainWindow *window) { return m_docks.addTo(window); }

bool Planner::raiseView(const QString &name) { return m_docks.raise(name); }

void Planner::showMidBackward()
{
    const int bb = m_analysis.backwardBeginStep();
    if (bb < 0 || m_analysis.stepCount() == 0)
        return;
    teachingView()->setStep((bb + int(m_analysis.stepCount())) / 2);
}

QMenu *Planner::createMenu(QWidget *parent)
{
    auto *menu = new QMenu(tr("&Planner"), parent);
    menu->addAction(m_trainingAction);
    QAction *fit = menu->addAction(tr("&Largest batch for this GPU..."), this, [this, parent] {
        if (!openFitDialog(parent))
            QMessageBox::information(parent, tr("Largest batch"), tr("Open a model first."));
    });
    fit->setObjectName(QStringLiteral("plannerFitAction"));
    fit->setToolTip(tr("Per solver, the largest batch whose training step fits a GPU's memory"));
    QAction *compareTraining =
        menu->addAction(tr("Compare trainin&g options..."), this, [this, parent] {
            if (!openTrainingCompareDialog(parent))
                QMessageBox::information(parent, tr("Compare training options"),
                                         tr("Open a model first."));
        });
    compareTraining->setObjectName(QStringLiteral("plannerCompareTrainingAction"));
    compareTraining->setToolTip(tr("The model under two optimizers, precisions or shardings, "
                                   "side by side: memory curves and a difference table"));
    QAction *comparePlans = menu->addAction(tr("Compare s&elected plans"), this, [this, parent] {
        if (!openPlanComparison(parent))
            QMessageBox::information(parent, tr("Compare selected plans"),
                                     tr("Select two plans in the Plans table (click one, "
                                        "then Ctrl+click the other)."));
    });
    comparePlans->setObjectName(QStringLiteral("plannerComparePlansAction"));
    menu->addSeparator();
    menu->addAction(tr("&Solve"), QKeySequence(Qt::CTRL | Qt::Key_R), this,
                    [this] { solve(solverPanel()->currentSolver()); });
    QAction *all = menu->addAction(tr("&Compare all solvers"), this, &Planner::compareAll);
    all->setToolTip(tr("Every solver on these inputs; MILP, LP and the offload searches stop "
                       "after %1 s (their rows say so)")
                        .arg(kCompareAllSeconds));
    QAction *allLong = menu->addAction(tr("Compare all solvers, MILP and LP at &full time"), this,
                                       [this] { compareAllWithin(0); });
    allLong->setObjectName(QStringLiteral("plannerCompareAllFullAction"));
    allLong->setToolTip(tr("Every solver, the slow ones each to its own time limit (minutes on "
                           "large models)"));
    menu->addAction(tr("&Pareto sweep"), this, &Planner::sweep);
    menu->addAction(tr("Ca&ncel solves"), this, &Planner::cancel);
    menu->addSeparator();
    menu->addAction(m_undo);
    menu->addAction(m_redo);
    menu->addSeparator();
    menu->addAction(tr("&Open session..."), this, [this, parent] {
        if (!maybeSave(parent))
            return;
        const QString path = QFileDialog::getOpenFileName(parent, tr("Open session"), QString(),
                                                          tr("Remat sessions (*.rematproj)"));
        if (path.isEmpty())
            return;
        if (core::Status s = openSession(path); !s.isOk())
            QMessageBox::warning(parent, tr("Open session"), qs(s.message()));
    });
    menu->addAction(tr("Save session &as..."), this, [this, parent] {
        const QString path = QFileDialog::getSaveFileName(parent, tr("Save session"), m_sessionPath,
                                                          tr("Remat sessions (*.rematproj)"));
        if (path.isEmpty())
            return;
        if (core::Status s = saveSession(path); !s.isOk())
            QMessageBox::warning(parent, tr("Save session"), qs(s.message()));
    });
    menu->addSeparator();
    auto exportTo = [this, parent](const QString &title, const QString &filter,
                                   std::function<core::Status(const QString &)> fn) {
        const QString path = QFileDialog::getSaveFileName(parent, title, QString(), filter);
        if (path.isEmpty())
            return;
        if (core::Status s = fn(path); !s.isOk())
            QMessageBox::warning(parent, title, qs(s.message()));
    };
    menu->addAction(tr("Export plan &JSON..."), this, [=, this] {
        exportTo(tr("Export plan"), tr("Plan JSON (*.json)"),
                 [this](const QString &p) { return exportPlanJson(p); });
    });
    QAction *pytorch = menu->addAction(tr("Apply in P&yTorch..."));
    pytorch->setObjectName(QStringLiteral("applyInPyTorch"));
    connect(pytorch, &QAction::triggered, this, [this, parent, pytorch] {
        // The action's data, when set, is the plan path to write (scripts and tests: no dialog).
        const QString preset = pytorch->data().toString();
        const QString path = preset.isEmpty()
                                 ? QFileDialog::getSaveFileName(parent, tr("Apply in PyTorch"),
                                                                QString(), tr("Plan JSON (*.json)"))
                                 : preset;
        if (path.isEmpty())
            return;
        QString snippet;
        if (core::Status s = exportForPyTorch(path, &snippet); !s.isOk())
            QMessageBox::warning(parent, tr("Apply in PyTorch"), qs(s.message()));
        else if (preset.isEmpty())
            QMessageBox::information(
                parent, tr("Apply in PyTorch"),
                tr("Wrote %1, %2 and remat_apply.py. In Python, with `model` your "
                   "torch.nn.Module:\n\n%3")
                    .arg(path, snippet, pytorchSnippet(path, m_document.modelPath())));
    });
    menu->addAction(tr("Export &timeline CSV..."), this, [=, this] {
        exportTo(tr("Export timeline"), tr("CSV (*.csv)"),
                 [this](const QString &p) { return exportTimelineCsv(p); });
    });
    menu->addAction(tr("Export &memory chart..."), this, [=, this] {
        exportTo(tr("Export chart"), tr("Images (*.png *.svg)"),
                 [this](const QString &p) { return exportChart(memoryChart(), p); });
    });
    menu->addAction(tr("Export Pareto c&hart..."), this, [=, this] {
        exportTo(tr("Export chart"), tr("Images (*.png *.svg)"),
                 [this](const QString &p) { return exportChart(paretoChart(), p); });
    });
    return menu;
}

// ---- configuration ------------------------------------------------------------------------

std::vector<std::shared_ptr<const core::solvers::Solver>> Planner::registrySolvers()
{
    std::vector<std::shared_ptr<const core::solvers::Solver>> out;
    for (auto &s : core::solvers::makeSolvers())
        if (s)
            out.push_back(std::shared_ptr<const core::solvers::Solver>(std::move(s)));
    return out;
}

void Planner::setSolvers(std::vector<std::shared_ptr<const core::solvers::Solver>> solvers)
{
    m_solvers = std::move(solvers);
    refreshSolverInfos();
}

BackendChoice Planner::cpuBackendChoice()
{
    return {QStringLiteral("cpu"), tr("CPU reference (float32)"), [] {
                return core::Expected<std::unique_ptr<core::exec::Backend>>(
                    core::exec::makeCpuBackend());
            }};
}

void Planner::setBackends(std::vector<BackendChoice> backends)
{
    m_runs.setBackends(std::move(backends));
    runPanel()->refreshBackends();
}

void Planner::setFreeMemoryProvider(std::function<std::optional<int64_t>()> provider)
{
    m_freeMemory = provider;
    solverPanel()->setFreeMemoryProvider(std::move(provider));
}

bool Planner::isFast(const core::solvers::Solver &s) const
{
    // MILP, LP rounding and offload searches take seconds to minutes: never on a slider drag.
    return s.capabilities().speed == core::solvers::SpeedClass::Interactive;
}

void Planner::refreshSolverInfos()
{
    m_solverInfos.clear();
    std::optional<core::solvers::ChainView> chain;
    std::optional<core::solvers::GraphFacts> facts;
    if (m_problem) {
        if (auto f = core::solvers::GraphFacts::build(*m_problem->training)) {
            facts = std::move(*f);
            chain = facts->chainView(m_problem->costs.get());
        }
    }
    for (const auto &s : m_solvers) {
        SolverInfo info;
        info.id = qs(s->id());
        info.title = qs(s->title());
        info.description = qs(s->description());
        info.capabilities = s->capabilities();
#ifndef REMAT_HAVE_CBC
        if (info.capabilities.needsCbc) {
            info.usable = false;
            info.whyNot = tr("%1 needs COIN-OR CBC, which this build does not have.").arg(info.id);
        }
#endif
        if (info.usable && !info.capabilities.anyDag && chain) {
            if (core::Status st = core::solvers::requireChain(*chain, s->id()); !st.isOk()) {
                info.usable = false;
                info.whyNot = tr("Chain-only: %1").arg(qs(st.message()));
            }
        }
        if (info.usable && m_document.objective() == Objective::MinPeak &&
            !info.capabilities.minPeak) {
            info.usable = false;
            info.whyNot =
                tr("%1 does not minimise peak memory; choose the budget objective.").arg(info.id);
        }
        if (info.usable && m_document.objective() == Objective::MinTime &&
            !info.capabilities.minTime) {
            info.usable = false;
            info.whyNot =
                tr("%1 does not take a budget; choose the lowest-peak objective.").arg(info.id);
        }
        m_solverInfos << info;
    }
    solverPanel()->setSolvers(m_solverInfos);
}

QStringList Planner::usableSolverIds() const
{
    QStringList ids;
    for (const SolverInfo &i : m_solverInfos)
        if (i.usable)
            ids << i.id;
    return ids;
}

std::shared_ptr<const core::solvers::Solver> Planner::solverById(const QString &id) const
{
    for (const auto &s : m_solvers)
        if (qs(s->id()) == id)
            return s;
    return nullptr;
}

// ---- model --------------------------------------------------------------------------------

void Planner::startNewSession(const QString &modelPath)
{
    const QString abs = QFileInfo(modelPath).absoluteFilePath();
    if (m_pendingSession && QFileInfo(m_pendingSession->modelPath).absoluteFilePath() == abs)
        return; // the session being opened loads this model
    if (!m_document.modelPath().isEmpty() &&
        QFileInfo(m_document.modelPath()).absoluteFilePath() == abs)
        return;
    ++m_generation; // solves and loads for the old model are dropped when they arrive
    m_solves.cancelAll();
    m_loads.stopAll();
    m_pendingSession.reset();
    m_sessionPath.clear();
    m_problem.reset();
    m_cache.clear();
    m_runPlan = -1;
    m_freshSession = true;
    m_restoring = true;
    m_document.undoStack()->clear();
    m_document.clearPlans();
    m_document.setPins({});
    // A new session starts with the default training options: carried over from the last
    // model they changed its figures unseen. Said in the Solver dock; the status bar shows them.
    const core::training::TrainingOptions before = m_document.modelPath().isEmpty()
                                                       ? core::training::TrainingOptions{}
                                                       : m_document.training();
    if (!m_document.modelPath().isEmpty())
        m_document.setTraining({});
    m_document.setModel(abs, QString());
    m_restoring = false;
    m_document.markSaved();
    m_tableModel->setGraph(nullptr);
    runPanel()->clearResults();
    paretoChart()->clearPoints();
    refreshSolverInfos();
    updateCurrentPlanViews();
    solverPanel()->showMessage(
        before == core::training::TrainingOptions{}
            ? tr("Loading the training step of %1...").arg(QFileInfo(abs).fileName())
            : tr("Loading the training step of %1 with the default training options (%2; the "
                 "last model had %3: Planner > Training... sets them)...")
                  .arg(QFileInfo(abs).fileName(), trainingSummary({}), trainingSummary(before)));
}

void Planner::openModel(const QString &path, int64_t batch,
                        const core::onnx::ImportOptions &settings)
{
    // Another model: the old one's plans must not stay live while this one loads or fails.
    startNewSession(path);
    m_document.setImportSettings(settings);
    m_solves.cancelAll();
    const quint64 generation = ++m_generation;
    m_loadingBatch = batch;
    core::onnx::ImportOptions userSettings = settings;
    userSettings.stop = {};
    userSettings.progress = {};
    // The explorer loaded it already (the file the window shows, at this batch): take that one.
    const core::training::TrainingOptions training = m_document.training();
    std::shared_ptr<const PlannerProblem> known =
        m_problemCache ? m_problemCache->find(path, batch, userSettings, true, training) : nullptr;
    auto work = [p = path.toStdString(), batch, userSettings, training,
                 known](JobContext &ctx) -> core::Expected<std::shared_ptr<const PlannerProblem>> {
        if (known)
            return known;
        return loadPlannerProblem(p, batch, ctx.stop(), userSettings, training);
    };
    m_loads.replace(
        std::move(work),
        [this, generation](quint64, core::Expected<std::shared_ptr<const PlannerProblem>> result) {
            if (generation != m_generation)
                return; // setProblem replaced this one
            if (!result) {
                // "Session: ..." in the status bar only when a session was being opened.
                const bool wasSession = m_pendingSession.has_value();
                m_pendingSession.reset();
                const QString msg = guiWording(qs(result.status().toString()));
                if (!m_problem)
                    solverPanel()->showMessage(
                        tr("No training step to plan for %1: %2")
                            .arg(QFileInfo(m_document.modelPath()).fileName(), msg));
                emit problemFailed(msg);
                if (wasSession)
                    emit sessionOpened(false, msg);
                return;
            }
            if (m_problemCache)
                m_problemCache->add(*result);
            applyLoadedProblem(std::move(*result));
        });
}

void Planner::setBatch(int64_t batch) { setBatch(batch, 0); }

void Planner::setBatch(int64_t batch, int64_t budgetBytes)
{
    if (batch <= 0)
        return;
    if (batch == m_document.batch()) {
        if (budgetBytes > 0 && budgetBytes != m_document.budgetBytes())
            m_document.undoStack()->push(new SetBudgetCommand(&m_document, budgetBytes));
        return;
    }
    if (m_batchHandler) {
        m_pendingBudgetBatch = budgetBytes > 0 ? batch : 0;
        m_pendingBudget = budgetBytes;
        m_batchHandler(batch);
    } else {
        m_document.undoStack()->push(new SetBatchCommand(&m_document, batch, budgetBytes));
    }
}

void Planner::pushBatchChange(int64_t batch)
{
    const int64_t budget = m_pendingBudgetBatch == batch ? m_pendingBudget : 0;
    m_pendingBudgetBatch = m_pendingBudget = 0;
    m_document.undoStack()->push(new SetBatchCommand(&m_document, batch, budget));
}

FitDialog *Planner::openFitDialog(QWidget *parent)
{
    if (m_document.modelPath().isEmpty() || !m_problem)
        return nullptr;
    FitDialog::Inputs in;
    in.modelPath = m_document.modelPath();
    in.importSettings = m_document.importSettings();
    in.training = m_document.training();
    in.currentBatch = m_document.batch();
    in.solvers = m_solvers;
    in.preferredSolver = solverPanel()->currentSolver();
    in.freeMemory = m_freeMemory;
    auto *dialog = new FitDialog(std::move(in), parent);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    // The row's batch with the memory searched as the budget: "Open at this batch" plans
    // under 24 GiB when 24 GiB was asked for.
    connect(dialog, &FitDialog::rowApplied, this,
            [this](qint64 b, qint64 memory) { setBatch(b, memory); });
    dialog->show();
    return dialog;
}

TrainingCompareDialog *Planner::openTrainingCompareDialog(QWidget *parent)
{
    if (m_document.modelPath().isEmpty() || !m_problem)
        return nullptr;
    TrainingCompareDialog::Inputs in;
    in.modelPath = m_document.modelPath();
    in.importSettings = m_document.importSettings();
    in.importSettings.batch = m_document.batch();
    in.training = m_document.training();
    in.solvers = m_solvers;
    in.preferredSolver = solverPanel()->currentSolver();
    in.budgetBytes = m_document.budgetBytes();
    auto *dialog = new TrainingCompareDialog(std::move(in), parent);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->show();
    return dialog;
}

QDialog *Planner::openPlanComparison(QWidget *parent)
{
    const Plan *a = m_document.currentPlan();
    const QList<int> others = overlaidPlans();
    if (!a || others.isEmpty())
        return nullptr;
    const Plan &b = m_document.plans()[size_t(others.front())];
    const auto name = [&](int index, const Plan &p) {
        return tr("plan %1: %2").arg(index + 1).arg(qs(p.solver));
    };
    auto *dialog = new QDialog(parent);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setObjectName(QStringLiteral("planComparisonDialog"));
    dialog->setWindowTitle(tr("Compare plans"));
    auto *view = new StepComparisonView(dialog);
    view->setSteps(a->timeline, name(m_document.currentPlanIndex(), *a), b.timeline,
                   name(others.front(), b));
    auto *close = new QDialogButtonBox(QDialogButtonBox::Close, dialog);
    connect(close, &QDialogButtonBox::rejected, dialog, &QDialog::reject);
    auto *layout = new QVBoxLayout(dialog);
    // The comparison is of two plans: with more selected, say which two and which are left out
    // (three rows compared two without a word).
    auto *note = new QLabel(dialog);
    note->setObjectName(QStringLiteral("planComparisonNote"));
    note->setWordWrap(true);
    if (others.size() > 1) {
        QStringList left;
        for (qsizetype i = 1; i < others.size(); ++i)
            left << QString::number(others[i] + 1);
        note->setText(tr("%1 plans are selected; a comparison is of two: A is plan %2 (the "
                         "current row), B plan %3. Left out: plan %4. To compare another pair, "
                         "click one row and Ctrl+click the other.")
                          .arg(others.size() + 1)
                          .arg(m_document.currentPlanIndex() + 1)
                          .arg(others.front() + 1)
                          .arg(left.join(QStringLiteral(", "))));
    } else {
        note->setText(tr("A is plan %1 (the current row), B plan %2.")
                          .arg(m_document.currentPlanIndex() + 1)
                          .arg(others.front() + 1));
    }
    layout->addWidget(note);
    layout->addWidget(view, 1);
    layout->addWidget(close);
    dialog->resize(860, 640);
    dialog->show();
    return dialog;
}

void Planner::setTraining(const core::training::TrainingOptions &training)
{
    if (training == m_document.training())
        return;
    m_document.undoStack()->push(new SetTrainingCommand(&m_document, training));
}

void Planner::setProblem(std::shared_ptr<const PlannerProblem> problem)
{
    ++m_generation;
    m_solves.cancelAll();
    applyLoadedProblem(std::move(problem));
}

void Planner::applyLoadedProblem(std::shared_ptr<const PlannerProblem> problem)
{
    // A calibration outlives the load: another batch or model is timed by its calibrated model.
    if (problem && m_profile && problem->costs->timeSource == core::cost::TimeSource::Estimate)
        if (auto p = withProfileCosts(*problem, *m_profile, m_profileDevice.toStdString()))
            problem = std::move(*p);
    // Another graph (model or batch; not a calibration's new times): the last run measured
    // something else.
    if (!problem || !m_problem || problem->training != m_problem->training)
        runPanel()->clearResults();
    m_problem = std::move(problem);
    runPanel()->setTimeSource(timeSourceText());
    m_tableModel->setGraph(m_problem ? m_problem->training : nullptr);
    m_cache.clear();
    if (m_pendingSession) {
        // Reopening: restore everything as saved, with figures recomputed by the simulator.
        SessionData s = std::move(*m_pendingSession);
        m_pendingSession.reset();
        core::Expected<std::vector<Plan>> restored =
            m_problem ? restorePlans(s, *m_problem, m_sessionPath)
                      : core::Expected<std::vector<Plan>>(
                            core::makeError(core::StatusCode::Internal, "no problem"));
        const core::Status st = restored.status();
        std::vector<Plan> plans = restored ? std::move(*restored) : std::vector<Plan>();
        // The document's signals update the views; the planner must not re-solve while restoring.
        m_restoring = true;
        m_document.undoStack()->clear();
        m_document.setModel(s.modelPath, s.modelSha256);
        m_document.setBatch(s.batch);
        m_document.setTraining(s.training);
        m_document.setObjective(s.objective);
        m_document.setMaxOverheadPercent(s.maxOverheadPercent);
        m_document.setBudgetBytes(s.budgetBytes);
        m_document.setPins(s.pins);
        if (st.isOk())
            m_document.setPlans(std::move(plans), s.currentPlan);
        else
            m_document.clearPlans();
        m_document.markSaved();
        m_restoring = false;
        updateBudgetRange();
        refreshSolverInfos();
        if (!s.solver.isEmpty())
            solverPanel()->setCurrentSolver(s.solver);
        paretoChart()->clearPoints();
        for (const core::io::SessionParetoPoint &p : s.pareto)
            paretoChart()->addPoint(
                {qs(p.solver), p.budgetBytes, p.peakBytes, p.overheadPercent, p.feasible});
        updateCurrentPlanViews();
        if (st.isOk())
            setOverlaidPlans(QList<int>(s.view.overlaidPlans.begin(), s.view.overlaidPlans.end()));
        if (s.run && st.isOk()) {
            m_runPlan = s.run->plan;
            const auto &plans = m_document.plans();
            runPanel()->restoreRun(
                *s.run,
                m_runPlan >= 0 && m_runPlan < int(plans.size())
                    ? tr("plan %1: %2").arg(m_runPlan + 1).arg(qs(plans[size_t(m_runPlan)].solver))
                    : QString());
        }
        emit problemChanged();
        // After problemChanged: the window's hooks restore the colour mode over the defaults
        // a new problem brings.
        if (m_restoreView)
            m_restoreView(s.view);
        emit sessionOpened(st.isOk(), st.isOk() ? QString() : qs(st.message()));
        return;
    }
    bool newModel = false;
    if (m_problem) {
        m_restoring = true;
        newModel = m_freshSession || m_document.modelPath() != qs(m_problem->modelPath);
        m_freshSession = false;
        m_document.setModel(qs(m_problem->modelPath), qs(m_problem->modelSha256));
        m_document.setBatch(m_problem->batch > 0 ? m_problem->batch : 1);
        m_document.setTraining(m_problem->options.training);
        // A batch change keeps the undo history (SetBatchCommand put the plans aside); a new
        // model starts a new history with a budget inside its own range.
        if (newModel) {
            m_document.undoStack()->clear();
            m_document.clearPlans();
            m_document.setPins({}); // tensor names of the old model
            paretoChart()->clearPoints();
            solverPanel()->showMessage(QString()); // it described the old model's plan
            m_document.setBudgetBytes(defaultBudget(*m_problem));
        } else if (m_problem->isValid()) {
            // Another batch or training options: a budget the user set stays while it still
            // means something; one below this step's floor (every plan infeasible) or above its
            // store-all peak (nothing to plan) moves to the default, saying so.
            const int64_t budget = m_document.budgetBytes();
            const int64_t floor = memoryFloor(*m_problem).total();
            const int64_t top = m_problem->storeAll.timeline.peakBytes;
            // The message described a plan of the old settings, now put aside with the table.
            if (m_document.plans().empty())
                solverPanel()->showMessage(
                    tr("No plan for these settings yet: Solve or Compare all (Undo brings the "
                       "previous settings and their plans back)."));
            if (budget > 0 && (budget < floor || budget > top)) {
                const int64_t moved = defaultBudget(*m_problem);
                m_document.setBudgetBytes(moved);
                solverPanel()->showMessage(
                    tr("The budget %1 is %2 this step's %3 %4: set to %5.")
                        .arg(qs(core::formatBytes(budget)),
                             budget < floor ? tr("below") : tr("above"),
                             budget < floor ? tr("floor") : tr("store-all peak"),
                             qs(core::formatBytes(budget < floor ? floor : top)),
                             qs(core::formatBytes(moved))));
            }
        }
        m_restoring = false;
    }
    updateBudgetRange();
    if (newModel)
        m_document.markSaved();
    refreshSolverInfos();
    updateCurrentPlanViews();
    emit problemChanged();
}

int64_t Planner::defaultBudget(const PlannerProblem &problem)
{
    // 60 % of the way from what no plan can go below to store-all's peak: room for the
    // in-memory solvers to keep a checkpoint per segment, yet a budget that makes them work.
    // (From weights alone, as before, the first solve of the bundled model was infeasible.)
    const auto &sa = problem.storeAll.timeline;
    const int64_t floor =
        std::max(memoryFloor(problem).total(), sa.peakBytes - sa.activationPeakBytes);
    return std::min(sa.peakBytes, floor + (sa.peakBytes - floor) * 6 / 10);
}

QString Planner::floorExplanation() const
{
    if (!m_problem)
        return {};
    const MemoryFloor f = memoryFloor(*m_problem);
    QString states = tr("weights and the input batch %1").arg(qs(core::formatBytes(f.weightBytes)));
    if (f.masterWeightBytes > 0)
        states += tr(" + master weights %1").arg(qs(core::formatBytes(f.masterWeightBytes)));
    if (f.optimizerStateBytes > 0)
        states += tr(" + optimizer state %1").arg(qs(core::formatBytes(f.optimizerStateBytes)));
    if (f.accumulatorBytes > 0)
        states += tr(" + gradient accumulators %1").arg(qs(core::formatBytes(f.accumulatorBytes)));
    // Whichever of the two is larger is the floor's last term: they need not coexist.
    const QString grads = tr("the gradients %1 (all resident at the step's end)")
                              .arg(qs(core::formatBytes(f.weightGradBytes)));
    const QString op = tr("the largest op's working set %1 (%2)")
                           .arg(qs(core::formatBytes(f.largestOpBytes)), qs(f.largestOp));
    return tr("%1 + the larger of %2 and %3")
        .arg(states, f.weightGradBytes >= f.largestOpBytes ? grads : op,
             f.weightGradBytes >= f.largestOpBytes ? op : grads);
}

void Planner::updateBudgetRange()
{
    if (!m_problem)
        return;
    const auto &sa = m_problem->storeAll.timeline;
    solverPanel()->setBudgetRange(sa.peakBytes - sa.activationPeakBytes, sa.peakBytes);
    const int64_t floor = memoryFloor(*m_problem).total();
    solverPanel()->setFloor(floor, floorExplanation());
    m_tableModel->setFloor(floor, floorExplanation());
}

// ---- solving ------------------------------------------------------------------------------

std::vector<core::solvers::Pin> Planner::resolvedPins() const
{
    std::vector<core::solvers::Pin> pins;
    if (!m_problem)
        return pins;
    const PinMap &map = m_document.pins();
    for (auto it = map.cbegin(); it != map.cend(); ++it)
        if (const core::TensorId *t = m_problem->training->findTensor(it.key().toStdString()))
            pins.push_back({*t, it.value()});
    return pins;
}

SolveJob Planner::makeJob(const std::shared_ptr<const core::solvers::Solver> &solver) const
{
    SolveJob job;
    job.solver = solver;
    job.problem = m_problem;
    job.objective = m_document.objective();
    job.budgetBytes = m_document.budgetBytes();
    if (job.objective == Objective::MinPeak)
        job.maxOverheadPercent = m_document.maxOverheadPercent();
    job.pins = resolvedPins();
    job.tag = m_generation;
    return job;
}

QString Planner::cacheKey(const QString &solver, const SolveJob &job) const
{
    QString key =
        solver + QLatin1Char('|') + QLatin1String(core::solvers::objectiveName(job.objective));
    if (job.objective == Objective::MinTime)
        key += QLatin1Char('|') + QString::number(job.budgetBytes);
    if (job.maxOverheadPercent >= 0)
        key += QStringLiteral("|within %1").arg(job.maxOverheadPercent);
    for (const auto &p : job.pins)
        key += QStringLiteral("|%1:%2").arg(p.tensor.value).arg(int(p.kind));
    return key;
}

void Planner::solve(const QString &solverId)
{
    // A solve asked for from outside the Solver dock (remat-studio --solve, a Pareto point) names
    // its solver in the dock's combo: the dock never shows store-all beside a hong-dp plan.
    solverPanel()->setCurrentSolver(solverId);
    solveWithin(solverId, 0);
}

void Planner::solveWithin(const QString &solverId, double limitSeconds)
{
    auto solver = solverById(solverId);
    if (!solver || !m_problem) {
        solverPanel()->showMessage(
            m_problem ? tr("Unknown solver %1").arg(solverId)
            : m_document.modelPath().isEmpty()
                ? tr("Open a model first.")
                : tr("%1 has no training step to plan yet (see the status bar: give its input "
                     "sizes with Inputs... in the toolbar, or open another model).")
                      .arg(QFileInfo(m_document.modelPath()).fileName()));
        return;
    }
    // A pin the training step has no tensor for (its options renamed it) would be dropped from
    // the request, and a row solved without it taken for the answer: say which, and the way out.
    QStringList unresolved;
    const PinMap &pinMap = m_document.pins();
    for (auto it = pinMap.cbegin(); it != pinMap.cend(); ++it)
        if (!m_problem->training->findTensor(it.key().toStdString()))
            unresolved << it.key();
    if (!unresolved.isEmpty()) {
        solverPanel()->showMessage(
            tr("%1: the pin on %2 names no tensor of this training step (its training options "
               "changed its tensors). Clear it in the Pins panel and pin the node again.")
                .arg(solverId, unresolved.join(QStringLiteral(", "))));
        return;
    }
    SolveJob job = makeJob(solver);
    const QString key = cacheKey(solverId, job);
    // The same solver on the same inputs gives the same plan: a row that has it is selected
    // rather than repeated (with the time it took then), a cached one comes back marked so.
    const auto &plans = m_document.plans();
    for (size_t row = 0; row < plans.size(); ++row)
        // A plan cut short by Compare all's limit is no answer for a solve of its own.
        if (planCacheKey(plans[row]) == key &&
            (limitSeconds > 0 || plans[row].status != core::solvers::SolveStatus::TimedOut)) {
            m_document.setCurrentPlanIndex(int(row));
            // Pins are inputs: the row has these very pins (a pin re-solves the current row in
            // place, so the row may be younger than it looks); say so, with their number.
            const size_t pinned = plans[row].pins.size();
            const QString pins = pinned == 0   ? tr("no pins")
                                 : pinned == 1 ? tr("1 pin")
                                               : tr("%1 pins").arg(pinned);
            solverPanel()->showMessage(tr("%1: plan %2 was solved with these inputs already "
                                          "(this objective and budget, %3; in %4 s); selected it.")
                                           .arg(solverId)
                                           .arg(row + 1)
                                           .arg(pins)
                                           .arg(plans[row].solveSeconds, 0, 'f', 3) +
                                       (refusedPins(plans[row])
                                            ? QStringLiteral(" ") + pinsRefusedMessage(plans[row])
                                            : QString()));
            return;
        }
    if (auto it = m_cache.constFind(key); it != m_cache.constEnd()) {
        Plan cached = *it;
        cached.note = tr("From this session's cache (first solved in %1 s). ")
                          .arg(cached.solveSeconds, 0, 'f', 3)
                          .toStdString() +
                      cached.note;
        m_document.addPlan(std::move(cached));
        solverPanel()->showMessage(tr("%1: the same inputs were solved before; the cached plan "
                                      "was added.")
                                       .arg(solverId));
        return;
    }
    solverPanel()->jobStarted();
    solverPanel()->showMessage(tr("Solving with %1...").arg(solverId));
    if (limitSeconds > 0 && limitSeconds < job.timeLimitSeconds) {
        job.timeLimitSeconds = limitSeconds;
        m_limitedJobs.insert(m_solves.start(std::move(job)), limitSeconds);
    } else {
        m_solves.start(std::move(job));
    }
}

void Planner::compareAll() { compareAllWithin(kCompareAllSeconds); }

void Planner::compareAllWithin(double slowLimitSeconds)
{
    // The interactive solvers first: their rows come in while the slow ones still run.
    QStringList slow;
    for (const QString &id : usableSolverIds()) {
        const auto s = solverById(id);
        if (s && isFast(*s))
            solveWithin(id, 0); // the combo stays on the user's solver
        else
            slow << id;
    }
    for (const QString &id : slow)
        solveWithin(id, slowLimitSeconds);
}

void Planner::sweep()
{
    if (!m_problem)
        return;
    SweepJob job;
    job.problem = m_problem;
    job.pins = resolvedPins();
    // Every solver that takes a budget: the interactive ones first, then the MILP / LP and
    // offload searches (each solve capped by the sweep's time limit, all of it cancellable).
    for (const bool fast : {true, false})
        for (const QString &id : usableSolverIds()) {
            auto s = solverById(id);
            if (s && isFast(*s) == fast && s->capabilities().minTime)
                job.solvers.push_back(s);
        }
    const auto &sa = m_problem->storeAll.timeline;
    const int64_t floor = sa.peakBytes - sa.activationPeakBytes;
    job.budgets = sweepBudgets(floor + (sa.peakBytes - floor) / 20, sa.peakBytes, kSweepBudgets);
    paretoChart()->clearPoints();
    solverPanel()->showMessage(tr("Sweeping %1 solvers over %2 budgets...")
                                   .arg(job.solvers.size())
                                   .arg(job.budgets.size()));
    solverPanel()->jobStarted();
    m_solves.startSweep(std::move(job));
}

void Planner::showParetoPlan(const ParetoPoint &point)
{
    // That solver at that budget: a row that has it is selected, else it is solved (or taken
    // from the cache) with the budget set as an undoable edit.
    // The edits must not re-solve the current plan for the new budget (as a slider drag does):
    // the point's plan is a row of its own.
    const bool objectiveChanges = m_document.objective() != Objective::MinTime;
    m_restoring = true;
    if (objectiveChanges)
        m_document.undoStack()->push(new SetObjectiveCommand(&m_document, Objective::MinTime));
    if (m_document.budgetBytes() != point.budgetBytes)
        m_document.undoStack()->push(new SetBudgetCommand(&m_document, point.budgetBytes));
    m_restoring = false;
    if (objectiveChanges)
        refreshSolverInfos();
    solve(point.solver);
}

void Planner::deleteSelectedPlans()
{
    QList<int> plans;
    for (const QModelIndex &row : planTable()->selectionModel()->selectedRows())
        plans << m_docks.planIndexOfRow(row.row());
    plans.removeAll(-1);
    if (plans.isEmpty())
        return;
    // Highest index first: each removal leaves the lower indices as they were.
    std::sort(plans.begin(), plans.end(), std::greater<int>());
    m_document.undoStack()->beginMacro(tr("Delete %n plan(s)", nullptr, int(plans.size())));
    for (int i : plans)
        m_document.undoStack()->push(new RemovePlanCommand(&m_document, i));
    m_document.undoStack()->endMacro();
}

void Planner::cancel()
{
    if (m_solves.isBusy())
        solverPanel()->setCancelling();
    m_solves.cancelAll();
}

void Planner::resolveCurrent(bool live)
{
    const Plan *current = m_document.currentPlan();
    if (!current || !m_problem)
        return;
    auto solver = solverById(qs(current->solver));
    if (!solver)
        return;
    if (live && !isFast(*solver))
        return;
    SolveJob job = makeJob(solver);
    job.replaceIndex = m_document.currentPlanIndex();
    if (auto it = m_cache.constFind(cacheKey(qs(current->solver), job)); it != m_cache.constEnd()) {
        m_document.replacePlan(job.replaceIndex, *it);
        return;
    }
    if (isFast(*solver))
        m_solves.startLatest(std::move(job));
    else
        m_solves.start(std::move(job));
}

QString Planner::planCacheKey(const Plan &plan) const
{
    SolveJob inputs;
    inputs.objective = plan.objective;
    inputs.budgetBytes = plan.budgetBytes;
    inputs.maxOverheadPercent = plan.maxOverheadPercent;
    inputs.pins = plan.pins;
    return cacheKey(qs(plan.solver), inputs);
}

void Planner::onSolved(quint64 id, const Plan &solved, int replaceIndex, quint64 tag)
{
    const double limit = m_limitedJobs.take(id);
    if (tag != m_generation)
        return; // solved for a model that is no longer loaded
    Plan plan = solved;
    // Cut short by Compare all's limit: the row says so (status and note) and how to go on.
    const bool cutShort =
        limit > 0 &&
        (plan.status == core::solvers::SolveStatus::TimedOut ||
         (plan.status == core::solvers::SolveStatus::Feasible && plan.solveSeconds >= limit * 0.9));
    if (cutShort) {
        plan.status = core::solvers::SolveStatus::TimedOut;
        plan.note = tr("Stopped at Compare all's %1 s limit (its best plan so far). Solve it "
                       "alone to let it run to its own limit. ")
                        .arg(limit, 0, 'g', 3)
                        .toStdString() +
                    plan.note;
    }
    // Cache under the inputs the plan was solved for, so undo brings it back at once (a plan
    // cut short is not the solver's answer).
    const QString key = planCacheKey(plan);
    if (!cutShort)
        m_cache.insert(key, plan);
    if (replaceIndex >= 0 && replaceIndex < int(m_document.plans().size())) {
        m_document.replacePlan(replaceIndex, plan);
    } else {
        // Two requests for the same inputs in flight at once (Solve pressed twice): the second
        // refreshes the first one's row instead of adding another.
        int same = -1;
        for (size_t row = 0; row < m_document.plans().size() && same < 0; ++row)
            if (planCacheKey(m_document.plans()[row]) == key)
                same = int(row);
        if (same >= 0) {
            m_document.replacePlan(same, plan);
            m_document.setCurrentPlanIndex(same);
        } else {
            m_document.addPlan(plan);
        }
    }
    // updateCurrentPlanViews() described the current row already; say which one the solve gave.
    const int row = m_document.currentPlanIndex();
    if (row < 0 || planCacheKey(m_document.plans()[size_t(row)]) != key)
        solverPanel()->showMessage(tr("Solved: %1").arg(planSummary(plan, -1)));
    if (plan.status == core::solvers::SolveStatus::Infeasible && m_problem) {
        const int64_t floor = memoryFloor(*m_problem).total();
        if (refusedPins(plan)) {
            // Not the budget: the solver has no pins (rotor, revolve). Said so, with the ones
            // that take them (it said "try a larger budget", which could not help).
            solverPanel()->showMessage(pinsRefusedMessage(plan));
            return;
        }
        // Sizes that differ never print the same (a store-all peak a few KiB over a budget at
        // the floor read "444.20 MiB" three times).
        const auto [budgetText, floorText] = bytesApart(plan.budgetBytes, floor);
        QString over;
        if (plan.timeline.peakBytes > plan.budgetBytes && !plan.timeline.points.empty())
            over = tr(" (its schedule peaks at %1)")
                       .arg(bytesApart(plan.timeline.peakBytes, plan.budgetBytes).first);
        solverPanel()->showMessage(
            plan.budgetBytes < floor
                ? tr("%1: no plan fits %2, below this model's floor %3 = %4. \"Set to floor\" "
                     "sets the budget to it.")
                      .arg(qs(plan.solver), budgetText, floorText, floorExplanation())
            : plan.budgetBytes == floor
                ? tr("%1 found no plan within the floor %2%3: try a larger budget or another "
                     "solver.")
                      .arg(qs(plan.solver), budgetText, over)
                : tr("%1 found no plan within %2%3 (the floor is %4): try a larger budget or "
                     "another solver.")
                      .arg(qs(plan.solver), budgetText, over, floorText));
    }
}

bool Planner::refusedPins(const Plan &plan) const
{
    if (plan.status != core::solvers::SolveStatus::Infeasible || plan.pins.empty())
        return false;
    auto solver = solverById(qs(plan.solver));
    return solver && !solver->capabilities().pins;
}

QString Planner::pinsRefusedMessage(const Plan &plan) const
{
    QStringList taking;
    for (const auto &solver : m_solvers)
        if (solver->capabilities().pins)
            taking << qs(solver->id());
    return tr("%1 takes no pins, so its plan is infeasible with %2 pinned: clear the pins (Pins "
              "dock) or choose a solver that honours them (%3).")
        .arg(qs(plan.solver))
        .arg(plan.pins.size() == 1 ? tr("a tensor") : tr("%1 tensors").arg(plan.pins.size()))
        .arg(taking.join(QStringLiteral(", ")));
}

QString Planner::planSummary(const Plan &plan, int row) const
{
    QString text =
        tr("%1: %2, peak %3, recompute +%4 % (solved in %5 s)")
            .arg(qs(plan.solver), QLatin1String(core::solvers::solveStatusName(plan.status)),
                 qs(core::formatBytes(plan.timeline.peakBytes)))
            .arg(plan.timeline.tdiPercent(), 0, 'f', 1)
            .arg(plan.solveSeconds, 0, 'f', 3);
    if (row >= 0)
        text = tr("Plan %1 of %2 — %3").arg(row + 1).arg(m_document.plans().size()).arg(text);
    return text;
}

void Planner::onFailed(quint64 id, const QString &solver, const QString &message, bool cancelled,
                       quint64 tag)
{
    m_limitedJobs.remove(id);
    if (tag != m_generation)
        return;
    solverPanel()->showMessage(cancelled ? tr("%1: cancelled.").arg(solver)
                                         : tr("%1 failed: %2").arg(solver, message));
    if (!cancelled)
        emit solveFailed(solver, message);
}

void Planner::waitForIdle()
{
    while (m_loads.busy() || m_solves.isBusy()) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        m_loads.waitAndDeliver();
        m_solves.waitForIdle();
    }
    QCoreApplication::processEvents();
}

void Planner::documentChanged(PlannerChange change)
{
    if (m_restoring)
        return;
    switch (change) {
    case PlannerChange::CurrentPlan: updateCurrentPlanViews(); break;
    case PlannerChange::Plans: m_docks.selectPlan(m_document.currentPlanIndex()); break;
    case PlannerChange::Budget:
        if (m_document.objective() == Objective::MinTime) {
            // The memory chart keeps the current plan's own budget until the re-solved plan
            // (with the new one) replaces it.
            if (solverPanel()->liveResolve())
                m_liveTimer.start(); // debounced; the controller keeps only the latest
        }
        break;
    case PlannerChange::Pins:
    case PlannerChange::Objective:
        if (change == PlannerChange::Objective)
            refreshSolverInfos();
        resolveCurrent(false);
        break;
    case PlannerChange::Batch:
    case PlannerChange::Training:
        if (m_problem && !m_document.modelPath().isEmpty() &&
            (m_problem->batch != m_document.batch() ||
             m_problem->options.training != m_document.training()))
            openModel(m_document.modelPath(), m_document.batch(), m_document.importSettings());
        break;
    case PlannerChange::Model: break;
    }
}

void Planner::updateCurrentPlanViews()
{
    const Plan *plan = m_document.currentPlan();
    if (!plan || !m_problem) {
        m_analysis = PlanAnalysis();
        m_colors->clear();
        memoryChart()->clearTimelines();
        teachingView()->setAnalysis(m_analysis);
        paretoChart()->setCurrent(-1, 0);
        emit planUpdated();
        return;
    }
    const int step = teachingView()->step();
    m_analysis = PlanAnalysis::analyse(m_problem->training, *plan);
    m_colors->setAnalysis(m_analysis);
    updateMemoryChart();
    teachingView()->setAnalysis(m_analysis);
    if (step >= 0)
        teachingView()->setStep(step);
    paretoChart()->setCurrent(plan->timeline.peakBytes, core::solvers::timeOverheadPercent(*plan));
    runPanel()->setPredicted(plan->timeline);
    // The Solver dock describes the plan in view, not whichever solve finished last.
    solverPanel()->showMessage(planSummary(*plan, m_document.currentPlanIndex()));
    if (m_docks.planIndexOfRow(planTable()->currentIndex().row()) != m_document.currentPlanIndex())
        m_docks.selectPlan(m_document.currentPlanIndex());
    emit planUpdated();
}

void Planner::updateMemoryChart()
{
    const Plan *plan = m_document.currentPlan();
    if (!plan || !m_problem || !memoryChart())
        return; // updateCurrentPlanViews cleared the chart
    QList<MemoryOverlay> overlays;
    const auto &plans = m_document.plans();
    for (int i : overlaidPlans())
        overlays.append({tr("plan %1: %2, peak %3")
                             .arg(i + 1)
                             .arg(qs(plans[size_t(i)].solver),
                                  qs(core::formatBytes(plans[size_t(i)].timeline.peakBytes))),
                         &plans[size_t(i)].timeline});
    // The budget this plan was solved for (the field may hold another one by now).
    const int64_t budget = plan->objective == Objective::MinTime ? plan->budgetBytes : 0;
    // An offload plan's waits for the copy lane, marked where they happen (issue 36): the
    // simulator's step events (a plan without copies is not simulated again).
    core::Expected<core::sim::CopyStalls> stalls =
        core::sim::copyStalls(plan->schedule, *m_problem->training, *m_problem->costs);
    memoryChart()->setTimelines(plan->timeline, &m_problem->storeAll.timeline, budget,
                                qs(plan->solver), overlays, stalls ? &stalls->perStep : nullptr);
}

QList<int> Planner::overlaidPlans() const
{
    QList<int> out;
    if (!planTable())
        return out;
    const int current = m_document.currentPlanIndex();
    const int n = int(m_document.plans().size());
    for (const QModelIndex &row : planTable()->selectionModel()->selectedRows()) {
        const int i = m_docks.planIndexOfRow(row.row());
        if (i >= 0 && i < n && i != current)
            out << i;
    }
    std::sort(out.begin(), out.end());
    return out;
}

void Planner::setOverlaidPlans(const QList<int> &plans)
{
    QItemSelectionModel *sel = planTable()->selectionModel();
    const int n = int(m_document.plans().size());
    QItemSelection rows;
    for (int i : plans) {
        if (i < 0 || i >= n)
            continue;
        const int row = m_docks.rowOfPlan(i);
        if (row >= 0)
            rows.select(planTable()->model()->index(row, 0), planTable()->model()->index(row, 0));
    }
    sel->select(rows, QItemSelectionModel::Select | QItemSelectionModel::Rows);
}

// ---- pins ---------------------------------------------------------------------------------

QString Planner::pinTensorOfNode(const QString &nodeName) const
{
    if (!m_problem)
        return {};
    const auto it = m_problem->activationOfNode.find(nodeName.toStdString());
    if (it == m_problem->activationOfNode.end())
        return {};
    return qs(m_problem->training->tensor(it->second).name);
}

QString Planner::nodeOfTensor(const QString &tensorName) const
{
    if (!m_problem)
        return {};
    const core::TensorId *t = m_problem->training->findTensor(tensorName.toStdString());
    if (!t)
        return {};
    const core::OpId p = m_problem->training->tensor(*t).producer;
    return p.valid() ? qs(m_problem->training->op(p).name) : QString();
}

bool Planner::pinNode(const QString &nodeName, std::optional<PinKind> kind)
{
    const QString tensor = pinTensorOfNode(nodeName);
    if (tensor.isEmpty())
        return false;
    if (m_document.pin(tensor) == kind)
        return true;
    m_document.undoStack()->push(new SetPinCommand(&m_document, tensor, kind));
    return true;
}

QList<QAction *> Planner::pinActions(const QString &nodeName, QObject *parent)
{
    QList<QAction *> actions;
    const QString tensor = pinTensorOfNode(nodeName);
    const auto current = tensor.isEmpty() ? std::nullopt : m_document.pin(tensor);
    auto add = [&](const QString &text, std::optional<PinKind> kind) {
        auto *a = new QAction(text, parent);
        a->setEnabled(!tensor.isEmpty());
        a->setCheckable(kind.has_value());
        a->setChecked(kind.has_value() && current == kind);
        connect(a, &QAction::triggered, this, [this, nodeName, kind] { pinNode(nodeName, kind); });
        actions << a;
    };
    add(tr("Always keep"), PinKind::Keep);
    add(tr("Always recompute"), PinKind::Recompute);
    add(tr("Offload to host"), PinKind::Offload);
    add(tr("Clear pin"), std::nullopt);
    actions.back()->setEnabled(current.has_value());
    return actions;
}

QString Planner::nodeOverlay(const QString &nodeName) const
{
    return m_analysis.explainNode(nodeName);
}

void Planner::selectNode(const QString &nodeName) { teachingView()->explainNode(nodeName); }

// ---- sessions and exports -----------------------------------------------------------------

core::Status Planner::saveSession(const QString &path)
{
    SessionData s = sessionFromDocument(m_document, m_problem.get());
    // The view's state beside the document's (format version 2).
    s.solver = solverPanel()->currentSolver();
    for (const ParetoPoint &p : paretoChart()->points())
        s.pareto.push_back(
            {p.solver.toStdString(), p.budgetBytes, p.peakBytes, p.overheadPercent, p.feasible});
    for (int i : overlaidPlans())
        s.view.overlaidPlans.push_back(i);
    if (m_saveView)
        m_saveView(s.view);
    if (std::optional<core::io::SessionRun> run = runPanel()->sessionRun()) {
        run->plan = m_runPlan >= 0 && m_runPlan < int(m_document.plans().size()) ? m_runPlan : -1;
        s.run = std::move(run);
    }
    REMAT_RETURN_IF_ERROR(
        writeSessionFile(path, s, m_problem ? m_problem->training.get() : nullptr));
    m_sessionPath = path;
    m_document.markSaved();
    return core::Status::ok();
}

core::Status Planner::openSession(const QString &path)
{
    REMAT_ASSIGN_OR_RETURN(SessionData s, readSessionFile(path));
    if (!QFileInfo::exists(s.modelPath))
        return core::makeError(
            core::StatusCode::NotFound,
            (path + QStringLiteral(": its model %1 is missing").arg(s.modelPath)).toStdString());
    m_sessionPath = path;
    const QString model = s.modelPath;
    const int64_t batch = s.batch;
    const core::onnx::ImportOptions settings = s.importSettings;
    // openModel builds with the document's training options: the session's, without a reload.
    m_restoring = true;
    m_document.setTraining(s.training);
    m_restoring = false;
    m_pendingSession = std::move(s);
    openModel(model, batch, settings);
    return core::Status::ok();
}

bool Planner::wouldAskBeforeOpening(const QString &modelPath) const
{
    return !m_document.modelPath().isEmpty() &&
           QFileInfo(modelPath).absoluteFilePath() !=
               QFileInfo(m_document.modelPath()).absoluteFilePath() &&
           m_document.isModified() && (!m_document.plans().empty() || !m_document.pins().isEmpty());
}

bool Planner::maybeSaveBeforeOpening(QWidget *parent, const QString &modelPath)
{
    if (m_document.modelPath().isEmpty() ||
        QFileInfo(modelPath).absoluteFilePath() ==
            QFileInfo(m_document.modelPath()).absoluteFilePath())
        return true;
    return maybeSave(
        parent,
        tr("Opening %1 starts a new planner session: the %n plan(s) solved for %2 "
           "and its pins are discarded.",
           nullptr, int(m_document.plans().size()))
            .arg(QFileInfo(modelPath).fileName(), QFileInfo(m_document.modelPath()).fileName()));
}

bool Planner::maybeSave(QWidget *parent, const QString &reason)
{
    if (!m_document.isModified() || (m_document.plans().empty() && m_document.pins().isEmpty()))
        return true;
    const QString text = (reason.isEmpty() ? QString() : reason + QLatin1Char(' ')) +
                         tr("The planner session has unsaved changes. Save them?");
    const auto answer =
        m_saveQuestion
            ? m_saveQuestion(parent, text)
            : QMessageBox::warning(parent, tr("Unsaved planner session"), text,
                                   QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel);
    if (answer == QMessageBox::Cancel)
        return false;
    if (answer == QMessageBox::Discard)
        return true;
    QString path = m_sessionPath;
    if (path.isEmpty())
        path = QFileDialog::getSaveFileName(parent, tr("Save session"), QString(),
                                            tr("Remat sessions (*.rematproj)"));
    if (path.isEmpty())
        return false;
    if (core::Status s = saveSession(path); !s.isOk()) {
        QMessageBox::warning(parent, tr("Save session"), qs(s.message()));
        return false;
    }
    return true;
}

core::Status Planner::exportPlanJson(const QString &path) const
{
    const Plan *plan = m_document.currentPlan();
    if (!plan || !m_problem)
        return core::makeError(core::StatusCode::InvalidArgument, "no current plan to export");
    const auto &tg = *m_problem->training;
    // Core's plan format (remat CLI and io::readPlan read it), plus the per-node decisions the
    // PyTorch helper (resources/python/remat_apply.py) maps onto modules; readers ignore the extra key.
    QJsonObject root = QJsonDocument::fromJson(QByteArray::fromStdString(core::io::writePlan(
                                                   *plan, tg, core::io::ModelIdentity::of(tg))))
                           .object();
    QJsonArray decisions;
    for (const auto &op : tg.ops()) {
        if (op.phase != core::training::Phase::Forward)
            continue;
        const core::TensorId main = m_analysis.mainOutput(op.id);
        if (!main.valid() || m_analysis.decisionOfTensor(main) == PlanDecision::None)
            continue;
        decisions.append(
            QJsonObject{{QStringLiteral("node"), qs(op.name)},
                        {QStringLiteral("tensor"), qs(tg.tensor(main).name)},
                        {QStringLiteral("decision"),
                         QLatin1String(planDecisionName(m_analysis.decisionOfTensor(main)))}});
    }
    root[QStringLiteral("decisions")] = decisions;
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly))
        return core::makeError(core::StatusCode::NotFound,
                               (path + QStringLiteral(": ") + f.errorString()).toStdString());
    f.write(QJsonDocument(root).toJson(QJsonDocument::Indented));
    if (!f.commit())
        return core::makeError(core::StatusCode::Internal,
                               (path + QStringLiteral(": ") + f.errorString()).toStdString());
    return core::Status::ok();
}

QString Planner::pytorchSnippet(const QString &planPath, const QString &modelPath)
{
    const auto quoted = [](const QString &v) {
        return QString::fromUtf8(QJsonDocument(QJsonArray{v}).toJson(QJsonDocument::Compact))
            .mid(1)
            .chopped(1);
    };
    return QStringLiteral("import remat_apply  # written beside the plan\n"
                          "model = remat_apply.apply_plan(model, %1, onnx=%2)  # model: the "
                          "torch.nn.Module %3 was exported from\n"
                          "print(remat_apply.summary(model.remat_report))  # how faithfully the "
                          "plan was applied\n")
        .arg(quoted(QFileInfo(planPath).absoluteFilePath()), quoted(modelPath),
             quoted(QFileInfo(modelPath).fileName()));
}

core::Status Planner::exportForPyTorch(const QString &planPath, QString *snippetPath) const
{
    if (core::Status s = exportPlanJson(planPath); !s.isOk())
        return s;
    const QFileInfo plan(planPath);
    const QDir dir = plan.absoluteDir();
    // The helper ships in the resources, so the snippet runs wherever the plan is written.
    QFile helper(QStringLiteral(":/python/remat_apply.py"));
    QSaveFile helperOut(dir.filePath(QStringLiteral("remat_apply.py")));
    if (!helper.open(QIODevice::ReadOnly) || !helperOut.open(QIODevice::WriteOnly))
        return core::makeError(core::StatusCode::NotFound,
                               (dir.filePath(QStringLiteral("remat_apply.py")) +
                                QStringLiteral(": ") + helperOut.errorString())
                                   .toStdString());
    helperOut.write(helper.readAll());
    if (!helperOut.commit())
        return core::makeError(core::StatusCode::Internal, helperOut.errorString().toStdString());
    const QString py = dir.filePath(plan.completeBaseName() + QStringLiteral("_apply.py"));
    QSaveFile f(py);
    if (!f.open(QIODevice::WriteOnly))
        return core::makeError(core::StatusCode::NotFound,
                               (py + QStringLiteral(": ") + f.errorString()).toStdString());
    f.write(QStringLiteral(
                "# Applies %1 (made by Remat Studio) to the PyTorch model %2 was exported from;\n"
                "# define `model` above these lines (see remat_apply.py's docstring).\n")
                .arg(plan.fileName(), QFileInfo(m_document.modelPath()).fileName())
                .toUtf8());
    f.write(pytorchSnippet(planPath, m_document.modelPath()).toUtf8());
    if (!f.commit())
        return core::makeError(core::StatusCode::Internal,
                               (py + QStringLiteral(": ") + f.errorString()).toStdString());
    if (snippetPath)
        *snippetPath = py;
    return core::Status::ok();
}

core::Status Planner::exportTimelineCsv(const QString &path) const
{
    const Plan *plan = m_document.currentPlan();
    if (!plan || !m_problem)
        return core::makeError(core::StatusCode::InvalidArgument, "no current plan to export");
    return core::io::saveTimelineCsv(path.toStdString(), plan->schedule, *m_problem->training,
                                     plan->timeline);
}

core::Status Planner::exportChart(QWidget *chart, const QString &path) const
{
    if (!chart)
        return core::makeError(core::StatusCode::InvalidArgument, "no chart");
    const QSize size = chart->size().isEmpty() ? QSize(1000, 500) : chart->size();
    if (path.endsWith(QLatin1String(".svg"), Qt::CaseInsensitive)) {
        QSvgGenerator svg;
        svg.setFileName(path);
        svg.setSize(size);
        svg.setViewBox(QRect(QPoint(0, 0), size));
        svg.setTitle(QStringLiteral("Remat Studio chart"));
        QPainter p(&svg);
        chart->render(&p);
        p.end();
        if (!QFileInfo::exists(path))
            return core::makeError(core::StatusCode::NotFound,
                                   (path + QStringLiteral(": could not write")).toStdString());
        return core::Status::ok();
    }
    // A PNG for a report or a slide: at least kMinChartPngWidth pixels wide and twice the
    // screen's pixel ratio, drawn at that resolution (not a screenshot scaled up).
    const double scale =
        std::max({2.0 * chart->devicePixelRatioF(), double(kMinChartPngWidth) / size.width(), 1.0});
    QImage image(QSize(int(std::ceil(size.width() * scale)), int(std::ceil(size.height() * scale))),
                 QImage::Format_ARGB32_Premultiplied);
    image.setDevicePixelRatio(scale);
    image.fill(Qt::white);
    {
        QPainter p(&image);
        p.setRenderHint(QPainter::Antialiasing);
        chart->render(&p);
    }
    if (!image.save(path))
        return core::makeError(
            core::StatusCode::NotFound,
            (path + QStringLiteral(": could not write the image")).toStdString());
    return core::Status::ok();
}

core::Status Planner::useProfile(const core::cost::Profile &profile, const QString &device)
{
    if (!m_problem)
        return core::makeError(core::StatusCode::InvalidArgument, "no model is open");
    REMAT_ASSIGN_OR_RETURN(std::shared_ptr<const PlannerProblem> p,
                           withProfileCosts(*m_problem, profile, device.toStdString()));
    m_profile = profile;
    m_profileDevice = device;
    // Same graph, new times: every plan keeps its schedule and gets its figures re-simulated.
    std::vector<Plan> plans = m_document.plans();
    for (Plan &plan : plans)
        if (auto t = core::sim::simulate(plan.schedule, *p->training, *p->costs))
            plan.timeline = std::move(*t);
    const int current = m_document.currentPlanIndex();
    setProblem(std::move(p));
    m_restoring = true;
    m_document.setPlans(std::move(plans), current);
    m_restoring = false;
    updateCurrentPlanViews();
    return core::Status::ok();
}

void Planner::timeSecondBatch(const core::cost::Profile &profile, const QString &device)
{
    if (!m_problem || profile.batch <= 0 || profile.secondBatch > 0)
        return;
    // The backend the calibration ran on, by the label the Run panel showed.
    std::optional<BackendChoice> choice;
    for (const BackendChoice &b : m_runs.backends())
        if (b.label == device || b.id == device)
            choice = b;
    if (!choice)
        return;
    core::pipeline::LoadOptions options = m_problem->options;
    options.import.batch = core::exec::secondProfileBatch(profile.batch);
    options.import.stop = {};
    options.import.progress = {};
    const std::string path = m_problem->modelPath;
    auto work = [path, options, backend = *choice, device = device.toStdString()](
                    JobContext &ctx) -> core::Expected<core::cost::Profile> {
        REMAT_ASSIGN_OR_RETURN(std::shared_ptr<const core::pipeline::Problem> p,
                               core::pipeline::loadProblem(path, options, ctx.stop()));
        if (!p->isValid() || !p->forward)
            return core::makeError(core::StatusCode::Unsupported,
                                   "no training step at batch " +
                                       std::to_string(options.import.batch));
        REMAT_ASSIGN_OR_RETURN(std::unique_ptr<core::exec::Backend> b, backend.create());
        return core::exec::profileStoreAll(*b, *p->training, *p->forward, {}, 5,
                                           {backend.id.toStdString(), device, "store-all"},
                                           ctx.stop());
    };
    m_secondPoint.replace(
        std::move(work), [this, device, batch = profile.batch, sha = profile.modelSha256](
                             quint64, core::Expected<core::cost::Profile> second) {
            // Only onto the calibration it was taken for (a newer one, or another model, drops it).
            if (!second || !m_profile || m_profile->batch != batch || m_profile->modelSha256 != sha)
                return;
            core::cost::Profile merged = *m_profile;
            if (core::exec::addSecondPoint(merged, *second) > 0)
                (void)useProfile(merged, device);
        });
}

QString Planner::timeSourceText() const
{
    if (!m_problem || !m_problem->costs)
        return tr("Times: estimate (roofline)");
    const core::cost::TimeSource source = m_problem->costs->timeSource;
    if (source == core::cost::TimeSource::Estimate)
        return tr("Times: estimate (roofline)");
    const QString where = m_profile && m_profile->secondBatch > 0 ? tr("%1, batches %2 and %3")
                                                                        .arg(m_profileDevice)
                                                                        .arg(m_profile->batch)
                                                                        .arg(m_profile->secondBatch)
                                                                  : m_profileDevice;
    return tr("Times: %1 (measured on %2)")
        .arg(QString::fromLatin1(core::cost::timeSourceName(source)), where);
}

std::optional<RunRequest> Planner::makeCalibrationRequest() const
{
    if (!m_problem || !m_problem->forward)
        return std::nullopt;
    RunRequest r;
    r.problem = m_problem;
    r.schedule = m_problem->storeAll.schedule;
    r.reference = m_problem->storeAll.schedule;
    return r;
}

std::optional<RunRequest> Planner::makeRunRequest() const
{
    const Plan *plan = m_document.currentPlan();
    if (!plan || !m_problem || !m_problem->forward)
        return std::nullopt;
    RunRequest r;
    r.problem = m_problem;
    r.schedule = plan->schedule;
    r.reference = m_problem->storeAll.schedule;
    // A corpus model ships its inputs beside it (mlp.onnx -> mlp.npz): use them when present.
    const QString npz = QFileInfo(m_document.modelPath()).path() + QLatin1Char('/') +
                        QFileInfo(m_document.modelPath()).completeBaseName() +
                        QStringLiteral(".npz");
    if (QFileInfo::exists(npz))
        if (auto a = core::exec::readNpz(npz.toStdString()))
            r.feed = std::move(*a);
    return r;
}

} // namespace remat::ui
