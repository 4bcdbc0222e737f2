#include "core/solvers/plan_builder.h"

#include "core/util/bytes.h"

#include <algorithm>
#include <numeric>

namespace remat::core::solvers {

PlanBuilder::PlanBuilder(std::string solverId, const SolveRequest &request)
    : m_solverId(std::move(solverId)), m_request(request),
      m_start(std::chrono::steady_clock::now()), m_lastProgress(m_start)
{
}

Status PlanBuilder::init()
{
    if (!m_request.graph)
        return makeError(StatusCode::InvalidArgument, m_solverId + ": no training graph");
    if (!m_request.costs)
        return makeError(StatusCode::InvalidArgument, m_solverId + ": no costs");
    if (m_request.costs->opSeconds.size() != m_request.graph->opCount())
        return makeError(StatusCode::InvalidArgument,
                         m_solverId + ": costs cover " +
                             std::to_string(m_request.costs->opSeconds.size()) +
                             " ops, the graph has " + std::to_string(m_request.graph->opCount()));
    if (m_request.objective == Objective::MinTime && m_request.budgetBytes <= 0)
        return makeError(StatusCode::InvalidArgument,
                         m_solverId + ": min-time needs a positive budget");
    REMAT_ASSIGN_OR_RETURN(GraphFacts f, GraphFacts::build(*m_request.graph));
    m_facts.emplace(std::move(f));
    return Status::ok();
}

double PlanBuilder::elapsed() const
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
}

bool PlanBuilder::shouldStop(double fraction, const std::string &message)
{
    if (m_request.progress) {
        const auto now = std::chrono::steady_clock::now();
        if (std::chrono::duration<double>(now - m_lastProgress).count() > 0.1) {
            m_lastProgress = now;
            SolveProgress p;
            p.fraction = fraction;
            p.elapsedSeconds = elapsed();
            p.message = message;
            if (m_best)
                p.incumbent = m_request.objective == Objective::MinPeak
                                  ? double(m_best->timeline.peakBytes)
                                  : m_best->timeline.recomputeSeconds;
            m_request.progress(p);
        }
    }
    return cancelled() || timedOut();
}

void PlanBuilder::addNote(const std::string &note)
{
    if (!m_note.empty())
        m_note += "; ";
    m_note += note;
}

Expected<sim::Timeline> PlanBuilder::simulate(const schedule::Schedule &schedule) const
{
    sim::SimOptions o;
    o.recordPoints = false;
    o.validate = true;
    return sim::simulate(schedule, *m_request.graph, *m_request.costs, o);
}

bool PlanBuilder::better(const sim::Timeline &a, const sim::Timeline &b) const
{
    const double ta = a.computeSeconds + a.recomputeSeconds;
    const double tb = b.computeSeconds + b.recomputeSeconds;
    if (m_request.objective == Objective::MinPeak) {
        if (a.peakBytes != b.peakBytes)
            return a.peakBytes < b.peakBytes;
        return ta < tb;
    }
    if (ta != tb)
        return ta < tb;
    return a.peakBytes < b.peakBytes;
}

Expected<sim::Timeline> PlanBuilder::offer(Candidate c)
{
    ++m_offers;
    REMAT_ASSIGN_OR_RETURN(sim::Timeline t, simulate(c.schedule));
    c.timeline = t;
    if (m_smallestPeak < 0 || t.peakBytes < m_smallestPeak) {
        m_smallestPeak = t.peakBytes;
        if (m_request.objective == Objective::MinTime)
            m_smallest = c;
    } else if (t.peakBytes == m_smallestPeak && m_smallest &&
               t.computeSeconds + t.recomputeSeconds <
                   m_smallest->timeline.computeSeconds + m_smallest->timeline.recomputeSeconds) {
        m_smallest = c; // the infeasible answer: smallest peak, then least time
    }
    const bool admissible =
        m_request.objective == Objective::MinPeak || t.peakBytes <= m_request.budgetBytes;
    if (admissible && (!m_best || better(t, m_best->timeline)))
        m_best = std::move(c);
    return t;
}

Expected<sim::Timeline> PlanBuilder::offerCheckpoints(const std::vector<TensorId> &keep,
                                                      double solverObjective)
{
    REMAT_ASSIGN_OR_RETURN(std::vector<char> mask, keepMask(*m_facts, keep, m_request.pins));
    Candidate c;
    c.checkpoints = maskToList(mask);
    REMAT_ASSIGN_OR_RETURN(c.schedule, lowerKeepMask(*m_facts, std::move(mask)));
    c.solverObjective = solverObjective;
    return offer(std::move(c));
}

namespace {

/// compute + recompute seconds of a schedule, summed exactly as the simulator sums them.
double scheduleSeconds(const schedule::Schedule &s, const cost::Costs &costs, size_t opCount)
{
    std::vector<char> ran(opCount, 0);
    double first = 0, again = 0;
    for (const schedule::Step &st : s.steps) {
        if (st.kind != schedule::StepKind::Compute)
            continue;
        const double t = costs.opSeconds[static_cast<size_t>(st.target)];
        if (ran[st.target])
            again += t;
        else
            first += t;
        ran[st.target] = 1;
    }
    return first + again;
}

} // namespace

Expected<bool> PlanBuilder::offerCheckpointSets(const std::vector<std::vector<TensorId>> &sets,
                                                const std::vector<double> &solverObjectives)
{
    if (sets.size() != solverObjectives.size())
        return makeError(StatusCode::InvalidArgument, "offerCheckpointSets: sizes differ");
    if (m_request.objective == Objective::MinPeak) {
        for (size_t i = 0; i < sets.size(); ++i) {
            if (i > 0 && shouldStop(double(i) / sets.size(), "simulating candidates"))
                return false;
            REMAT_RETURN_IF_ERROR(offerCheckpoints(sets[i], solverObjectives[i]).status());
        }
        return true;
    }
    // Pass 1: times only (schedules are not kept: holding hundreds costs more in fresh memory
    // than lowering the few that get simulated twice).
    std::vector<double> seconds;
    seconds.reserve(sets.size());
    for (size_t i = 0; i < sets.size(); ++i) {
        if (i > 0 && shouldStop(0.5 * i / sets.size(), "lowering candidates"))
            return false;
        REMAT_ASSIGN_OR_RETURN(std::vector<char> mask, keepMask(*m_facts, sets[i], m_request.pins));
        REMAT_ASSIGN_OR_RETURN(schedule::Schedule sched, lowerKeepMask(*m_facts, std::move(mask)));
        seconds.push_back(scheduleSeconds(sched, *m_request.costs, m_request.graph->opCount()));
    }
    // Pass 2: cheapest first, in the callers' order among equal times (so ties resolve as when
    // every set is offered in order).
    std::vector<size_t> order(sets.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return seconds[a] < seconds[b]; });
    for (size_t k = 0; k < order.size(); ++k) {
        const size_t i = order[k];
        if (m_best) {
            const double best = m_best->timeline.computeSeconds + m_best->timeline.recomputeSeconds;
            // Strictly slower than the best under budget: it and every later one cannot win.
            if (seconds[i] > best + 1e-12 * std::max(1.0, best))
                break;
        }
        if (k > 0 && shouldStop(0.5 + 0.5 * k / order.size(), "simulating candidates"))
            return false;
        REMAT_RETURN_IF_ERROR(offerCheckpoints(sets[i], solverObjectives[i]).status());
    }
    return true;
}

Expected<sim::Timeline> PlanBuilder::offerSchedule(schedule::Schedule schedule,
                                                   double solverObjective,
                                                   std::vector<TensorId> checkpoints)
{
    Candidate c;
    c.schedule = std::move(schedule);
    c.checkpoints = std::move(checkpoints);
    c.solverObjective = solverObjective;
    return offer(std::move(c));
}

Expected<Plan> PlanBuilder::finish(SolveStatus status, bool searchComplete)
{
    if (!searchComplete) {
        if (cancelled())
            status = SolveStatus::Cancelled;
        else
            status = SolveStatus::TimedOut;
    }
    Candidate *chosen = m_best ? &*m_best : nullptr;
    if (!chosen) {
        if (m_request.objective == Objective::MinTime && m_smallest) {
            chosen = &*m_smallest;
            if (searchComplete)
                status = SolveStatus::Infeasible;
            addNote("infeasible: the smallest peak reached is " + formatBytes(m_smallestPeak) +
                    " (" + std::to_string(m_smallestPeak) + " bytes), over the budget of " +
                    formatBytes(m_request.budgetBytes));
        } else if (cancelled()) {
            return makeError(StatusCode::Cancelled, m_solverId + ": cancelled before any plan");
        } else {
            return makeError(StatusCode::DeadlineExceeded,
                             m_solverId + ": time limit reached before any plan");
        }
    }
    Plan plan;
    plan.solver = m_solverId;
    plan.status = status;
    plan.objective = m_request.objective;
    plan.budgetBytes = m_request.budgetBytes;
    plan.schedule = chosen->schedule;
    plan.checkpoints = chosen->checkpoints;
    plan.pins = m_request.pins;
    plan.solverObjective = chosen->solverObjective;
    plan.solverObjectiveName = m_objectiveName;
    plan.bound = m_bound;
    plan.settings = m_request.settings;
    for (const auto &[k, v] : m_settings)
        plan.settings[k] = v;
    plan.note = m_note;
    // The final figures come from a validating simulation of exactly the returned schedule.
    sim::SimOptions o;
    o.recordPoints = false;
    o.validate = true;
    REMAT_ASSIGN_OR_RETURN(plan.timeline,
                           sim::simulate(plan.schedule, *m_request.graph, *m_request.costs, o));
    plan.solveSeconds = elapsed();
    return plan;
}

std::string budgetText(int64_t bytes) { return formatBytes(bytes); }

} // namespace remat::core::solvers
