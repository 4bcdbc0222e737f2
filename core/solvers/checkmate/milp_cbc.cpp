// checkmate-milp: Checkmate's MILP solved by COIN-OR CBC (through CbcMain1, so CBC's own
// preprocessing, cuts and heuristics run), warm-started from a greedy plan, with live progress
// and cancellation through a CBC event handler.
#include "core/solvers/checkmate/bound.h"
#include "core/solvers/checkmate/checkmate.h"
#include "core/solvers/checkmate/frontier.h"
#include "core/solvers/checkmate/model.h"
#include "core/solvers/checkmate/osi_cbc.h"
#include "core/solvers/checkmate/problem.h"
#include "core/solvers/checkmate/warm.h"

#include <coin/CbcEventHandler.hpp>
#include <coin/CbcHeuristic.hpp>
#include <coin/CbcModel.hpp>
#include <coin/CbcSolver.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <string>

namespace remat::core::solvers {

namespace {

using Clock = std::chrono::steady_clock;

// CglPreProcess gains nothing measurable on these models (fcn_8_vgg) and hits the same
// ClpPresolve crash as above; CBC's heuristics only repeat what the warm start (the frontier
// relaxation's plan, usually within a few percent) already gives.
const char *const kDefaultCbcOptions = "-preprocess off -heuristicsOnOff off";

/// What the event handler (and its clones inside CbcMain1) share with the solve call.
struct CbcWatch
{
    const SolveRequest *request = nullptr;
    Clock::time_point start;
    double deadlineSeconds = 0;
    double objectiveScale = 1;
    Clock::time_point lastReport;
    bool stopped = false;
    bool cancelled = false;
};

class ProgressHandler : public CbcEventHandler
{
public:
    ProgressHandler(std::shared_ptr<CbcWatch> watch) : m_watch(std::move(watch)) {}
    ProgressHandler(const ProgressHandler &other) = default;
    CbcEventHandler *clone() const override { return new ProgressHandler(*this); }

    CbcAction event(CbcEvent whichEvent) override
    {
        CbcWatch &w = *m_watch;
        const auto now = Clock::now();
        const double elapsed = std::chrono::duration<double>(now - w.start).count();
        if (w.request->stop.stopRequested()) {
            w.stopped = w.cancelled = true;
            return stop;
        }
        if (elapsed > w.deadlineSeconds) {
            w.stopped = true;
            return stop;
        }
        if (w.request->progress && model_ &&
            (whichEvent == solution || whichEvent == heuristicSolution ||
             std::chrono::duration<double>(now - w.lastReport).count() > 0.25)) {
            w.lastReport = now;
            SolveProgress pr;
            pr.elapsedSeconds = elapsed;
            if (model_->bestSolution())
                pr.incumbent = model_->getObjValue() * w.objectiveScale;
            const double bound = model_->getBestPossibleObjValue();
            if (std::isfinite(bound) && std::abs(bound) < 1e40)
                pr.bound = std::max(0.0, bound * w.objectiveScale);
            pr.message = fmt::format("CBC: {} nodes", model_->getNodeCount());
            w.request->progress(pr);
        }
        return noAction;
    }

private:
    std::shared_ptr<CbcWatch> m_watch;
};

struct CbcOutcome
{
    bool hasSolution = false;
    bool optimal = false;
    bool infeasible = false;
    bool stopped = false;
    bool cancelled = false;
    bool cutoffUsed = false; ///< only points better than the start were searched for
    double rootSeconds = 0;  ///< loading and the root LP
    std::vector<double> x;
    double objective = 0; ///< scaled back
    double bound = -1;    ///< scaled back, -1 unknown
};

CbcOutcome runCbc(const checkmate::LinearModel &m, const std::vector<double> *start,
                  const SolveRequest &request, double seconds, int threads, int logLevel,
                  Clock::time_point begin, double scale, double directColumns,
                  const std::string &extra, bool useCutoff)
{
    CbcOutcome out;
    const auto t0 = Clock::now();
    const bool direct = static_cast<double>(m.columns()) > directColumns;
    OsiClpSolverInterface si;
    // Column names only serve CBC's MIP start (by name).
    checkmate::loadModel(si, m, start != nullptr && !(useCutoff && !direct));
    si.messageHandler()->setLogLevel(0);
    checkmate::watchStop(si, request.stop);
    // The root LP of a large model can take far longer than the limit: Clp stops on its own
    // (wall clock) deadline, which CBC's clones of the solver inherit.
    si.getModelPtr()->setMaximumWallSeconds(std::max(0.05, seconds));
    // The root LP first, without Clp's presolve: CBC 2.10 dereferences a null pointer in
    // ClpPresolve when presolve meets an infeasible or time-limited model (tst_checkmate's
    // near-minimum budgets, resnet18 b8 --compare). An infeasible root proves the MILP
    // infeasible; an unfinished one leaves the caller its warm start and frontier bound.
    si.setHintParam(OsiDoPresolveInInitial, false, OsiHintDo);
    si.setHintParam(OsiDoPresolveInResolve, false, OsiHintDo);
    si.setHintParam(OsiDoDualInInitial, true, OsiHintTry);
    si.initialSolve();
    if (si.isProvenPrimalInfeasible() || si.isProvenDualInfeasible()) {
        out.infeasible = si.isProvenPrimalInfeasible();
        return out;
    }
    if (!si.isProvenOptimal()) {
        out.stopped = true;
        out.cancelled = request.stop.stopRequested();
        return out;
    }
    out.bound = std::max(0.0, si.getObjValue() * scale);
    out.rootSeconds = std::chrono::duration<double>(Clock::now() - t0).count();
    // The limit covers the root LP too (tiny_vit's min-peak model: 7 s of root LP, which CBC's
    // own limit used to add on top). CBC reads its clock only between nodes and cut passes,
    // each about a root LP's work or more (resnet18 b8, min-peak: 6 s root LP, then 17 s of
    // branch and bound under a 7.5 s limit): where the root LP alone takes a tenth of the
    // limit, branch and bound would only overrun it, so the caller keeps its warm start.
    const double cbcSeconds = seconds - 3 * out.rootSeconds;
    if (cbcSeconds < 0.05 || out.rootSeconds > 0.1 * seconds) {
        out.stopped = true;
        out.cancelled = request.stop.stopRequested();
        return out;
    }
    // CBC keeps its own time limit; a Clp deadline inside its node LPs would make CBC read
    // stopped LPs as pruned nodes (bogus proofs).
    si.getModelPtr()->setMaximumWallSeconds(-1);
    CbcModel model(si);
    CbcSolverUsefulData data;
    data.noPrinting_ = logLevel == 0;
    data.useSignalHandler_ = false;
    CbcMain0(model, data);
    auto watch = std::make_shared<CbcWatch>();
    watch->request = &request;
    watch->start = begin;
    watch->deadlineSeconds =
        std::chrono::duration<double>(Clock::now() - begin).count() + cbcSeconds;
    watch->objectiveScale = scale;
    watch->lastReport = Clock::now();
    ProgressHandler handler(watch);
    model.passInEventHandler(&handler);
    if (!logLevel)
        model.messageHandler()->setLogLevel(0);
    std::string cutoffText;
    if (start && useCutoff && !direct) {
        // Only strictly better points are searched for: CBC skips its MIP-start repair (about
        // a second of LP work on fcn_8_vgg), and "no solution" then proves the start optimal.
        double obj = 0;
        for (size_t c = 0; c < m.columns(); ++c)
            obj += m.objective[c] * (*start)[c];
        cutoffText = fmt::format("{:.17g}", obj * (1 + 1e-9) + 1e-9);
        out.cutoffUsed = true;
    } else if (start) {
        std::vector<std::string> names;
        std::vector<const char *> cnames;
        std::vector<double> values;
        for (size_t c = 0; c < m.columns(); ++c)
            if (m.integer[c]) {
                cnames.push_back(m.names[c].c_str());
                values.push_back((*start)[c]);
            }
        model.setMIPStart(static_cast<int>(cnames.size()), cnames.data(), values.data());
    }
    if (direct) {
        // Large models: CBC's branch and bound straight away, without CbcMain1's preprocessing
        // and root cut loops, which ignore the time limit on models this size.
        model.setMaximumSeconds(cbcSeconds);
        model.solver()->messageHandler()->setLogLevel(logLevel);
        model.setUseElapsedTime(true);
        if (threads > 1)
            model.setNumberThreads(threads);
        CbcRounding rounding(model);
        model.addHeuristic(&rounding);
        if (start) {
            double obj = 0;
            for (size_t c = 0; c < m.columns(); ++c)
                obj += m.objective[c] * (*start)[c];
            model.setBestSolution(start->data(), static_cast<int>(m.columns()), obj, true);
        }
        model.initialSolve();
        model.branchAndBound();
    } else {
        checkmate::runCbcMain(model, data, cbcSeconds, threads, logLevel,
                              cutoffText.empty() ? extra : extra + " -cutoff " + cutoffText);
    }
    // Only a finished search (status 0) proves anything.
    // A cancel may stop node LPs (Clp's stop handler) before CBC notices: nothing is proven.
    out.stopped = watch->stopped || model.isSecondsLimitReached() || model.status() != 0 ||
                  request.stop.stopRequested();
    out.cancelled = watch->cancelled || request.stop.stopRequested();
    out.infeasible = model.isProvenInfeasible() && !model.bestSolution();
    if (model.bestSolution() && model.getNumCols() == static_cast<int>(m.columns())) {
        out.hasSolution = true;
        out.x.assign(model.bestSolution(), model.bestSolution() + m.columns());
        out.objective = model.getObjValue() * scale;
    }
    out.optimal = out.hasSolution && model.isProvenOptimal() && !out.stopped;
    const double bound = model.getBestPossibleObjValue();
    if (out.optimal)
        out.bound = out.objective;
    else if (std::isfinite(bound) && std::abs(bound) < 1e40)
        out.bound = std::max(out.bound, bound * scale); // never below the root LP
    return out;
}

/// checkmate-milp's settings (checkmate.h lists them), read from the request once. A number that
/// does not parse leaves its default (as checkmate::settingNumber reads it).
struct MilpSettings
{
    int threads = 1;  ///< "threads": CBC threads
    int logLevel = 0; ///< "log": CBC log level
    /// "max-columns": above this CBC's root LP alone outlasts a minute on 2 cores (ResNet50: 287k
    /// columns, the 250-node random graph: 192k); the heuristics and the frontier bound answer.
    double maxColumns = 150000;
    bool warmStart = true;               ///< "warm-start" other than "none"
    bool frontierPlans = true;           ///< "frontier-plans" other than "off"
    bool frontierMilp = true;            ///< "frontier-milp" other than "off"
    double frontierMilpColumns = 200000; ///< "frontier-milp-columns"
    /// "cut-bound" other than "off": where the frontier MILP is too large, the same relaxation at
    /// a few first runs (checkmate/frontier.h, searchCutBound)
    bool cutBound = true;
    bool evictionSearch = true; ///< "eviction-search" other than "off"
    /// "eviction-search-seconds"; unset: a share of the time limit (see localSearch).
    std::optional<double> evictionSearchSeconds;
    std::string frontierLp = "dual"; ///< "frontier-lp"
    std::string frontierCbc;         ///< "frontier-cbc": extra CBC options for the frontier MILP
    /// "direct-columns": CbcMain1 (presolve, root cuts) crashes in ClpPresolve when the time limit
    /// stops a mid-size model (resnet18 b8, ~20k columns, CBC 2.10): above this size plain branch
    /// and bound, which keeps the limit.
    double directColumns = 12000;
    std::string cbcOptions = kDefaultCbcOptions; ///< "cbc"
    bool incumbentCutoff = true;                 ///< "incumbent" is "cutoff" (else CBC's MIP start)
    /// "anneal-seconds"; unset: a share of the time limit (see anneal); 0: off.
    std::optional<double> annealSeconds;

    /// A setting's number, unset when absent or when it does not parse (as settingNumber
    /// leaves the default).
    static std::optional<double> optionalNumber(const SolveRequest &request, const std::string &key)
    {
        const auto it = request.settings.find(key);
        if (it == request.settings.end())
            return std::nullopt;
        try {
            return std::stod(it->second);
        } catch (...) {
            return std::nullopt;
        }
    }

    static MilpSettings parse(const SolveRequest &request)
    {
        using checkmate::settingNumber;
        using checkmate::settingText;
        MilpSettings s;
        s.threads = static_cast<int>(settingNumber(request, "threads", s.threads));
        s.logLevel = static_cast<int>(settingNumber(request, "log", s.logLevel));
        s.maxColumns = settingNumber(request, "max-columns", s.maxColumns);
        s.warmStart = settingText(request, "warm-start", "greedy") != "none";
        s.frontierPlans = settingText(request, "frontier-plans", "on") != "off";
        s.frontierMilp = settingText(request, "frontier-milp", "on") != "off";
        s.frontierMilpColumns =
            settingNumber(request, "frontier-milp-columns", s.frontierMilpColumns);
        s.cutBound = settingText(request, "cut-bound", "on") != "off";
        s.evictionSearch = settingText(request, "eviction-search", "on") != "off";
        s.evictionSearchSeconds = optionalNumber(request, "eviction-search-seconds");
        s.frontierLp = settingText(request, "frontier-lp", s.frontierLp);
        s.frontierCbc = settingText(request, "frontier-cbc", s.frontierCbc);
        s.directColumns = settingNumber(request, "direct-columns", s.directColumns);
        s.cbcOptions = settingText(request, "cbc", s.cbcOptions);
        s.incumbentCutoff = settingText(request, "incumbent", "cutoff") == "cutoff";
        s.annealSeconds = optionalNumber(request, "anneal-seconds");
        return s;
    }
};

/// One checkmate-milp search, as named passes run in order by run(): the warm start, the
/// frontier bound with local search and the frontier MILP (min-time), then CBC on the full model.
/// Each pass may settle the answer; what they find accumulates in the members.
class MilpSearch
{
public:
    MilpSearch(const Solver &solver, const SolveRequest &request, checkmate::Problem problem,
               Clock::time_point begin)
        : m_solver(solver), m_request(request), m_settings(MilpSettings::parse(request)),
          m_p(std::move(problem)), m_minPeak(request.objective == Objective::MinPeak),
          m_maxRecompute(maxRecomputeSeconds(request, m_p)), m_begin(begin)
    {
    }

    /// Min-peak within `--max-overhead P`: the recompute time the MILP's time row allows,
    /// P% of the graph's store-all step as the model counts it (every op once; the simulator's
    /// step for a plan without copies is that plus its recompute). The graph here is the one
    /// the guard hands over, without an optimizer step, whose time only adds to store-all's
    /// step: the row is at most as loose as the limit. -1: no limit.
    static double maxRecomputeSeconds(const SolveRequest &request, const checkmate::Problem &p)
    {
        if (request.objective != Objective::MinPeak || request.maxOverheadPercent < 0)
            return -1;
        double once = 0;
        for (double c : p.cost)
            once += c;
        return once * request.maxOverheadPercent / 100.0;
    }

    /// Whether a plan's recompute keeps the time row (with a sliver for the sums' rounding).
    bool withinTime(const checkmate::Evaluation &e) const
    {
        return m_maxRecompute < 0 || e.recomputeSeconds <= m_maxRecompute * (1 + 1e-9) + 1e-15;
    }

    Expected<Plan> run()
    {
        chooseWarmStart();
        m_warmSeconds = elapsed();
        if (m_request.stop.stopRequested())
            return makeError(StatusCode::Cancelled, "checkmate-milp cancelled");
        if (!m_warmSeq.empty()) {
            m_warmEval = checkmate::evaluate(m_p, m_warmSeq);
            if (!m_minPeak && m_warmEval.recomputes == 0)
                return finishWith(m_warmSeq, SolveStatus::Optimal, 0, 0,
                                  "store-all fits the budget: no recomputation needed");
        }
        if (!m_minPeak)
            if (std::optional<Expected<Plan>> settled = boundAndImprove())
                return std::move(*settled);
        const double frontierBound = m_minPeak ? -1 : m_frontier.bound;
        if (m_request.progress && !m_minPeak) {
            SolveProgress pr;
            pr.elapsedSeconds = elapsed();
            pr.incumbent = m_warmSeq.empty() ? -1 : m_warmEval.recomputeSeconds;
            pr.bound = frontierBound;
            pr.message = "warm start and frontier bound";
            m_request.progress(pr);
        }
        return solveFullModel(frontierBound);
    }

private:
    double elapsed() const { return std::chrono::duration<double>(Clock::now() - m_begin).count(); }

    bool frontierMilpFits() const
    {
        return double(checkmate::frontierMilpColumns(m_p)) <= m_settings.frontierMilpColumns;
    }

    /// The warm start (and the answer when the MILP cannot improve on it): the lowest-peak plan
    /// for min-peak, else the best plan of the greedy and the other registered solvers.
    void chooseWarmStart()
    {
        if (m_minPeak) {
            m_warmSeq = checkmate::lowestPeakSequence(m_p);
            // Within a time limit the lowest-peak plan may recompute too much: store-all
            // (nothing recomputed) always keeps the time row.
            const checkmate::Evaluation lowest = checkmate::evaluate(m_p, m_warmSeq);
            if (!withinTime(lowest)) {
                m_warmSeq = checkmate::storeAllSequence(m_p);
                m_warmFrom = "store-all";
                // Lower peaks within the row for CBC's cutoff: the greedy at budgets between
                // the lowest peak and store-all's, the lowest peak within the row kept.
                int64_t bestPeak = checkmate::evaluate(m_p, m_warmSeq).peakBytes;
                const int64_t low = lowest.peakBytes, high = bestPeak;
                const double seconds = std::min(5.0, 0.05 * m_request.timeLimitSeconds) / 8;
                for (int k = 1; k < 8 && !m_request.stop.stopRequested(); ++k) {
                    std::vector<int> seq = checkmate::greedyPlan(m_p, low + (high - low) * k / 8,
                                                                 seconds, m_request.stop);
                    if (seq.empty())
                        continue;
                    const checkmate::Evaluation e = checkmate::evaluate(m_p, seq);
                    if (withinTime(e) && e.peakBytes < bestPeak) {
                        bestPeak = e.peakBytes;
                        m_warmSeq = std::move(seq);
                        m_warmFrom = "greedy within the time limit";
                    }
                }
            }
            return;
        }
        checkmate::WarmStart w = checkmate::bestHeuristicSequence(
            m_p, m_request, std::min(30.0, 0.15 * m_request.timeLimitSeconds));
        m_warmSeq = std::move(w.sequence);
        m_warmFrom = w.solver;
        // Budgets only the lowest-peak plan meets (min-peak's second pass asks for the least
        // recompute at the peak it reached): start the local searches from that plan, else
        // nothing fits and the lowest-peak plan's 23,077% recompute (DenseNet-201 b16) stands.
        if (m_warmSeq.empty() && !m_request.stop.stopRequested()) {
            std::vector<int> lowest = checkmate::lowestPeakSequence(m_p);
            if (!lowest.empty() &&
                checkmate::evaluate(m_p, lowest).peakBytes <= m_request.budgetBytes) {
                m_warmSeq = std::move(lowest);
                m_warmFrom = "lowest peak";
            }
        }
    }

    /// Min-time: a proven bound independent of CBC (the only one on models too large for it),
    /// the relaxation's plans and local search to improve the warm start, then the frontier MILP.
    /// Returns the plan when this settles the answer (infeasible, or the warm start meets the bound).
    std::optional<Expected<Plan>> boundAndImprove()
    {
        checkmate::FrontierBoundOptions fo;
        fo.seconds = std::min(20.0, 0.1 * m_request.timeLimitSeconds);
        fo.upperBound = m_warmSeq.empty() ? -1 : m_warmEval.recomputeSeconds;
        fo.stop = m_request.stop;
        fo.plans = m_settings.frontierPlans;
        fo.planSeconds = std::min(120.0, 0.3 * m_request.timeLimitSeconds);
        // Where the frontier MILP follows, its bound supersedes a long subgradient search.
        if (frontierMilpFits())
            fo.maxIterations = 3000;
        const double t0 = elapsed();
        m_frontier = checkmate::frontierLowerBound(m_p, m_request.budgetBytes, fo);
        m_frontierSeconds = elapsed() - t0;
        if (m_frontier.infeasible)
            return infeasiblePlan("some op's first run cannot fit with its inputs and outputs");
        if (!m_frontier.sequence.empty() &&
            (m_warmSeq.empty() ||
             m_frontier.evaluation.recomputeSeconds < m_warmEval.recomputeSeconds)) {
            m_warmSeq = m_frontier.sequence;
            m_warmEval = m_frontier.evaluation;
            m_warmFrom = "frontier relaxation";
        }
        if (!m_warmSeq.empty() && m_warmEval.recomputes > 0)
            localSearch();
        // Annealing before the frontier MILP where that MILP takes the rest of the time (models
        // too large for CBC), after it otherwise: on small models the MILP often proves the warm
        // start optimal in a fraction of a second, and annealing would only add its time.
        const bool fullModelFollows = estimateColumns(m_p) <= m_settings.maxColumns;
        if (!fullModelFollows)
            anneal();
        if (m_settings.frontierMilp && frontierMilpFits()) {
            if (std::optional<Expected<Plan>> settled = frontierMilp())
                return settled;
        } else if (m_settings.cutBound) {
            if (std::optional<Expected<Plan>> settled = cutRelaxation(fullModelFollows))
                return settled;
        }
        if (fullModelFollows)
            anneal();
        if (!m_warmSeq.empty() && m_warmEval.recomputeSeconds <= m_frontier.bound * (1 + 1e-9))
            return finishWith(
                m_warmSeq, SolveStatus::Optimal, m_frontier.bound, m_warmEval.recomputeSeconds,
                fmt::format("optimal among frontier-ordered plans: the {} plan meets the "
                            "frontier bound{}; warm start and bound in {:.2f} s",
                            m_warmFrom, m_frontierMilpNote, elapsed()));
        return std::nullopt;
    }

    /// Local search: over evicted sets from the warm start, then retaining where it fits (on the
    /// searched plan and on the warm start itself, which may retain values partly). Without the
    /// frontier MILP to follow (the largest graphs) it gets more of the time.
    void localSearch()
    {
        const bool frontierMilpFollows = m_settings.frontierMilp && frontierMilpFits();
        std::vector<std::pair<std::vector<int>, std::string>> starts{{m_warmSeq, m_warmFrom}};
        if (m_settings.evictionSearch) {
            const double seconds = m_settings.evictionSearchSeconds.value_or(
                frontierMilpFollows ? std::min(30.0, 0.12 * m_request.timeLimitSeconds)
                                    : std::min(240.0, 0.4 * m_request.timeLimitSeconds));
            std::vector<int> searched = checkmate::improveEvictedSet(
                m_p, m_warmSeq, m_request.budgetBytes, seconds, m_request.stop);
            if (searched != m_warmSeq)
                starts.push_back({std::move(searched), m_warmFrom + " + eviction search"});
        }
        const double retainSeconds =
            std::min(15.0, 0.1 * m_request.timeLimitSeconds) / double(starts.size());
        for (auto &[seq, from] : starts) {
            for (int pass = 0; pass < 2; ++pass) {
                std::vector<int> cand =
                    pass == 0 ? seq
                              : checkmate::retainWhereItFits(m_p, seq, m_request.budgetBytes,
                                                             retainSeconds, m_request.stop);
                const checkmate::Evaluation e = checkmate::evaluate(m_p, cand);
                if (e.peakBytes <= m_request.budgetBytes &&
                    e.recomputeSeconds < m_warmEval.recomputeSeconds * (1 - 1e-12)) {
                    m_warmSeq = std::move(cand);
                    m_warmEval = e;
                    m_warmFrom = pass == 0 ? from : from + " + retained";
                }
            }
        }
    }

    /// Annealing over the recomputes, from the best plan so far: it also places recomputes
    /// early and keeps them (250-node random graph at 0.8: 6.98% -> 4.26%). Skipped when there
    /// is no plan with recomputes to start from or the plan already meets the frontier bound.
    void anneal()
    {
        const double annealSeconds = m_settings.annealSeconds.value_or(
            std::min({120.0, 0.3 * m_request.timeLimitSeconds,
                      std::max(0.0, 0.9 * m_request.timeLimitSeconds - elapsed())}));
        if (m_warmSeq.empty() || m_warmEval.recomputes == 0 ||
            m_warmEval.recomputeSeconds <= m_frontier.bound * (1 + 1e-9))
            return;
        if (annealSeconds > 0 && !m_request.stop.stopRequested()) {
            if (m_request.progress) {
                SolveProgress pr;
                pr.elapsedSeconds = elapsed();
                pr.incumbent = m_warmEval.recomputeSeconds;
                pr.bound = m_frontier.bound;
                pr.message =
                    fmt::format("annealing over the recomputes (up to {:.0f} s)", annealSeconds);
                m_request.progress(pr);
            }
            std::vector<int> annealed = checkmate::annealRecomputes(
                m_p, m_warmSeq, m_request.budgetBytes, annealSeconds, m_request.stop);
            const checkmate::Evaluation e = checkmate::evaluate(m_p, annealed);
            if (e.peakBytes <= m_request.budgetBytes &&
                e.recomputeSeconds < m_warmEval.recomputeSeconds * (1 - 1e-12)) {
                m_warmSeq = std::move(annealed);
                m_warmEval = e;
                m_warmFrom += " + annealing";
            }
        }
    }

    /// The frontier relaxation with the recompute cascade as a MILP: a stronger bound, and with the
    /// warm start as cutoff often a proof that nothing frontier-ordered is cheaper. Above 200k
    /// columns (the 1000-node random graph: 364k) its root LP does not finish in ten minutes on 2
    /// cores. Returns a plan only when it proves the budget infeasible.
    std::optional<Expected<Plan>> frontierMilp()
    {
        const double t0 = elapsed();
        // Without the full model to follow, this bound gets nearly all the time left.
        const double left = m_request.timeLimitSeconds - t0;
        // With under 2 s left (fcn_8_vgg in a tenth of Moccasin's time) the full model would not
        // get going either.
        const double share = double(estimateColumns(m_p)) > m_settings.maxColumns ? 0.9 * left - 0.5
                             : left < 2.0                                         ? 0.8 * left
                                          : std::min(120.0, 0.3 * m_request.timeLimitSeconds);
        const checkmate::FrontierMilpResult fm = checkmate::frontierMilpBound(
            m_p, m_request.budgetBytes, m_warmSeq.empty() ? -1 : m_warmEval.recomputeSeconds,
            std::max(0.05, std::min(share, 0.95 * left)), m_request.stop, m_settings.frontierLp,
            m_settings.frontierCbc);
        if (fm.infeasible)
            return infeasiblePlan("no frontier-ordered plan fits (relaxation proven infeasible)");
        m_frontierMilpNote = fmt::format(
            "; frontier MILP bound {:.6g} s ({} columns, {}{:.2f} s, root LP "
            "{:.2f} s)",
            fm.bound, fm.columns, fm.provedCutoff ? "proved the warm start optimal, " : "",
            elapsed() - t0, fm.rootSeconds);
        m_frontier.bound = std::max(m_frontier.bound, fm.bound);
        return std::nullopt;
    }

    /// The frontier relaxation with the cascade at a few first runs (graphs too large for the
    /// frontier MILP: ResNet-152 b16 at 760 MiB, 0.00324 s from the Lagrangian, 0.00647 s from
    /// this). Returns a plan only when it proves the budget infeasible.
    std::optional<Expected<Plan>> cutRelaxation(bool fullModelFollows)
    {
        if (m_request.stop.stopRequested() ||
            (!m_warmSeq.empty() && m_warmEval.recomputeSeconds <= m_frontier.bound * (1 + 1e-9)))
            return std::nullopt;
        const double t0 = elapsed();
        const double left = m_request.timeLimitSeconds - t0;
        const double share =
            fullModelFollows ? std::min(60.0, 0.3 * m_request.timeLimitSeconds) : 0.9 * left - 0.5;
        if (m_request.progress) {
            SolveProgress pr;
            pr.elapsedSeconds = t0;
            pr.incumbent = m_warmSeq.empty() ? -1 : m_warmEval.recomputeSeconds;
            pr.bound = m_frontier.bound;
            pr.message = "bound: the recompute cascade at a few first runs";
            m_request.progress(pr);
        }
        const checkmate::CutSearchResult cb = checkmate::searchCutBound(
            m_p, m_request.budgetBytes, m_warmSeq.empty() ? -1 : m_warmEval.recomputeSeconds,
            std::max(0.05, std::min(share, 0.95 * left)), m_request.stop);
        if (cb.infeasible)
            return infeasiblePlan(
                "no frontier-ordered plan fits (cut relaxation proven infeasible)");
        std::string at;
        for (size_t k = 0; k < cb.cuts.size(); ++k)
            at += (k ? "," : "") + std::to_string(cb.cuts[k]);
        m_frontierMilpNote += fmt::format(
            "; cut relaxation bound {:.6g} s (the Lagrangian's {:.6g} s; cascade at first runs "
            "{}; {} LPs in {:.2f} s, {:.2f} s in all{})",
            cb.bound, m_frontier.bound, at.empty() ? "none" : at, cb.lps, cb.searchSeconds,
            elapsed() - t0,
            cb.provedCutoff ? ", proved the warm start optimal"
            : cb.solved     ? ", solved"
                            : "");
        m_frontier.bound = std::max(m_frontier.bound, cb.bound);
        return std::nullopt;
    }

    /// CBC on Checkmate's full model, warm-started, within what is left of the time limit; models
    /// too large for it answer with the warm start and the frontier bound.
    Expected<Plan> solveFullModel(double frontierBound)
    {
        const std::string boundNote =
            m_minPeak ? std::string()
                      : fmt::format("; frontier bound {:.6g} s ({} iterations, {:.2f} s){}",
                                    m_frontier.bound, m_frontier.iterations, m_frontierSeconds,
                                    m_frontierMilpNote);
        if (estimateColumns(m_p) > m_settings.maxColumns) {
            if (m_warmSeq.empty()) {
                std::vector<int> seq = checkmate::lowestPeakSequence(m_p);
                return finishWith(
                    seq, SolveStatus::TimedOut, frontierBound, 0,
                    fmt::format("model too large for CBC (about {} columns) and no heuristic "
                                "plan fits{}; the plan shown is the lowest peak found ({} B, "
                                "over the budget)",
                                estimateColumns(m_p), boundNote,
                                checkmate::evaluate(m_p, seq).peakBytes));
            }
            return finishPeak(m_warmSeq, m_warmEval, SolveStatus::Feasible, frontierBound,
                              m_minPeak ? double(m_warmEval.peakBytes)
                                        : m_warmEval.recomputeSeconds,
                              fmt::format("model too large for CBC (about {} columns): {} plan{}",
                                          estimateColumns(m_p), m_warmFrom, boundNote));
        }
        // Short time limits: CBC spends a few tenths of a second just starting on the full model.
        if (!m_minPeak && !m_warmSeq.empty() && m_request.timeLimitSeconds - elapsed() < 0.5)
            return finishWith(
                m_warmSeq, SolveStatus::Feasible, frontierBound, m_warmEval.recomputeSeconds,
                fmt::format("time limit reached before CBC could start on the full model: {} "
                            "plan{}",
                            m_warmFrom, boundNote));

        checkmate::ModelOptions mo;
        mo.budgetBytes = m_request.budgetBytes;
        mo.minimisePeak = m_minPeak;
        // Tightened by a relative 1e-7, CBC's primal tolerance, so its point keeps the limit.
        if (m_maxRecompute >= 0)
            mo.maxRecomputeSeconds = m_maxRecompute * (1 - 1e-7);
        const double modelStart = elapsed();
        const checkmate::LinearModel model = checkmate::buildModel(m_p, mo);
        if (model.trivialInfeasible && !m_minPeak)
            return infeasiblePlan(model.infeasibleReason);
        std::vector<double> start;
        if (m_settings.warmStart && !m_warmSeq.empty())
            start = model.pointFromPlan(m_p, checkmate::stagePlanFromSequence(m_p, m_warmSeq));
        const double modelSeconds = elapsed() - modelStart;
        const double cbcStart = elapsed();
        // Min-peak keeps a third of the time for the least recompute at the peak found (finishPeak).
        const double remaining =
            (m_request.timeLimitSeconds - elapsed()) * (m_minPeak ? 2.0 / 3.0 : 1.0);
        CbcOutcome cbc =
            runCbc(model, start.empty() ? nullptr : &start, m_request, std::max(0.1, remaining),
                   m_settings.threads, m_settings.logLevel, m_begin,
                   m_minPeak ? double(model.unit) : model.objectiveScale, m_settings.directColumns,
                   m_settings.cbcOptions, m_settings.incumbentCutoff);
        const std::string size =
            fmt::format("{} columns ({} binary), {} rows, memory unit {} B{}; "
                        "times: model {:.2f} s, root LP {:.2f} s, CBC {:.2f} s",
                        model.columns(), model.integers(), model.rows(), model.unit, boundNote,
                        modelSeconds, cbc.rootSeconds, elapsed() - cbcStart - cbc.rootSeconds);
        // CBC's bound covers its own model only up to rounding; the frontier bound is exact.
        if (!cbc.optimal)
            cbc.bound = std::max(cbc.bound, frontierBound);
        return finishFromCbc(model, cbc, size);
    }

    /// The plan from CBC's outcome: its point when it beats the warm start once re-evaluated
    /// exactly, else the warm start, with what was proven.
    Expected<Plan> finishFromCbc(const checkmate::LinearModel &model, CbcOutcome &cbc,
                                 const std::string &size)
    {
        if (cbc.cancelled && !cbc.hasSolution && m_warmSeq.empty())
            return makeError(StatusCode::Cancelled, "checkmate-milp cancelled before any plan");
        if (!cbc.hasSolution) {
            if (cbc.cutoffUsed && !cbc.stopped && !cbc.cancelled && !m_warmSeq.empty())
                return finishWith(
                    m_warmSeq, SolveStatus::Optimal, m_warmEval.recomputeSeconds,
                    m_warmEval.recomputeSeconds,
                    fmt::format("optimal in Checkmate's model: CBC proved nothing beats the {} "
                                "plan; {}",
                                m_warmFrom, size));
            if (cbc.infeasible && !cbc.stopped)
                return infeasiblePlan("CBC proved the budget infeasible in Checkmate's model");
            if (m_warmSeq.empty()) {
                std::vector<int> seq = checkmate::lowestPeakSequence(m_p);
                return finishWith(
                    seq, cbc.cancelled ? SolveStatus::Cancelled : SolveStatus::TimedOut, cbc.bound,
                    0,
                    fmt::format("no plan within the budget found in {:.1f} s; {}; the "
                                "plan shown is the lowest peak found ({} B, over the budget)",
                                elapsed(), size, checkmate::evaluate(m_p, seq).peakBytes));
            }
            return finishPeak(
                m_warmSeq, m_warmEval,
                cbc.cancelled ? SolveStatus::Cancelled : SolveStatus::Feasible, cbc.bound,
                m_minPeak ? double(m_warmEval.peakBytes) : m_warmEval.recomputeSeconds,
                fmt::format("CBC found nothing better than the warm start; {}", size));
        }
        std::vector<int> seq = checkmate::sequenceFromR(m_p, model.rFromPoint(m_p, cbc.x));
        checkmate::Evaluation eval = checkmate::evaluate(m_p, seq);
        // Keep the warm start when the MILP point is not better once re-evaluated exactly (the
        // model rounds sizes up, so this only happens with coarse memory units), or over the
        // time row once re-evaluated (it never is: the row sums every run).
        if (!m_warmSeq.empty() &&
            (!withinTime(eval) ||
             (m_minPeak ? m_warmEval.peakBytes < eval.peakBytes
                        : (eval.peakBytes > m_request.budgetBytes ||
                           m_warmEval.recomputeSeconds < eval.recomputeSeconds)))) {
            seq = m_warmSeq;
            eval = m_warmEval;
        }
        if (!m_minPeak && !cbc.optimal && !cbc.cancelled && cbc.bound >= 0 &&
            eval.recomputeSeconds <= cbc.bound * (1 + 1e-9))
            cbc.optimal = true; // the frontier bound closes the gap
        SolveStatus status = cbc.optimal     ? SolveStatus::Optimal
                             : cbc.cancelled ? SolveStatus::Cancelled
                                             : SolveStatus::Feasible;
        const double objective = m_minPeak ? cbc.objective : eval.recomputeSeconds;
        const double bound = cbc.bound;
        std::string note;
        if (status == SolveStatus::Optimal)
            note = fmt::format("optimal in Checkmate's model; {}", size);
        else
            note = fmt::format(
                "{}; gap {:.2f}% (bound {:.6g}); {}", cbc.cancelled ? "cancelled" : "time limit",
                objective > 0 && bound >= 0 ? 100.0 * (objective - bound) / objective : 0.0, bound,
                size);
        if (!m_warmSeq.empty())
            note += fmt::format("; warm start ({}) {:.6g} s of recompute in {:.2f} s", m_warmFrom,
                                m_warmEval.recomputeSeconds, m_warmSeconds);
        return finishPeak(seq, eval, status, bound, objective, note);
    }

    Expected<Plan> finishWith(const std::vector<int> &seq, SolveStatus status, double bound,
                              double objective, const std::string &note) const
    {
        REMAT_ASSIGN_OR_RETURN(Plan plan,
                               checkmate::finishPlan(m_p, m_request, seq, m_solver.id()));
        plan.status = status;
        plan.bound = bound;
        plan.solverObjective = objective;
        plan.solverObjectiveName = m_minPeak ? "peak bytes in Checkmate's model"
                                             : "recompute seconds in Checkmate's model";
        plan.note = note;
        plan.solveSeconds = elapsed();
        const bool answered = status == SolveStatus::Optimal || status == SolveStatus::Feasible;
        if (!m_minPeak && answered && plan.timeline.peakBytes > m_request.budgetBytes)
            return makeError(StatusCode::Internal,
                             fmt::format("checkmate-milp: plan peaks at {} B over the budget {} B "
                                         "(the model and the simulator disagree)",
                                         plan.timeline.peakBytes, m_request.budgetBytes));
        return plan;
    }

    /// Min-peak: CBC settles the peak, not the recompute at it (the objective's tie-breaking
    /// sliver lies below its gap tolerance: tiny_vit's plan 1.1% under the other solvers' peaks
    /// came with 2,124% recompute). The min-time search with that peak as the budget finds a
    /// cheap plan at the same peak.
    Expected<Plan> finishPeak(const std::vector<int> &seq, const checkmate::Evaluation &eval,
                              SolveStatus status, double bound, double objective,
                              const std::string &note) const
    {
        if (m_minPeak && status != SolveStatus::Cancelled && eval.recomputes > 0 &&
            m_request.timeLimitSeconds - elapsed() > 0.5) {
            if (m_request.progress) {
                SolveProgress pr;
                pr.elapsedSeconds = elapsed();
                pr.message = "lowest peak found; least recompute at that peak";
                m_request.progress(pr);
            }
            SolveRequest atPeak = m_request;
            atPeak.objective = Objective::MinTime;
            atPeak.budgetBytes = eval.peakBytes;
            atPeak.timeLimitSeconds = m_request.timeLimitSeconds - elapsed();
            atPeak.progress = nullptr;
            Expected<Plan> cheap = m_solver.solve(atPeak);
            if (cheap &&
                (cheap->status == SolveStatus::Optimal || cheap->status == SolveStatus::Feasible) &&
                cheap->timeline.peakBytes <= eval.peakBytes &&
                cheap->timeline.recomputeSeconds < eval.recomputeSeconds * (1 - 1e-12)) {
                Plan plan = std::move(*cheap);
                plan.objective = m_request.objective;
                plan.budgetBytes = m_request.budgetBytes;
                plan.status = status;
                plan.bound = bound;
                plan.solverObjective = objective;
                plan.solverObjectiveName = "peak bytes in Checkmate's model";
                plan.note = fmt::format(
                    "{}; then the least recompute at that peak ({:.6g} -> {:.6g} s): {}", note,
                    eval.recomputeSeconds, plan.timeline.recomputeSeconds, plan.note);
                plan.solveSeconds = elapsed();
                return plan;
            }
        }
        return finishWith(seq, status, bound, objective, note);
    }

    Expected<Plan> infeasiblePlan(const std::string &why) const
    {
        std::vector<int> seq = checkmate::lowestPeakSequence(m_p);
        const int64_t peak = checkmate::evaluate(m_p, seq).peakBytes;
        return finishWith(seq, SolveStatus::Infeasible, -1, 0,
                          fmt::format("infeasible: {}; the lowest peak found is {} B", why, peak));
    }

    const Solver &m_solver;
    const SolveRequest &m_request;
    const MilpSettings m_settings;
    const checkmate::Problem m_p;
    const bool m_minPeak;
    const double m_maxRecompute; ///< the time row's limit on recompute seconds (-1: none)
    const Clock::time_point m_begin;
    // chooseWarmStart, improved by boundAndImprove
    std::vector<int> m_warmSeq;
    std::string m_warmFrom = "lowest peak";
    checkmate::Evaluation m_warmEval;
    double m_warmSeconds = 0;
    // boundAndImprove
    checkmate::FrontierBound m_frontier;
    double m_frontierSeconds = 0;
    std::string m_frontierMilpNote;
};

class CheckmateMilpSolver final : public Solver
{
public:
    std::string id() const override { return "checkmate-milp"; }
    std::string title() const override { return "Checkmate MILP (Jain et al. 2020) on CBC"; }
    std::string description() const override
    {
        return "Checkmate's mixed-integer program over the fixed op order: binary R[t,i] "
               "(op i runs in stage t) and S[t,i] (its outputs are retained into stage t), "
               "releases FREE[t,(i,k)] and memory U[t,k], with frontier-advancing stages (stage t "
               "ends with op t's first run). First a warm start: the best of a greedy, the other "
               "registered solvers and plans read off a 'frontier' relaxation (what must fit at "
               "each first run), improved by local search; then a proven lower bound from that "
               "relaxation (Lagrangian, then as a small MILP with the recompute cascade), which "
               "often proves the warm start optimal among all plans with first runs in op order. "
               "Otherwise COIN-OR CBC solves the full model (up to 150k columns) with a time "
               "limit. The incumbent and the bound are reported live and kept in the plan (the "
               "gap). Min-peak within --max-overhead P adds a time row (the recompute time, "
               "summed over every run, at most P% of store-all's step) to the min-peak MILP; "
               "models too large for CBC bisect the budget over their min-time plans. Memory is "
               "the simulator's: preloaded tensors, weight gradients from their "
               "op, workspace and unread outputs while an op runs.";
    }
    Capabilities capabilities() const override
    {
        Capabilities c;
        c.optimalForItsModel = true;
        c.needsCbc = true;
        c.speed = SpeedClass::Search;
        // Min-peak within --max-overhead: the MILP with a time row (recompute <= P% of the
        // step), or on models too large for CBC the budget bisection over its min-time plans.
        c.maxOverhead = true;
        return c;
    }
    Expected<Plan> searchPlan(const SolveRequest &request) const override;

private:
    /// Min-peak within --max-overhead on a model too large for CBC (no time row to add): a
    /// bisection of the budget over this solver's own min-time plans (its heuristics, local
    /// searches and annealing, each plan simulated), the lowest peak within the limit kept.
    /// Each probe gets an equal share of the time limit, 1 / kBisectionProbes: with the guard's
    /// generic bisection (a quarter of what is left each) the probes near the answer get a few
    /// seconds and find far worse plans on ResNet-152.
    Expected<Plan> withinOverheadByBisection(const SolveRequest &request,
                                             const checkmate::Problem &p,
                                             Clock::time_point begin) const;
    Expected<Plan> searchOwn(const SolveRequest &request) const;
    static constexpr double kBisectionProbes = 6;
};

Expected<Plan> CheckmateMilpSolver::searchPlan(const SolveRequest &request) const
{
    return checkmate::ownThenRegistered(request, id(), [&] { return searchOwn(request); },
                                        {StatusCode::InvalidArgument});
}

Expected<Plan> CheckmateMilpSolver::searchOwn(const SolveRequest &request) const
{
    const auto begin = Clock::now();
    REMAT_RETURN_IF_ERROR(checkmate::checkRequest(request));
    REMAT_ASSIGN_OR_RETURN(checkmate::Problem p,
                           checkmate::buildProblem(*request.graph, *request.costs, request.pins));
    if (request.objective == Objective::MinPeak && request.maxOverheadPercent >= 0 &&
        double(checkmate::estimateColumns(p)) > MilpSettings::parse(request).maxColumns)
        return withinOverheadByBisection(request, p, begin);
    return MilpSearch(*this, request, std::move(p), begin).run();
}

Expected<Plan> CheckmateMilpSolver::withinOverheadByBisection(const SolveRequest &request,
                                                              const checkmate::Problem &p,
                                                              Clock::time_point begin) const
{
    const auto elapsed = [&] {
        return std::chrono::duration<double>(Clock::now() - begin).count();
    };
    SolveRequest bare = request;
    bare.maxOverheadPercent = -1;
    bare.objective = Objective::MinTime;
    bare.progress = nullptr;
    // Store-all's step on this graph: every op once (the simulator's figure for the sequence).
    const std::vector<int> all = checkmate::storeAllSequence(p);
    REMAT_ASSIGN_OR_RETURN(const Plan storeAll, checkmate::finishPlan(p, bare, all, id()));
    const double limit = stepSeconds(storeAll.timeline) * (1 + request.maxOverheadPercent / 100);
    int64_t hi = storeAll.timeline.peakBytes;
    int64_t lo = checkmate::evaluate(p, checkmate::lowestPeakSequence(p)).peakBytes - 1;
    std::optional<Plan> best;
    if (request.pins.empty())
        best = storeAll; // keeps every limit; with pins the probe at store-all's peak answers
    // 60% of the time to the bisection's probes, the rest to walking its best plan down.
    const double probeSeconds = std::max(2.0, 0.6 * request.timeLimitSeconds / kBisectionProbes);
    const int64_t resolution = std::max<int64_t>(1, hi / 400);
    int probes = 0, within = 0;
    std::string trail; // "budget: peak step%" per probe, for the note
    // The probes are heuristic plans, not optima: the least time found does not fall
    // monotonically as the budget grows (ResNet-152 b16 within 35%, 20 s probes: 854 MiB gave
    // +50.9%, 760 MiB +32.4%). A probe a little over the limit (at most max(2P, P + 20)%)
    // sends the bisection lower without raising its floor; only a plan far over the limit, or
    // none within the budget, does.
    const double farOver =
        stepSeconds(storeAll.timeline) *
        (1 + std::max(2 * request.maxOverheadPercent, request.maxOverheadPercent + 20) / 100);
    enum class Probe { Within, Near, Far };
    auto probe = [&](int64_t budget) -> Expected<Probe> {
        SolveRequest r = bare;
        r.budgetBytes = budget;
        r.timeLimitSeconds =
            std::max(1.0, std::min(probeSeconds, request.timeLimitSeconds - elapsed()));
        ++probes;
        REMAT_ASSIGN_OR_RETURN(Plan plan, solve(r));
        const bool ok =
            (plan.status == SolveStatus::Optimal || plan.status == SolveStatus::Feasible) &&
            plan.timeline.peakBytes <= budget && stepSeconds(plan.timeline) <= limit * (1 + 1e-9);
        trail += fmt::format("{}{:.0f} MiB: {:.0f} MiB {:+.1f}%", trail.empty() ? "" : ", ",
                             double(budget) / 1048576, double(plan.timeline.peakBytes) / 1048576,
                             timeOverheadPercent(plan.timeline, stepSeconds(storeAll.timeline)));
        if (ok) {
            ++within;
            if (!best || plan.timeline.peakBytes < best->timeline.peakBytes)
                best = std::move(plan);
            return Probe::Within;
        }
        const bool near =
            (plan.status == SolveStatus::Optimal || plan.status == SolveStatus::Feasible) &&
            plan.timeline.peakBytes <= budget && stepSeconds(plan.timeline) <= farOver;
        return near ? Probe::Near : Probe::Far;
    };
    if (!best) {
        REMAT_ASSIGN_OR_RETURN(const Probe top, probe(hi));
        (void)top;
    }
    if (best)
        hi = best->timeline.peakBytes;
    while (hi - lo > resolution && probes < 2 * kBisectionProbes &&
           elapsed() + 0.5 * probeSeconds < 0.6 * request.timeLimitSeconds &&
           !request.stop.stopRequested()) {
        const int64_t mid = lo + (hi - lo) / 2;
        REMAT_ASSIGN_OR_RETURN(const Probe outcome, probe(mid));
        if (outcome == Probe::Within)
            hi = std::min(mid, best->timeline.peakBytes);
        else if (outcome == Probe::Near)
            hi = mid;
        else
            lo = mid;
        if (request.progress) {
            SolveProgress pr;
            pr.elapsedSeconds = elapsed();
            pr.incumbent = best ? double(best->timeline.peakBytes) : -1;
            pr.message = fmt::format("budget bisection within {:g}%: {} probes",
                                     request.maxOverheadPercent, probes);
            request.progress(pr);
        }
    }
    // Refinement seeded by the best plan: walk its peak down in small steps (repair it to a
    // budget a little below its peak, evicting at the peak what costs the least time per byte,
    // then retain what fits again, and anneal over the recomputes when that is over the limit)
    // while its recompute keeps the limit. A nearby plan's repair
    // reaches lower peaks than a fresh probe at the same budget.
    int descents = 0;
    const int64_t bisected = best ? best->timeline.peakBytes : 0;
    std::vector<int> cur;
    if (best)
        cur = checkmate::sequenceFromSchedule(p, best->schedule);
    if (!cur.empty()) {
        checkmate::Evaluation ce = checkmate::evaluate(p, cur);
        const double maxRecompute = limit - stepSeconds(storeAll.timeline);
        double step = 0.02;
        while (step >= 0.002 && elapsed() + 1 < request.timeLimitSeconds &&
               !request.stop.stopRequested()) {
            const int64_t budget = ce.peakBytes - int64_t(step * double(ce.peakBytes));
            const double seconds = std::min(5.0, request.timeLimitSeconds - elapsed());
            const checkmate::StagePlan sp = checkmate::stagePlanFromSequence(p, cur);
            std::vector<int> cand =
                checkmate::repairToBudget(p, sp.s, budget, seconds, request.stop);
            if (!cand.empty())
                cand = checkmate::retainWhereItFits(p, cand, budget, seconds / 2, request.stop);
            checkmate::Evaluation e = cand.empty() ? ce : checkmate::evaluate(p, cand);
            // Over the limit on time only: annealing over the recomputes at that budget first.
            if (!cand.empty() && e.peakBytes <= budget && e.recomputeSeconds > maxRecompute &&
                elapsed() + 1 < request.timeLimitSeconds) {
                cand = checkmate::annealRecomputes(
                    p, cand, budget, std::min(seconds, request.timeLimitSeconds - elapsed() - 0.5),
                    request.stop);
                e = checkmate::evaluate(p, cand);
            }
            if (!cand.empty() && e.peakBytes <= budget &&
                e.recomputeSeconds <= maxRecompute * (1 - 1e-9)) {
                cur = std::move(cand);
                ce = e;
                ++descents;
            } else {
                step /= 2;
            }
        }
        if (descents > 0) {
            REMAT_ASSIGN_OR_RETURN(Plan walked, checkmate::finishPlan(p, bare, cur, id()));
            if (walked.timeline.peakBytes < best->timeline.peakBytes &&
                stepSeconds(walked.timeline) <= limit * (1 + 1e-9)) {
                walked.note = fmt::format("the bisection's best plan ({:.2f} MiB) walked down "
                                          "the budget in {} repairs",
                                          double(bisected) / 1048576, descents);
                best = std::move(walked);
            }
        }
    }
    if (request.stop.stopRequested())
        return makeError(StatusCode::Cancelled, "checkmate-milp cancelled");
    if (!best)
        return makeError(StatusCode::Infeasible,
                         fmt::format("checkmate-milp: no plan within --max-overhead {:g}",
                                     request.maxOverheadPercent));
    Plan out = std::move(*best);
    const std::string inner = out.note;
    out.objective = Objective::MinPeak;
    out.budgetBytes = 0;
    out.status = SolveStatus::Feasible;
    out.bound = -1;
    out.settings = request.settings;
    out.solveSeconds = elapsed();
    out.note = fmt::format(
        "lowest peak within {:g}% slower: model too large for CBC (about {} columns), so no "
        "time row; budget bisection over {} min-time plans of its own ({} within the limit, "
        "{:.0f} s each at most, {:+.1f}% time; budget: peak, time: {}){}{}",
        request.maxOverheadPercent, checkmate::estimateColumns(p), probes, within, probeSeconds,
        timeOverheadPercent(out.timeline, stepSeconds(storeAll.timeline)), trail,
        inner.empty() ? "" : "; the plan: ", inner);
    return out;
}

} // namespace

std::unique_ptr<Solver> makeCheckmateMilpSolver()
{
    return std::make_unique<CheckmateMilpSolver>();
}

} // namespace remat::core::solvers
