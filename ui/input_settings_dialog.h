#pragma once
// "Model Inputs" dialog: the values a file leaves free (named dims, inputs with unnamed dims,
// scalar inputs an If may branch on) and how inference-exported ops are read. Prefilled from
// the current settings, then from the dim's name (batch -> 1, height -> 224, ...) or, when the name
// says nothing (p2o.DynamicDimension.1, unk__3, ?), its place (core::onnx::suggestInputShape:
// an image's height -> 224, an audio input's length -> 16000). A non-batch free size left at 1
// is warned about, and Import then asks once more ("Import anyway").
//   InputSettingsDialog d(signature, current, this);
//   if (d.exec() == QDialog::Accepted) loader.load(path, d.settings());

#include "core/onnx/importer.h"

#include <QDialog>
#include <QStringList>

#include <map>
#include <string>

class QComboBox;
class QLabel;
class QPushButton;
class QLineEdit;
class QSpinBox;

namespace remat::ui {

class InputSettingsDialog : public QDialog
{
    Q_OBJECT
public:
    /// `problem` (may be empty) is the import error that led here, shown above the fields.
    InputSettingsDialog(const core::onnx::ModelSignature &signature,
                        const core::onnx::ImportOptions &current, const QString &problem,
                        QWidget *parent = nullptr);

    /// The settings as entered (`current`'s classification overrides and batch kept). Valid
    /// only when accepted.
    core::onnx::ImportOptions settings() const { return m_result; }

    /// For tests: the field of a named dim, an input's shape, a scalar input's value.
    QSpinBox *dimField(const QString &name) const;
    QLineEdit *shapeField(const QString &input) const;
    QLineEdit *valueField(const QString &input) const;
    /// The branch choice of If node `node`: 0 as the file decides, 1 then, 2 else.
    QComboBox *branchField(const QString &node) const;

    void accept() override;

    /// "x would be 1x3x1x1 (H, W left at 1)" for each input whose free sizes besides the batch
    /// are 1 as the fields stand; empty when none.
    QStringList degenerateInputs() const;

private:
    void updateWarning();

    core::onnx::ModelSignature m_signature;
    QLabel *m_warning = nullptr;
    QPushButton *m_import = nullptr;
    bool m_confirmed = false;
    core::onnx::ImportOptions m_current;
    core::onnx::ImportOptions m_result;
    std::map<std::string, QSpinBox *> m_dims;
    std::map<std::string, QLineEdit *> m_shapes;
    std::map<std::string, QLineEdit *> m_values;
    std::map<std::string, QComboBox *> m_branches;
    QComboBox *m_semantics = nullptr;
    QLabel *m_error = nullptr;
};

} // namespace remat::ui
