#pragma once
// Objective, budget (slider + field with units + "this GPU"), solver choice, Solve / Compare All /
// Sweep / Cancel, and live solver progress (MILP incumbent, bound and gap). Edits go to the
// document as undo commands; the planner reacts to the document and to this panel's requests.
//   SolverPanel panel(&document);  panel.setSolvers(infos);  panel.setBudgetRange(lo, hi);
//   panel.setFreeMemoryProvider([] { return cudaFreeBytes(); });   // shows "this GPU"
//   connect(&panel, &SolverPanel::solveRequested, planner, &Planner::solve);

#include "core/solvers/solver.h"

#include <QWidget>

#include <functional>
#include <optional>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSlider;

namespace remat::ui {

class PlannerDocument;
enum class PlannerChange : unsigned char;
struct SolveProgressInfo;

/// What the panel shows about one solver.
struct SolverInfo
{
    QString id, title, description;
    core::solvers::Capabilities capabilities;
    bool usable = true;
    QString whyNot; ///< shown as tooltip when !usable ("chain-only: this graph is not a chain")
};

class SolverPanel : public QWidget
{
    Q_OBJECT
public:
    explicit SolverPanel(PlannerDocument *document, QWidget *parent = nullptr);

    void setSolvers(const QList<SolverInfo> &solvers);
    QString currentSolver() const;
    void setCurrentSolver(const QString &id);
    /// The slider spans [lowest, highest] bytes (e.g. weights .. store-all peak).
    void setBudgetRange(int64_t lowest, int64_t highest);
    /// The model's memory floor (weights + gradients + largest op's working set) and how it is
    /// made up: the "Floor" button sets the budget to it; 0 hides the button.
    void setFloor(int64_t bytes, const QString &explanation);
    /// Shows the "this GPU" button; the provider returns the device's free bytes (nullopt: none).
    void setFreeMemoryProvider(std::function<std::optional<int64_t>()> provider);
    bool liveResolve() const;
    void setLiveResolve(bool on);
    void setBusy(bool busy);
    /// After Cancel: "Cancelling..." with the Cancel button off until the jobs have wound down
    /// (setBusy(false) ends it).
    void setCancelling();
    bool isCancelling() const { return m_cancelling; }
    /// A new solve or sweep starts: busy, and cancellable again even while an older job winds down.
    void jobStarted();
    void showProgress(const SolveProgressInfo &info);
    void showMessage(const QString &text);
    /// The message line's text (the current plan, a solve's progress or result).
    QString messageText() const;
    /// Why the last typed budget was refused ("'abc' is not a byte count ..."); empty once a
    /// valid budget was entered.
    QString budgetErrorText() const;
    /// Moves the slider as a user would (tests, benchmarks): pushes a mergeable budget command.
    void dragBudgetTo(int64_t bytes);
    /// Picks "Lowest peak within X% slower" with X = `percent`, as a user would (tests).
    void chooseLowestPeakWithin(double percent);
    /// The objective box's current text.
    QString objectiveText() const;

signals:
    void solveRequested(const QString &solverId);
    void compareAllRequested();
    void sweepRequested();
    void cancelRequested();

private:
    void documentChanged(PlannerChange change);
    void syncBudgetWidgets();
    void objectiveChosen();
    void budgetEdited();
    void setBudgetError(const QString &text);
    int64_t sliderToBytes(int v) const;
    int bytesToSlider(int64_t b) const;

    PlannerDocument *m_document;
    QComboBox *m_objective;
    QDoubleSpinBox *m_maxOverhead; ///< X of "Lowest peak within X% slower"
    QSlider *m_slider;
    QLineEdit *m_budgetText;
    QPushButton *m_thisGpu;
    QPushButton *m_floor;
    int64_t m_floorBytes = 0;
    QComboBox *m_solver;
    QCheckBox *m_live;
    QPushButton *m_solve, *m_compare, *m_sweep, *m_cancel;
    QProgressBar *m_progress;
    QLabel *m_message;
    QLabel *m_budgetError; ///< under the budget field while the typed text is refused
    QList<SolverInfo> m_solvers;
    std::function<std::optional<int64_t>()> m_freeMemory;
    int64_t m_lo = 0, m_hi = 0;
    bool m_syncing = false;
    bool m_cancelling = false;
    int m_dragKey = 1;
};

} // namespace remat::ui
