#include "core/solvers/plan_builder.h"

#include "core/util/bytes.h"

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
                             std::to_string(m_request.costs->opSeconds.size()) + " ops, the graph has " +
                             std::to_string(m_request.graph->opCount()));
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
