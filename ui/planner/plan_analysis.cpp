#include "ui/planner/plan_analysis.h"

#include "core/util/bytes.h"

#include <algorithm>

namespace remat::ui {

using core::OpId;
using core::TensorId;
using core::schedule::PhaseMark;
using core::schedule::StepKind;
using core::training::Phase;
using core::training::TensorRole;

const char *planDecisionName(PlanDecision d)
{
    switch (d) {
    case PlanDecision::None: return "none";
    case PlanDecision::Keep: return "keep";
    case PlanDecision::Recompute: return "recompute";
    case PlanDecision::Offload: return "offload";
    case PlanDecision::Free: return "free";
    }
    return "?";
}

namespace {

bool isActivation(const core::training::Tensor &t)
{
    return t.role == TensorRole::Activation || t.role == TensorRole::SavedState;
}

QString qs(const std::string &s) { return QString::fromStdString(s); }

void setBit(std::vector<uint64_t> &bits, size_t i) { bits[i / 64] |= uint64_t(1) << (i % 64); }
bool testBit(const std::vector<uint64_t> &bits, size_t i)
{
    return (bits[i / 64] >> (i % 64)) & 1u;
}

} // namespace

PlanAnalysis::PlanAnalysis() : m_d(emptyData()) {}

const std::shared_ptr<const PlanAnalysis::Data> &PlanAnalysis::emptyData()
{
    static const std::shared_ptr<const Data> empty = std::make_shared<Data>();
    return empty;
}

PlanAnalysis PlanAnalysis::analyse(std::shared_ptr<const core::training::TrainingGraph> graphPtr,
                                   const core::solvers::Plan &plan)
{
    PlanAnalysis a;
    if (!graphPtr)
        return a;
    auto data = std::make_shared<Data>();
    a.m_d = data; // mainOutput reads the graph below
    data->m_graph = std::move(graphPtr);
    const core::training::TrainingGraph &g = *data->m_graph;
    data->m_steps = plan.schedule.steps;
    data->m_solver = qs(plan.solver);
    const auto &steps = data->m_steps;
    const size_t nT = g.tensorCount(), nO = g.opCount();
    data->m_stepCount = steps.size();
    data->m_tensorDecision.assign(nT, PlanDecision::None);
    data->m_pinned.assign(nT, 0);
    data->m_pinKind.assign(nT, std::nullopt);
    data->m_computeCount.assign(nO, 0);
    data->m_computeSteps.assign(nO, {});
    data->m_intervalsOfTensor.assign(nT, {});
    data->m_offloadStep.assign(nT, -1);
    data->m_prefetchStep.assign(nT, -1);
    data->m_firstFreeStep.assign(nT, -1);
    data->m_recomputeSegment.assign(steps.size(), -1);
    data->m_stageOfStep.assign(steps.size(), 0);

    std::vector<int32_t> open(nT, -1); // index into m_intervals of the open interval, or -1
    auto openInterval = [&](size_t t, int32_t from) {
        if (open[t] >= 0)
            return;
        open[t] = int32_t(data->m_intervals.size());
        data->m_intervalsOfTensor[t].push_back(open[t]);
        data->m_intervals.push_back({int32_t(t), from, int32_t(steps.size())});
    };
    auto closeInterval = [&](size_t t, int32_t to) {
        if (open[t] < 0)
            return;
        data->m_intervals[size_t(open[t])].to = to;
        open[t] = -1;
    };
    for (const auto &t : g.tensors())
        if (t.preloaded)
            openInterval(t.id.index(), -1);

    int segment = -1;
    bool inRecompute = false;
    std::vector<char> seen(nO, 0);
    for (size_t i = 0; i < steps.size(); ++i) {
        const auto &s = steps[i];
        const int32_t si = int32_t(i);
        switch (s.kind) {
        case StepKind::Compute: {
            if (s.target < 0 || size_t(s.target) >= nO)
                break;
            const OpId op = s.op();
            const bool recompute = data->m_computeCount[op.index()] > 0;
            ++data->m_computeCount[op.index()];
            data->m_computeSteps[op.index()].push_back(si);
            if (!seen[op.index()]) {
                seen[op.index()] = 1;
                data->m_stageStart.push_back(si);
            }
            if (recompute) {
                if (!inRecompute)
                    ++segment;
                inRecompute = true;
                data->m_recomputeSegment[i] = segment;
            } else {
                inRecompute = false;
            }
            for (TensorId out : g.op(op).outputs)
                openInterval(out.index(), si);
            break;
        }
        case StepKind::Free:
            if (s.target >= 0 && size_t(s.target) < nT) {
                closeInterval(size_t(s.target), si);
                if (data->m_firstFreeStep[size_t(s.target)] < 0)
                    data->m_firstFreeStep[size_t(s.target)] = si;
            }
            break;
        case StepKind::Offload:
            if (s.target >= 0 && size_t(s.target) < nT && data->m_offloadStep[size_t(s.target)] < 0)
                data->m_offloadStep[size_t(s.target)] = si;
            break;
        case StepKind::Prefetch:
            if (s.target >= 0 && size_t(s.target) < nT) {
                openInterval(size_t(s.target), si);
                if (data->m_prefetchStep[size_t(s.target)] < 0)
                    data->m_prefetchStep[size_t(s.target)] = si;
            }
            break;
        case StepKind::Phase:
            if (s.mark() == PhaseMark::BackwardBegin && data->m_backwardBegin < 0)
                data->m_backwardBegin = si;
            break;
        }
        data->m_stageOfStep[i] = std::max(0, int(data->m_stageStart.size()) - 1);
    }
    if (data->m_backwardBegin < 0) {
        // No marker: the boundary is the first backward op's compute.
        for (size_t i = 0; i < steps.size(); ++i)
            if (steps[i].kind == StepKind::Compute && size_t(steps[i].target) < nO &&
                g.op(steps[i].op()).phase == Phase::Backward) {
                data->m_backwardBegin = int(i);
                break;
            }
    }

    for (const auto &p : plan.pins) {
        if (!p.tensor.valid() || p.tensor.index() >= nT)
            continue;
        data->m_pinned[p.tensor.index()] = 1;
        data->m_pinKind[p.tensor.index()] = p.kind;
    }

    const int32_t bb = data->m_backwardBegin;
    for (const auto &t : g.tensors()) {
        if (!isActivation(t) || !t.producer.valid() || g.op(t.producer).phase != Phase::Forward)
            continue;
        const size_t ti = t.id.index();
        PlanDecision d = PlanDecision::Free;
        if (data->m_offloadStep[ti] >= 0) {
            d = PlanDecision::Offload;
        } else if (data->m_intervalsOfTensor[ti].size() > 1) {
            d = PlanDecision::Recompute;
        } else if (bb >= 0) {
            for (int32_t iv : data->m_intervalsOfTensor[ti]) {
                const auto &r = data->m_intervals[size_t(iv)];
                if (r.from <= bb && bb < r.to)
                    d = PlanDecision::Keep;
            }
        }
        data->m_tensorDecision[ti] = d;
    }

    for (const auto &op : g.ops()) {
        if (op.phase != Phase::Forward)
            continue;
        const QString name = qs(op.name);
        data->m_opOfNode.insert(name, op.id.value);
        const TensorId main = a.mainOutput(op.id);
        if (!main.valid())
            continue;
        const PlanDecision d = data->m_tensorDecision[main.index()];
        if (d != PlanDecision::None)
            data->m_nodeDecision.insert(name, d);
        for (TensorId out : op.outputs)
            if (data->m_pinned[out.index()])
                data->m_pinnedNodes.insert(name);
    }

    // Checkmate matrices as bitsets per stage.
    const size_t words = (nO + 63) / 64;
    const size_t stages = data->m_stageStart.size();
    data->m_rBits.assign(stages, std::vector<uint64_t>(words, 0));
    data->m_sBits.assign(stages, std::vector<uint64_t>(words, 0));
    for (size_t op = 0; op < nO; ++op)
        for (int32_t st : data->m_computeSteps[op])
            setBit(data->m_rBits[size_t(data->m_stageOfStep[size_t(st)])], op);
    for (const auto &iv : data->m_intervals) {
        const auto &t = g.tensor(TensorId(iv.tensor));
        if (!t.producer.valid())
            continue;
        // Stages whose start step s has the tensor resident before it: from <= s-1 < to.
        auto lo = std::upper_bound(data->m_stageStart.begin(), data->m_stageStart.end(), iv.from);
        for (auto it = lo; it != data->m_stageStart.end() && *it - 1 < iv.to; ++it)
            setBit(data->m_sBits[size_t(it - data->m_stageStart.begin())], t.producer.index());
    }
    return a;
}

std::optional<OpId> PlanAnalysis::forwardOpOfNode(const QString &nodeName) const
{
    const auto it = m_d->m_opOfNode.constFind(nodeName);
    if (it == m_d->m_opOfNode.constEnd())
        return std::nullopt;
    return OpId(*it);
}

TensorId PlanAnalysis::mainOutput(OpId op) const
{
    if (!m_d->m_graph || !op.valid())
        return {};
    const auto &o = m_d->m_graph->op(op);
    for (TensorId t : o.outputs)
        if (m_d->m_graph->tensor(t).role == TensorRole::Activation)
            return t;
    return o.outputs.empty() ? TensorId() : o.outputs.front();
}

OpId PlanAnalysis::opAtStep(int step) const
{
    if (step < 0 || size_t(step) >= m_d->m_steps.size() ||
        m_d->m_steps[size_t(step)].kind != StepKind::Compute)
        return {};
    return m_d->m_steps[size_t(step)].op();
}

QString PlanAnalysis::nodeAtStep(int step) const
{
    if (!m_d->m_graph || step < 0 || size_t(step) >= m_d->m_steps.size())
        return {};
    const auto &s = m_d->m_steps[size_t(step)];
    OpId op;
    if (s.kind == StepKind::Compute) {
        op = s.op();
    } else if (s.kind != StepKind::Phase && size_t(s.target) < m_d->m_graph->tensorCount()) {
        op = m_d->m_graph->tensor(s.tensor()).producer;
    }
    if (!op.valid())
        return {};
    const auto &o = m_d->m_graph->op(op);
    if (o.phase == Phase::Backward && o.forwardOf.valid())
        return qs(m_d->m_graph->op(o.forwardOf).name);
    if (o.phase == Phase::Forward)
        return qs(o.name);
    return {};
}

StepState PlanAnalysis::stateAt(int step) const
{
    StepState st;
    st.step = step;
    if (!m_d->m_graph)
        return st;
    const auto &g = *m_d->m_graph;
    st.backward = m_d->m_backwardBegin >= 0 && step >= m_d->m_backwardBegin;
    if (step >= 0 && size_t(step) < m_d->m_steps.size()) {
        const auto &s = m_d->m_steps[size_t(step)];
        QString what;
        if (s.kind == StepKind::Phase) {
            what = QString::fromLatin1(core::schedule::phaseMarkName(s.mark()));
        } else if (s.kind == StepKind::Compute) {
            what = qs(g.op(s.op()).name);
            if (m_d->m_recomputeSegment[size_t(step)] >= 0)
                what += QStringLiteral(" (recompute, segment %1)")
                            .arg(m_d->m_recomputeSegment[size_t(step)] + 1);
        } else {
            what = qs(g.tensor(s.tensor()).name);
        }
        st.description = QStringLiteral("step %1: %2 %3")
                             .arg(step)
                             .arg(QString::fromLatin1(core::schedule::stepKindName(s.kind)), what);
        if (s.kind == StepKind::Free)
            st.freed << qs(g.tensor(s.tensor()).name);
        st.activeNode = nodeAtStep(step);
        if (s.kind == StepKind::Compute && !st.activeNode.isEmpty())
            st.computedNodes.insert(st.activeNode);
    }
    for (const auto &iv : m_d->m_intervals) {
        if (!(iv.from <= step && step < iv.to))
            continue;
        const auto &t = g.tensor(TensorId(iv.tensor));
        if (t.preloaded)
            continue; // weights are always there; listing them would drown the rest
        st.resident << qs(t.name);
        if (iv.from == step)
            st.computed << qs(t.name);
        if (isActivation(t) && t.producer.valid() && g.op(t.producer).phase == Phase::Forward)
            st.residentNodes.insert(qs(g.op(t.producer).name));
    }
    return st;
}

int PlanAnalysis::stageOfStep(int step) const
{
    if (m_d->m_stageOfStep.empty())
        return 0;
    step = std::clamp(step, 0, int(m_d->m_stageOfStep.size()) - 1);
    return m_d->m_stageOfStep[size_t(step)];
}

bool PlanAnalysis::recomputedInStage(int stage, OpId op) const
{
    if (stage < 0 || size_t(stage) >= m_d->m_rBits.size() || !op.valid())
        return false;
    return testBit(m_d->m_rBits[size_t(stage)], op.index());
}

bool PlanAnalysis::storedIntoStage(int stage, OpId op) const
{
    if (stage < 0 || size_t(stage) >= m_d->m_sBits.size() || !op.valid())
        return false;
    return testBit(m_d->m_sBits[size_t(stage)], op.index());
}

QStringList wrapAtWords(const QString &text, int width)
{
    QStringList lines;
    for (const QString &paragraph : text.split(QLatin1Char('\n'))) {
        QString line;
        for (const QString &word : paragraph.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
            if (!line.isEmpty() && line.size() + 1 + word.size() > width) {
                lines << line;
                line.clear();
            }
            line += (line.isEmpty() ? QString() : QStringLiteral(" ")) + word;
        }
        if (!line.isEmpty())
            lines << line;
    }
    return lines;
}

QString PlanAnalysis::explainTensor(TensorId tid) const
{
    if (!m_d->m_graph || !tid.valid() || tid.index() >= m_d->m_graph->tensorCount())
        return {};
    const auto &g = *m_d->m_graph;
    const auto &t = g.tensor(tid);
    const QString name = qs(t.name);
    const QString bytes = qs(core::formatBytes(t.bytes));
    if (t.preloaded)
        return QStringLiteral("%1 (%2) is a %3: resident for the whole step.")
            .arg(name, bytes, QString::fromLatin1(core::training::tensorRoleName(t.role)));
    QStringList backwardUsers;
    for (OpId c : t.consumers)
        if (g.op(c).phase == Phase::Backward)
            backwardUsers << qs(g.op(c).name);
    // Forward ops that run again in backward (recomputed) read it too: that is why a tensor no
    // backward op reads can still be kept or recomputed.
    QStringList recomputedUsers;
    for (OpId c : t.consumers)
        if (g.op(c).phase == Phase::Forward && m_d->m_computeSteps[c.index()].size() > 1)
            recomputedUsers << qs(g.op(c).name);
    QString users;
    if (!backwardUsers.isEmpty())
        users = QStringLiteral("backward op %1").arg(backwardUsers.join(QStringLiteral(", ")));
    else if (!recomputedUsers.isEmpty())
        users = QStringLiteral("the recomputation of %1 (rebuilding what the backward pass reads)")
                    .arg(recomputedUsers.join(QStringLiteral(", ")));
    else
        users = QStringLiteral("no backward op");
    QString pinText;
    if (m_d->m_pinned[tid.index()] && m_d->m_pinKind[tid.index()])
        pinText =
            QStringLiteral(" Pinned by you: always %1.")
                .arg(QString::fromLatin1(core::solvers::pinKindName(*m_d->m_pinKind[tid.index()])));
    const auto &ivs = m_d->m_intervalsOfTensor[tid.index()];
    const int first = ivs.empty() ? -1 : m_d->m_intervals[size_t(ivs.front())].from;
    const int firstFree = m_d->m_firstFreeStep[tid.index()];
    switch (m_d->m_tensorDecision[tid.index()]) {
    case PlanDecision::Keep: {
        const int to = ivs.empty() ? -1 : m_d->m_intervals[size_t(ivs.back())].to;
        return QStringLiteral("%1 (%2) is kept: checkpoint chosen by %3, stored from step %4 until "
                              "step %5%6.%7")
            .arg(name, bytes,
                 m_d->m_pinned[tid.index()] ? QStringLiteral("your pin") : m_d->m_solver)
            .arg(first)
            .arg(to)
            .arg(backwardUsers.isEmpty() && recomputedUsers.isEmpty()
                     ? QString()
                     : QStringLiteral(", needed by %1").arg(users),
                 pinText);
    }
    case PlanDecision::Recompute: {
        QStringList where;
        const OpId p = t.producer;
        for (int32_t s : m_d->m_computeSteps[p.index()]) {
            const int seg = m_d->m_recomputeSegment[size_t(s)];
            if (seg >= 0)
                where << QStringLiteral("step %1 (segment %2)").arg(s).arg(seg + 1);
        }
        const QString again =
            where.isEmpty()
                ? QStringLiteral("computed again in the backward pass")
                : QStringLiteral("computed again at %1").arg(where.join(QStringLiteral(", ")));
        // A segment-wise solver re-runs a whole segment; an op in it whose output nothing after
        // the forward pass reads is recomputed all the same, and the text says so plainly.
        const QString why = backwardUsers.isEmpty() && recomputedUsers.isEmpty()
                                ? QStringLiteral(" with the rest of its segment, though nothing "
                                                 "after the forward pass reads it")
                                : QStringLiteral(" because %1 needs it").arg(users);
        return QStringLiteral("%1 (%2) is recomputed: computed at step %3, freed at step %4, and "
                              "%5%6.%7")
            .arg(name, bytes)
            .arg(first)
            .arg(firstFree)
            .arg(again, why, pinText);
    }
    case PlanDecision::Offload:
        return QStringLiteral("%1 (%2) is offloaded: copied to host at step %3 and prefetched at "
                              "step %4 for %5.%6")
            .arg(name, bytes)
            .arg(m_d->m_offloadStep[tid.index()])
            .arg(m_d->m_prefetchStep[tid.index()])
            .arg(users, pinText);
    case PlanDecision::Free:
        return QStringLiteral("%1 (%2) is freed at step %3: %4 reads it, so nothing is stored for "
                              "backward.%5")
            .arg(name, bytes)
            .arg(firstFree)
            .arg(backwardUsers.isEmpty() ? QStringLiteral("no backward op")
                                         : QStringLiteral("only the forward pass"),
                 pinText);
    case PlanDecision::None: break;
    }
    return QStringLiteral("%1 (%2, %3).")
        .arg(name, bytes, QString::fromLatin1(core::training::tensorRoleName(t.role)));
}

QString PlanAnalysis::explainNode(const QString &nodeName) const
{
    const auto op = forwardOpOfNode(nodeName);
    if (!op || !m_d->m_graph)
        return {};
    const auto &g = *m_d->m_graph;
    QStringList lines;
    for (TensorId t : g.op(*op).outputs) {
        const auto role = g.tensor(t).role;
        if (role == TensorRole::Activation || role == TensorRole::SavedState)
            lines << explainTensor(t);
    }
    const auto &runs = m_d->m_computeSteps[op->index()];
    if (runs.size() > 1) {
        QStringList at;
        for (size_t i = 1; i < runs.size(); ++i)
            at << QString::number(runs[i]);
        lines << QStringLiteral("Runs %1 times: first at step %2, recomputed at step %3.")
                     .arg(runs.size())
                     .arg(runs.front())
                     .arg(at.join(QStringLiteral(", ")));
    }
    const OpId bw = g.backwardOf(*op);
    if (bw.valid()) {
        const auto &steps = m_d->m_computeSteps[bw.index()];
        lines << QStringLiteral("Its backward %1 runs at step %2.")
                     .arg(qs(g.op(bw).name))
                     .arg(steps.empty() ? -1 : steps.front());
    }
    return lines.join(QLatin1Char('\n'));
}

} // namespace remat::ui
