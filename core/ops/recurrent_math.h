#pragma once
// The cell math of ONNX's recurrent ops (RNN, GRU, LSTM) written once for both backends: the
// activations ONNX allows (with alpha / beta), their derivatives from the activation's output,
// the clip of pre-activations, and one hidden unit's forward and backward per cell type. The CPU
// reference (core/exec/cpu/kernels_recurrent.cpp) loops over them; the CUDA kernels
// (gpu/kernels/recurrent.cu) run one thread per unit. Plain data only: REMAT_HD is
// `__host__ __device__` under nvcc (core/ops/elementwise_math.h).
//   CellParams p = ...;  lstmForward(p, gates, j, cPrev, peep, c, hc, h);
//
// Gate orders are ONNX's: LSTM i, o, f, c (peepholes i, o, f); GRU z, r, h; RNN one gate.

#include "core/ops/elementwise_math.h"

#include <cstdint>

namespace remat::core::ops::rnn {

/// The activation functions ONNX's recurrent ops accept (their names, case as in the spec).
enum class Act : int {
    Sigmoid,
    Tanh,
    Relu,
    Affine,          ///< alpha * x + beta
    LeakyRelu,       ///< alpha (0.01)
    ThresholdedRelu, ///< alpha (1.0)
    ScaledTanh,      ///< alpha * tanh(beta * x) (1, 1)
    HardSigmoid,     ///< max(0, min(1, alpha * x + beta)) (0.2, 0.5)
    Elu,             ///< alpha (1.0)
    Softsign,
    Softplus,
};

struct Activation
{
    Act kind = Act::Sigmoid;
    float alpha = 0, beta = 0;
};

REMAT_HD inline float activate(const Activation &a, float x)
{
    switch (a.kind) {
    case Act::Sigmoid: return 1.f / (1.f + ew::mExp(-x));
    case Act::Tanh: return ew::mTanh(x);
    case Act::Relu: return x > 0 ? x : 0.f;
    case Act::Affine: return a.alpha * x + a.beta;
    case Act::LeakyRelu: return x >= 0 ? x : a.alpha * x;
    case Act::ThresholdedRelu: return x > a.alpha ? x : 0.f;
    case Act::ScaledTanh: return a.alpha * ew::mTanh(a.beta * x);
    case Act::HardSigmoid: {
        const float v = a.alpha * x + a.beta;
        return v < 0 ? 0.f : (v > 1 ? 1.f : v);
    }
    case Act::Elu: return x >= 0 ? x : a.alpha * (ew::mExp(x) - 1.f);
    case Act::Softsign: return x / (1.f + (x < 0 ? -x : x));
    case Act::Softplus: return x > 20 ? x : ew::mLog1p(ew::mExp(x));
    }
    return x;
}

/// d activate / dx written in the activation's output y (every allowed activation is monotone,
/// so y says where x was): what lets the backward read only saved outputs.
REMAT_HD inline float derivative(const Activation &a, float y)
{
    switch (a.kind) {
    case Act::Sigmoid: return y * (1.f - y);
    case Act::Tanh: return 1.f - y * y;
    case Act::Relu: return y > 0 ? 1.f : 0.f;
    case Act::Affine: return a.alpha;
    case Act::LeakyRelu: return y > 0 ? 1.f : a.alpha;
    case Act::ThresholdedRelu: return y > 0 ? 1.f : 0.f;
    case Act::ScaledTanh: return a.alpha != 0 ? a.beta * (a.alpha - y * y / a.alpha) : 0.f;
    case Act::HardSigmoid: return y > 0 && y < 1 ? a.alpha : 0.f;
    case Act::Elu: return y > 0 ? 1.f : y + a.alpha;
    case Act::Softsign: {
        const float m = 1.f - (y < 0 ? -y : y);
        return m * m;
    }
    case Act::Softplus: return 1.f - ew::mExp(-y);
    }
    return 1.f;
}

/// ONNX's clip: pre-activations bounded to [-clip, clip] (clip <= 0: none).
REMAT_HD inline float clipped(float x, float clip)
{
    if (clip <= 0)
        return x;
    return x < -clip ? -clip : (x > clip ? clip : x);
}

/// activate(clip(x)) and its derivative from the output: zero where the clip held x (the output
/// then equals the activation of a bound exactly, as the forward computed it).
REMAT_HD inline float gate(const Activation &a, float x, float clip)
{
    return activate(a, clipped(x, clip));
}
REMAT_HD inline float gateDerivative(const Activation &a, float y, float clip)
{
    if (clip > 0 && (y == activate(a, clip) || y == activate(a, -clip)))
        return 0.f;
    return derivative(a, y);
}

/// One direction's cell settings.
struct CellParams
{
    Activation f, g, h; ///< RNN uses f; GRU f, g; LSTM f, g, h
    float clip = 0;
    int64_t hidden = 0;
    bool inputForget = false;       ///< LSTM: f = 1 - i
    bool linearBeforeReset = false; ///< GRU
};

// ---- LSTM -----------------------------------------------------------------------------------
/// Unit j of one batch row: `gates` holds the 4H pre-activations (X W^T + H R^T + biases, order
/// i o f c) and receives the activated gates; `peep` is P (3H: i o f) or null.
REMAT_HD inline void lstmForward(const CellParams &p, float *gates, int64_t j, float cPrev,
                                 const float *peep, float &c, float &hc, float &h)
{
    const int64_t H = p.hidden;
    float pi = gates[j], po = gates[H + j], pf = gates[2 * H + j];
    if (peep) {
        pi += peep[j] * cPrev;
        pf += peep[2 * H + j] * cPrev;
    }
    const float i = gate(p.f, pi, p.clip);
    const float f = p.inputForget ? 1.f - i : gate(p.f, pf, p.clip);
    const float cc = gate(p.g, gates[3 * H + j], p.clip);
    c = f * cPrev + i * cc;
    if (peep)
        po += peep[H + j] * c;
    const float o = gate(p.f, po, p.clip);
    hc = activate(p.h, c);
    h = o * hc;
    gates[j] = i;
    gates[H + j] = o;
    gates[2 * H + j] = f;
    gates[3 * H + j] = cc;
}

/// Unit j's backward: dh (the hidden state's whole gradient), dc (the cell state's from the step
/// after) in; the 4H pre-activation gradients (dpre), dcPrev and, with peepholes, their three
/// gradients (dPeep: i o f) out.
REMAT_HD inline void lstmBackward(const CellParams &p, const float *gates, int64_t j, float cPrev,
                                  float hc, const float *peep, float dh, float dc, float *dpre,
                                  float &dcPrev, float *dPeep)
{
    const int64_t H = p.hidden;
    const float i = gates[j], o = gates[H + j], f = gates[2 * H + j], cc = gates[3 * H + j];
    const float c = f * cPrev + i * cc;
    const float dpo = dh * hc * gateDerivative(p.f, o, p.clip);
    dc += dh * o * derivative(p.h, hc);
    if (peep)
        dc += dpo * peep[H + j];
    float di = dc * cc;
    const float df = dc * cPrev;
    dcPrev = dc * f;
    float dpf = 0;
    if (p.inputForget)
        di -= df;
    else
        dpf = df * gateDerivative(p.f, f, p.clip);
    const float dpi = di * gateDerivative(p.f, i, p.clip);
    const float dpc = dc * i * gateDerivative(p.g, cc, p.clip);
    if (peep) {
        dcPrev += dpi * peep[j] + dpf * peep[2 * H + j];
        dPeep[0] = dpi * cPrev;
        dPeep[1] = dpo * c;
        dPeep[2] = dpf * cPrev;
    }
    dpre[j] = dpi;
    dpre[H + j] = dpo;
    dpre[2 * H + j] = dpf;
    dpre[3 * H + j] = dpc;
}

// ---- GRU ------------------------------------------------------------------------------------
/// Update and reset gates of unit j: xg / hg hold the 3H input-side / hidden-side
/// pre-activations (biases included; z r h).
REMAT_HD inline void gruGates(const CellParams &p, const float *xg, const float *hg, int64_t j,
                              float &z, float &r)
{
    const int64_t H = p.hidden;
    z = gate(p.f, xg[j] + hg[j], p.clip);
    r = gate(p.f, xg[H + j] + hg[H + j], p.clip);
}

/// The new gate from its input-side pre-activation and the reset-scaled hidden part (with
/// linear_before_reset r * (H Rh^T + Rbh), else (r * H) Rh^T + Rbh), and the next hidden state.
REMAT_HD inline void gruOutput(const CellParams &p, float xn, float scaledHidden, float z,
                               float hPrev, float &n, float &h)
{
    n = gate(p.g, xn + scaledHidden, p.clip);
    h = (1.f - z) * n + z * hPrev;
}

/// Unit j's first backward phase: from dh, the gradients of the z and n pre-activations and the
/// direct part of dhPrev (dh z).
REMAT_HD inline void gruBackwardZN(const CellParams &p, float dh, float z, float n, float hMinusN,
                                   float &dpz, float &dpn, float &dhPrevDirect)
{
    dpz = dh * hMinusN * gateDerivative(p.f, z, p.clip);
    dpn = dh * (1.f - z) * gateDerivative(p.g, n, p.clip);
    dhPrevDirect = dh * z;
}

// ---- RNN ------------------------------------------------------------------------------------
REMAT_HD inline float rnnForward(const CellParams &p, float pre) { return gate(p.f, pre, p.clip); }
REMAT_HD inline float rnnBackward(const CellParams &p, float h, float dh)
{
    return dh * gateDerivative(p.f, h, p.clip);
}

} // namespace remat::core::ops::rnn
