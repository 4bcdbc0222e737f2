// Recurrent ops (onnx/defs/rnn): RNN, GRU, LSTM. Their attributes are resolved in recurrent.cpp
// (shared with the kernels); here are the shape function and the gradient rule.
#include "core/ops/autocast_composite.h"
#include "core/ops/families.h"
#include "core/ops/recurrent.h"
#include "core/ops/shape_context.h"

#include <algorithm>

namespace remat::core::ops {
namespace {

using namespace rules;

Status recurrentShape(ShapeContext &c)
{
    const Shape *x = c.inShape(0);
    const Shape *w = c.inShape(1);
    const Shape *r = c.inShape(2);
    if (!x || x->rank() != 3)
        return Status::ok();
    const RecurrentKind kind = recurrentKind(c.node.opType);
    const int64_t gates = kind == RecurrentKind::Lstm ? 4 : (kind == RecurrentKind::Gru ? 3 : 1);
    const std::string direction = c.node.attrString("direction", "forward");
    if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
        return c.fail("direction '" + direction + "' (forward, reverse or bidirectional)");
    const Dim dirs(direction == "bidirectional" ? 2 : 1);
    Dim hidden;
    if (const int64_t h = c.node.attrInt("hidden_size", 0); h > 0)
        hidden = Dim(h);
    else if (r && r->rank() == 3 && r->dims[2].isStatic())
        hidden = r->dims[2];
    else if (w && w->rank() == 3 && w->dims[1].isStatic())
        hidden = Dim(w->dims[1].value / gates);
    const bool batchFirst = c.node.attrInt("layout", 0) != 0;
    const Dim seq = batchFirst ? x->dims[1] : x->dims[0];
    const Dim batch = batchFirst ? x->dims[0] : x->dims[1];
    const DataType t = c.inType(0);
    c.set(0, t, batchFirst ? Shape({batch, seq, dirs, hidden}) : Shape({seq, dirs, batch, hidden}));
    const Shape state = batchFirst ? Shape({batch, dirs, hidden}) : Shape({dirs, batch, hidden});
    c.set(1, t, state);
    if (kind == RecurrentKind::Lstm)
        c.set(2, t, state);
    return Status::ok();
}

bool recurrentDifferentiable(const ir::Node &, size_t pos) { return pos != 4; } // not sequence_lens

Expected<Spec> recurrent(const RuleContext &c)
{
    const ir::Value *x = c.input(0), *w = c.input(1), *r = c.input(2);
    if (!x || !w || !r || !x->shape.isStatic() || !w->shape.isStatic() || !r->shape.isStatic())
        return makeError(StatusCode::InvalidArgument,
                         c.node->opType + " needs X, W and R with static shapes (give the free "
                                          "dims with --dim or --input-shape)");
    auto cfg = recurrentConfig(c.node, recurrentKind(c.node->opType), x->shape.sizes(),
                               w->shape.sizes(), r->shape.sizes());
    if (!cfg)
        return cfg.status();
    const double steps = double(cfg->seq * cfg->batch * cfg->directions);
    const double gh = double(cfg->gates * cfg->hidden);
    const double inMacs = steps * gh * double(cfg->input),
                 hidMacs = steps * gh * double(cfg->hidden);
    Spec s;
    s.forwardFlops = 2 * (inMacs + hidMacs) + 8 * steps * gh;
    gradsForAll(c, s);
    if (s.gradInputs.empty())
        return s;
    // The step recursion runs backwards whatever needs a gradient: R and the saved state always.
    for (const SavedStateSpec &e : recurrentSavedState(*cfg)) {
        s.extras.push_back({e.position, e.suffix, x->dtype, ir::Shape::fromStatic(e.shape)});
        saveOutput(s, e.position);
    }
    saveInput(s, 2);
    if (c.needs(0))
        saveInput(s, 1); // dX = dGates W
    if (c.needs(1))
        saveInput(s, 0); // dW = dGates^T X (PyTorch's input projection keeps X)
    if (c.input(4))
        saveInput(s, 4); // sequence_lens
    if (c.input(7))
        saveInput(s, 7); // peepholes
    s.backwardFlops = 2 * hidMacs * 2 + 10 * steps * gh;
    if (c.needs(0))
        s.backwardFlops += 2 * inMacs;
    if (c.needs(1))
        s.backwardFlops += 2 * inMacs;
    return s;
}

// Autocast. torch 1.13 lists no recurrent layer on either device; what happens is below the
// layer.
// - CPU: aten::lstm / gru / rnn_tanh run as ATen's composite (traced under torch 1.13's CPU
//   autocast with a TorchDispatchMode: addmm, sigmoid_, tanh_, mul, add_ per step). Per
//   direction one addmm projects the whole input (X cast to the lower precision once per
//   direction: the casts of an activation are not cached), then per step an addmm of the state
//   (cast each step) by R (cached when it trains, cast each step when frozen: kept from the
//   second step on where the states start as zeros). The gates are
//   lower precision; the states are updated by promotion with the initial ones, which nn.LSTM /
//   nn.GRU make as zeros of the input's dtype: an LSTM's cell and hidden state, a GRU's hidden
//   state and the outputs stay float32, while an Elman RNN's tanh(gates) is lower precision. So
//   of the saved state (recurrent.h) LSTM's hidden_in and gates, GRU's hidden_in, gates,
//   hidden_linear and new_gate are lower precision, LSTM's cell_in and cell_act and GRU's
//   hidden_minus_new take the state's dtype, and all of RNN's is lower precision.
// - CUDA: _cudnn_rnn's autocast wrapper (aten/src/ATen/cudnn/AutocastRNN.cpp) casts the input,
//   the states and a flat copy of the weights to float16 (at::kHalf, whatever autocast's dtype),
//   and cuDNN runs in it: every output and saved tensor is float16.
int64_t directionsOf(const ir::Node *node)
{
    return node && node->attrString("direction", "forward") == "bidirectional" ? 2 : 1;
}

/// Whether the initial state at input `position` starts as zeros: absent, or the exporter's zero
/// constant.
bool zeroState(const AutocastCompositeContext &c, size_t position)
{
    return position >= c.inputs.size() || c.inputs[position] == ir::DataType::Undefined ||
           (position < c.fromConstants.size() && c.fromConstants[position]);
}

ir::DataType recurrentAutocastInput(const AutocastCompositeContext &c, int position, int &copies)
{
    if (c.device == AutocastDevice::Cuda)
        return ir::DataType::Float16;
    switch (position) {
    case 0: copies = int(directionsOf(c.node)); return c.half; // X, once per direction
    case 1: return c.half;                                     // W
    case 2: {                                                  // R, each step unless cached
        const std::vector<int64_t> &x =
            c.inputSizes.empty() ? std::vector<int64_t>{} : c.inputSizes[0];
        const bool batchFirst = c.node && c.node->attrInt("layout", 0) != 0;
        // The first step's product from zero states (absent, or the exporter's zero constant)
        // needs no gradient for the state: its copy of a frozen R is not kept.
        const bool zeroStart = zeroState(c, 5);
        if (x.size() == 3)
            copies = int(std::max<int64_t>(1, (batchFirst ? x[1] : x[0]) - (zeroStart ? 1 : 0)));
        return c.half;
    }
    case 3: return c.half;                   // B
    default: return ir::DataType::Undefined; // the states are read as they are
    }
}

ir::DataType recurrentAutocastOutput(const AutocastCompositeContext &c, int position)
{
    if (c.device == AutocastDevice::Cuda)
        return ir::DataType::Float16;
    const RecurrentKind kind = recurrentKind(c.node ? c.node->opType : std::string());
    if (kind == RecurrentKind::Rnn)
        return c.half;
    // The state nn.LSTM / nn.GRU start from: the initial cell (LSTM) or hidden state (GRU) when
    // given, zeros of X's dtype otherwise (absent, or the exporter's expanded zero constant);
    // promoted with the lower-precision gates. A bfloat16 X (a Linear's output under autocast)
    // makes every state bfloat16.
    const size_t statePos = kind == RecurrentKind::Lstm ? 6 : 5;
    const ir::DataType start = !zeroState(c, statePos) ? c.inputs[statePos]
                               : c.inputs.empty()      ? ir::DataType::Undefined
                                                       : c.inputs[0];
    const ir::DataType state =
        start == c.half || start == ir::DataType::Double ? start : ir::DataType::Float;
    const bool lower = kind == RecurrentKind::Lstm ? (position == 3 || position == 5)
                                                   : (position >= 2 && position <= 5);
    return lower ? c.half : state;
}

const AutocastComposite kRecurrentAutocast{.input = recurrentAutocastInput,
                                           .output = recurrentAutocastOutput};

} // namespace

void addRecurrentOps(std::vector<OpDef> &t)
{
    for (const char *type : {"GRU", "LSTM", "RNN"})
        t.push_back({.type = type,
                     .family = OpFamily::MatrixProduct,
                     .inferShape = recurrentShape,
                     .differentiable = recurrentDifferentiable,
                     .derive = recurrent,
                     .autocast = {.cuda = AutocastPolicy::LowerPrecision,
                                  .cpu = AutocastPolicy::LowerPrecision}});
}

const AutocastComposite *autocastComposite(const std::string &opType)
{
    return opType == "LSTM" || opType == "GRU" || opType == "RNN" ? &kRecurrentAutocast : nullptr;
}

} // namespace remat::core::ops
