#pragma once
// The "Training..." dialog: how the model trains beyond its graph (optimizer, precision,
// sharding over data-parallel ranks, gradient accumulation), the options `remat` takes as
// --optimizer, --precision, --shard, --ranks and --micro-batches. The planner applies the
// answer as one undo step (SetTrainingCommand): the problem is rebuilt off the GUI thread.
//   TrainingOptionsDialog d(parent);  d.setOptions(doc.training());
//   if (d.exec() == QDialog::Accepted) planner.setTraining(d.options());

#include "core/training/training_options.h"

#include <string>
#include <vector>

#include <QDialog>
#include <QWidget>

#include <map>

class QComboBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace remat::ui {

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

    /// OK with a count out of range or a pattern that does not compile stays open and says what
    /// to type.
    void accept() override;

private:
    TrainingOptionsForm *m_form;
    QLineEdit *m_freeze;
    QLineEdit *m_trainable;
    QLabel *m_patternError;
    QLabel *m_error;
};

} // namespace remat::ui
