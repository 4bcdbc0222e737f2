#include "ui/model_document.h"

namespace remat::ui {

ModelDocument::ModelDocument(QObject *parent) : QObject(parent) {}

void ModelDocument::setModel(LoadedModel model, const core::layout::CollapseSet &initialCollapse)
{
    // (Against the graph as imported: a regrouped graph has more namespaces, which go.)
    const bool sameFile = hasModel() && model.path == m_model.path &&
                          model.graph->namespaces().size() == m_importedNamespaces;
    m_model = std::move(model);
    m_importedNamespaces = m_model.graph->namespaces().size();
    m_plannerStep.reset();
    m_foldedConstants.reset();
    m_layouter.reset();
    m_layout.reset();
    if (!sameFile)
        m_collapsed = initialCollapse;
    else
        m_collapsed.erase(m_collapsed.lower_bound(core::NamespaceId(int32_t(m_importedNamespaces))),
                          m_collapsed.end());
    if (m_selected.valid() && m_selected.index() >= m_model.graph->nodeCount())
        m_selected = core::NodeId();
    if (!sameFile)
        m_selected = core::NodeId();
    m_colourOverride.reset(); // made for the previous graph's node ids
    rebuildColours();
    emit changed({DocumentChangeKind::ModelReplaced});
}

void ModelDocument::setRegroupedModel(LoadedModel model, core::layout::CollapseSet collapsed)
{
    m_model = std::move(model);
    m_foldedConstants.reset();
    m_layouter.reset();
    m_layout.reset();
    m_collapsed = std::move(collapsed);
    m_colourOverride.reset();
    rebuildColours();
    emit changed({DocumentChangeKind::ModelReplaced});
}

void ModelDocument::setPlannerStep(std::shared_ptr<const core::pipeline::Problem> step)
{
    if (step == m_plannerStep)
        return;
    m_plannerStep = std::move(step);
    emit changed({DocumentChangeKind::TrainingStepChanged});
}

void ModelDocument::setColourOverride(std::unique_ptr<NodeColourProvider> provider)
{
    m_colourOverride = std::move(provider);
    emit changed({DocumentChangeKind::ColourModeChanged});
}

void ModelDocument::setCollapsed(core::layout::CollapseSet collapsed)
{
    if (collapsed == m_collapsed)
        return;
    m_collapsed = std::move(collapsed);
    emit changed({DocumentChangeKind::CollapseChanged});
}

void ModelDocument::setLayout(std::shared_ptr<const core::layout::GraphLayout> layout)
{
    m_layout = std::move(layout);
    emit changed({DocumentChangeKind::LayoutChanged});
}

void ModelDocument::setColourMode(ColourMode mode)
{
    if (mode == m_colourMode)
        return;
    m_colourMode = mode;
    rebuildColours();
    emit changed({DocumentChangeKind::ColourModeChanged});
}

void ModelDocument::setSelectedNode(core::NodeId node)
{
    if (node == m_selected)
        return;
    m_selected = node;
    emit changed({DocumentChangeKind::SelectionChanged});
}

const FoldedConstants &ModelDocument::foldedConstants() const
{
    if (!m_foldedConstants)
        m_foldedConstants = std::make_unique<FoldedConstants>(*m_model.graph);
    return *m_foldedConstants;
}

void ModelDocument::rebuildColours()
{
    if (hasModel())
        m_colours = makeColourProvider(m_colourMode, m_model.graph, m_model.metrics);
}

} // namespace remat::ui
