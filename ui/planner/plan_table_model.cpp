#include "ui/planner/plan_table_model.h"

#include "ui/byte_text.h"

#include "core/util/bytes.h"
#include "ui/planner/planner_document.h"

#include <QBrush>
#include <QColor>
#include <QFont>
#include <QStringList>

#include <algorithm>

namespace remat::ui {

namespace {

bool sameProblem(const core::solvers::Plan &a, const core::solvers::Plan &b)
{
    return a.objective == b.objective && a.pins == b.pins &&
           a.maxOverheadPercent == b.maxOverheadPercent &&
           (a.objective == core::solvers::Objective::MinPeak || a.budgetBytes == b.budgetBytes);
}

/// The plan solved for the same objective, budget and pins that beats `p` on peak and time. A
/// timed-out row holds its solver's best plan so far (Compare all stops the slow solvers at its
/// limit): it beats and is beaten like an answered one, as on the Pareto chart (the chart dimmed
/// rotor's row beaten by checkmate-milp's timed-out one while the table called it "feasible").
const core::solvers::Plan *dominatedBy(size_t row, const std::vector<core::solvers::Plan> &plans)
{
    std::vector<core::solvers::Plan> peers;
    std::vector<size_t> rows;
    for (size_t i = 0; i < plans.size(); ++i)
        if (i == row || sameProblem(plans[row], plans[i])) {
            peers.push_back(plans[i]);
            if (peers.back().status == core::solvers::SolveStatus::TimedOut &&
                peers.back().timeline.peakBytes > 0 && peers.back().baselineStepSeconds > 0)
                peers.back().status = core::solvers::SolveStatus::Feasible;
            rows.push_back(i);
        }
    const size_t self = size_t(std::find(rows.begin(), rows.end(), row) - rows.begin());
    const core::solvers::Plan *by = core::solvers::dominatingPlan(peers[self], peers);
    return by ? &plans[rows[size_t(by - peers.data())]] : nullptr;
}

} // namespace

PlanTableModel::PlanTableModel(PlannerDocument *document, QObject *parent)
    : QAbstractTableModel(parent), m_document(document)
{
    connect(document, &PlannerDocument::changed, this, &PlanTableModel::documentChanged);
}

void PlanTableModel::documentChanged(PlannerChange change)
{
    if (change == PlannerChange::Plans) {
        beginResetModel();
        endResetModel();
    } else if (change == PlannerChange::CurrentPlan && rowCount() > 0) {
        emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1), {Qt::FontRole});
    }
}

void PlanTableModel::setGraph(std::shared_ptr<const core::training::TrainingGraph> graph)
{
    m_graph = std::move(graph);
    if (rowCount() > 0)
        emit dataChanged(index(0, Pins), index(rowCount() - 1, Pins));
}

void PlanTableModel::setFloor(int64_t bytes, const QString &explanation)
{
    m_floor = bytes;
    m_floorExplanation = explanation;
    if (rowCount() > 0)
        emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1), {Qt::ToolTipRole});
}

int PlanTableModel::bestRow() const
{
    const auto &plans = m_document->plans();
    int best = -1;
    for (size_t i = 0; i < plans.size(); ++i) {
        const auto &p = plans[i];
        const bool feasible = p.status != core::solvers::SolveStatus::Infeasible &&
                              p.status != core::solvers::SolveStatus::Cancelled &&
                              (p.objective == core::solvers::Objective::MinPeak ||
                               p.budgetBytes <= 0 || p.timeline.peakBytes <= p.budgetBytes);
        if (!feasible)
            continue;
        const auto &b = best < 0 ? p : plans[size_t(best)];
        if (best < 0 || p.timeline.totalSeconds < b.timeline.totalSeconds ||
            (p.timeline.totalSeconds == b.timeline.totalSeconds &&
             p.timeline.peakBytes < b.timeline.peakBytes))
            best = int(i);
    }
    return best;
}

int PlanTableModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_document->plans().size());
}

int PlanTableModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant PlanTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (role != Qt::DisplayRole)
        return {};
    if (orientation == Qt::Vertical)
        return section + 1;
    switch (section) {
    case Solver: return tr("Solver");
    case Status: return tr("Status");
    case Peak: return tr("Peak");
    case ActivationPeak: return tr("Activation peak");
    case Overhead: return tr("Recompute");
    case TimeOverhead: return tr("Time overhead");
    case StepTime: return tr("Step time");
    case SolveTime: return tr("Solve time");
    case Budget: return tr("Budget");
    case Objective: return tr("Objective");
    case Pins: return tr("Pins");
    }
    return {};
}

QVariant PlanTableModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount())
        return {};
    const core::solvers::Plan &p = m_document->plans()[size_t(index.row())];
    const auto &t = p.timeline;
    const auto bytes = [](int64_t b) { return QString::fromStdString(core::formatBytes(b)); };
    const auto pinsText = [&] {
        QStringList parts;
        for (const auto &pin : p.pins)
            parts << QStringLiteral("%1:%2").arg(
                QLatin1String(core::solvers::pinKindName(pin.kind)),
                m_graph && pin.tensor.index() < m_graph->tensorCount()
                    ? QString::fromStdString(m_graph->tensor(pin.tensor).name)
                    : QStringLiteral("#%1").arg(pin.tensor.value));
        return parts.join(QStringLiteral(", "));
    };
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
        case Solver: return QString::fromStdString(p.solver);
        case Status: {
            QString status = QString::fromLatin1(core::solvers::solveStatusName(p.status));
            if (index.row() == bestRow())
                status = tr("\u2605 best, %1").arg(status);
            return dominatedBy(size_t(index.row()), m_document->plans())
                       ? tr("%1, dominated").arg(status)
                       : status;
        }
        case Peak:
            // Beside its budget a peak just over it must not read the same (more decimals).
            return p.objective == core::solvers::Objective::MinTime && p.budgetBytes > 0
                       ? bytesApart(t.peakBytes, p.budgetBytes).first
                       : bytes(t.peakBytes);
        case ActivationPeak: return bytes(t.activationPeakBytes);
        case Overhead: return QStringLiteral("%1 %").arg(t.tdiPercent(), 0, 'f', 1);
        case TimeOverhead:
            return p.baselineStepSeconds > 0
                       ? QStringLiteral("%1%2 %")
                             .arg(core::solvers::timeOverheadPercent(p) >= 0 ? "+" : "")
                             .arg(core::solvers::timeOverheadPercent(p), 0, 'f', 1)
                       : QStringLiteral("-");
        case StepTime:
            return t.totalSeconds < 1 ? QStringLiteral("%1 ms").arg(t.totalSeconds * 1e3, 0, 'f', 2)
                                      : QStringLiteral("%1 s").arg(t.totalSeconds, 0, 'f', 3);
        case SolveTime:
            return p.solveSeconds < 1 ? QStringLiteral("%1 ms").arg(p.solveSeconds * 1e3, 0, 'f', 1)
                                      : QStringLiteral("%1 s").arg(p.solveSeconds, 0, 'f', 2);
        case Budget:
            if (p.objective == core::solvers::Objective::MinPeak && p.maxOverheadPercent >= 0)
                return tr("min peak, ≤ %1 % slower").arg(p.maxOverheadPercent);
            return p.objective == core::solvers::Objective::MinPeak
                       ? tr("min peak")
                       : bytesApart(p.budgetBytes, t.peakBytes).first;
        case Objective: return QString::fromLatin1(core::solvers::objectiveName(p.objective));
        case Pins: return p.pins.empty() ? tr("none") : pinsText();
        }
    } else if (role == SortRole) {
        switch (index.column()) {
        case Solver: return QString::fromStdString(p.solver);
        case Status: return int(p.status);
        case Peak: return qint64(t.peakBytes);
        case ActivationPeak: return qint64(t.activationPeakBytes);
        case Overhead: return t.tdiPercent();
        case TimeOverhead: return core::solvers::timeOverheadPercent(p);
        case StepTime: return t.totalSeconds;
        case SolveTime: return p.solveSeconds;
        case Budget: return qint64(p.budgetBytes);
        case Objective: return int(p.objective);
        case Pins: return int(p.pins.size());
        }
    } else if (role == Qt::FontRole && index.row() == m_document->currentPlanIndex()) {
        QFont f;
        f.setBold(true);
        return f;
    } else if (role == Qt::ForegroundRole && index.column() == Peak &&
               p.objective == core::solvers::Objective::MinTime && p.budgetBytes > 0 &&
               t.peakBytes > p.budgetBytes) {
        return QBrush(QColor(0xc6, 0x28, 0x28)); // over budget
    } else if (role == Qt::ToolTipRole) {
        QString tip = QString::fromStdString(p.note);
        if (index.row() == bestRow())
            tip = tr("Best feasible plan: the fastest estimated step within its budget.\n") + tip;
        if (p.status == core::solvers::SolveStatus::Infeasible && m_floor > 0)
            tip = (p.budgetBytes < m_floor
                       ? tr("No plan fits %1: every plan needs at least %2 = %3. \"Set to floor\" "
                            "in the Solver dock sets the budget to it.\n")
                             .arg(bytesApart(p.budgetBytes, m_floor).first,
                                  bytesApart(p.budgetBytes, m_floor).second, m_floorExplanation)
                       : tr("%1 found no plan within %2 (above the floor %3): a larger budget or "
                            "another solver may.\n")
                             .arg(QString::fromStdString(p.solver),
                                  bytesApart(p.budgetBytes, m_floor).first,
                                  bytesApart(p.budgetBytes, m_floor).second)) +
                  tip;
        if (const core::solvers::Plan *by = dominatedBy(size_t(index.row()), m_document->plans()))
            tip = tr("Dominated by %1 (peak %2, step %3 % over store-all's, recompute %4 %): no "
                     "worse on peak and step time, better on one.\n")
                      .arg(QString::fromStdString(by->solver), bytes(by->timeline.peakBytes))
                      .arg(core::solvers::timeOverheadPercent(*by), 0, 'f', 1)
                      .arg(by->timeline.tdiPercent(), 0, 'f', 1) +
                  tip;
        if (!p.solverObjectiveName.empty())
            tip += QStringLiteral("\n%1 = %2")
                       .arg(QString::fromStdString(p.solverObjectiveName))
                       .arg(p.solverObjective);
        if (p.bound >= 0)
            tip += QStringLiteral("\nbound %1").arg(p.bound);
        return tip.trimmed();
    } else if (role == Qt::TextAlignmentRole && index.column() >= Peak) {
        return int(Qt::AlignRight | Qt::AlignVCenter);
    }
    return {};
}

} // namespace remat::ui
