#include "ui/planner/solver_panel.h"

#include "core/util/bytes.h"
#include "ui/planner/planner_document.h"
#include "ui/planner/set_budget_command.h"
#include "ui/planner/set_objective_command.h"
#include "ui/planner/solve_controller.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSlider>
#include <QStandardItemModel>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace remat::ui {

namespace {
constexpr int kSliderSteps = 1000;
/// The objective box's item for min-peak within the max overhead (the others hold an Objective).
constexpr int kLowestPeakWithin = 100;
} // namespace

SolverPanel::SolverPanel(PlannerDocument *document, QWidget *parent)
    : QWidget(parent), m_document(document), m_objective(new QComboBox(this)),
      m_maxOverhead(new QDoubleSpinBox(this)), m_slider(new QSlider(Qt::Horizontal, this)),
      m_budgetText(new QLineEdit(this)), m_thisGpu(new QPushButton(tr("This GPU"), this)),
      m_floor(new QPushButton(tr("Set to floor"), this)), m_solver(new QComboBox(this)),
      m_live(new QCheckBox(tr("Re-solve while dragging"), this)),
      m_solve(new QPushButton(tr("Solve"), this)),
      m_compare(new QPushButton(tr("Compare all"), this)),
      m_sweep(new QPushButton(tr("Pareto sweep"), this)),
      m_cancel(new QPushButton(tr("Cancel"), this)), m_progress(new QProgressBar(this)),
      m_message(new QLabel(this)), m_budgetError(new QLabel(this))
{
    setObjectName(QStringLiteral("plannerSolver"));
    m_objective->addItem(tr("Least recompute within budget"),
                         int(core::solvers::Objective::MinTime));
    m_objective->addItem(tr("Lowest peak memory"), int(core::solvers::Objective::MinPeak));
    m_objective->addItem(tr("Lowest peak within X% slower"), kLowestPeakWithin);
    m_objective->setObjectName(QStringLiteral("plannerObjective"));
    m_maxOverhead->setObjectName(QStringLiteral("plannerMaxOverhead"));
    m_solver->setObjectName(QStringLiteral("plannerSolverBox"));
    m_maxOverhead->setRange(0, 100000);
    m_maxOverhead->setDecimals(0);
    m_maxOverhead->setValue(35);
    m_maxOverhead->setSuffix(tr(" % slower"));
    m_maxOverhead->setToolTip(
        tr("X: the simulated step may be at most this much slower than store-all's (compute, "
           "recompute and copies not hidden under compute)"));
    m_maxOverhead->setEnabled(false);
    m_slider->setRange(0, kSliderSteps);
    m_budgetText->setPlaceholderText(tr("e.g. 6 GiB"));
    m_budgetText->setToolTip(tr("Budget for the whole step's peak: bytes, KiB, MiB, GiB, or GB"));
    m_thisGpu->setToolTip(tr("Use the free memory of this machine's GPU as the budget"));
    m_thisGpu->setVisible(false);
    m_floor->setObjectName(QStringLiteral("plannerSetBudgetToFloor"));
    m_floor->setVisible(false);
    m_live->setChecked(true);
    m_live->setToolTip(tr("Fast solvers re-solve as the budget slider moves"));
    m_cancel->setEnabled(false);
    m_progress->setRange(0, 0);
    m_progress->setVisible(false);
    m_message->setWordWrap(true);
    m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_budgetText->setObjectName(QStringLiteral("plannerBudgetText"));
    m_budgetError->setObjectName(QStringLiteral("plannerBudgetError"));
    m_budgetError->setWordWrap(true);
    m_budgetError->setStyleSheet(QStringLiteral("color: #c62828;"));
    m_budgetError->setVisible(false);

    auto *budgetRow = new QHBoxLayout;
    budgetRow->addWidget(m_slider, 1);
    budgetRow->addWidget(m_budgetText);
    budgetRow->addWidget(m_thisGpu);
    budgetRow->addWidget(m_floor);
    auto *form = new QFormLayout;
    form->addRow(tr("Objective"), m_objective);
    form->addRow(tr("X"), m_maxOverhead);
    form->addRow(tr("Budget"), budgetRow);
    form->addRow(QString(), m_budgetError);
    form->addRow(tr("Solver"), m_solver);
    form->addRow(QString(), m_live);
    auto *buttons = new QHBoxLayout;
    for (QPushButton *b : {m_solve, m_compare, m_sweep, m_cancel})
        buttons->addWidget(b);
    buttons->addStretch();
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(form);
    layout->addLayout(buttons);
    layout->addWidget(m_progress);
    // The message scrolls inside the dock: a long one (an infeasible budget's floor, a solver's
    // note) as a plain wrapped label asked for its whole height, and where the right column had
    // no room the layout squeezed the boxes above it to a few pixels, their text clipped.
    auto *messageArea = new QScrollArea(this);
    messageArea->setObjectName(QStringLiteral("plannerSolverMessageArea"));
    messageArea->setWidget(m_message);
    messageArea->setWidgetResizable(true);
    messageArea->setFrameShape(QFrame::NoFrame);
    messageArea->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    messageArea->setBackgroundRole(QPalette::Window);
    messageArea->setMinimumHeight(fontMetrics().lineSpacing() + 4);
    // Its size hint is not asked for: the dock keeps the height it had with a short message.
    messageArea->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Ignored);
    m_message->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    layout->addWidget(messageArea, 1);

    connect(m_objective, &QComboBox::activated, this, &SolverPanel::objectiveChosen);
    connect(m_maxOverhead, &QDoubleSpinBox::editingFinished, this, &SolverPanel::objectiveChosen);
    connect(m_slider, &QSlider::valueChanged, this, [this](int v) {
        if (m_syncing)
            return;
        // One drag is one undo step: moves while the handle is held share a merge key.
        const int key = m_slider->isSliderDown() ? m_dragKey : 0;
        m_document->undoStack()->push(new SetBudgetCommand(m_document, sliderToBytes(v), key));
    });
    connect(m_slider, &QSlider::sliderPressed, this, [this] { ++m_dragKey; });
    connect(m_budgetText, &QLineEdit::editingFinished, this, &SolverPanel::budgetEdited);
    connect(m_thisGpu, &QPushButton::clicked, this, [this] {
        const auto free = m_freeMemory ? m_freeMemory() : std::nullopt;
        if (!free) {
            showMessage(tr("No CUDA device found."));
            return;
        }
        m_document->undoStack()->push(new SetBudgetCommand(m_document, *free));
    });
    connect(m_floor, &QPushButton::clicked, this, [this] {
        if (m_floorBytes > 0 && m_floorBytes != m_document->budgetBytes())
            m_document->undoStack()->push(new SetBudgetCommand(m_document, m_floorBytes));
    });
    connect(m_solve, &QPushButton::clicked, this, [this] { emit solveRequested(currentSolver()); });
    connect(m_compare, &QPushButton::clicked, this, &SolverPanel::compareAllRequested);
    connect(m_sweep, &QPushButton::clicked, this, &SolverPanel::sweepRequested);
    connect(m_cancel, &QPushButton::clicked, this, &SolverPanel::cancelRequested);
    connect(document, &PlannerDocument::changed, this, &SolverPanel::documentChanged);
    syncBudgetWidgets();
}

void SolverPanel::setSolvers(const QList<SolverInfo> &solvers)
{
    const QString current = currentSolver();
    m_solvers = solvers;
    m_solver->clear();
    auto *model = qobject_cast<QStandardItemModel *>(m_solver->model());
    for (const SolverInfo &s : solvers) {
        m_solver->addItem(s.id, s.id);
        const int row = m_solver->count() - 1;
        m_solver->setItemData(row,
                              s.usable ? s.title + QStringLiteral("\n") + s.description : s.whyNot,
                              Qt::ToolTipRole);
        if (!s.usable && model)
            model->item(row)->setEnabled(false); // greyed out, with the reason as tooltip
    }
    setCurrentSolver(current);
    if (m_solver->currentIndex() < 0 || !m_solvers.value(m_solver->currentIndex()).usable)
        for (int i = 0; i < m_solvers.size(); ++i)
            if (m_solvers[i].usable) {
                m_solver->setCurrentIndex(i);
                break;
            }
}

QString SolverPanel::currentSolver() const { return m_solver->currentData().toString(); }

void SolverPanel::setCurrentSolver(const QString &id)
{
    const int i = m_solver->findData(id);
    if (i >= 0)
        m_solver->setCurrentIndex(i);
}

void SolverPanel::setBudgetRange(int64_t lowest, int64_t highest)
{
    m_lo = std::max<int64_t>(0, lowest);
    m_hi = std::max(m_lo + 1, highest);
    syncBudgetWidgets();
}

void SolverPanel::setFloor(int64_t bytes, const QString &explanation)
{
    m_floorBytes = bytes;
    m_floor->setVisible(bytes > 0);
    m_floor->setToolTip(tr("Set the budget to %1, the least any plan needs: %2")
                            .arg(QString::fromStdString(core::formatBytes(bytes)), explanation));
}

void SolverPanel::setFreeMemoryProvider(std::function<std::optional<int64_t>()> provider)
{
    m_freeMemory = std::move(provider);
    m_thisGpu->setVisible(bool(m_freeMemory));
}

bool SolverPanel::liveResolve() const { return m_live->isChecked(); }
void SolverPanel::setLiveResolve(bool on) { m_live->setChecked(on); }

void SolverPanel::setBusy(bool busy)
{
    if (!busy)
        m_cancelling = false;
    m_cancel->setEnabled(busy && !m_cancelling);
    m_cancel->setText(tr("Cancel"));
    m_progress->setVisible(busy);
    if (busy)
        m_progress->setRange(0, 0);
}

void SolverPanel::jobStarted()
{
    m_cancelling = false;
    setBusy(true);
}

void SolverPanel::setCancelling()
{
    if (!m_cancel->isEnabled() && !m_cancelling)
        return; // nothing running
    m_cancelling = true;
    m_cancel->setEnabled(false);
    m_cancel->setText(tr("Cancelling..."));
    m_progress->setRange(0, 0);
    showMessage(tr("Cancelling: waiting for the solver to stop..."));
}

void SolverPanel::showProgress(const SolveProgressInfo &info)
{
    if (m_cancelling)
        return; // the solver's last reports must not hide that it is stopping
    if (info.fraction >= 0) {
        m_progress->setRange(0, 1000);
        m_progress->setValue(int(info.fraction * 1000));
    }
    QString text = QStringLiteral("%1: %2 s").arg(info.solver).arg(info.elapsedSeconds, 0, 'f', 1);
    // In the objective's unit, as the table prints it: a peak in bytes, a recompute time in ms.
    auto value = [&](double v) {
        if (info.objectiveInBytes)
            return QString::fromStdString(core::formatBytes(int64_t(std::llround(v))));
        return v < 1 ? QStringLiteral("%1 ms").arg(v * 1e3, 0, 'f', 3)
                     : QStringLiteral("%1 s").arg(v, 0, 'f', 3);
    };
    const QString what = info.objectiveInBytes ? tr("peak") : tr("recompute");
    if (info.incumbent >= 0)
        text += tr(", best %1 %2").arg(what, value(info.incumbent));
    if (info.bound >= 0)
        text += tr(", bound %1").arg(value(info.bound));
    if (info.gapPercent() >= 0)
        text += tr(", gap %1 %").arg(info.gapPercent(), 0, 'f', 2);
    if (!info.message.isEmpty())
        text += QStringLiteral(" — ") + info.message;
    m_message->setText(text);
}

void SolverPanel::showMessage(const QString &text) { m_message->setText(text); }
QString SolverPanel::messageText() const { return m_message->text(); }

void SolverPanel::dragBudgetTo(int64_t bytes)
{
    m_slider->setSliderDown(true);
    m_slider->setValue(bytesToSlider(bytes));
    m_slider->setSliderDown(false);
}

void SolverPanel::documentChanged(PlannerChange change)
{
    if (change == PlannerChange::Budget || change == PlannerChange::Model ||
        change == PlannerChange::Batch || change == PlannerChange::Training) {
        setBudgetError(QString()); // the budget now in the field is a valid one
        syncBudgetWidgets();
    }
    if (change == PlannerChange::Objective) {
        const bool within = m_document->objective() == core::solvers::Objective::MinPeak &&
                            m_document->maxOverheadPercent() >= 0;
        const int i =
            m_objective->findData(within ? kLowestPeakWithin : int(m_document->objective()));
        m_syncing = true;
        if (i >= 0)
            m_objective->setCurrentIndex(i);
        if (within)
            m_maxOverhead->setValue(m_document->maxOverheadPercent());
        m_maxOverhead->setEnabled(within);
        m_syncing = false;
        syncBudgetWidgets();
    }
}

void SolverPanel::objectiveChosen()
{
    if (m_syncing)
        return;
    const int data = m_objective->currentData().toInt();
    const bool within = data == kLowestPeakWithin;
    const auto o =
        within ? core::solvers::Objective::MinPeak : static_cast<core::solvers::Objective>(data);
    const double overhead = within ? m_maxOverhead->value() : -1;
    m_maxOverhead->setEnabled(within);
    if (o != m_document->objective() || overhead != m_document->maxOverheadPercent())
        m_document->undoStack()->push(new SetObjectiveCommand(m_document, o, overhead));
}

void SolverPanel::chooseLowestPeakWithin(double percent)
{
    m_maxOverhead->setValue(percent);
    m_objective->setCurrentIndex(m_objective->findData(kLowestPeakWithin));
    objectiveChosen();
}

QString SolverPanel::objectiveText() const { return m_objective->currentText(); }

void SolverPanel::syncBudgetWidgets()
{
    m_syncing = true;
    const int64_t b = m_document->budgetBytes();
    m_slider->setValue(bytesToSlider(b));
    m_budgetText->setText(b > 0 ? QString::fromStdString(core::formatBytes(b)) : QString());
    const bool minTime = m_document->objective() == core::solvers::Objective::MinTime;
    m_slider->setEnabled(minTime && m_hi > m_lo);
    m_budgetText->setEnabled(minTime);
    m_syncing = false;
}

void SolverPanel::budgetEdited()
{
    const QString text = m_budgetText->text().trimmed();
    const auto parsed = core::parseBytes(text.toStdString());
    if (!parsed || *parsed <= 0) {
        // The refused text stays in the field (the user corrects it), with the reason under it.
        setBudgetError(parsed ? tr("A budget of %1 holds nothing: enter the memory the step may "
                                   "use, e.g. %2.")
                                    .arg(text, m_hi > 1
                                                   ? QString::fromStdString(core::formatBytes(m_hi))
                                                   : QStringLiteral("6 GiB"))
                              : QString::fromStdString(parsed.status().message()));
        return;
    }
    setBudgetError(QString());
    if (*parsed != m_document->budgetBytes())
        m_document->undoStack()->push(new SetBudgetCommand(m_document, *parsed));
    else
        syncBudgetWidgets(); // "4096" for 4 KiB: show it as the field writes it
}

void SolverPanel::setBudgetError(const QString &text)
{
    m_budgetError->setText(text.isEmpty() ? QString() : tr("Budget: %1").arg(text));
    m_budgetError->setVisible(!text.isEmpty());
}

QString SolverPanel::budgetErrorText() const { return m_budgetError->text(); }

int64_t SolverPanel::sliderToBytes(int v) const
{
    return m_lo + int64_t(double(m_hi - m_lo) * v / kSliderSteps);
}

int SolverPanel::bytesToSlider(int64_t b) const
{
    if (m_hi <= m_lo)
        return 0;
    return std::clamp(int(double(b - m_lo) / double(m_hi - m_lo) * kSliderSteps + 0.5), 0,
                      kSliderSteps);
}

} // namespace remat::ui
