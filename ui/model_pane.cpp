#include "ui/model_pane.h"

#include "core/layout/collapse_policy.h"
#include "core/layout/shape_folding.h"
#include "ui/background_jobs.h"
#include "ui/graph/graph_items.h"
#include "ui/graph/graph_scene.h"
#include "ui/graph/graph_view.h"
#include "ui/node_metrics.h"
#include "ui/planner/set_training_command.h"
#include "ui/planner/step_comparison_view.h"

#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QToolButton>
#include <QVBoxLayout>

namespace remat::ui {

namespace layout = core::layout;
using core::pipeline::DifferenceRow;
using core::pipeline::FigureUnit;

std::shared_ptr<layout::GraphLayouter>
makeExplorerLayouter(std::shared_ptr<const core::ir::Graph> graph, bool foldShapes)
{
    std::vector<char> hidden;
    if (foldShapes)
        hidden = layout::foldableNodes(*graph);
    auto layouter = std::make_shared<layout::GraphLayouter>(
        graph, layout::GraphLayoutSizes{}, layout::LayeredOptions{}, std::move(hidden));
    layouter->setSizes(GraphScene::measure(*graph, *layouter));
    return layouter;
}

layout::CollapseSet toggledCollapse(const layout::GraphLayouter &lay, const core::ir::Graph &g,
                                    layout::CollapseSet set, core::NamespaceId ns)
{
    if (!set.count(ns)) {
        set.insert(ns);
        return set;
    }
    set.erase(ns);
    for (core::NamespaceId sub : lay.groups()) {
        core::NamespaceId up = g.ns(sub).parent;
        while (up.valid() && !lay.isGroup(up))
            up = g.ns(up).parent;
        if (up == ns)
            set.insert(sub);
    }
    return set;
}

void frameGraphReadable(GraphView &view, GraphScene &scene, const ModelDocument &document)
{
    view.fitAll();
    if (view.scale() >= kReadableScale || !document.layout())
        return;
    view.setTransform(QTransform::fromScale(0.8, 0.8));
    view.updateOverview();
    const QRectF visible = view.mapToScene(view.viewport()->rect()).boundingRect();
    const QRectF sceneRect = scene.sceneRect();
    double x = sceneRect.center().x();
    const core::ir::Graph &g = document.graph();
    for (core::ValueId in : g.inputs()) {
        const core::ir::Value &v = g.value(in);
        if (v.kind != core::ir::ValueKind::Input || v.consumers.empty())
            continue;
        if (NodeItem *first = scene.itemShowing(v.consumers.front())) {
            x = first->rect().center().x();
            break;
        }
    }
    view.centerOn(QPointF(x, sceneRect.top() + visible.height() / 2));
    emit view.viewportChanged();
}

std::vector<DifferenceRow> modelDifferenceRows(const LoadedModel &a, const LoadedModel &b)
{
    std::vector<DifferenceRow> rows;
    if (!a.metrics || !b.metrics)
        return rows;
    const ModelSummary &x = a.metrics->summary, &y = b.metrics->summary;
    const auto row = [&](const char *what, FigureUnit unit, double va, double vb) {
        rows.push_back({what, unit, va, vb});
    };
    row("nodes", FigureUnit::Count, double(x.nodes), double(y.nodes));
    row("parameters", FigureUnit::Count, double(x.parameters), double(y.parameters));
    row("parameter bytes", FigureUnit::Bytes, double(x.parameterBytes), double(y.parameterBytes));
    row("activations (every node output)", FigureUnit::Bytes, double(x.activationBytes),
        double(y.activationBytes));
    row("forward FLOPs", FigureUnit::Flops, x.forwardFlops, y.forwardFlops);
    const auto *pa = a.problem && a.problem->isValid() ? a.problem.get() : nullptr;
    const auto *pb = b.problem && b.problem->isValid() ? b.problem.get() : nullptr;
    if (pa && pb) {
        const auto &ta = pa->storeAll.timeline, &tb = pb->storeAll.timeline;
        row("training step peak (store-all)", FigureUnit::Bytes, double(ta.peakBytes),
            double(tb.peakBytes));
        row("activation peak (store-all)", FigureUnit::Bytes, double(ta.activationPeakBytes),
            double(tb.activationPeakBytes));
        row("step time (store-all, estimate)", FigureUnit::Seconds, ta.totalSeconds,
            tb.totalSeconds);
    }
    return rows;
}

ModelPane::ModelPane(std::shared_ptr<ProblemCache> cache, QWidget *parent) : QWidget(parent)
{
    setObjectName(QStringLiteral("modelPane"));
    m_document = new ModelDocument(this);
    m_loader = new ModelLoader(std::move(cache), this);
    m_layoutRunner = new LayoutRunner(this);
    m_scene = new GraphScene(m_document, this);
    m_view = new GraphView(m_scene, this);
    m_view->setObjectName(QStringLiteral("besideGraphView"));
    m_header = new QLabel(this);
    m_header->setWordWrap(true);
    m_close = new QToolButton(this);
    m_close->setText(tr("Close"));
    m_close->setToolTip(tr("Close the model beside"));
    m_table = new QTableWidget(0, 4, this);
    m_table->setObjectName(QStringLiteral("besideComparison"));
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
    m_table->setMaximumHeight(170);
    m_table->hide();
    auto *top = new QHBoxLayout;
    top->addWidget(m_header, 1);
    top->addWidget(m_close);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addLayout(top);
    layout->addWidget(m_view, 1);
    layout->addWidget(m_table);

    connect(m_close, &QToolButton::clicked, this, &ModelPane::closeRequested);
    connect(m_loader, &ModelLoader::loaded, this, &ModelPane::onLoaded);
    connect(m_loader, &ModelLoader::failed, this, [this](const QString &path, const QString &msg) {
        m_status = tr("%1: %2").arg(QFileInfo(path).fileName(), msg);
        updateHeader();
        emit loadFailed(m_status);
    });
    connect(m_loader, &ModelLoader::inputsNeeded, this,
            [this](const QString &, const QString &message, const auto &, const auto &) {
                // Browsable as it is; the main window's Model Inputs dialog is where sizes go.
                m_status = tr("no training step: %1").arg(message);
                updateHeader();
            });
    connect(m_layoutRunner, &LayoutRunner::finished, this,
            [this](std::shared_ptr<const layout::GraphLayout> l, double) {
                m_document->setLayout(std::move(l));
                if (m_firstLayout) {
                    frameGraphReadable(*m_view, *m_scene, *m_document);
                    m_firstLayout = false;
                    emit modelShown();
                }
                emit layoutFinished();
            });
    connect(m_layoutRunner, &LayoutRunner::failed, this, [this](const QString &message) {
        m_status = tr("layout failed: %1").arg(message);
        updateHeader();
    });
    connect(m_scene, &GraphScene::groupToggled, this, &ModelPane::toggleGroup);
    connect(m_document, &ModelDocument::changed, this, [this](const DocumentChange &c) {
        if (c.kind == DocumentChangeKind::SelectionChanged)
            updateHeader();
    });
    updateHeader();
}

ModelPane::~ModelPane()
{
    m_loader->cancel();
    m_layoutRunner->cancel();
}

bool ModelPane::isBusy() const { return m_loader->busy() || m_layoutRunner->busy(); }

void ModelPane::openModel(const QString &path, int64_t batch,
                          const core::onnx::ImportOptions &settings)
{
    m_firstLayout = true;
    m_status = tr("loading %1...").arg(QFileInfo(path).fileName());
    updateHeader();
    m_loader->load(path, batch, settings, m_training);
}

void ModelPane::setTraining(const core::training::TrainingOptions &training)
{
    if (training == m_training)
        return;
    m_training = training;
    if (m_document->hasModel()) {
        const LoadedModel &m = m_document->model();
        m_firstLayout = false; // the same graph: keep the view where the user left it
        m_loader->load(m.path, m.requestedBatch, m.settings, m_training);
    }
    updateHeader();
}

void ModelPane::onLoaded(const LoadedModel &model)
{
    auto layouter = makeExplorerLayouter(model.graph, m_foldShapes);
    layout::CollapsePolicy policy; // a pane is about half a window: the policy's defaults
    const int depth = layout::autoCollapseDepth(*layouter, policy);
    m_document->setModel(model, layout::collapseAtDepth(*layouter, depth));
    m_document->setLayouter(layouter);
    m_status.clear();
    if (!model.trainingError.isEmpty())
        m_status = tr("no training step: %1").arg(model.trainingError);
    updateHeader();
    updateTable();
    startLayout();
}

void ModelPane::startLayout()
{
    if (m_document->layouter())
        m_layoutRunner->run(m_document->layouter(), m_document->collapsed());
}

void ModelPane::setReference(std::optional<LoadedModel> reference)
{
    m_reference = std::move(reference);
    updateTable();
}

void ModelPane::setColourMode(ColourMode mode) { m_document->setColourMode(mode); }

void ModelPane::setFoldShapeArithmetic(bool on)
{
    if (on == m_foldShapes)
        return;
    m_foldShapes = on;
    if (!m_document->hasModel())
        return;
    m_document->setLayouter(makeExplorerLayouter(m_document->model().graph, on));
    startLayout();
}

void ModelPane::toggleGroup(core::NamespaceId ns)
{
    const layout::GraphLayouter *lay = m_document->layouter().get();
    if (!m_document->hasModel() || !lay)
        return;
    m_document->setCollapsed(
        toggledCollapse(*lay, m_document->graph(), m_document->collapsed(), ns));
    startLayout();
}

QString ModelPane::headerText() const { return m_header->text(); }

void ModelPane::updateHeader()
{
    QString text;
    if (m_document->hasModel()) {
        const LoadedModel &m = m_document->model();
        const ModelSummary &s = m.metrics->summary;
        text = tr("<b>Beside: %1</b> (batch %2, %3 nodes)")
                   .arg(QFileInfo(m.path).fileName().toHtmlEscaped())
                   .arg(s.batch > 0 ? QString::number(s.batch) : tr("as in file"))
                   .arg(s.nodes);
        // The training-step figures below are for these options (the planner's).
        text += tr(", training %1").arg(trainingSummary(m_training).toHtmlEscaped());
        const core::NodeId sel = m_document->selectedNode();
        if (sel.valid()) {
            const auto &node = m_document->graph().node(sel);
            text += tr("  |  selected %1 (%2)")
                        .arg(QString::fromStdString(node.name).toHtmlEscaped(),
                             QString::fromStdString(node.opType).toHtmlEscaped());
        }
    } else {
        text = tr("<b>Beside</b>");
    }
    if (!m_status.isEmpty())
        text += QStringLiteral("<br>") + m_status.toHtmlEscaped();
    m_header->setText(text);
}

void ModelPane::updateTable()
{
    m_rows.clear();
    if (m_reference && m_document->hasModel())
        m_rows = modelDifferenceRows(*m_reference, m_document->model());
    m_table->setVisible(!m_rows.empty());
    const QString nameA = m_reference ? QFileInfo(m_reference->path).fileName() : tr("left");
    const QString nameB =
        m_document->hasModel() ? QFileInfo(m_document->model().path).fileName() : tr("beside");
    fillDifferenceTable(*m_table, m_rows, nameA, nameB, tr("difference"));
}

} // namespace remat::ui
