#pragma once
// The planner's widgets and the docks that hold them in a main window. Every widget has a parent
// from the start: a hidden shelf of this class's own until addTo() moves it into a dock of the
// window, so nothing is deleted by hand (the shelf takes what was never docked with it).
//   PlannerDocks docks(&document, tableModel, &runs);
//   docks.addTo(&mainWindow);   docks.raise("memory");   docks.memoryChart()->setTimelines(...);

#include <QHash>
#include <QList>
#include <QPointer>
#include <QString>

#include <memory>

class QDockWidget;
class QMainWindow;
class QSortFilterProxyModel;
class QTableView;
class QWidget;

namespace remat::ui {

class MemoryChartView;
class ParetoChartView;
class PinsWidget;
class PlannerDocument;
class PlanTableModel;
class RunController;
class RunPanel;
class SolverPanel;
class TeachingView;

class PlannerDocks
{
public:
    /// Builds the widgets on `document` (the solver panel and pins), `plans` (the plan table)
    /// and `runs` (the run panel); all three must outlive the widgets.
    PlannerDocks(PlannerDocument *document, PlanTableModel *plans, RunController *runs);
    ~PlannerDocks();
    PlannerDocks(const PlannerDocks &) = delete;
    PlannerDocks &operator=(const PlannerDocks &) = delete;

    SolverPanel *solverPanel() const { return m_solverPanel; }
    QTableView *planTable() const { return m_table; }
    MemoryChartView *memoryChart() const { return m_memoryChart; }
    ParetoChartView *paretoChart() const { return m_paretoChart; }
    PinsWidget *pins() const { return m_pins; }
    TeachingView *teaching() const { return m_teaching; }
    RunPanel *runPanel() const { return m_runPanel; }
    /// The plan (document index) shown in table row `row`, and the reverse; -1 when none. The
    /// table may be sorted by any column.
    int planIndexOfRow(int row) const;
    int rowOfPlan(int planIndex) const;
    /// Selects the row of plan `planIndex` (document index; -1 or a plan without a row does
    /// nothing) and shows it from its first column: the table's current cell is the row's
    /// left-most column, scrolled into view. QTableView::selectRow keeps whichever column is at
    /// the viewport's left edge, so a table once scrolled right (a click on a half-shown column
    /// while the dock was narrow, End, the scroll bar) stayed scrolled through every new row of
    /// Compare all, Solver to Recompute off its left edge.
    void selectPlan(int planIndex);

    /// Moves the widgets into docks of `window` (right: solver, pins; bottom: plans beside
    /// memory, Pareto, teaching and run as tabs) and returns the docks.
    QList<QDockWidget *> addTo(QMainWindow *window);
    /// Shows and raises a dock: "solver", "pins", "plans", "memory", "pareto", "schedule" (or
    /// "teaching"), "run". False when there is no such dock (not docked yet, or unknown).
    bool raise(const QString &name);

private:
    std::unique_ptr<QWidget> m_shelf; ///< parent of the widgets until they are docked
    QPointer<SolverPanel> m_solverPanel;
    QPointer<QTableView> m_table;
    QPointer<QSortFilterProxyModel> m_sorted; ///< between the plan model and the table
    QPointer<MemoryChartView> m_memoryChart;
    QPointer<ParetoChartView> m_paretoChart;
    QPointer<PinsWidget> m_pins;
    QPointer<TeachingView> m_teaching;
    QPointer<RunPanel> m_runPanel;
    QHash<QString, QPointer<QDockWidget>> m_docks;
};

} // namespace remat::ui
