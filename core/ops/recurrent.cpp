#include "core/ops/recurrent.h"

#include "core/ir/graph.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

namespace remat::core::ops {
namespace {

Status fail(RecurrentKind kind, const std::string &what)
{
    const char *name =
        kind == RecurrentKind::Lstm ? "LSTM" : (kind == RecurrentKind::Gru ? "GRU" : "RNN");
    return makeError(StatusCode::InvalidArgument, fmt::format("{}: {}", name, what));
}

struct ActName
{
    const char *name;
    rnn::Act kind;
    bool usesAlpha, usesBeta;
    float alpha, beta; ///< ONNX's defaults
};

constexpr ActName kActivations[] = {
    {"sigmoid", rnn::Act::Sigmoid, false, false, 0, 0},
    {"tanh", rnn::Act::Tanh, false, false, 0, 0},
    {"relu", rnn::Act::Relu, false, false, 0, 0},
    {"affine", rnn::Act::Affine, true, true, 1.f, 0.f},
    {"leakyrelu", rnn::Act::LeakyRelu, true, false, 0.01f, 0},
    {"thresholdedrelu", rnn::Act::ThresholdedRelu, true, false, 1.f, 0},
    {"scaledtanh", rnn::Act::ScaledTanh, true, true, 1.f, 1.f},
    {"hardsigmoid", rnn::Act::HardSigmoid, true, true, 0.2f, 0.5f},
    {"elu", rnn::Act::Elu, true, false, 1.f, 0},
    {"softsign", rnn::Act::Softsign, false, false, 0, 0},
    {"softplus", rnn::Act::Softplus, false, false, 0, 0},
};

} // namespace

RecurrentKind recurrentKind(const std::string &opType)
{
    return opType == "LSTM" ? RecurrentKind::Lstm
                            : (opType == "GRU" ? RecurrentKind::Gru : RecurrentKind::Rnn);
}

Expected<RecurrentConfig> recurrentConfig(const ir::Node *node, RecurrentKind kind,
                                          const std::vector<int64_t> &x,
                                          const std::vector<int64_t> &w,
                                          const std::vector<int64_t> &r)
{
    RecurrentConfig c;
    c.kind = kind;
    c.gates = kind == RecurrentKind::Lstm ? 4 : (kind == RecurrentKind::Gru ? 3 : 1);
    const std::string direction =
        node ? node->attrString("direction", "forward") : std::string("forward");
    if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
        return fail(kind,
                    fmt::format("direction '{}' (forward, reverse or bidirectional)", direction));
    c.directions = direction == "bidirectional" ? 2 : 1;
    c.reverse = direction == "reverse";
    c.batchFirst = node && node->attrInt("layout", 0) != 0;
    if (x.size() != 3 || w.size() != 3 || r.size() != 3)
        return fail(kind, "X, W and R must have rank 3");
    c.seq = c.batchFirst ? x[1] : x[0];
    c.batch = c.batchFirst ? x[0] : x[1];
    c.input = x[2];
    c.hidden = node ? node->attrInt("hidden_size", r[2]) : r[2];
    if (w[0] != c.directions || r[0] != c.directions || w[1] != c.gates * c.hidden ||
        w[2] != c.input || r[1] != c.gates * c.hidden || r[2] != c.hidden)
        return fail(
            kind, fmt::format(
                      "W [{}] and R [{}] do not fit {} direction(s), hidden_size {}, input size {}",
                      fmt::join(w, ","), fmt::join(r, ","), c.directions, c.hidden, c.input));
    // Activations: per direction f (RNN), f g (GRU) or f g h (LSTM); alpha / beta are consumed in
    // order by the activations that take them (as ONNX Runtime reads the lists).
    const size_t per = kind == RecurrentKind::Lstm ? 3 : (kind == RecurrentKind::Gru ? 2 : 1);
    std::vector<std::string> names;
    std::vector<double> alphas, betas;
    if (node) {
        if (const ir::Attribute *a = node->attribute("activations"); a && a->isStrings())
            names = a->strings();
        if (const ir::Attribute *a = node->attribute("activation_alpha"); a && a->isFloats())
            alphas = a->floats();
        if (const ir::Attribute *a = node->attribute("activation_beta"); a && a->isFloats())
            betas = a->floats();
    }
    if (names.empty()) {
        for (int64_t d = 0; d < c.directions; ++d) {
            if (kind == RecurrentKind::Rnn)
                names.push_back("Tanh");
            else {
                names.push_back("Sigmoid");
                names.push_back("Tanh");
                if (kind == RecurrentKind::Lstm)
                    names.push_back("Tanh");
            }
        }
    }
    if (names.size() == per && c.directions == 2) // one list for both directions
        names.insert(names.end(), names.begin(), names.end());
    if (names.size() != per * size_t(c.directions))
        return fail(kind, fmt::format("{} activations given, {} expected ({} per direction)",
                                      names.size(), per * size_t(c.directions), per));
    size_t ai = 0, bi = 0;
    std::vector<rnn::Activation> acts;
    for (const std::string &n : names) {
        std::string lower = n;
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](unsigned char ch) { return char(std::tolower(ch)); });
        const auto it = std::find_if(std::begin(kActivations), std::end(kActivations),
                                     [&](const ActName &a) { return lower == a.name; });
        if (it == std::end(kActivations))
            return fail(
                kind,
                fmt::format(
                    "activation '{}' is not one ONNX allows (Sigmoid, Tanh, Relu, Affine, "
                    "LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)",
                    n));
        rnn::Activation a{it->kind, it->alpha, it->beta};
        if (it->usesAlpha && ai < alphas.size())
            a.alpha = float(alphas[ai++]);
        if (it->usesBeta && bi < betas.size())
            a.beta = float(betas[bi++]);
        acts.push_back(a);
    }
    const float clip = node ? float(node->attrFloat("clip", 0.0)) : 0.f;
    if (clip < 0)
        return fail(kind, "clip must be positive");
    for (int64_t d = 0; d < c.directions; ++d) {
        rnn::CellParams &p = c.cell[d];
        p.f = acts[size_t(d) * per];
        if (per > 1)
            p.g = acts[size_t(d) * per + 1];
        if (per > 2)
            p.h = acts[size_t(d) * per + 2];
        p.clip = clip;
        p.hidden = c.hidden;
        p.inputForget =
            kind == RecurrentKind::Lstm && node && node->attrInt("input_forget", 0) != 0;
        p.linearBeforeReset =
            kind == RecurrentKind::Gru && node && node->attrInt("linear_before_reset", 0) != 0;
    }
    return c;
}

std::vector<SavedStateSpec> recurrentSavedState(const RecurrentConfig &c)
{
    const int64_t T = c.seq, D = c.directions, B = c.batch, H = c.hidden;
    switch (c.kind) {
    case RecurrentKind::Rnn: return {{2, "hidden", {T + 1, D, B, H}}};
    case RecurrentKind::Gru:
        return {{2, "hidden_in", {T, D, B, H}},
                {3, "gates", {T, D, B, 3 * H}},
                {4, "hidden_linear", {T, D, B, H}},
                {5, "new_gate", {T, D, B, H}},
                {6, "hidden_minus_new", {T, D, B, H}}};
    case RecurrentKind::Lstm:
        return {{3, "hidden_in", {T, D, B, H}},
                {4, "cell_in", {T, D, B, H}},
                {5, "gates", {T, D, B, 4 * H}},
                {6, "cell_act", {T, D, B, H}}};
    }
    return {};
}

} // namespace remat::core::ops
