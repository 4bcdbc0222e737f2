#include "ui/planner/plan_node_colors.h"

namespace remat::ui {

PlanNodeColors::PlanNodeColors(QObject *parent) : QObject(parent) {}

void PlanNodeColors::setAnalysis(const PlanAnalysis &analysis)
{
    m_decisions = analysis.nodeDecisions();
    m_pinned = analysis.pinnedNodes();
    emit decisionsChanged();
}

void PlanNodeColors::clear()
{
    m_decisions.clear();
    m_pinned.clear();
    emit decisionsChanged();
}

QColor PlanNodeColors::colorFor(PlanDecision decision)
{
    switch (decision) {
    case PlanDecision::Keep: return QColor(0x42, 0x85, 0xf4);      // blue, as stored activations
    case PlanDecision::Recompute: return QColor(0xf4, 0x8f, 0x22); // orange, as recomputed ones
    case PlanDecision::Offload: return QColor(0x26, 0xa6, 0x9a);   // teal
    case PlanDecision::Free: return QColor(0xcf, 0xd8, 0xdc);      // pale: nothing stored
    case PlanDecision::None: break;
    }
    return {};
}

QColor PlanNodeColors::colorForNode(const QString &node) const
{
    const auto it = m_decisions.constFind(node);
    return it == m_decisions.constEnd() ? QColor() : colorFor(*it);
}

QList<QPair<QString, QColor>> PlanNodeColors::legend()
{
    QList<QPair<QString, QColor>> out;
    for (PlanDecision d :
         {PlanDecision::Keep, PlanDecision::Recompute, PlanDecision::Offload, PlanDecision::Free})
        out.append({QString::fromLatin1(planDecisionName(d)), colorFor(d)});
    out.append({QStringLiteral("pinned (thick border)"), QColor(0x21, 0x21, 0x21)});
    return out;
}

} // namespace remat::ui
