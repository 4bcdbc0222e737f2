#pragma once
// What a plan does to each tensor and op, read off its Schedule: residency intervals, the
// keep / recompute / offload decision per forward tensor and node, Checkmate-style R and S
// matrices, and a one-paragraph explanation per tensor.
//   PlanAnalysis a = PlanAnalysis::analyse(tgShared, plan);
//   a.decisionOfTensor(t);  a.residentAfter(step);  a.explainTensor(t);
//   a.stageCount();  a.recomputedInStage(k, op);  a.storedIntoStage(k, op);

#include "core/schedule/schedule.h"
#include "core/solvers/solver.h"
#include "core/training/training_graph.h"

#include <QHash>
#include <QMetaType>
#include <QSet>
#include <QString>
#include <QStringList>

#include <memory>
#include <optional>
#include <vector>

namespace remat::ui {

/// What a plan decided for a forward tensor (and, through its main output, for a graph node).
enum class PlanDecision : unsigned char {
    None, ///< not an activation (weights, constants, shape arithmetic with no bytes) or no plan
    Keep, ///< stored from its compute until its backward use
    Recompute, ///< freed in the forward pass and computed again before backward needs it
    Offload,   ///< copied to host memory and prefetched back
    Free,      ///< not needed by backward: freed after its last forward use
};
const char *planDecisionName(PlanDecision d); ///< "keep", "recompute", ...

/// Splits text into lines of at most `width` characters at spaces (a longer word stays whole on
/// its own line): for places that show one line each, such as menu entries, without cutting a
/// word or a sentence short.
QStringList wrapAtWords(const QString &text, int width);

/// One stretch of time a tensor occupies device memory: allocated at `from`, freed at `to`
/// (exclusive; the schedule length when never freed).
struct ResidencyInterval
{
    int32_t tensor = -1;
    int32_t from = 0;
    int32_t to = 0;
};

/// Tensors touched by one schedule step, for lighting up the graph.
struct StepState
{
    int step = -1;
    QString description;         ///< "step 17: compute layer1.0/conv1/Conv (recompute)"
    QStringList computed;        ///< tensors the step allocated (Compute / Prefetch)
    QStringList freed;           ///< tensors the step released
    QStringList resident;        ///< every tensor on the device after the step
    QSet<QString> residentNodes; ///< forward ONNX node names whose outputs are resident
    QSet<QString> computedNodes; ///< forward ONNX node names (re)computed at this step
    QString activeNode;          ///< the forward node the step's op is or differentiates
    bool backward = false;       ///< the step runs after the BackwardBegin marker
};

class PlanAnalysis
{
public:
    PlanAnalysis();
    /// Keeps the graph alive; copies what it needs from the plan.
    static PlanAnalysis analyse(std::shared_ptr<const core::training::TrainingGraph> graph,
                                const core::solvers::Plan &plan);

    bool isEmpty() const { return m_d->m_graph == nullptr; }
    size_t stepCount() const { return m_d->m_stepCount; }
    int backwardBeginStep() const { return m_d->m_backwardBegin; }

    PlanDecision decisionOfTensor(core::TensorId t) const
    {
        return m_d->m_tensorDecision[t.index()];
    }
    bool isPinned(core::TensorId t) const { return m_d->m_pinned[t.index()]; }
    /// Times the op runs in the step (1 = once, 2+ = recomputed).
    int computeCount(core::OpId op) const { return m_d->m_computeCount[op.index()]; }
    /// Per forward node name (the ONNX node), the decision for its main activation output.
    const QHash<QString, PlanDecision> &nodeDecisions() const { return m_d->m_nodeDecision; }
    /// Forward node names with a pinned output.
    const QSet<QString> &pinnedNodes() const { return m_d->m_pinnedNodes; }
    /// Forward op of an ONNX node name, if any.
    std::optional<core::OpId> forwardOpOfNode(const QString &nodeName) const;
    /// The main output of a forward op: its first activation output, else its first output.
    core::TensorId mainOutput(core::OpId op) const;

    const std::vector<ResidencyInterval> &intervals() const { return m_d->m_intervals; }
    /// Steps at which the op runs (first compute and recomputes).
    const std::vector<int32_t> &computeSteps(core::OpId op) const
    {
        return m_d->m_computeSteps[op.index()];
    }
    StepState stateAt(int step) const;
    /// The op a step runs (invalid for Free / Offload / Prefetch / Phase steps).
    core::OpId opAtStep(int step) const;
    /// ONNX node name the step's op is or differentiates (empty for markers and frees).
    QString nodeAtStep(int step) const;

    // Checkmate's view: stage k starts at the k-th first compute (the frontier advances by one op).
    int stageCount() const { return int(m_d->m_stageStart.size()); }
    int stageOfStep(int step) const;
    int stageStartStep(int stage) const { return m_d->m_stageStart[size_t(stage)]; }
    /// R[k][op]: op runs during stage k.
    bool recomputedInStage(int stage, core::OpId op) const;
    /// S[k][op]: an output of op is resident when stage k begins (stored from an earlier stage).
    bool storedIntoStage(int stage, core::OpId op) const;
    /// Row k of R and of S as bitsets over op indices (bit op.index()), for drawing them.
    const std::vector<uint64_t> &recomputeBits(int stage) const
    {
        return m_d->m_rBits[size_t(stage)];
    }
    const std::vector<uint64_t> &storeBits(int stage) const { return m_d->m_sBits[size_t(stage)]; }

    /// Why the tensor is kept, recomputed, offloaded or freed, in plain words.
    QString explainTensor(core::TensorId t) const;
    /// For a selected graph node: its decision, where it is recomputed, which backward ops use it.
    QString explainNode(const QString &nodeName) const;

private:
    // Immutable once analyse() returns and shared by every copy: the planner, the node colours,
    // the Schedule tab and its two matrices each hold one, and on the 8B decoder a copy of the
    // R and S bitsets alone was thousands of allocations a slider move.
    struct Data
    {
        std::shared_ptr<const core::training::TrainingGraph> m_graph;
        std::vector<core::schedule::Step> m_steps;
        QString m_solver;
        size_t m_stepCount = 0;
        int m_backwardBegin = -1;
        std::vector<PlanDecision> m_tensorDecision;
        std::vector<char> m_pinned;
        std::vector<std::optional<core::solvers::PinKind>> m_pinKind;
        std::vector<int> m_computeCount;
        std::vector<std::vector<int32_t>> m_computeSteps;
        std::vector<ResidencyInterval> m_intervals;
        std::vector<std::vector<int32_t>> m_intervalsOfTensor; // indices into m_intervals
        std::vector<int32_t> m_offloadStep, m_prefetchStep, m_firstFreeStep;
        QHash<QString, PlanDecision> m_nodeDecision;
        QSet<QString> m_pinnedNodes;
        QHash<QString, int32_t> m_opOfNode;
        std::vector<int32_t> m_stageStart; // step of each stage's first compute
        std::vector<int32_t> m_stageOfStep;
        std::vector<int32_t> m_recomputeSegment; // per step: segment number of a recompute, -1
        std::vector<std::vector<uint64_t>> m_rBits, m_sBits; // per stage, bitset over ops
    };
    /// The shared empty analysis of a default-constructed PlanAnalysis.
    static const std::shared_ptr<const Data> &emptyData();
    std::shared_ptr<const Data> m_d;
};

} // namespace remat::ui

Q_DECLARE_METATYPE(remat::ui::StepState)
