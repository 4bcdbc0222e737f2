#pragma once
// The plans of a planner session as a table: one row per plan (solver, status, peak, activation
// peak, recompute overhead, time overhead over store-all's step, estimated step time, solve time, budget, objective, pins); the best
// feasible plan is marked. The current plan's row is bold;
// a plan another plan for the same objective, budget and pins beats on peak and time says so in
// its status ("feasible, dominated") and names the better one in its tooltip.
//   PlanTableModel model(&document);  tableView->setModel(&model);
//   model.data(model.index(0, PlanTableModel::Peak), PlanTableModel::SortRole);  // bytes

#include "core/training/training_graph.h"

#include <QAbstractTableModel>

#include <memory>

namespace remat::ui {

class PlannerDocument;
enum class PlannerChange : unsigned char;

class PlanTableModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column {
        Solver,
        Status,
        Peak,
        ActivationPeak,
        Overhead,     ///< recompute, in percent of one forward + backward
        TimeOverhead, ///< the simulated step over store-all's, in percent: the cost compared on
        StepTime,     ///< the simulated training step's time
        SolveTime,
        Budget,
        Objective,
        Pins,
        ColumnCount
    };
    /// Raw numbers (bytes, percent, seconds) for sorting and tests.
    static constexpr int SortRole = Qt::UserRole + 1;
    /// The best feasible plan: the fastest step among plans within their budget (ties: the lower
    /// peak); marked "best" in its status. -1 when no plan is feasible.
    int bestRow() const;

    explicit PlanTableModel(PlannerDocument *document, QObject *parent = nullptr);
    /// The graph pins are named from (their tensor ids are shown without one).
    void setGraph(std::shared_ptr<const core::training::TrainingGraph> graph);
    /// The model's memory floor and what it is made of: an infeasible row's tooltip explains
    /// it when the plan's budget is below it.
    void setFloor(int64_t bytes, const QString &explanation);

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

private:
    void documentChanged(PlannerChange change);

    PlannerDocument *m_document;
    std::shared_ptr<const core::training::TrainingGraph> m_graph;
    int64_t m_floor = 0;
    QString m_floorExplanation;
};

} // namespace remat::ui
