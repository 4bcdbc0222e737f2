#pragma once
// How graph nodes are coloured, and the extension point for new modes (the planner adds its plan
// decisions here): a mode is a NodeColourProvider that gives a fill per node and a legend.
//   auto p = ui::makeColourProvider(ui::ColourMode::ActivationBytes, graph, metrics);
//   QColor fill = p->nodeColour(nodeId);  p->legend();  // stops for the legend widget

#include "core/ir/graph.h"
#include "ui/node_metrics.h"

#include <QColor>
#include <QString>
#include <QVector>

#include <memory>
#include <optional>
#include <vector>

namespace remat::ui {

enum class ColourMode {
    OpType,          ///< categorical, by op family
    ActivationBytes, ///< heat scale of each node's output bytes (log)
    Flops,           ///< heat scale of each node's forward FLOPs (log)
    Trainability,    ///< what weights a node reads: trainable, frozen only, buffers, none
    // Plan modes (keep / recompute / offload) are added by the planner through the same interface.
};
QString colourModeName(ColourMode mode);
/// Every mode, in menu order.
inline constexpr ColourMode kColourModes[] = {ColourMode::OpType, ColourMode::ActivationBytes,
                                              ColourMode::Flops, ColourMode::Trainability};
/// A stable id for files ("op-type", "activation-bytes", "flops", "trainable") and back
/// (nullopt: unknown).
QString colourModeId(ColourMode mode);
std::optional<ColourMode> colourModeFromId(const QString &id);

struct LegendEntry
{
    QColor colour;
    QString label;
};

/// What a colour mode shows: either a list of categories, or a continuous scale with end labels.
struct Legend
{
    QString title;
    bool continuous = false;
    QVector<LegendEntry> entries; ///< categories, or the scale's stops (first = low)
    QString lowLabel, highLabel;
};

/// One part of a collapsed group's summary: how many of its members fall in one category.
struct GroupShare
{
    QColor colour;
    QString label;
    int count = 0;
};

class NodeColourProvider
{
public:
    virtual ~NodeColourProvider() = default;
    /// Fill of one node's box.
    virtual QColor nodeColour(core::NodeId node) const = 0;
    /// Fill of a collapsed group standing for `members`.
    virtual QColor groupColour(const std::vector<core::NodeId> &members) const = 0;
    virtual Legend legend() const = 0;
    /// Optional: a per-category count of a collapsed group's members, drawn as a bar along the
    /// bottom of its box and listed in its tooltip (the plan's keep / recompute / offload).
    /// Default: none, the fill says it all.
    virtual std::vector<GroupShare> groupBreakdown(const std::vector<core::NodeId> &members) const
    {
        (void)members;
        return {};
    }
};

/// Categorical colour of an op type (stable across models).
QColor opTypeColour(const std::string &opType);
/// Heat scale, t in [0, 1]: dark blue -> teal -> yellow (perceptually ordered, colour-blind safe).
QColor heatColour(double t);

std::unique_ptr<NodeColourProvider> makeColourProvider(ColourMode mode,
                                                       std::shared_ptr<const core::ir::Graph> graph,
                                                       std::shared_ptr<const ModelMetrics> metrics);

} // namespace remat::ui
