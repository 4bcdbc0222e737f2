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
    /// The branch choice of If node `node`: 0 as the file decides, 1 then, 2 else.
    QComboBox *branchField(const QString &node) const;

    void accept() override;

private:
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
