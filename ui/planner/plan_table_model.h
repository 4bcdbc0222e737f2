#pragma once
// The plans of a planner session as a table: one row per plan (solver, status, peak, activation
// peak, recompute overhead, solve time, budget). The current plan's row is bold.
//   PlanTableModel model(&document);  tableView->setModel(&model);
//   model.data(model.index(0, PlanTableModel::Peak), PlanTableModel::SortRole);  // bytes

#include <QAbstractTableModel>

namespace remat::ui {

class PlannerDocument;
enum class PlannerChange : unsigned char;

class PlanTableModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column { Solver, Status, Peak, ActivationPeak, Overhead, SolveTime, Budget, ColumnCount };
    /// Raw numbers (bytes, percent, seconds) for sorting and tests.
    static constexpr int SortRole = Qt::UserRole + 1;

    explicit PlanTableModel(PlannerDocument *document, QObject *parent = nullptr);

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    void documentChanged(PlannerChange change);

    PlannerDocument *m_document;
};

} // namespace remat::ui
