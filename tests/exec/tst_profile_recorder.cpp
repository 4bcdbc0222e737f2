// ProfileRecorder on real runs of tiny_vit (corpus, CPU backend, corpus feed):
// - store-all, one discarded warm-up and two committed steps: the profile names the model (sha256,
//   batch 2), backend "cpu", 2 timed and 1 warm-up iterations; every op of the training graph is
//   in it once, with 2 samples, a positive time, its type, phase, family and the graph's FLOPs and
//   bytes; no recompute samples; the median step is positive and the overhead below it;
// - the profile written and read back (core/io) gives costs for the same graph that are all
//   "profile" and equal to each op's median times the profile's load factor;
// - chen-sqrtn's plan (which recomputes): the ops it recomputes carry recompute samples (as many
//   per step as the schedule recomputes them), the others none.
#include "core/cost/calibrated.h"
#include "core/exec/profile_recorder.h"
#include "core/io/profile_file.h"
#include "core/solvers/registry.h"

#include "exec/exec_test_util.h"

#include <QtTest>

#include <map>

using namespace remat::core;
using namespace remat::tests;

class TstProfileRecorder : public QObject
{
    Q_OBJECT

private slots:
    void storeAllProfile()
    {
        auto m = loadCorpusModel("tiny_vit");
        REMAT_REQUIRE_CORPUS_MODEL(m);
        const training::TrainingGraph &tg = (*m)->training;
        auto backend = exec::makeCpuBackend();
        exec::Executor ex(*backend, tg, (*m)->graph);
        exec::ExecInputs in;
        in.feed = (*m)->feed;
        QVERIFY(ex.prepare(in).isOk());
        exec::ProfileRecorder rec(tg);
        const schedule::Schedule s = schedule::storeAllSchedule(tg);
        for (int i = 0; i < 3; ++i) {
            auto r = ex.run(s, {.observer = &rec, .stop = {}, .downloadGradients = false});
            QVERIFY2(r.hasValue(), r.hasValue() ? "" : r.status().toString().c_str());
            i == 0 ? rec.discardIteration() : rec.commitIteration(r->stepSeconds);
        }
        const cost::Profile p = rec.profile({"cpu", backend->description(), "store-all"});
        QCOMPARE(p.modelSha256, tg.info().modelSha256);
        QVERIFY(!p.modelSha256.empty());
        QCOMPARE(p.batch, int64_t(2));
        QCOMPARE(p.backend, std::string("cpu"));
        QCOMPARE(p.iterations, 2);
        QCOMPARE(p.warmupIterations, 1);
        QVERIFY(p.stepSeconds > 0);
        QVERIFY(p.overheadSeconds >= 0 && p.overheadSeconds < p.stepSeconds);
        QCOMPARE(p.ops.size(), tg.opCount());
        for (size_t i = 0; i < p.ops.size(); ++i) {
            const cost::ProfiledOp &o = p.ops[i];
            const training::Op &op = tg.ops()[i];
            QCOMPARE(o.name, op.name);
            QCOMPARE(o.type, op.type);
            QCOMPARE(o.phase, std::string(cost::phaseName(op.phase)));
            QCOMPARE(o.flops, op.flops);
            QCOMPARE(o.bytes, double(op.bytesAccessed));
            QCOMPARE(o.samples, 2);
            QCOMPARE(o.recomputeSamples, 0);
            QVERIFY2(o.seconds > 0, o.name.c_str());
        }
        QCOMPARE(p.ops[0].family.empty(), false);

        auto back = io::parseProfile(io::writeProfile(p), "p.json");
        QVERIFY(back.hasValue());
        cost::ProfileCostsReport rep;
        auto c = cost::profileCosts(*back, tg, cost::Roofline{}, "p.json", &rep);
        QVERIFY(c.hasValue());
        QCOMPARE(c->timeSource, cost::TimeSource::Profile);
        QCOMPARE(rep.measured, tg.opCount());
        // The load factor spreads the step's time outside the op medians over every op.
        QVERIFY(p.computeSeconds > 0);
        QVERIFY(rep.loadFactor > 0);
        for (size_t i = 0; i < p.ops.size(); ++i)
            QCOMPARE(c->opSeconds[i], p.ops[i].seconds * rep.loadFactor);
    }

    void recomputesAreTimedApart()
    {
        auto m = loadCorpusModel("tiny_vit");
        REMAT_REQUIRE_CORPUS_MODEL(m);
        const training::TrainingGraph &tg = (*m)->training;
        const cost::Costs costs = cost::rooflineCosts(tg);
        solvers::SolveRequest req;
        req.graph = &tg;
        req.costs = &costs;
        req.objective = solvers::Objective::MinPeak;
        const solvers::SolverRegistry reg = solvers::makeRegistry();
        auto plan = reg.find("chen-sqrtn")->solve(req);
        QVERIFY(plan.hasValue());
        std::map<size_t, int> recomputes; // per op: recomputes in one step
        std::vector<char> seen(tg.opCount(), 0);
        for (const schedule::Step &st : plan->schedule.steps)
            if (st.kind == schedule::StepKind::Compute) {
                if (seen[st.op().index()])
                    ++recomputes[st.op().index()];
                seen[st.op().index()] = 1;
            }
        if (recomputes.empty())
            QSKIP("chen-sqrtn recomputes nothing on tiny_vit");
        auto backend = exec::makeCpuBackend();
        exec::Executor ex(*backend, tg, (*m)->graph);
        QVERIFY(ex.prepare({}).isOk());
        exec::ProfileRecorder rec(tg);
        auto r = ex.run(plan->schedule, {.observer = &rec, .stop = {}, .downloadGradients = false});
        QVERIFY(r.hasValue());
        rec.commitIteration(r->stepSeconds);
        const cost::Profile p = rec.profile({"cpu", "", "chen-sqrtn"});
        QCOMPARE(p.ops.size(), tg.opCount());
        for (size_t i = 0; i < p.ops.size(); ++i) {
            const auto it = recomputes.find(i);
            QCOMPARE(p.ops[i].recomputeSamples, it == recomputes.end() ? 0 : it->second);
            QCOMPARE(p.ops[i].samples, 1);
        }
    }
};

QTEST_APPLESS_MAIN(TstProfileRecorder)
#include "tst_profile_recorder.moc"
