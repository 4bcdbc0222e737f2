// Pins, cancellation and objectives across every solver, on random DAGs and chains.
// Expected: a keep-pinned activation is computed once and never freed before its last backward
// use; a recompute-pinned one is not resident when backward begins; solvers that cannot take
// pins (or offload pins) refuse them with Unsupported; a cancelled solve never crashes and
// reports Cancelled; min-time plans fit the budget or say infeasible with the smallest peak.
// A solver that cannot take pins answers with an infeasible plan whose note names the pin
// ("infeasible: cannot honour keep pin on a3"), never an error that drops its row; every
// checkpoint solver takes an offload pin as "kept, then streamed": the pinned tensor is computed
// once, offloaded after its last forward read and prefetched before its first backward read.
#include "random_graphs.h"

#include "core/sim/simulator.h"
#include "core/solvers/lowering.h"
#include "core/solvers/registry.h"

#include <QtTest>

using namespace remat::core;
using namespace remat::core::solvers;

namespace {

struct Residency
{
    int computes = 0;
    bool freedEarly = false;
    bool residentAtBackward = false;
};

Residency residency(const schedule::Schedule &s, const training::TrainingGraph &g, TensorId t)
{
    Residency r;
    const OpId producer = g.tensor(t).producer;
    OpId lastBackward;
    for (OpId c : g.tensor(t).consumers)
        if (g.op(c).phase == training::Phase::Backward)
            lastBackward = c;
    bool resident = false, lastDone = false;
    for (const schedule::Step &st : s.steps) {
        if (st.kind == schedule::StepKind::Compute) {
            if (st.op() == producer) {
                ++r.computes;
                resident = true;
            }
            if (st.op() == lastBackward)
                lastDone = true;
        } else if (st.kind == schedule::StepKind::Free && st.tensor() == t) {
            resident = false;
            if (!lastDone)
                r.freedEarly = true;
        } else if (st.kind == schedule::StepKind::Phase &&
                   st.mark() == schedule::PhaseMark::BackwardBegin) {
            r.residentAtBackward = resident;
        }
    }
    return r;
}

struct Streamed
{
    int computes = 0;
    bool offloaded = false, prefetched = false;
};

Streamed streamed(const schedule::Schedule &s, const training::TrainingGraph &g, TensorId t)
{
    Streamed r;
    const OpId producer = g.tensor(t).producer;
    for (const schedule::Step &st : s.steps) {
        if (st.kind == schedule::StepKind::Compute && st.op() == producer)
            ++r.computes;
        if (st.kind == schedule::StepKind::Offload && st.tensor() == t)
            r.offloaded = true;
        if (st.kind == schedule::StepKind::Prefetch && st.tensor() == t && r.offloaded)
            r.prefetched = true;
    }
    return r;
}

} // namespace

class TstPins : public QObject
{
    Q_OBJECT
private slots:
    void pinsHonoured()
    {
        const auto registry = makeRegistry();
        for (uint32_t seed = 1; seed <= 40; ++seed) {
            auto rg = remat::tests::randomTrainingGraph(
                seed, {.forwardOps = 8, .dag = seed % 2 == 0, .savedState = true});
            auto facts = GraphFacts::build(rg.graph);
            QVERIFY(facts.hasValue());
            const auto &needed = facts->backwardNeeded();
            if (needed.size() < 2)
                continue;
            const TensorId keep = needed[seed % needed.size()];
            TensorId recompute = needed[(seed + 1) % needed.size()];
            if (rg.graph.tensor(recompute).producer == rg.graph.tensor(keep).producer)
                continue;
            const std::vector<Pin> pins{{keep, PinKind::Keep}, {recompute, PinKind::Recompute}};
            for (const auto &s : registry.solvers()) {
                if (!remat::tests::isCheckpointSolver(s->id()))
                    continue;
                SolveRequest r;
                r.graph = &rg.graph;
                r.costs = &rg.costs;
                r.pins = pins;
                auto p = s->solve(r);
                const std::string what = s->id() + " seed " + std::to_string(seed);
                if (!s->capabilities().pins) {
                    QVERIFY2(p.hasValue() && p->status == SolveStatus::Infeasible &&
                                 p->note.find("infeasible: cannot honour keep pin on " +
                                              rg.graph.tensor(keep).name) != std::string::npos,
                             (what + ": " + (p ? p->note : p.status().toString())).c_str());
                    continue;
                }
                QVERIFY2(p.hasValue(), (what + ": " + p.status().toString()).c_str());
                const Residency k = residency(p->schedule, rg.graph, keep);
                QVERIFY2(k.computes == 1 && !k.freedEarly, (what + ": keep pin broken").c_str());
                const Residency rc = residency(p->schedule, rg.graph, recompute);
                QVERIFY2(!rc.residentAtBackward, (what + ": recompute pin broken").c_str());
                // Offload pins: solved as kept, then streamed over the copy lane.
                if (!s->capabilities().offloadPins) {
                    SolveRequest o = r;
                    o.pins = {{keep, PinKind::Offload}};
                    auto q = s->solve(o);
                    QVERIFY2(q.hasValue(), (what + ": " + q.status().toString()).c_str());
                    const Streamed st = streamed(q->schedule, rg.graph, keep);
                    QVERIFY2(st.computes == 1 && st.offloaded && st.prefetched,
                             (what + ": offload pin not streamed: " + q->note).c_str());
                    QVERIFY2(q->note.find("offload pins") != std::string::npos, q->note.c_str());
                }
            }
        }
    }

    void cancelledAndMinTime()
    {
        const auto registry = makeRegistry();
        auto rg = remat::tests::randomTrainingGraph(11, {.forwardOps = 10, .dag = true});
        StopSource stop;
        stop.requestStop();
        for (const auto &s : registry.solvers()) {
            if (!remat::tests::isCheckpointSolver(s->id()))
                continue;
            SolveRequest r;
            r.graph = &rg.graph;
            r.costs = &rg.costs;
            r.stop = stop.token();
            auto p = s->solve(r);
            if (p.hasValue())
                QVERIFY2(p->status == SolveStatus::Cancelled ||
                             p->status == SolveStatus::Feasible ||
                             p->status == SolveStatus::Optimal,
                         s->id().c_str());
            else
                QCOMPARE(p.status().code(), StatusCode::Cancelled);
            // A budget below anything reachable: infeasible, with the smallest peak in the note.
            SolveRequest t;
            t.graph = &rg.graph;
            t.costs = &rg.costs;
            t.objective = Objective::MinTime;
            t.budgetBytes = 1;
            auto q = s->solve(t);
            QVERIFY2(q.hasValue(), (s->id() + ": " + q.status().toString()).c_str());
            QCOMPARE(q->status, SolveStatus::Infeasible);
            QVERIFY2(q->note.find("smallest peak reached") != std::string::npos, q->note.c_str());
        }
    }
};

QTEST_GUILESS_MAIN(TstPins)
#include "tst_pins.moc"
