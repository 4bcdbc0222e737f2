// Revolve (Griewank & Walther, ACM TOMS 2000, "Algorithm 799"): binomial checkpointing of a
// chain of l identical steps with s snapshot slots, on the chain of articulation points.
#include "core/solvers/revolve.h"
#include "core/solvers/chain_support.h"
#include "core/solvers/checkpoint_solvers.h"
#include "core/solvers/plan_builder.h"

#include <algorithm>
#include <limits>

namespace remat::core::solvers {

RevolveTable::RevolveTable(int maxSteps, int maxSnaps) : m_l(maxSteps), m_s(maxSnaps)
{
    const int64_t inf = std::numeric_limits<int64_t>::max() / 4;
    m_t.assign(size_t(m_l + 1) * (m_s + 1), inf);
    m_split.assign(m_t.size(), 0);
    for (int s = 1; s <= m_s; ++s) {
        at(1, s) = 0;
        for (int l = 2; l <= m_l; ++l) {
            if (s == 1) {
                at(l, s) = int64_t(l) * (l - 1) / 2;
                m_split[size_t(l) * (m_s + 1) + s] = l - 1; // advance as far as possible
                continue;
            }
            int64_t best = inf;
            int bestK = 1;
            for (int k = 1; k < l; ++k) {
                const int64_t v = k + at(l - k, s - 1) + at(k, s);
                if (v < best) {
                    best = v;
                    bestK = k;
                }
            }
            at(l, s) = best;
            m_split[size_t(l) * (m_s + 1) + s] = bestK;
        }
    }
}

int64_t RevolveTable::forwardSteps(int l, int s) const { return m_t[size_t(l) * (m_s + 1) + s]; }
int RevolveTable::split(int l, int s) const { return m_split[size_t(l) * (m_s + 1) + s]; }

int64_t revolveBinomialFormula(int64_t l, int64_t s)
{
    auto beta = [](int64_t a, int64_t b) { // C(a + b, a), saturating
        double c = 1;
        for (int64_t i = 1; i <= b; ++i)
            c = c * double(a + i) / double(i);
        return c;
    };
    if (l <= 1)
        return 0;
    int64_t r = 0;
    while (beta(s, r) < double(l))
        ++r;
    return r * l - int64_t(beta(s + 1, r - 1) + 0.5);
}

namespace {

/// The binomial reversal order as an op sequence (explicit stack, no recursion).
std::vector<OpId> revolveSequence(const StageOps &ops, const RevolveTable &table, int snaps)
{
    std::vector<OpId> seq;
    bool lossDone = false;
    struct Task
    {
        int i, j, s;
    };
    std::vector<Task> stack{{0, int(ops.forward.size()), snaps}};
    while (!stack.empty()) {
        const Task t = stack.back();
        stack.pop_back();
        const int l = t.j - t.i;
        if (l <= 0)
            continue;
        if (l == 1) {
            appendForward(ops, t.i, &seq, &lossDone);
            appendBackward(ops, t.i, &seq);
            continue;
        }
        if (t.s <= 1) {
            for (int k = t.j - 1; k >= t.i; --k) {
                for (int a = t.i; a <= k; ++a)
                    appendForward(ops, a, &seq, &lossDone);
                appendBackward(ops, k, &seq);
            }
            continue;
        }
        const int k = table.split(l, t.s);
        for (int a = t.i; a < t.i + k; ++a)
            appendForward(ops, a, &seq, &lossDone);
        // reverse(i+k, j, s-1) first, then reverse(i, i+k, s): pushed in reverse order.
        stack.push_back({t.i, t.i + k, t.s});
        stack.push_back({t.i + k, t.j, t.s - 1});
    }
    return seq;
}

class RevolveSolver final : public Solver
{
public:
    std::string id() const override { return "revolve"; }
    std::string title() const override { return "Revolve (Griewank & Walther 2000), binomial"; }
    std::string description() const override
    {
        return "Binomial checkpointing on the chain of articulation points, treating every stage "
               "as one unit step (the algorithm's model: optimal number of forward recomputations "
               "t(l, s) for l identical steps and s snapshot slots, the input's slot included). "
               "Snapshots are taken and released during backward, so plans are schedules, not "
               "checkpoint sets. min-peak: every s from 1 to the number of stages is simulated "
               "and the lowest true peak returned; min-time: the least recompute whose simulated "
               "peak fits the budget. Pins are not supported.";
    }
    Capabilities capabilities() const override
    {
        Capabilities c;
        c.anyDag = false;
        c.pins = false;
        c.optimalForItsModel = true;
        return c;
    }
    Expected<Plan> searchPlan(const SolveRequest &request) const override
    {
        PlanBuilder pb(id(), request);
        REMAT_RETURN_IF_ERROR(pb.init());
        if (!request.pins.empty())
            return makeError(StatusCode::Unsupported, id() + ": pins are not supported");
        const ChainView view = pb.facts().chainView(request.costs);
        REMAT_RETURN_IF_ERROR(requireChain(view, id()));
        const StageOps ops = stageOps(view, pb.facts());
        const int L = static_cast<int>(view.stageCount());
        const int maxSnaps = std::min(L, 64);
        const RevolveTable table(L, maxSnaps);
        pb.setObjectiveName("forward stage recomputations t(l, s)");
        pb.addNote("chain of " + std::to_string(L) + " stages (articulation points)");
        bool complete = true;
        for (int s = 1; s <= maxSnaps; ++s) {
            if (s > 1 && pb.shouldStop(double(s) / maxSnaps, "snapshot sweep")) {
                complete = false;
                break;
            }
            auto sched = scheduleFromSequence(pb.graph(), revolveSequence(ops, table, s));
            if (!sched)
                return sched.status();
            auto t = pb.offerSchedule(std::move(*sched), double(table.forwardSteps(L, s)));
            if (!t)
                return t.status();
            if (table.forwardSteps(L, s) == 0)
                break; // more slots change nothing
        }
        return pb.finish(SolveStatus::Feasible, complete);
    }
};

} // namespace

std::unique_ptr<Solver> makeRevolveSolver() { return std::make_unique<RevolveSolver>(); }

} // namespace remat::core::solvers
