#pragma once
// The planner: ties the session document, the solve and run controllers and the planner widgets
// together. The main window hosts the widgets as docks (createDocks) and adds the menu; the graph
// view reads nodeColors() and adds pinActions(node) to its context menu.
//   Planner planner;  planner.setSolvers(solvers);  planner.openModel("resnet50.onnx", 32);
//   planner.createDocks(&mainWindow);  mainWindow.menuBar()->addMenu(planner.createMenu(&mainWindow));
//   connect(&planner, &Planner::stepStateChanged, graphView, &...::highlight);

#include "core/solvers/solver.h"
#include "ui/background_job.h"
#include "ui/planner/memory_chart_view.h"
#include "ui/planner/pareto_chart_view.h"
#include "ui/planner/pins_widget.h"
#include "ui/planner/plan_analysis.h"
#include "ui/planner/plan_node_colors.h"
#include "ui/planner/plan_table_model.h"
#include "ui/planner/planner_docks.h"
#include "ui/planner/planner_document.h"
#include "ui/planner/planner_problem.h"
#include "ui/planner/run_controller.h"
#include "ui/planner/run_panel.h"
#include "ui/planner/session_file.h"
#include "ui/planner/solve_controller.h"
#include "ui/planner/solver_panel.h"
#include "ui/planner/teaching_view.h"
#include "ui/problem_cache.h"

#include <QDockWidget>
#include <QHash>
#include <QMessageBox>
#include <QObject>
#include <QPointer>
#include <QTableView>
#include <QTimer>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

class QAction;
class QMainWindow;
class QMenu;

namespace remat::ui {

class FitDialog;
class TrainingCompareDialog;

class Planner : public QObject
{
    Q_OBJECT
public:
    explicit Planner(QObject *parent = nullptr);
    ~Planner() override;

    PlannerDocument *document() { return &m_document; }
    SolveController *solveController() { return &m_solves; }
    RunController *runController() { return &m_runs; }
    PlanNodeColors *nodeColors() const { return m_colors; }
    const std::shared_ptr<const PlannerProblem> &problem() const { return m_problem; }
    const PlanAnalysis &analysis() const { return m_analysis; }

    // ---- widgets (PlannerDocks: in the window's docks once createDocks ran)
    SolverPanel *solverPanel() const { return m_docks.solverPanel(); }
    QTableView *planTable() const { return m_docks.planTable(); }
    PlanTableModel *planTableModel() const { return m_tableModel; }
    MemoryChartView *memoryChart() const { return m_docks.memoryChart(); }
    ParetoChartView *paretoChart() const { return m_docks.paretoChart(); }
    PinsWidget *pinsWidget() const { return m_docks.pins(); }
    TeachingView *teachingView() const { return m_docks.teaching(); }
    RunPanel *runPanel() const { return m_docks.runPanel(); }

    /// Adds the planner docks to `window` (right: solver, pins; bottom: plans, memory, Pareto,
    /// teaching, run) and returns them.
    QList<QDockWidget *> createDocks(QMainWindow *window);
    /// A "Planner" menu: solve, compare, sweep, cancel, sessions, exports.
    QMenu *createMenu(QWidget *parent);
    /// Raises one of the planner docks: "solver", "pins", "plans", "memory", "pareto",
    /// "schedule" (teaching view), "run". False when there is no such dock.
    bool raiseView(const QString &name);
    /// Moves the teaching view to the middle of the backward pass (screenshots, demos).
    void showMidBackward();
    QAction *undoAction() const { return m_undo; }
    /// "Training..." (Planner menu and the window's toolbar): opens TrainingOptionsDialog.
    QAction *trainingAction() const { return m_trainingAction; }
    QAction *redoAction() const { return m_redo; }

    // ---- configuration (by the app) -------------------------------------------------------
    void setSolvers(std::vector<std::shared_ptr<const core::solvers::Solver>> solvers);
    /// Every solver of this build (core's registry), ready to share with worker threads.
    static std::vector<std::shared_ptr<const core::solvers::Solver>> registrySolvers();
    /// Replaces the run panel's backends (the CPU reference is there by default).
    void setBackends(std::vector<BackendChoice> backends);
    static BackendChoice cpuBackendChoice();
    /// The budget a new model starts with: one the in-memory solvers can meet, above the
    /// memory floor (memoryFloor) and below store-all's peak.
    static int64_t defaultBudget(const PlannerProblem &problem);
    void setFreeMemoryProvider(std::function<std::optional<int64_t>()> provider);

    // ---- model ------------------------------------------------------------------------------
    /// Loads off the GUI thread (core::pipeline::loadProblem), or takes the problem from the
    /// problem cache when one matches; problemChanged() or problemFailed() follows.
    void openModel(const QString &path, int64_t batch,
                   const core::onnx::ImportOptions &settings = {});
    /// Another model replaces the session (File > Open, a dropped file, a recent file): an
    /// untitled session of `modelPath` (Save asks for a file), without the old model's problem,
    /// plans, pins, Pareto points, run results and undo history, at once, so nothing of the old
    /// model stays live while the new one loads, waits for its input sizes or has no training
    /// step. Nothing happens for the session's own model or the one a session being opened is
    /// loading.
    void startNewSession(const QString &modelPath);
    /// The optimizer, precision, sharding and micro-batches of the training step: one undo step
    /// that sets the plans aside (as a batch change does) and rebuilds the problem off the GUI
    /// thread; problemChanged() follows. Nothing happens when they are the document's already.
    void setTraining(const core::training::TrainingOptions &training);
    /// Another batch for the open model: one undo step that sets the plans aside (SetBatchCommand),
    /// or, when the window set a batch handler, the window re-imports and the planner follows.
    void setBatch(int64_t batch);
    /// The same with the budget to plan under at that batch (the Largest batch dialog's memory),
    /// in the same undo step.
    void setBatch(int64_t batch, int64_t budgetBytes);
    /// The undo step of a batch change the window made (a re-import at another batch): with the
    /// budget setBatch(batch, budget) asked for at that batch.
    void pushBatchChange(int64_t batch);
    /// Who changes the batch for setBatch (the window: its explorer and toolbar follow too).
    void setBatchHandler(std::function<void(int64_t)> handler)
    {
        m_batchHandler = std::move(handler);
    }
    /// "Largest batch for this GPU...": a FitDialog (ui/planner/fit_dialog.h) on the open model
    /// with its import settings and training options, shown (not modal); its applied rows go
    /// to setBatch. Null without a model.
    FitDialog *openFitDialog(QWidget *parent);
    /// "Compare training options...": the open model under two option sets side by side
    /// (ui/planner/training_compare_dialog.h), A starting from the current options, planned by
    /// the solver panel's solver. Shown, not modal. Null without a model.
    TrainingCompareDialog *openTrainingCompareDialog(QWidget *parent);
    /// "Compare selected plans": the current plan (A) and the first other selected plan (B) in
    /// a StepComparisonView (overlaid curves and the difference table). Null unless two plans
    /// are selected.
    QDialog *openPlanComparison(QWidget *parent);
    /// Uses a problem built elsewhere (tests, benchmark graphs).
    void setProblem(std::shared_ptr<const PlannerProblem> problem);
    /// The problems loaded in the window (the explorer's): openModel takes a match from there
    /// instead of loading, and adds what it loads. May be null (the planner loads for itself).
    void setProblemCache(std::shared_ptr<ProblemCache> cache) { m_problemCache = std::move(cache); }
    bool isLoading() const { return m_loads.busy(); }
    /// The batch the load under way is for (0 when none is): a window that moved to another
    /// batch meanwhile must not wait for it.
    int64_t loadingBatch() const { return m_loads.busy() ? m_loadingBatch : 0; }
    /// Times every plan with a measured profile from now on (the Run panel's "Calibrate on this
    /// device"; also for models and batches loaded later, through the calibrated model): the
    /// problem's costs are rebuilt, store-all and every plan re-simulated.
    core::Status useProfile(const core::cost::Profile &profile, const QString &device);
    /// The profile in use (null before a calibration). After "Calibrate on this device" its ops
    /// gain a second point: the store-all step timed again at half the batch (or 2 from 1) off
    /// the GUI thread, as `remat run --profile-out` does, so another batch scales along each op's
    /// own two sizes (secondBatch > 0 once it is in; a failure leaves the one-batch profile).
    const std::optional<core::cost::Profile> &calibrationProfile() const { return m_profile; }
    /// "Times: estimate (roofline)", "Times: profile (CPU reference)", ... as the Run panel shows.
    QString timeSourceText() const;

    // ---- solving ----------------------------------------------------------------------------
    /// Solves with the document's objective, budget and pins; appends a row. The Solver dock's
    /// combo shows that solver afterwards.
    void solve(const QString &solverId);
    /// Every usable solver on the current inputs, the interactive ones first: each row appears
    /// as its solver finishes. The slow ones (MILP, LP, offload searches) stop at
    /// kCompareAllSeconds, their rows saying so, so a comparison takes seconds, not minutes;
    /// compareAllWithin(0) lets them run to their own limit.
    void compareAll();
    void compareAllWithin(double slowLimitSeconds);
    static constexpr double kCompareAllSeconds = 3.0;
    void sweep();
    void cancel();
    /// The plan behind a Pareto point: selects the row of that solver at that budget, or solves
    /// it (the budget becomes the document's, one undo step).
    void showParetoPlan(const ParetoPoint &point);
    /// Removes the plan rows selected in the table (Delete): one undo step.
    void deleteSelectedPlans();
    /// Re-solves the current plan's solver with the document's current inputs (cache first).
    void resolveCurrent(bool live = false);
    QStringList usableSolverIds() const;
    /// Blocks until every solve, sweep and load has finished and its result is applied (tests).
    void waitForIdle();

    // ---- pins and the graph -----------------------------------------------------------------
    /// The tensor a node's pin applies to (its main activation output), empty if none.
    QString pinTensorOfNode(const QString &nodeName) const;
    QString nodeOfTensor(const QString &tensorName) const;
    /// Pins (or with nullopt clears) the node's main output: one undo step.
    bool pinNode(const QString &nodeName, std::optional<core::solvers::PinKind> kind);
    /// Always keep / always recompute / offload / clear, for the graph's context menu.
    QList<QAction *> pinActions(const QString &nodeName, QObject *parent);
    /// Overlay text for a selected node: decision, where it is recomputed, backward users.
    QString nodeOverlay(const QString &nodeName) const;
    void selectNode(const QString &nodeName);

    // ---- several plans ----------------------------------------------------------------------
    /// Plans selected in the table beside the current one: the memory chart overlays their
    /// curves. Ascending plan indices.
    QList<int> overlaidPlans() const;
    /// Selects these plans beside the current one (a session's selection).
    void setOverlaidPlans(const QList<int> &plans);

    // ---- view state the window keeps (colour mode, selected node) ----------------------------
    /// Who fills a session's view state on save (the window's colour mode and selected node)
    /// and who applies it on open.
    void setViewStateHooks(std::function<void(core::io::SessionView &)> save,
                           std::function<void(const core::io::SessionView &)> restore)
    {
        m_saveView = std::move(save);
        m_restoreView = std::move(restore);
    }

    // ---- sessions and exports ---------------------------------------------------------------
    core::Status saveSession(const QString &path);
    /// Reads the session and loads its model off-thread; sessionOpened() follows.
    core::Status openSession(const QString &path);
    const QString &sessionPath() const { return m_sessionPath; }
    /// Asks to save unsaved changes; false when the user cancels (the window must stay open, the
    /// other model must not open). `reason` opens the question ("Opening b.onnx replaces ...").
    bool maybeSave(QWidget *parent, const QString &reason = QString());
    /// Asks before opening `modelPath` would discard this session's unsaved plans and pins;
    /// false when the user cancels. True at once for the session's own model.
    bool maybeSaveBeforeOpening(QWidget *parent, const QString &modelPath);
    /// Whether opening `modelPath` would ask maybeSaveBeforeOpening's question (unsaved plans or
    /// pins of another model).
    bool wouldAskBeforeOpening(const QString &modelPath) const;
    /// Who answers maybeSave's question: Save, Discard or Cancel (a message box by default;
    /// tests and scripts answer themselves).
    using SaveQuestion =
        std::function<QMessageBox::StandardButton(QWidget *parent, const QString &text)>;
    void setSaveQuestion(SaveQuestion question) { m_saveQuestion = std::move(question); }
    core::Status exportPlanJson(const QString &path) const;
    core::Status exportTimelineCsv(const QString &path) const;
    /// Export > Apply in PyTorch: the plan JSON at `planPath`, and beside it remat_apply.py and
    /// `<plan>_apply.py`, a ready snippet that applies the plan to the user's model; the
    /// snippet's path in `snippetPath`.
    core::Status exportForPyTorch(const QString &planPath, QString *snippetPath = nullptr) const;
    /// The three lines that apply a plan: import, apply_plan, print the report.
    static QString pytorchSnippet(const QString &planPath, const QString &modelPath);
    /// PNG or SVG by suffix. A PNG is drawn at least 1600 px wide (and at twice the screen's
    /// pixel ratio), so it stays sharp in a report.
    core::Status exportChart(QWidget *chart, const QString &path) const;

signals:
    void problemChanged();
    void problemFailed(const QString &message);
    void sessionOpened(bool ok, const QString &message);
    void planUpdated(); ///< the current plan (or its figures) changed
    void stepSelected(int step, const QString &nodeName);
    void stepStateChanged(const remat::ui::StepState &state);
    void solveFailed(const QString &solver, const QString &message);
    /// The Training dialog changed which weights train (--freeze / --trainable): the model is
    /// re-imported with these settings (the explorer's window does it; the planner follows).
    void importSettingsRequested(const core::onnx::ImportOptions &settings);

private:
    void documentChanged(PlannerChange change);
    void refreshSolverInfos();
    void updateCurrentPlanViews();
    /// The current plan's memory chart, with the other selected plans overlaid.
    void updateMemoryChart();
    void updateBudgetRange();
    /// "weights 44.6 MiB + their gradients 44.6 MiB + the largest op's working set ..."
    QString floorExplanation() const;
    SolveJob makeJob(const std::shared_ptr<const core::solvers::Solver> &solver) const;
    std::shared_ptr<const core::solvers::Solver> solverById(const QString &id) const;
    QString cacheKey(const QString &solver, const SolveJob &job) const;
    /// cacheKey() of the inputs a plan was solved for.
    QString planCacheKey(const core::solvers::Plan &plan) const;
    /// "Plan 2 of 3 — hong-dp: optimal, peak 1.20 GiB, ..." (row < 0: without the row).
    QString planSummary(const core::solvers::Plan &plan, int row) const;
    /// Infeasible only because its solver takes no pins and the plan has some.
    bool refusedPins(const core::solvers::Plan &plan) const;
    QString pinsRefusedMessage(const core::solvers::Plan &plan) const;
    std::vector<core::solvers::Pin> resolvedPins() const;
    /// solve() with a time limit for a slow solver (0: the job's default).
    void solveWithin(const QString &solverId, double limitSeconds);
    QHash<quint64, double> m_limitedJobs; ///< job id -> Compare all's time limit
    void onSolved(quint64 id, const core::solvers::Plan &plan, int replaceIndex, quint64 tag);
    void onFailed(quint64 id, const QString &solver, const QString &message, bool cancelled,
                  quint64 tag);
    void applyLoadedProblem(std::shared_ptr<const PlannerProblem> problem);
    std::optional<RunRequest> makeRunRequest() const;
    std::optional<RunRequest> makeCalibrationRequest() const;
    bool isFast(const core::solvers::Solver &s) const;

    PlannerDocument m_document;
    SolveController m_solves;
    RunController m_runs;
    PlanNodeColors *m_colors;
    PlanTableModel *m_tableModel;
    std::vector<std::shared_ptr<const core::solvers::Solver>> m_solvers;
    QList<SolverInfo> m_solverInfos;
    std::shared_ptr<const PlannerProblem> m_problem;
    PlanAnalysis m_analysis;
    QHash<QString, core::solvers::Plan> m_cache;
    quint64 m_generation = 1;
    int64_t m_loadingBatch = 0;
    bool m_restoring = false;
    std::shared_ptr<ProblemCache> m_problemCache;
    /// Model loads: a newer one stops the older and drops its result.
    BackgroundJob<std::shared_ptr<const PlannerProblem>> m_loads{"loading the model"};
    std::optional<SessionData> m_pendingSession;
    QString m_sessionPath;
    QTimer m_liveTimer;
    std::optional<core::cost::Profile> m_profile; ///< from "Calibrate on this device"
    /// The calibration's second batch (calibrationProfile); a new calibration drops it.
    BackgroundJob<core::cost::Profile> m_secondPoint{"timing a second batch"};
    void timeSecondBatch(const core::cost::Profile &profile, const QString &device);
    QString m_profileDevice;
    SaveQuestion m_saveQuestion;
    std::function<void(core::io::SessionView &)> m_saveView;
    std::function<void(const core::io::SessionView &)> m_restoreView;
    int m_runPlan = -1; ///< the plan the last run started with
    bool m_freshSession = false;
    int64_t
        m_pendingBudgetBatch = 0,
        m_pendingBudget =
            0; ///< setBatch(batch, budget) via the window ///< startNewSession ran: the next problem starts the session

    PlannerDocks m_docks; ///< after the document, the run controller and the table model
    QAction *m_undo = nullptr;
    QAction *m_redo = nullptr;
    QAction *m_trainingAction = nullptr;
    std::function<std::optional<int64_t>()> m_freeMemory;
    std::function<void(int64_t)> m_batchHandler;
};

} // namespace remat::ui
