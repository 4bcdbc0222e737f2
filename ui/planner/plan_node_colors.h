#pragma once
// The current plan as a per-node colouring for the graph view: keep / recompute / offload / free,
// with pinned nodes marked, keyed by ONNX node name (what the graph view shows).
//   PlanNodeColors colors;  colors.setAnalysis(analysis);
//   QColor fill = colors.colorForNode("/layer1/layer1.0/conv1/Conv");
//   connect(&colors, &PlanNodeColors::decisionsChanged, graphView, [&] { repaint(); });

#include "ui/planner/plan_analysis.h"

#include <QColor>
#include <QHash>
#include <QObject>
#include <QSet>

namespace remat::ui {

class PlanNodeColors : public QObject
{
    Q_OBJECT
public:
    explicit PlanNodeColors(QObject *parent = nullptr);

    void setAnalysis(const PlanAnalysis &analysis);
    void clear();

    const QHash<QString, PlanDecision> &decisions() const { return m_decisions; }
    const QSet<QString> &pinnedNodes() const { return m_pinned; }
    PlanDecision decision(const QString &node) const
    {
        return m_decisions.value(node, PlanDecision::None);
    }
    bool isPinned(const QString &node) const { return m_pinned.contains(node); }
    /// Invalid QColor when the node has no decision (the view keeps its own colour).
    QColor colorForNode(const QString &node) const;

    static QColor colorFor(PlanDecision decision);
    /// A short legend: decision name and colour, in display order.
    static QList<QPair<QString, QColor>> legend();

signals:
    void decisionsChanged();

private:
    QHash<QString, PlanDecision> m_decisions;
    QSet<QString> m_pinned;
};

} // namespace remat::ui
