#pragma once
// A second model beside the first in the explorer (File > Open beside...), as Model Explorer
// shows two graphs side by side: its own document, loader, layout and graph view, browsable as
// the main one is (zoom, pan, double-click a group to expand or collapse it), in the window's
// colour mode, and a table of the two models' figures with the difference (nodes, parameters
// and their bytes, activations, forward FLOPs, the training step's store-all peak and saved
// activations).
//   auto *pane = new ModelPane(cache, parent);  pane->setReference(mainWindowModel);
//   pane->openModel("resnet50.onnx", 8, settings);  connect(pane, &ModelPane::modelShown, ...);

#include "core/layout/graph_layout.h"
#include "core/pipeline/compare.h"
#include "ui/colour_mode.h"
#include "ui/model_document.h"

#include <QWidget>

#include <memory>
#include <optional>
#include <vector>

class QLabel;
class QTableWidget;
class QToolButton;

namespace remat::ui {

class GraphScene;
class GraphView;
class LayoutRunner;
class ModelLoader;
class ProblemCache;

/// The explorer's layouter for `graph`: shape arithmetic folded into its consumers when
/// `foldShapes`, box sizes measured as GraphScene draws them (the main window and the pane).
std::shared_ptr<core::layout::GraphLayouter>
makeExplorerLayouter(std::shared_ptr<const core::ir::Graph> graph, bool foldShapes);

/// `set` with `ns` toggled: a collapsed group expands one level (its own subgroups come up
/// collapsed, as Model Explorer expands), an expanded one collapses.
core::layout::CollapseSet toggledCollapse(const core::layout::GraphLayouter &layouter,
                                          const core::ir::Graph &graph,
                                          core::layout::CollapseSet set, core::NamespaceId ns);

/// Below this view scale box titles (9 pt) are too small to read.
inline constexpr double kReadableScale = 0.45;

/// Frames a graph as a model opens (Netron's start): the whole graph when its labels stay
/// legible at that scale, else a legible zoom at the graph's top, centred on the first node
/// that reads the data input.
void frameGraphReadable(GraphView &view, GraphScene &scene, const ModelDocument &document);

/// Two models' figures, A (the main window's) and B (the pane's), each with its difference:
/// nodes, parameters, parameter bytes, activations, forward FLOPs, and when both have a training
/// step, its store-all peak and activation peak.
std::vector<core::pipeline::DifferenceRow> modelDifferenceRows(const LoadedModel &a,
                                                               const LoadedModel &b);

class ModelPane : public QWidget
{
    Q_OBJECT
public:
    explicit ModelPane(std::shared_ptr<ProblemCache> cache, QWidget *parent = nullptr);
    ~ModelPane() override;

    /// Loads off the GUI thread at `batch` (0: the file's), then lays out.
    void openModel(const QString &path, int64_t batch, const core::onnx::ImportOptions &settings);
    /// The training options (optimizer, precision, ...) the pane's training step is built with:
    /// the planner's, so the table's training-step figures compare with the planner's (the
    /// header names them). Reloads the model shown when they change.
    void setTraining(const core::training::TrainingOptions &training);
    const core::training::TrainingOptions &training() const { return m_training; }
    /// The main window's model, which the table compares with (null: none).
    void setReference(std::optional<LoadedModel> reference);
    void setColourMode(ColourMode mode);
    void setFoldShapeArithmetic(bool on);
    void toggleGroup(core::NamespaceId ns);

    ModelDocument *document() const { return m_document; }
    GraphScene *graphScene() const { return m_scene; }
    GraphView *graphView() const { return m_view; }
    QTableWidget *comparisonTable() const { return m_table; }
    const std::vector<core::pipeline::DifferenceRow> &rows() const { return m_rows; }
    QString headerText() const;
    bool isBusy() const;

signals:
    /// The model is loaded and its first layout is on screen.
    void modelShown();
    /// Any layout is on screen.
    void layoutFinished();
    void loadFailed(const QString &message);
    void closeRequested();

private:
    void onLoaded(const LoadedModel &model);
    void startLayout();
    void updateTable();
    void updateHeader();

    ModelDocument *m_document;
    ModelLoader *m_loader;
    LayoutRunner *m_layoutRunner;
    GraphScene *m_scene;
    GraphView *m_view;
    QLabel *m_header;
    QToolButton *m_close;
    QTableWidget *m_table;
    std::optional<LoadedModel> m_reference;
    core::training::TrainingOptions m_training;
    std::vector<core::pipeline::DifferenceRow> m_rows;
    bool m_foldShapes = true;
    bool m_firstLayout = true;
    QString m_status;
};

} // namespace remat::ui
