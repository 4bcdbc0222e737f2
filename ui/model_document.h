#pragma once
// The loaded model and everything the explorer shows about it; one typed change signal (Tiled's
// Document pattern). Views subscribe to changed() and read the state back.
//   ModelDocument doc;  connect(&doc, &ModelDocument::changed, view, &View::onDocumentChanged);
//   doc.setModel(loaded);  doc.setCollapsed(set);  doc.setColourMode(ColourMode::Flops);

#include "core/ir/graph.h"
#include "core/layout/graph_layout.h"
#include "core/onnx/importer.h"
#include "core/pipeline/problem.h"
#include "core/training/training_graph.h"
#include "ui/colour_mode.h"
#include "ui/graph/folded_constants.h"
#include "ui/node_metrics.h"

#include <QObject>
#include <QString>

#include <memory>

namespace remat::ui {

/// A model as loaded by the worker: immutable, shared with workers by pointer.
struct LoadedModel
{
    QString path;
    int64_t requestedBatch = 0; ///< 0: the file's own batch
    /// The user's other import settings (free dims, input shapes and values, classification,
    /// semantics) the model was imported with; their `batch` is unused (requestedBatch is).
    core::onnx::ImportOptions settings;
    /// What core's pipeline loaded: the planner takes this one rather than loading again.
    std::shared_ptr<const core::pipeline::Problem> problem;
    std::shared_ptr<const core::ir::Graph> graph; ///< problem->forward
    std::shared_ptr<const ModelMetrics> metrics;
    /// The training step derived from the graph (problem->training); null when the builder
    /// refused it (the reason is in trainingError), which only hides the "backward needs" figures.
    std::shared_ptr<const core::training::TrainingGraph> training;
    QString trainingError;
};

enum class DocumentChangeKind {
    ModelReplaced,   ///< a new model (or the same file re-imported at another batch)
    LayoutChanged,   ///< a new layout arrived (after a collapse change or a new model)
    CollapseChanged, ///< the collapse state was edited; a layout is on its way
    ColourModeChanged,
    SelectionChanged,
    /// The planner's training step for this model arrived or went (plannerStep()): what was
    /// fused is read from it.
    TrainingStepChanged,
};

struct DocumentChange
{
    DocumentChangeKind kind;
};

class ModelDocument : public QObject
{
    Q_OBJECT
public:
    explicit ModelDocument(QObject *parent = nullptr);

    bool hasModel() const { return m_model.graph != nullptr; }
    const LoadedModel &model() const { return m_model; }
    const core::ir::Graph &graph() const { return *m_model.graph; }
    /// Replaces the model; keeps the collapse state when the file is the same (a reload or a new
    /// batch), else starts from `initialCollapse`.
    void setModel(LoadedModel model, const core::layout::CollapseSet &initialCollapse);

    /// The same model with its graph regrouped (core::ir::Graph::withNodeGroups: the same nodes and
    /// values, more namespaces, as fused attention patterns are shown): keeps the selection and
    /// the planner's step, takes `collapsed`; needs a new layouter and layout as setModel does.
    void setRegroupedModel(LoadedModel model, core::layout::CollapseSet collapsed);
    /// Namespaces of the graph as imported: ids from here on are groups a view added (a fused
    /// attention pattern).
    size_t importedNamespaceCount() const { return m_importedNamespaces; }

    /// The planner's training step when it is this model's (same file, batch and inputs), with
    /// the user's training options: its fusions (--attention sdpa) are grouped in the graph and
    /// listed by the inspector. Null when the planner has none for this model; dropped by
    /// setModel.
    const std::shared_ptr<const core::pipeline::Problem> &plannerStep() const
    {
        return m_plannerStep;
    }
    void setPlannerStep(std::shared_ptr<const core::pipeline::Problem> step);

    /// Node sizes and the cached per-group layouts for the current model.
    std::shared_ptr<core::layout::GraphLayouter> layouter() const { return m_layouter; }
    void setLayouter(std::shared_ptr<core::layout::GraphLayouter> layouter)
    {
        m_layouter = std::move(layouter);
    }

    const core::layout::CollapseSet &collapsed() const { return m_collapsed; }
    void setCollapsed(core::layout::CollapseSet collapsed);

    /// The layout on screen and the collapse state it was computed for.
    std::shared_ptr<const core::layout::GraphLayout> layout() const { return m_layout; }
    void setLayout(std::shared_ptr<const core::layout::GraphLayout> layout);

    ColourMode colourMode() const { return m_colourMode; }
    void setColourMode(ColourMode mode);
    const NodeColourProvider &colours() const
    {
        return m_colourOverride ? *m_colourOverride : *m_colours;
    }
    /// Colours from outside the built-in modes (the planner's plan decisions) shown instead of the
    /// mode's; null goes back to the mode. Dropped when another model is set.
    void setColourOverride(std::unique_ptr<NodeColourProvider> provider);
    bool hasColourOverride() const { return m_colourOverride != nullptr; }

    /// Values of folded shape arithmetic, computed on first use for the current model.
    const FoldedConstants &foldedConstants() const;

    /// The selected node (invalid when none).
    core::NodeId selectedNode() const { return m_selected; }
    void setSelectedNode(core::NodeId node);

signals:
    void changed(const remat::ui::DocumentChange &change);

private:
    void rebuildColours();

    LoadedModel m_model;
    std::shared_ptr<core::layout::GraphLayouter> m_layouter;
    core::layout::CollapseSet m_collapsed;
    std::shared_ptr<const core::layout::GraphLayout> m_layout;
    ColourMode m_colourMode = ColourMode::OpType;
    std::unique_ptr<NodeColourProvider> m_colours;
    std::unique_ptr<NodeColourProvider> m_colourOverride;
    core::NodeId m_selected;
    size_t m_importedNamespaces = 0;
    std::shared_ptr<const core::pipeline::Problem> m_plannerStep;
    mutable std::unique_ptr<FoldedConstants> m_foldedConstants;
};

} // namespace remat::ui

Q_DECLARE_METATYPE(remat::ui::LoadedModel)
Q_DECLARE_METATYPE(remat::ui::DocumentChange)
