#pragma once
// The "Training..." dialog: how the model trains beyond its graph (optimizer, precision,
// sharding over data-parallel ranks, gradient accumulation, attention, Megatron-LM tensor and
// sequence parallelism), the options `remat` takes as --optimizer, --precision, --shard,
// --ranks, --micro-batches, --attention, --tensor-parallel and --sequence-parallel. The planner
// applies the answer as one undo step (SetTrainingCommand): the problem is rebuilt off the GUI
// thread.
//   TrainingOptionsDialog d(parent);  d.setOptions(doc.training());
//   if (d.exec() == QDialog::Accepted) planner.setTraining(d.options());

#include "core/training/training_options.h"

#include <functional>
#include <string>
#include <vector>

#include <QDialog>
#include <QWidget>

#include <map>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace remat::core::pipeline {
struct Problem;
}

namespace remat::ui {

/// Why `options` cannot apply to `problem`'s model, for the dialog: a tensor-parallel size that
/// does not divide an attention's heads (query or K/V), with the sizes that do (core's Megatron
/// split, training/tensor_parallel.h, run on the problem's step). Empty when they apply, when
/// there is no tensor parallelism, or no problem to check against (the rebuild then says it).
QString tensorParallelRefusal(const core::pipeline::Problem *problem,
                              const core::training::TrainingOptions &options);

/// The options' fields and a line on what they keep in memory: the dialog's body, and each side
/// of "Compare training options...".
class TrainingOptionsForm : public QWidget
{
    Q_OBJECT
public:
    explicit TrainingOptionsForm(QWidget *parent = nullptr);

    void setOptions(const core::training::TrainingOptions &options);
    /// The options as chosen; sharding over one rank is no sharding (as the CLI reads it). The
    /// hyperparameters (lr, weight decay) are the ones setOptions gave: they change no byte.
    core::training::TrainingOptions options() const;
    QComboBox *optimizerBox() const { return m_optimizer; }
    QComboBox *precisionBox() const { return m_precision; }
    QComboBox *autocastDeviceBox() const { return m_autocastDevice; }
    QComboBox *shardBox() const { return m_shard; }
    QComboBox *attentionBox() const { return m_attention; }
    QSpinBox *ranksBox() const { return m_ranks; }
    QSpinBox *microBatchesBox() const { return m_microBatches; }
    QSpinBox *tensorParallelBox() const { return m_tensorParallel; }
    QCheckBox *sequenceParallelBox() const { return m_sequenceParallel; }
    /// What is wrong with a count as typed ("Micro-batches: '0' is not ..."), empty when nothing:
    /// a count out of range is never silently replaced by the previous value.
    QString inputError() const;

signals:
    void changed();

protected:
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    void updateExplanation();

    core::training::TrainingOptions m_base;
    /// Text a count box held when it lost focus out of range (the box then shows its previous
    /// value again): reported by inputError() until the user types a valid count.
    std::map<QSpinBox *, std::pair<QString, int>> m_rejected; ///< text, value kept
    QComboBox *m_optimizer;
    QComboBox *m_precision;
    QComboBox *m_autocastDevice;
    QComboBox *m_shard;
    QComboBox *m_attention;
    QSpinBox *m_ranks;
    QSpinBox *m_microBatches;
    QSpinBox *m_tensorParallel;
    QCheckBox *m_sequenceParallel;
    QLabel *m_explanation;
};

class TrainingOptionsDialog : public QDialog
{
    Q_OBJECT
public:
    explicit TrainingOptionsDialog(QWidget *parent = nullptr);

    void setOptions(const core::training::TrainingOptions &options) { m_form->setOptions(options); }
    core::training::TrainingOptions options() const { return m_form->options(); }
    TrainingOptionsForm *form() const { return m_form; }

    /// Which weights train (`--freeze` / `--trainable`, import settings of the model): regular
    /// expressions separated by spaces in two fields. accept() refuses an invalid one, naming it.
    void setPatterns(const std::vector<std::string> &freeze,
                     const std::vector<std::string> &trainable);
    std::vector<std::string> freezePatterns() const;
    std::vector<std::string> trainablePatterns() const;
    QLineEdit *freezeEdit() const { return m_freeze; }
    QLineEdit *trainableEdit() const { return m_trainable; }

    /// Checks the options against the model before OK closes the dialog (the planner's: a
    /// tensor-parallel size that does not divide the attention heads); returns the message to
    /// show, empty when they apply.
    void setChecker(std::function<QString(const core::training::TrainingOptions &)> checker)
    {
        m_checker = std::move(checker);
    }

    /// OK with a count out of range, a pattern that does not compile or options the checker
    /// refuses stays open and says what to change.
    void accept() override;

private:
    TrainingOptionsForm *m_form;
    QLineEdit *m_freeze;
    QLineEdit *m_trainable;
    QLabel *m_patternError;
    QLabel *m_error;
    std::function<QString(const core::training::TrainingOptions &)> m_checker;
};

} // namespace remat::ui
