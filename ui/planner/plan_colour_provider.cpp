#include "ui/planner/plan_colour_provider.h"

#include "ui/planner/plan_node_colors.h"

#include <QObject>

#include <array>

namespace remat::ui {

namespace {
const QColor kUnplanned(0xee, 0xef, 0xf3); // shape arithmetic, weights: nothing to decide
}

PlanColourProvider::PlanColourProvider(std::shared_ptr<const core::ir::Graph> graph,
                                       const QHash<QString, PlanDecision> &decisions,
                                       const QSet<QString> &pinned, const StepState *step)
    : m_graph(std::move(graph))
{
    const size_t n = m_graph ? m_graph->nodeCount() : 0;
    m_decision.assign(n, PlanDecision::None);
    m_pinned.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
        const QString name = QString::fromStdString(m_graph->nodes()[i].name);
        m_decision[i] = decisions.value(name, PlanDecision::None);
        m_pinned[i] = pinned.contains(name);
    }
    if (step && step->step >= 0) {
        m_resident.assign(n, 0);
        m_active.assign(n, 0);
        for (size_t i = 0; i < n; ++i) {
            const QString name = QString::fromStdString(m_graph->nodes()[i].name);
            m_resident[i] = step->residentNodes.contains(name);
            m_active[i] = name == step->activeNode || step->computedNodes.contains(name);
        }
    }
}

QColor PlanColourProvider::nodeColour(core::NodeId node) const
{
    if (!node.valid() || node.index() >= m_decision.size())
        return kUnplanned;
    if (!m_active.empty() && m_active[node.index()])
        return QColor(0xe5, 0x39, 0x35); // the op this step runs
    QColor c = PlanNodeColors::colorFor(m_decision[node.index()]);
    if (!c.isValid())
        return kUnplanned;
    if (!m_resident.empty() && !m_resident[node.index()])
        return kUnplanned; // not on the device at this step
    // A pin is the user's decision, not the solver's: show it darker.
    return m_pinned[node.index()] ? c.darker(150) : c;
}

QColor PlanColourProvider::groupColour(const std::vector<core::NodeId> &members) const
{
    std::array<int, 5> count{};
    for (core::NodeId n : members)
        if (n.valid() && n.index() < m_decision.size() &&
            m_decision[n.index()] != PlanDecision::None)
            ++count[size_t(m_decision[n.index()])];
    size_t best = 0;
    for (size_t i = 1; i < count.size(); ++i)
        if (count[i] > count[best])
            best = i;
    if (count[best] == 0)
        return kUnplanned;
    // Recomputing anything inside a group is what a user looks for: it wins ties with keep.
    if (count[size_t(PlanDecision::Recompute)] > 0 &&
        count[size_t(PlanDecision::Recompute)] >= count[best] / 2)
        best = size_t(PlanDecision::Recompute);
    return PlanNodeColors::colorFor(static_cast<PlanDecision>(best)).lighter(115);
}

std::vector<GroupShare>
PlanColourProvider::groupBreakdown(const std::vector<core::NodeId> &members) const
{
    std::array<int, 5> count{};
    for (core::NodeId n : members)
        if (n.valid() && n.index() < m_decision.size())
            ++count[size_t(m_decision[n.index()])];
    std::vector<GroupShare> out;
    for (PlanDecision d :
         {PlanDecision::Keep, PlanDecision::Recompute, PlanDecision::Offload, PlanDecision::Free})
        if (count[size_t(d)] > 0)
            out.push_back({PlanNodeColors::colorFor(d), QString::fromLatin1(planDecisionName(d)),
                           count[size_t(d)]});
    return out;
}

Legend PlanColourProvider::legend() const
{
    Legend l;
    l.title = QObject::tr("Plan decision");
    for (PlanDecision d :
         {PlanDecision::Keep, PlanDecision::Recompute, PlanDecision::Offload, PlanDecision::Free})
        l.entries.push_back(
            {PlanNodeColors::colorFor(d), QString::fromLatin1(planDecisionName(d))});
    l.entries.push_back(
        {PlanNodeColors::colorFor(PlanDecision::Keep).darker(150), QObject::tr("pinned (darker)")});
    l.entries.push_back({kUnplanned, m_resident.empty() ? QObject::tr("no decision")
                                                        : QObject::tr("not resident")});
    if (!m_active.empty())
        l.entries.push_back({QColor(0xe5, 0x39, 0x35), QObject::tr("running at this step")});
    return l;
}

} // namespace remat::ui
