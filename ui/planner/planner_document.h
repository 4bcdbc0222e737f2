#pragma once
// The planner session: which model at which batch, the budget and objective, the user's pins,
// the plans solved so far and which one is current. Every user edit goes through an undo command
// (set_*_command.h) that calls the setters here; views listen to the one typed change signal.
//   PlannerDocument doc;  doc.undoStack()->push(new SetBudgetCommand(&doc, 4_GiB));
//   connect(&doc, &PlannerDocument::changed, view, [](PlannerChange c) { ... });
//   doc.currentPlan();  doc.pins();  doc.isModified();

#include "core/onnx/importer.h"
#include "core/solvers/solver.h"
#include "core/training/training_options.h"

#include <QMap>
#include <QMetaType>

#include <QObject>
#include <QString>
#include <QUndoStack>

#include <optional>
#include <vector>

namespace remat::ui {

enum class PlannerChange : unsigned char {
    Model,    ///< model path / hash (a new problem)
    Batch,    ///< batch size (the problem is rebuilt, plans were replaced)
    Training, ///< optimizer, precision, sharding, micro-batches (rebuilt, plans replaced)
    Budget,
    Objective,
    Pins,
    Plans,       ///< plans added, replaced or removed
    CurrentPlan, ///< another plan became current
};

/// Pins by tensor name, so they survive a batch change and a save/reopen.
using PinMap = QMap<QString, core::solvers::PinKind>;

class PlannerDocument : public QObject
{
    Q_OBJECT
public:
    explicit PlannerDocument(QObject *parent = nullptr);

    QUndoStack *undoStack() { return &m_undo; }

    const QString &modelPath() const { return m_modelPath; }
    const QString &modelSha256() const { return m_modelSha256; }
    int64_t batch() const { return m_batch; }
    /// The user's import settings for the model (free dims, input shapes and values,
    /// classification, semantics); saved in sessions. Their batch is unused (batch() is).
    const core::onnx::ImportOptions &importSettings() const { return m_importSettings; }
    void setImportSettings(const core::onnx::ImportOptions &settings)
    {
        m_importSettings = settings;
    }
    /// Optimizer, precision, sharding and micro-batches the training step is built with; saved
    /// in sessions ("training").
    const core::training::TrainingOptions &training() const { return m_training; }
    int64_t budgetBytes() const { return m_budget; }
    core::solvers::Objective objective() const { return m_objective; }
    /// With the min-peak objective: the lowest peak within this many percent of store-all's
    /// step time ("Lowest peak within X% slower"); negative: no limit. Saved in sessions.
    double maxOverheadPercent() const { return m_maxOverhead; }
    const PinMap &pins() const { return m_pins; }
    std::optional<core::solvers::PinKind> pin(const QString &tensor) const;

    const std::vector<core::solvers::Plan> &plans() const { return m_plans; }
    int currentPlanIndex() const { return m_current; }
    /// Null when there is no plan.
    const core::solvers::Plan *currentPlan() const;

    /// Unsaved edits or new plans since the last save / load.
    bool isModified() const { return m_dirty || !m_undo.isClean(); }
    void markSaved();

    // ---- setters: called by undo commands and loaders, each emits changed() ----------------
    void setModel(const QString &path, const QString &sha256);
    void setBatch(int64_t batch);
    void setTraining(const core::training::TrainingOptions &training);
    void setBudgetBytes(int64_t bytes);
    void setObjective(core::solvers::Objective objective);
    /// Emits PlannerChange::Objective when it changes.
    void setMaxOverheadPercent(double percent);
    /// Sets (or with nullopt clears) one pin.
    void setPin(const QString &tensor, std::optional<core::solvers::PinKind> kind);
    void setPins(const PinMap &pins);
    void setPlans(std::vector<core::solvers::Plan> plans, int current);
    /// Appends a plan and makes it current; returns its index.
    int addPlan(core::solvers::Plan plan);
    void replacePlan(int index, core::solvers::Plan plan);
    /// Puts a plan at `index` (0..size); the current plan stays the same plan.
    void insertPlan(int index, core::solvers::Plan plan);
    /// Removes one plan; the current plan stays the same plan, or the one after a removed current.
    void removePlan(int index);
    void setCurrentPlanIndex(int index);
    void clearPlans();

signals:
    void changed(remat::ui::PlannerChange change);

private:
    QUndoStack m_undo;
    QString m_modelPath, m_modelSha256;
    int64_t m_batch = 1;
    core::onnx::ImportOptions m_importSettings;
    core::training::TrainingOptions m_training;
    int64_t m_budget = 0;
    core::solvers::Objective m_objective = core::solvers::Objective::MinTime;
    double m_maxOverhead = -1;
    PinMap m_pins;
    std::vector<core::solvers::Plan> m_plans;
    int m_current = -1;
    bool m_dirty = false;
};

} // namespace remat::ui

Q_DECLARE_METATYPE(remat::ui::PlannerChange)
Q_DECLARE_METATYPE(remat::core::solvers::Plan)
