#pragma once
// "Model Inputs" dialog: the values a file leaves free (named dims, inputs with unnamed dims,
// scalar inputs an If may branch on) and how inference-exported ops are read. Prefilled from
// the current settings, then from the dim's name (batch -> 1, height -> 224, ...).
//   InputSettingsDialog d(signature, current, this);
//   if (d.exec() == QDialog::Accepted) loader.load(path, d.settings());

#include "core/onnx/importer.h"

#include <QDialog>

#include <map>
#include <string>

class QComboBox;
class QLabel;
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

    void accept() override;

private:
    core::onnx::ImportOptions m_current;
    core::onnx::ImportOptions m_result;
    std::map<std::string, QSpinBox *> m_dims;
    std::map<std::string, QLineEdit *> m_shapes;
    std::map<std::string, QLineEdit *> m_values;
    QComboBox *m_semantics = nullptr;
    QLabel *m_error = nullptr;
    core::onnx::ModelSignature m_signature;
    /// Import pressed once with a size of 1 where the file leaves a size open (a 1x1 image, a
    /// one-sample clip): the warning is shown, the next Import goes ahead.
    bool m_warnedDegenerate = false;
    /// "x: 1x3x1x1" for each input whose open sizes (past the batch) the fields set to 1.
    QStringList degenerateInputs(const core::onnx::ImportOptions &settings) const;
};

} // namespace remat::ui
