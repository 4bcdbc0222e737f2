#pragma once
// "Compare training options...": the open model under two sets of training options (optimizer,
// precision, sharding, micro-batches) side by side. Each side is imported with its options and
// planned by the same solver (store-all, or a solver at min-peak, or min-time under the budget)
// off the GUI thread, with Cancel; the answer is a StepComparisonView: A's memory stacked by
// category with B's total over it, and the difference table.
//   TrainingCompareDialog d(inputs, parent);  d.setOptionsB(adamBf16);  d.start();
//   connect(&d, &TrainingCompareDialog::finished, ...);  d.comparison()->rows();

#include "core/onnx/importer.h"
#include "core/pipeline/compare.h"
#include "core/solvers/solver.h"
#include "core/training/training_options.h"
#include "ui/background_job.h"

#include <QDialog>
#include <QString>

#include <memory>
#include <optional>
#include <vector>

class QComboBox;
class QLabel;
class QPushButton;

namespace remat::ui {

class StepComparisonView;
class TrainingOptionsForm;

class TrainingCompareDialog : public QDialog
{
    Q_OBJECT
public:
    struct Inputs
    {
        QString modelPath;
        core::onnx::ImportOptions importSettings; ///< the batch in it is the one compared
        core::training::TrainingOptions training; ///< side A starts with these
        std::vector<std::shared_ptr<const core::solvers::Solver>> solvers;
        QString preferredSolver; ///< selected at first ("store-all" when empty)
        int64_t budgetBytes = 0; ///< for solvers planning min-time; 0: min-peak
    };
    explicit TrainingCompareDialog(Inputs inputs, QWidget *parent = nullptr);
    ~TrainingCompareDialog() override;

    TrainingOptionsForm *formA() const { return m_formA; }
    TrainingOptionsForm *formB() const { return m_formB; }
    void setOptionsB(const core::training::TrainingOptions &options);
    void setSolver(const QString &id);
    /// Plans both sides off the GUI thread (a running comparison is stopped first).
    void start();
    void cancel();
    bool isRunning() const { return m_jobs.busy(); }
    StepComparisonView *comparison() const { return m_view; }
    /// The last comparison's two steps (empty until one finished).
    const std::optional<core::pipeline::TrainingStep> &stepA() const { return m_a; }
    const std::optional<core::pipeline::TrainingStep> &stepB() const { return m_b; }
    QString statusText() const;

signals:
    void finished(bool cancelled);

private:
    void setRunning(bool running);

    Inputs m_in;
    TrainingOptionsForm *m_formA;
    TrainingOptionsForm *m_formB;
    QComboBox *m_solver;
    QPushButton *m_compare;
    QPushButton *m_cancel;
    QLabel *m_status;
    StepComparisonView *m_view;
    std::optional<core::pipeline::TrainingStep> m_a, m_b;
    struct Pair
    {
        core::pipeline::TrainingStep a, b;
    };
    BackgroundJob<Pair> m_jobs{"comparing training options"};
};

} // namespace remat::ui
