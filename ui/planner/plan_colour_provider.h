#pragma once
// The current plan as a graph colour mode (the explorer's NodeColourProvider extension point):
// keep / recompute / offload / free per node, pinned nodes darker, groups by majority. With a
// teaching step, only what is resident at that step keeps its colour (the rest fades) and the
// node the step runs is shown in red: the graph "lights up" as the schedule plays.
//   auto provider = std::make_unique<PlanColourProvider>(graph, planner.nodeColors()->decisions(),
//                                                        planner.nodeColors()->pinnedNodes());
//   scene->setColourProvider(std::move(provider));

#include "ui/colour_mode.h"
#include "ui/planner/plan_analysis.h"

#include <QHash>
#include <QSet>

#include <memory>
#include <vector>

namespace remat::ui {

class PlanColourProvider final : public NodeColourProvider
{
public:
    PlanColourProvider(std::shared_ptr<const core::ir::Graph> graph,
                       const QHash<QString, PlanDecision> &decisions, const QSet<QString> &pinned,
                       const StepState *step = nullptr);

    QColor nodeColour(core::NodeId node) const override;
    QColor groupColour(const std::vector<core::NodeId> &members) const override;
    Legend legend() const override;
    /// Members per decision (keep, recompute, offload, free), those without one left out.
    std::vector<GroupShare> groupBreakdown(const std::vector<core::NodeId> &members) const override;
    PlanDecision decision(core::NodeId node) const { return m_decision[node.index()]; }

private:
    std::shared_ptr<const core::ir::Graph> m_graph;
    std::vector<PlanDecision> m_decision; // by NodeId
    std::vector<char> m_pinned;
    std::vector<char> m_resident; // empty: no step shown
    std::vector<char> m_active;
};

} // namespace remat::ui
