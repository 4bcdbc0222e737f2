#pragma once
// "Largest batch for this GPU...": per solver, the largest batch whose planned training step
// fits a memory (a device preset, "this GPU" when a CUDA backend reports its free memory, or
// typed). The search is core's (pipeline::Fitter, as `remat fit` runs it), off the GUI thread with
// progress and Cancel; the answer is a table per solver and a chart of the peak at every batch
// tried; a row can be applied (the model opens at that batch).
//   FitDialog d(inputs, parent);  d.setMemoryBytes(24_GiB);  d.setCheckedSolvers({"chen-sqrtn"});
//   d.start();  connect(&d, &FitDialog::rowApplied, planner, [](qint64 b, qint64 m) { ... });

#include "core/onnx/importer.h"
#include "core/pipeline/fit.h"
#include "core/solvers/solver.h"
#include "core/training/training_options.h"
#include "ui/background_job.h"

#include <QDialog>
#include <QString>
#include <QStringList>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

class QChartView;
class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QProgressBar;
class QPushButton;
class QTableWidget;

namespace remat::ui {

class FitDialog : public QDialog
{
    Q_OBJECT
public:
    /// What the search needs: the model as the planner has it open.
    struct Inputs
    {
        QString modelPath;
        core::onnx::ImportOptions importSettings;
        core::training::TrainingOptions training;
        int64_t currentBatch = 0;
        /// The solvers offered (store-all is always searched, first, as `remat fit` does).
        std::vector<std::shared_ptr<const core::solvers::Solver>> solvers;
        QString preferredSolver; ///< checked at first, beside the interactive ones
        std::function<std::optional<int64_t>()> freeMemory; ///< "this GPU"; may be empty
    };
    explicit FitDialog(Inputs inputs, QWidget *parent = nullptr);
    ~FitDialog() override;

    /// The memory field, parsed (0 when it holds no byte count).
    int64_t memoryBytes() const;
    void setMemoryBytes(int64_t bytes);
    QStringList checkedSolvers() const;
    void setCheckedSolvers(const QStringList &ids);
    /// Starts the search with the field's memory and the checked solvers (a running one is
    /// stopped first). False, with the reason shown, when the memory is not a byte count.
    bool start();
    void cancel();
    bool isRunning() const { return m_jobs.busy(); }
    /// The last search's rows, in the table's order (store-all first).
    const std::vector<core::pipeline::FitResult> &results() const { return m_results; }
    /// Opens the model at row `row`'s batch (batchApplied); false for a row without a batch.
    bool applyRow(int row);
    /// The status line ("chen-sqrtn: batch 64 (5 tried)", "Cancelled.", errors).
    QString statusText() const;

signals:
    void batchApplied(qint64 batch);
    /// With batchApplied: the row's batch and the memory it was searched for (the budget the
    /// planner takes with the batch).
    void rowApplied(qint64 batch, qint64 memoryBytes);
    /// The search ended: all rows in, cancelled, or failed.
    void finished(bool cancelled);

private:
    void addRow(const core::pipeline::FitResult &r);
    void updateChart();
    void setRunning(bool running);

    Inputs m_in;
    QComboBox *m_preset;
    QLineEdit *m_memory;
    QListWidget *m_solverList;
    QPushButton *m_find, *m_cancel, *m_apply;
    QProgressBar *m_progress;
    QLabel *m_status;
    QTableWidget *m_table;
    QChartView *m_chart;
    std::vector<core::pipeline::FitResult> m_results;
    int64_t m_searchedMemory = 0;
    BackgroundJob<bool> m_jobs{"searching the largest batch"};
};

} // namespace remat::ui
