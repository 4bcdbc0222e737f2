#include "ui/planner/planner_docks.h"

#include "ui/planner/memory_chart_view.h"
#include "ui/planner/pareto_chart_view.h"
#include "ui/planner/pins_widget.h"
#include "ui/planner/plan_table_model.h"
#include "ui/planner/run_panel.h"
#include "ui/planner/solver_panel.h"
#include "ui/planner/teaching_view.h"

#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QDockWidget>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLineEdit>
#include <QMainWindow>
#include <QPlainTextEdit>
#include <QScrollBar>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTextEdit>
#include <QTimer>

#include <algorithm>
#include <memory>

namespace remat::ui {

namespace {
/// A widget the user may be typing into (its keys must not be taken away).
bool takesTyping(const QWidget *w)
{
    if (!w)
        return false;
    if (qobject_cast<const QLineEdit *>(w) || qobject_cast<const QAbstractSpinBox *>(w))
        return true;
    if (const auto *combo = qobject_cast<const QComboBox *>(w))
        return combo->isEditable();
    if (const auto *text = qobject_cast<const QTextEdit *>(w))
        return !text->isReadOnly();
    if (const auto *plain = qobject_cast<const QPlainTextEdit *>(w))
        return !plain->isReadOnly();
    return false;
}
} // namespace

PlannerDocks::PlannerDocks(PlannerDocument *document, PlanTableModel *plans, RunController *runs)
    : m_shelf(std::make_unique<QWidget>())
{
    QWidget *shelf = m_shelf.get();
    m_solverPanel = new SolverPanel(document, shelf);
    m_table = new QTableView(shelf);
    m_table->setObjectName(QStringLiteral("plannerPlans"));
    // Sorted by any column through a proxy (PlanTableModel::SortRole: bytes, seconds, not text);
    // unsorted, rows are in solve order. Rows map to plans through planIndexOfRow / rowOfPlan.
    m_sorted = new QSortFilterProxyModel(m_table);
    m_sorted->setSourceModel(plans);
    m_sorted->setSortRole(PlanTableModel::SortRole);
    m_table->setModel(m_sorted);
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(-1, Qt::AscendingOrder); // solve order until a header is clicked
    m_table->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    m_table->setWordWrap(false);
    // The whole cost beside the peak: on a laptop-width dock the step-time overhead column was
    // past the right edge, behind Activation peak and Recompute (the model's order is kept for
    // CSV, sorting and tests; only the view shows Peak, Time, Recompute, Activation peak).
    QHeaderView *header = m_table->horizontalHeader();
    header->moveSection(header->visualIndex(PlanTableModel::TimeOverhead),
                        header->visualIndex(PlanTableModel::ActivationPeak));
    header->moveSection(header->visualIndex(PlanTableModel::Overhead),
                        header->visualIndex(PlanTableModel::ActivationPeak));
    // New rows widen a column to its longest entry (a user's wider column stays): the table
    // never shows "feasible, domi..." while there is room.
    QObject::connect(plans, &QAbstractItemModel::modelReset, m_table, [table = m_table.data()] {
        const QAbstractItemView *view = table; // sizeHintForColumn is public there
        const int last = table->model()->columnCount() - 1;
        for (int c = 0; c < last; ++c)
            table->setColumnWidth(c, std::max({table->columnWidth(c), view->sizeHintForColumn(c),
                                               table->horizontalHeader()->sectionSizeHint(c)}));
    });
    m_table->verticalHeader()->setDefaultSectionSize(22);
    m_memoryChart = new MemoryChartView(shelf);
    m_memoryChart->setObjectName(QStringLiteral("plannerMemoryChart"));
    m_paretoChart = new ParetoChartView(shelf);
    m_paretoChart->setObjectName(QStringLiteral("plannerPareto"));
    m_pins = new PinsWidget(document, shelf);
    m_teaching = new TeachingView(shelf);
    m_runPanel = new RunPanel(runs, shelf);
}

PlannerDocks::~PlannerDocks() = default;

int PlannerDocks::planIndexOfRow(int row) const
{
    if (!m_sorted || row < 0 || row >= m_sorted->rowCount())
        return -1;
    return m_sorted->mapToSource(m_sorted->index(row, 0)).row();
}

int PlannerDocks::rowOfPlan(int planIndex) const
{
    if (!m_sorted || planIndex < 0 || planIndex >= m_sorted->sourceModel()->rowCount())
        return -1;
    return m_sorted->mapFromSource(m_sorted->sourceModel()->index(planIndex, 0)).row();
}

void PlannerDocks::selectPlan(int planIndex)
{
    const int row = rowOfPlan(planIndex);
    if (row < 0 || !m_table)
        return;
    const QModelIndex first =
        m_sorted->index(row, m_table->horizontalHeader()->logicalIndex(0)); // Solver, unless moved
    m_table->selectionModel()->setCurrentIndex(first, QItemSelectionModel::ClearAndSelect |
                                                          QItemSelectionModel::Rows);
    // setCurrentIndex scrolls only when the current cell changes.
    m_table->scrollTo(first);
}

QList<QDockWidget *> PlannerDocks::addTo(QMainWindow *window)
{
    QList<QDockWidget *> docks;
    auto add = [&](QWidget *w, const QString &title, const QString &name, Qt::DockWidgetArea area) {
        auto *dock = new QDockWidget(title, window);
        m_docks.insert(name.mid(7).chopped(4).toLower(), dock); // "plannerSolverDock" -> "solver"
        dock->setObjectName(name);
        dock->setWidget(w); // the dock becomes the widget's parent
        window->addDockWidget(area, dock);
        docks << dock;
        return dock;
    };
    add(m_solverPanel, QObject::tr("Solver"), QStringLiteral("plannerSolverDock"),
        Qt::RightDockWidgetArea);
    add(m_pins, QObject::tr("Pins"), QStringLiteral("plannerPinsDock"), Qt::RightDockWidgetArea);
    QDockWidget *plans = add(m_table, QObject::tr("Plans"), QStringLiteral("plannerPlansDock"),
                             Qt::BottomDockWidgetArea);
    QDockWidget *memory = add(m_memoryChart, QObject::tr("Memory"),
                              QStringLiteral("plannerMemoryDock"), Qt::BottomDockWidgetArea);
    QDockWidget *pareto = add(m_paretoChart, QObject::tr("Pareto"),
                              QStringLiteral("plannerParetoDock"), Qt::BottomDockWidgetArea);
    QDockWidget *teach = add(m_teaching, QObject::tr("Schedule"),
                             QStringLiteral("plannerTeachingDock"), Qt::BottomDockWidgetArea);
    QDockWidget *run = add(m_runPanel, QObject::tr("Run"), QStringLiteral("plannerRunDock"),
                           Qt::BottomDockWidgetArea);
    // Rows arriving widen the columns (above); the dock follows so that Solver, Status, Peak,
    // Activation peak and Recompute show without scrolling, up to half the window.
    // Whether the Schedule tab is the one on top of its group (tabified docks all report
    // isVisible(); visibilityChanged follows the tab).
    auto scheduleUp = std::make_shared<bool>(false);
    QObject::connect(
        m_sorted->sourceModel(), &QAbstractItemModel::modelReset, plans,
        [window, plans, memory, scheduleUp, table = m_table.data()] {
            if (!plans->isVisible() || plans->isFloating())
                return;
            if (*scheduleUp)
                return; // the Schedule tab keeps its width (below) while it is on top
            int need = table->verticalHeader()->width() + 2 * table->frameWidth() +
                       table->verticalScrollBar()->sizeHint().width() + 4;
            for (int c = 0; c <= PlanTableModel::Overhead; ++c)
                need += table->columnWidth(c);
            need = std::min(need, window->width() / 2);
            // After the table has laid out its new columns and the dock its table.
            // Both sides of the split, or Qt scales the one size back.
            if (plans->width() < need && memory->isVisible() &&
                window->dockWidgetArea(memory) == window->dockWidgetArea(plans)) {
                const int total = plans->width() + memory->width();
                window->resizeDocks({plans, memory}, {need, total - need}, Qt::Horizontal);
            }
        });
    // A click on the Schedule tab gives the stepper the keys at once (the arrows step without
    // a click on a matrix first). Not while the user types somewhere, nor at start-up (the window
    // is not active yet when the docks first show).
    QObject::connect(
        teach, &QDockWidget::visibilityChanged, m_teaching,
        [teaching = m_teaching.data(), teach, plans, window, scheduleUp](bool visible) {
            *scheduleUp = visible;
            if (!visible)
                return;
            // Two square matrices side by side with their explanation need the
            // width: the Plans table beside the tab (sized for its columns, up to
            // half the window) keeps a third while the tab is up. At 1366x768 the
            // matrices were 45 px and their titles cut ("R: runs in sta...").
            if (plans->isVisible() && !plans->isFloating() && !teach->isFloating() &&
                window->dockWidgetArea(plans) == window->dockWidgetArea(teach)) {
                const int total = plans->width() + teach->width();
                if (teach->width() < total / 2)
                    window->resizeDocks({plans, teach}, {total / 3, total - total / 3},
                                        Qt::Horizontal);
            }
            // After the click: the tab bar's own handling ends first.
            QTimer::singleShot(0, teaching, [teaching, teach] {
                if (!teaching->isVisible() || !teach->window()->isActiveWindow())
                    return;
                if (takesTyping(QApplication::focusWidget()))
                    return;
                teaching->setFocus(Qt::TabFocusReason);
            });
        });
    // The Pareto chart with its legend beside the plot needs the width too: while its tab is on
    // top it gets three fifths of the bottom width (the Plans table keeps Solver, Status and
    // Peak beside it; at 1366x768 the plot was 117x81 px beside a cut legend).
    auto paretoUp = std::make_shared<bool>(false);
    QObject::connect(
        pareto, &QDockWidget::visibilityChanged, pareto,
        [window, plans, pareto, paretoUp](bool visible) {
            *paretoUp = visible;
            if (!visible)
                return;
            // After the tab switch is laid out: the widths read in the signal are the old tab's.
            QTimer::singleShot(0, pareto, [window, plans, pareto, paretoUp] {
                if (!*paretoUp || !plans->isVisible() || plans->isFloating() ||
                    pareto->isFloating() ||
                    window->dockWidgetArea(plans) != window->dockWidgetArea(pareto))
                    return;
                const int total = plans->width() + pareto->width();
                const int want = total * 3 / 5;
                if (pareto->width() < want)
                    window->resizeDocks({plans, pareto}, {total - want, want}, Qt::Horizontal);
            });
        });
    window->splitDockWidget(plans, memory, Qt::Horizontal);
    window->tabifyDockWidget(memory, pareto);
    window->tabifyDockWidget(pareto, teach);
    window->tabifyDockWidget(teach, run);
    memory->raise();
    return docks;
}

bool PlannerDocks::raise(const QString &name)
{
    const QString key = name == QLatin1String("schedule") ? QStringLiteral("teaching") : name;
    QDockWidget *dock = m_docks.value(key);
    if (!dock)
        return false;
    dock->show();
    dock->raise();
    return true;
}

} // namespace remat::ui
