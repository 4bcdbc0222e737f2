#pragma once
// Rotor's dynamic program (Beaumont et al., ACM TOMS 2024) on the chain of articulation points,
// shared by the rotor solver and the chain frontier (chain_frontier.h).
//   RotorChain c = rotorChain(view, facts, ops, 500);
//   RotorTable t(c);  t.compute(stop);
//   t.opt(m, 0, c.L - 1);  t.sequence(m, ops);   // least time and its op order at memory m

#include "core/solvers/chain_support.h"
#include "core/util/stop_token.h"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

namespace remat::core::solvers {

/// Stage parameters in memory slots and seconds.
struct RotorChain
{
    int L = 0;
    std::vector<int> cw;  ///< size L+1: input of stage k (x_k), x_L the output
    std::vector<int> cbw; ///< size L+1: cbw[k+1] = tape of stage k, its output included
    std::vector<int> fwdTmp, bwdTmp;
    std::vector<double> fw, bw;
    /// A way to keep a stage's tape (StageOption in slots): tape with the output, the backward's
    /// transient, and the recompute it adds to the backward.
    struct TapeOption
    {
        int cbw = 0, bwdTmp = 0;
        double extra = 0;
        /// The stage's input is read by nothing once the stage has run forward with this tape
        /// (its backward and recomputes do not read it, the stage before does not read its
        /// output in backward): the rest of the chain gets its slots back (a ReLU after a
        /// residual Add). Articulation chains only.
        bool freesInput = false;
        int shift(int input) const { return std::max(0, cbw - (freesInput ? input : 0)); }
    };
    /// Per stage, options[k][0] = {cbw[k+1], bwdTmp[k], 0}; more when StageOps has options.
    std::vector<std::vector<TapeOption>> options;
    int slotCount = 0;     ///< memories 0..slotCount
    double unit = 1;       ///< bytes per slot; every byte count is rounded up to whole slots
    double totalBytes = 0; ///< the memory slots span: every input and tape, plus transients
};

/// How a stage's transient bytes (above its tape and output) are counted: rotor's estimate (a
/// forward op's largest output, twice that in backward, plus an option's recomputed bytes), or
/// the peak of the stage's backward walked op by op (StageOption::backwardPeakBytes; needs
/// options). Neither is the simulator's: the chain frontier solves with both.
enum class RotorTransients : unsigned char { Estimate, Walked };

/// freeInputs: a stage whose input nothing reads after its forward gives its slots back
/// (TapeOption::freesInput). Closer to the simulator on residual chains (ResNet-152's cut at
/// 35% recompute: 85.1% -> 86.4% for the rotor solver), but it can mislead the DP elsewhere (a
/// small residual net's lowest simulated peak: 614 KiB without, 678 KiB with), so callers solve
/// both ways and keep the better simulated plans.
/// The chain's stages in slots: at most `slots` slots (clamped to [10, maxSlots]) and at most
/// `maxEntries` table entries. Costs come from the view (its stage seconds); the stages' tape
/// options from ops.options (addStageOptions), the whole tape alone when it is empty.
RotorChain rotorChain(const ChainView &view, const GraphFacts &facts, const StageOps &ops,
                      int slotCount, int maxSlots = 5000, double maxEntries = 6e7,
                      RotorTransients transients = RotorTransients::Estimate,
                      bool freeInputs = false);

/// A float array for the DP table on transparent huge pages where the OS offers them: the
/// table is touched once, entirely, and with 4 KiB pages first-touch faults cost more than the
/// DP itself on virtual machines (measured: 30-100 ms for an 8 MiB table here, 0.3 ms on huge
/// pages). Throws std::bad_alloc (the solver guard turns it into a Status).
class FloatTable
{
public:
    FloatTable(size_t count, float fill);
    float *data() { return m_data.get(); }
    const float *data() const { return m_data.get(); }
    size_t size() const { return m_count; }

private:
    struct Free
    {
        void operator()(float *p) const;
    };
    std::unique_ptr<float, Free> m_data;
    size_t m_count;
};

/// opt(m, i, j): the least forward + backward time of stages i..j with m memory slots, x_i kept
/// (infinite where nothing fits). Non-increasing in m: every rule that fits at m fits at m+1.
/// Rotor's rules, with Rockmate's extension: a stage whose tape is kept (or that runs alone)
/// may keep any of its tape options, paying the option's recompute in its backward.
class RotorTable
{
public:
    explicit RotorTable(const RotorChain &c);
    float opt(int m, int i, int j) const
    {
        return m < 0 ? kInfinity : m_opt.data()[row(i, j) + size_t(m)];
    }
    /// Fills the table; false when `stop` fired or `giveUp` (may be empty: never; checked once
    /// per diagonal, e.g. a solver's time limit) said so.
    bool compute(const StopToken &stop, const std::function<bool()> &giveUp = {});
    /// The op sequence of the optimal strategy for (m, 0, L-1).
    std::vector<OpId> sequence(int m, const StageOps &ops) const;

    static constexpr float kInfinity = std::numeric_limits<float>::infinity();

private:
    size_t row(int i, int j) const;
    struct Choice
    {
        int checkpoint = -1; ///< > i: keep x_k; -1: keep stage i's tape (option below)
        int option = -1;     ///< the tape option; -1 with checkpoint -1: nothing fits
    };
    Choice what(int m, int i, int j) const;
    /// The cheapest tape option of stage i alone at m (-1: none fits).
    int leafOption(int m, int i) const;
    int leafNeed(int i, const RotorChain::TapeOption &o) const;

    const RotorChain &m_c;
    FloatTable m_opt;
};

} // namespace remat::core::solvers
