#pragma once
// What every solver does around its own search: check the request, simulate candidate plans,
// keep the best one for the objective, watch the stop token and the time limit, and fill a Plan
// with the simulator's figures.
//   PlanBuilder pb("chen-greedy", request);  REMAT_RETURN_IF_ERROR(pb.init());
//   pb.offerCheckpoints(keep, proxyValue);    // lowered, simulated, kept if best so far
//   return pb.finish(SolveStatus::Feasible);  // Infeasible with the smallest peak reached

#include "core/sim/simulator.h"
#include "core/solvers/lowering.h"
#include "core/solvers/solver.h"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace remat::core::solvers {

class PlanBuilder
{
public:
    PlanBuilder(std::string solverId, const SolveRequest &request);

    /// Checks the request (graph, costs, budget) and builds the graph facts.
    Status init();
    const GraphFacts &facts() const { return *m_facts; }
    const SolveRequest &request() const { return m_request; }
    const training::TrainingGraph &graph() const { return *m_request.graph; }

    /// Lowers a checkpoint set (pins applied), simulates it, and keeps it when it is the best
    /// so far for the objective. Returns the simulated timeline (or the lowering's error).
    Expected<sim::Timeline> offerCheckpoints(const std::vector<TensorId> &keep,
                                             double solverObjective);
    /// Many checkpoint sets at once. MinPeak: each is offered as above. MinTime: each is lowered
    /// and its time read off the schedule (the simulator's compute + recompute sums), then they
    /// are simulated cheapest first, stopping once the rest are slower than the best plan under
    /// budget (the same answer as offering all, without simulating sets that cannot win).
    /// False when stopped by the stop token or the time limit.
    Expected<bool> offerCheckpointSets(const std::vector<std::vector<TensorId>> &sets,
                                       const std::vector<double> &solverObjectives);
    /// Same for a schedule the solver built itself (Revolve, Rotor).
    Expected<sim::Timeline> offerSchedule(schedule::Schedule schedule, double solverObjective,
                                          std::vector<TensorId> checkpoints = {});
    /// Simulation only, no bookkeeping.
    Expected<sim::Timeline> simulate(const schedule::Schedule &schedule) const;

    bool hasPlan() const { return m_best.has_value(); }
    const sim::Timeline *bestTimeline() const { return m_best ? &m_best->timeline : nullptr; }
    /// Smallest simulated peak among everything offered (-1: nothing yet).
    int64_t smallestPeak() const { return m_smallestPeak; }

    /// True when the stop token fired or the time limit passed; reports progress at most
    /// ten times a second.
    bool shouldStop(double fraction = -1, const std::string &message = {});
    bool cancelled() const { return m_request.stop.stopRequested(); }
    bool timedOut() const { return elapsed() > m_request.timeLimitSeconds; }
    double elapsed() const;

    void setObjectiveName(std::string name) { m_objectiveName = std::move(name); }
    void addNote(const std::string &note);
    void setSetting(const std::string &key, const std::string &value) { m_settings[key] = value; }
    void setBound(double bound) { m_bound = bound; }

    /// The final Plan: the best candidate re-validated and re-simulated. `searchComplete`
    /// says whether the solver finished its search (Optimal/Feasible as `status`), else the
    /// status becomes TimedOut or Cancelled. MinTime with no candidate under budget gives
    /// Infeasible, the plan of smallest peak, and a note with that peak.
    Expected<Plan> finish(SolveStatus status, bool searchComplete = true);

private:
    struct Candidate
    {
        schedule::Schedule schedule;
        std::vector<TensorId> checkpoints;
        sim::Timeline timeline;
        double solverObjective = 0;
    };
    bool better(const sim::Timeline &a, const sim::Timeline &b) const;
    Expected<sim::Timeline> offer(Candidate c);

    std::string m_solverId;
    const SolveRequest &m_request;
    std::optional<GraphFacts> m_facts;
    std::optional<Candidate> m_best;     ///< best for the objective (MinTime: under budget)
    std::optional<Candidate> m_smallest; ///< smallest peak, for the infeasible answer
    int64_t m_smallestPeak = -1;
    std::chrono::steady_clock::time_point m_start;
    std::chrono::steady_clock::time_point m_lastProgress;
    std::string m_objectiveName;
    std::string m_note;
    std::map<std::string, std::string> m_settings;
    double m_bound = -1;
    size_t m_offers = 0;
};

/// The request's objective spelled for descriptions of wrapped searches.
std::string budgetText(int64_t bytes);

} // namespace remat::core::solvers
