#include "core/solvers/rotor_table.h"

#include "core/training/training_graph.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <new>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace remat::core::solvers {
namespace {

// The DP's inner loops, vectorised: -O2 (the project's release level) does not vectorise loops
// whose trip count is unknown, and these take nearly all of the solver's time.
#if defined(__GNUC__) && !defined(__clang__)
#define REMAT_ROTOR_VECTORISE [[gnu::optimize("tree-loop-vectorize", "vect-cost-model=dynamic")]]
#else
#define REMAT_ROTOR_VECTORISE
#endif

/// best[m] = min(best[m], a + right[m - shift] + left[m]) for m in [from, to].
REMAT_ROTOR_VECTORISE void minPlus(float *__restrict best, const float *__restrict right,
                                   const float *__restrict left, float a, int shift, int from,
                                   int to)
{
    for (int m = from; m <= to; ++m)
        best[m] = std::min(best[m], a + right[m - shift] + left[m]);
}

/// best[m] = min(best[m], here + rest[m - shift]) for m in [from, to].
REMAT_ROTOR_VECTORISE void minKeepTape(float *__restrict best, const float *__restrict rest,
                                       float here, int shift, int from, int to)
{
    for (int m = from; m <= to; ++m)
        best[m] = std::min(best[m], here + rest[m - shift]);
}

} // namespace

RotorChain rotorChain(const ChainView &view, const GraphFacts &facts, const StageOps &ops,
                      int slots, int maxSlots, double maxEntries, RotorTransients transients,
                      bool freeInputs)
{
    const int L = static_cast<int>(view.stageCount());
    // Bytes per stage, then slots.
    std::vector<double> cw(L + 1, 0), cbw(L + 1, 0), ft(L, 0), bt(L, 0);
    const auto &g = facts.graph();
    for (int k = 1; k < L; ++k)
        cw[k] = double(view.boundaryBytes[k - 1]);
    {
        // The network output: what the loss reads.
        double out = 0;
        for (OpId l : ops.loss)
            for (TensorId t : g.op(l).inputs)
                if (facts.isForwardTensor(t))
                    out += double(g.tensor(t).bytes);
        cw[L] = out;
    }
    double total = 0;
    for (int k = 0; k < L; ++k) {
        cbw[k + 1] = double(view.tapeBytes[k]) + cw[k + 1];
        ft[k] = double(view.largestBytes[k]);
        bt[k] = 2.0 * double(view.largestBytes[k]);
        total += cw[k + 1] + cbw[k + 1];
    }
    if (L > 0)
        total += 2.0 * *std::max_element(bt.begin(), bt.end());
    slots = std::clamp(slots, 10, std::max(10, maxSlots));
    // Keep the table within maxEntries entries.
    const double pairs = double(L) * (L + 1) / 2;
    slots = int(std::max(10.0, std::min(double(slots), maxEntries / std::max(1.0, pairs))));
    const double unit = std::max(1.0, total / slots);
    auto toSlots = [&](double b) { return int(std::ceil(b / unit)); };
    RotorChain c;
    c.L = L;
    c.slotCount = slots;
    c.unit = unit;
    c.totalBytes = total;
    for (int k = 0; k <= L; ++k) {
        c.cw.push_back(toSlots(cw[k]));
        c.cbw.push_back(toSlots(cbw[k]));
    }
    for (int k = 0; k < L; ++k) {
        c.fwdTmp.push_back(toSlots(ft[k]));
        c.bwdTmp.push_back(toSlots(bt[k]));
        c.fw.push_back(view.forwardSeconds[k]);
        c.bw.push_back(view.backwardSeconds[k]);
        c.options.push_back({{c.cbw[size_t(k) + 1], c.bwdTmp.back(), 0.0}});
        // Whether a backward sequence reads the stage's input (boundary k - 1).
        auto readsInput = [&](const std::vector<OpId> &seq) {
            if (k == 0)
                return true;
            for (OpId op : seq)
                for (TensorId t : g.op(op).inputs)
                    for (TensorId b : view.boundarySets[size_t(k) - 1])
                        if (t == b)
                            return true;
            return false;
        };
        const bool outputRead = k > 0 && view.backwardNeedsOutput[size_t(k) - 1];
        const bool mayFree =
            freeInputs && view.kind == ChainKind::Articulation && k > 0 && !outputRead;
        c.options.back()[0].freesInput = mayFree && !readsInput(ops.backward[size_t(k)]);
        if (size_t(k) >= ops.options.size())
            continue;
        for (size_t o = 0; o < ops.options[size_t(k)].size(); ++o) {
            const StageOption &so = ops.options[size_t(k)][o];
            const int tape = toSlots(double(so.tapeBytes) + cw[size_t(k) + 1]);
            int transient = toSlots(bt[size_t(k)] + double(so.recomputedPeakBytes));
            if (transients == RotorTransients::Walked) {
                // What the walked backward's peak leaves above the output's gradient and tape.
                const int peak = toSlots(double(so.backwardPeakBytes));
                transient = std::max(0, peak - c.cw[size_t(k) + 1] - tape);
            }
            if (o == 0)
                c.options.back()[0].bwdTmp = transient;
            else
                c.options.back().push_back(
                    {tape, transient, so.recomputeSeconds, mayFree && !readsInput(so.backward)});
        }
    }
    return c;
}

FloatTable::FloatTable(size_t count, float fill) : m_count(count)
{
    constexpr size_t kHuge = size_t(2) << 20;
    const size_t bytes = std::max<size_t>(1, count * sizeof(float));
    if (bytes >= kHuge) {
        const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
        m_data.reset(static_cast<float *>(std::aligned_alloc(kHuge, rounded)));
#ifdef __linux__
        if (m_data)
            madvise(m_data.get(), rounded, MADV_HUGEPAGE);
#endif
    }
    if (!m_data)
        m_data.reset(static_cast<float *>(std::malloc(bytes)));
    if (!m_data)
        throw std::bad_alloc();
    std::fill(m_data.get(), m_data.get() + count, fill);
}

void FloatTable::Free::operator()(float *p) const { std::free(p); }

RotorTable::RotorTable(const RotorChain &c)
    : m_c(c), m_opt(size_t(c.slotCount + 1) * (size_t(c.L) * (c.L + 1) / 2), RotorTable::kInfinity)
{
}

/// Row of pair (i, j), i <= j, packed by length d = j - i; a row holds every memory m, so the DP
/// streams over contiguous memory for a fixed pair.
size_t RotorTable::row(int i, int j) const
{
    const int d = j - i;
    const size_t before = size_t(d) * m_c.L - size_t(d) * (d - 1) / 2;
    return (before + i) * size_t(m_c.slotCount + 1);
}

int RotorTable::leafNeed(int i, const RotorChain::TapeOption &o) const
{
    return m_c.cw[size_t(i) + 1] + o.cbw + std::max(m_c.fwdTmp[size_t(i)], o.bwdTmp);
}

int RotorTable::leafOption(int m, int i) const
{
    const auto &opts = m_c.options[size_t(i)];
    int choice = -1;
    float best = RotorTable::kInfinity;
    for (size_t o = 0; o < opts.size(); ++o) {
        if (m < leafNeed(i, opts[o]))
            continue;
        const float v = float(m_c.fw[size_t(i)] + m_c.bw[size_t(i)] + opts[o].extra);
        if (v < best) {
            best = v;
            choice = int(o);
        }
    }
    return choice;
}

/// The choice behind opt(m, i, j) for i < j. Not stored: re-evaluated in the table's order (the
/// first strictly better choice wins), with the same float expressions, so it names the value
/// the table holds.
RotorTable::Choice RotorTable::what(int m, int i, int j) const
{
    const RotorChain &c = m_c;
    float best = RotorTable::kInfinity;
    Choice choice;
    const auto &opts = c.options[size_t(i)];
    for (size_t o = 0; o < opts.size(); ++o) {
        const int shift = opts[o].shift(c.cw[size_t(i)]);
        if (m < opts[o].cbw || m < shift || m < leafNeed(i, opts[o]))
            continue;
        const float here = float(c.fw[i] + c.bw[i] + opts[o].extra);
        const float v = here + opt(m - shift, i + 1, j);
        if (v < best) {
            best = v;
            choice = {-1, int(o)};
        }
    }
    double ahead = 0;
    for (int k = i + 1; k <= j; ++k) {
        ahead += c.fw[k - 1];
        if (m < c.cw[k])
            continue;
        const float v = float(ahead) + opt(m - c.cw[k], k, j) + opt(m, i, k - 1);
        if (v < best) {
            best = v;
            choice = {k, -1};
        }
    }
    return choice;
}

bool RotorTable::compute(const StopToken &stop, const std::function<bool()> &giveUp)
{
    const RotorChain &c = m_c;
    const int slots = c.slotCount;
    for (int i = 0; i < c.L; ++i) {
        float *o = &m_opt.data()[row(i, i)];
        for (const RotorChain::TapeOption &t : c.options[size_t(i)]) {
            const float v = float(c.fw[i] + c.bw[i] + t.extra);
            for (int m = std::max(0, leafNeed(i, t)); m <= slots; ++m)
                o[m] = std::min(o[m], v);
        }
    }
    for (int d = 1; d < c.L; ++d) {
        if (stop.stopRequested() || (giveUp && giveUp()))
            return false;
        for (int i = 0; i + d < c.L; ++i) {
            const int j = i + d;
            int mmin = c.cw[j + 1] + c.cw[i + 1] + c.fwdTmp[i];
            for (int k = i + 1; k < j; ++k)
                mmin = std::max(mmin, c.cw[j + 1] + c.cw[k] + c.cw[k + 1] + c.fwdTmp[k]);
            mmin = std::max(mmin, 0);
            if (mmin > slots)
                continue;
            float *__restrict best = &m_opt.data()[row(i, j)];
            // Keep the tape of stage i (or one of its options), solve i+1..j, then stage i's
            // backward (where stage i alone fits with that option).
            for (const RotorChain::TapeOption &t : c.options[size_t(i)]) {
                const float *rest = &m_opt.data()[row(i + 1, j)];
                const float here = float(c.fw[i] + c.bw[i] + t.extra);
                const int shift = t.shift(c.cw[size_t(i)]);
                minKeepTape(best, rest, here, shift, std::max({mmin, t.cbw, shift, leafNeed(i, t)}),
                            slots);
            }
            // Keep only stage i's input, run forward to k, keep x_k, solve k..j, redo i..k-1.
            double ahead = 0;
            for (int k = i + 1; k <= j; ++k) {
                ahead += c.fw[k - 1];
                const float a = float(ahead);
                const float *__restrict right = &m_opt.data()[row(k, j)];
                const float *__restrict left = &m_opt.data()[row(i, k - 1)];
                const int shift = c.cw[k];
                minPlus(best, right, left, a, shift, std::max(mmin, shift), slots);
            }
        }
    }
    return true;
}

std::vector<OpId> RotorTable::sequence(int m, const StageOps &ops) const
{
    std::vector<OpId> seq;
    bool lossDone = false;
    struct Task
    {
        int kind, m, i, j, option = 0;
    }; // kind 0: solve, 1: backward of stage i with its tape option
    std::vector<Task> stack{{0, m, 0, m_c.L - 1}};
    while (!stack.empty()) {
        const Task t = stack.back();
        stack.pop_back();
        if (t.kind == 1) {
            appendBackward(ops, t.i, &seq, t.option);
            continue;
        }
        if (t.i == t.j) {
            appendForward(ops, t.i, &seq, &lossDone);
            appendBackward(ops, t.i, &seq, std::max(0, leafOption(t.m, t.i)));
            continue;
        }
        const Choice choice = what(t.m, t.i, t.j);
        if (choice.checkpoint < 0) {
            const int o = std::max(0, choice.option);
            appendForward(ops, t.i, &seq, &lossDone);
            stack.push_back({1, 0, t.i, t.i, o});
            const RotorChain::TapeOption &tape = m_c.options[size_t(t.i)][size_t(o)];
            stack.push_back({0, t.m - tape.shift(m_c.cw[size_t(t.i)]), t.i + 1, t.j});
        } else {
            for (int a = t.i; a < choice.checkpoint; ++a)
                appendForward(ops, a, &seq, &lossDone);
            stack.push_back({0, t.m, t.i, choice.checkpoint - 1});
            stack.push_back({0, t.m - m_c.cw[choice.checkpoint], choice.checkpoint, t.j});
        }
    }
    return seq;
}

} // namespace remat::core::solvers
