#include "core/training/gradient_rules.h"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>

namespace remat::core::training {

const ir::Value *RuleContext::input(size_t pos) const
{
    if (pos >= node->inputs.size() || !node->inputs[pos].valid())
        return nullptr;
    return &graph->value(node->inputs[pos]);
}

const ir::Value *RuleContext::output(size_t pos) const
{
    if (pos >= node->outputs.size() || !node->outputs[pos].valid())
        return nullptr;
    return &graph->value(node->outputs[pos]);
}

static int64_t elementsOf(const ir::Value *v)
{
    if (!v)
        return 0;
    auto n = v->shape.numElements();
    return n ? *n : 0;
}

int64_t RuleContext::inputElements(size_t pos) const { return elementsOf(input(pos)); }
int64_t RuleContext::outputElements(size_t pos) const { return elementsOf(output(pos)); }

const ir::TensorConstant *RuleContext::constantInput(size_t pos) const
{
    const ir::Value *v = input(pos);
    if (!v || !v->initializer || v->kind == ir::ValueKind::Parameter || v->kind == ir::ValueKind::Input)
        return nullptr;
    return v->initializer.get();
}

namespace {

using Spec = BackwardSpec;

// ---- differentiability masks -------------------------------------------------------------
bool none(const ir::Node &, size_t) { return false; }
bool all(const ir::Node &, size_t) { return true; }
bool first(const ir::Node &, size_t pos) { return pos == 0; }
bool firstTwo(const ir::Node &, size_t pos) { return pos <= 1; }
bool firstThree(const ir::Node &, size_t pos) { return pos <= 2; }
bool whereData(const ir::Node &, size_t pos) { return pos == 1 || pos == 2; }
bool scatterData(const ir::Node &, size_t pos) { return pos == 0 || pos == 2; }

// ---- helpers -----------------------------------------------------------------------------
double numel(const ir::Value *v) { return double(elementsOf(v)); }

/// Adds `pos` to the gradient inputs when it needs a gradient; returns whether it did.
bool wantGrad(const RuleContext &c, Spec &s, int pos)
{
    if (!c.needs(size_t(pos)))
        return false;
    s.gradInputs.push_back(pos);
    return true;
}

void saveInput(Spec &s, int pos)
{
    if (std::find(s.savedInputs.begin(), s.savedInputs.end(), pos) == s.savedInputs.end())
        s.savedInputs.push_back(pos);
}

void saveOutput(Spec &s, int pos)
{
    if (std::find(s.savedOutputs.begin(), s.savedOutputs.end(), pos) == s.savedOutputs.end())
        s.savedOutputs.push_back(pos);
}

/// Gradients for every differentiable input that needs one.
void gradsForAll(const RuleContext &c, Spec &s)
{
    for (size_t i = 0; i < c.node->inputs.size(); ++i)
        wantGrad(c, s, int(i));
}

/// Elementwise op: `fwd` FLOPs per output element forward, `bwd` per element and gradient.
Spec elementwise(const RuleContext &c, double fwd, double bwd)
{
    Spec s;
    gradsForAll(c, s);
    const double n = numel(c.output(0));
    s.forwardFlops = fwd * n;
    s.backwardFlops = bwd * n * double(s.gradInputs.size());
    return s;
}

// ---- rules -------------------------------------------------------------------------------
Expected<Spec> noGradient(const RuleContext &c)
{
    Spec s;
    s.forwardFlops = numel(c.output(0));
    return s;
}

Expected<Spec> layoutOnly(const RuleContext &c)
{
    // Reshape, Transpose, Slice, Concat, Pad ...: data movement; the backward needs shapes only.
    Spec s;
    gradsForAll(c, s);
    s.backwardFlops = 0;
    (void)c;
    return s;
}

Expected<Spec> addLike(const RuleContext &c) { return elementwise(c, 1, 1); }

Expected<Spec> mul(const RuleContext &c)
{
    Spec s = elementwise(c, 1, 1);
    // d(a*b)/da = b, d/db = a: each input's gradient reads the other operand.
    if (c.needs(0))
        saveInput(s, 1);
    if (c.needs(1))
        saveInput(s, 0);
    return s;
}

Expected<Spec> div(const RuleContext &c)
{
    Spec s = elementwise(c, 1, 2);
    if (c.needs(0))
        saveInput(s, 1);
    if (c.needs(1)) { // -g * a / b^2
        saveInput(s, 0);
        saveInput(s, 1);
    }
    return s;
}

Expected<Spec> pow(const RuleContext &c)
{
    Spec s = elementwise(c, 4, 4);
    if (c.needs(0)) {
        saveInput(s, 0);
        saveInput(s, 1);
    }
    if (c.needs(1)) { // g * y * ln(a)
        saveInput(s, 0);
        saveOutput(s, 0);
    }
    return s;
}

Expected<Spec> savesOutput(const RuleContext &c)
{
    Spec s = elementwise(c, 1, 2);
    if (!s.gradInputs.empty())
        saveOutput(s, 0);
    return s;
}

Expected<Spec> clip(const RuleContext &c)
{
    // hardtanh saves its input. torchvision 0.14 builds ReLU6 through Conv2dNormActivation without
    // `inplace`, so the input (the BN output) and the result are two storages, both kept.
    Spec s = elementwise(c, 2, 1);
    if (!s.gradInputs.empty())
        saveInput(s, 0);
    return s;
}

Expected<Spec> savesInput(const RuleContext &c)
{
    Spec s = elementwise(c, 4, 6);
    if (!s.gradInputs.empty())
        saveInput(s, 0);
    return s;
}

Expected<Spec> softmax(const RuleContext &c)
{
    Spec s = elementwise(c, 5, 4);
    if (!s.gradInputs.empty())
        saveOutput(s, 0);
    return s;
}

Expected<Spec> lrn(const RuleContext &c)
{
    const double size = double(c.node->attrInt("size", 5));
    Spec s = elementwise(c, size + 4, 2 * size + 6);
    if (!s.gradInputs.empty()) {
        saveInput(s, 0);
        saveOutput(s, 0);
    }
    return s;
}

Expected<Spec> reduction(const RuleContext &c)
{
    Spec s;
    gradsForAll(c, s);
    s.forwardFlops = numel(c.input(0));
    s.backwardFlops = s.gradInputs.empty() ? 0 : numel(c.input(0));
    return s;
}

Expected<Spec> conv(const RuleContext &c)
{
    const ir::Value *w = c.input(1);
    const ir::Value *y = c.output(0);
    if (!w || !y || w->shape.rank() < 2 || !w->shape.isStatic())
        return makeError(StatusCode::InvalidArgument, "Conv needs a weight with a static shape");
    const int64_t cout = w->shape.dims[0].value;
    const double macs = cout > 0 ? numel(y) * (numel(w) / double(cout)) : 0;
    Spec s;
    s.forwardFlops = 2 * macs;
    if (wantGrad(c, s, 0)) { // dX = dY (*) W^T
        saveInput(s, 1);
        s.backwardFlops += 2 * macs;
    }
    if (wantGrad(c, s, 1)) { // dW = X (*) dY
        saveInput(s, 0);
        s.backwardFlops += 2 * macs;
    }
    if (wantGrad(c, s, 2))
        s.backwardFlops += numel(y);
    return s;
}

Expected<Spec> gemm(const RuleContext &c)
{
    const ir::Value *a = c.input(0), *y = c.output(0);
    if (!a || !y || a->shape.rank() != 2)
        return makeError(StatusCode::InvalidArgument, "Gemm needs a 2-D A");
    const bool transA = c.node->attrInt("transA", 0) != 0;
    const int64_t k = transA ? a->shape.dims[0].value : a->shape.dims[1].value;
    const double macs = numel(y) * double(k);
    Spec s;
    s.forwardFlops = 2 * macs;
    if (wantGrad(c, s, 0)) {
        saveInput(s, 1);
        s.backwardFlops += 2 * macs;
    }
    if (wantGrad(c, s, 1)) {
        saveInput(s, 0);
        s.backwardFlops += 2 * macs;
    }
    if (wantGrad(c, s, 2))
        s.backwardFlops += numel(y);
    return s;
}

Expected<Spec> matmul(const RuleContext &c)
{
    const ir::Value *a = c.input(0), *y = c.output(0);
    if (!a || !y || a->shape.rank() < 1)
        return makeError(StatusCode::InvalidArgument, "MatMul needs a ranked A");
    const int64_t k = a->shape.dims.back().value;
    const double macs = numel(y) * double(k);
    Spec s;
    s.forwardFlops = 2 * macs;
    if (wantGrad(c, s, 0)) {
        saveInput(s, 1);
        s.backwardFlops += 2 * macs;
    }
    if (wantGrad(c, s, 1)) {
        saveInput(s, 0);
        s.backwardFlops += 2 * macs;
    }
    return s;
}

/// Per-channel float32 statistics [C] of an NC... input.
ir::Shape channelShape(const ir::Value *x)
{
    return ir::Shape::fromStatic({x && x->shape.rank() >= 2 ? x->shape.dims[1].value : 1});
}

bool batchNormTraining(const RuleContext &c)
{
    // training_mode exists from opset 14; torch exports training graphs with it set to 1.
    return c.node->attrInt("training_mode", 0) != 0;
}

Expected<Spec> batchNorm(const RuleContext &c)
{
    const ir::Value *x = c.input(0);
    Spec s;
    gradsForAll(c, s);
    const double n = numel(x);
    s.forwardFlops = 8 * n;
    if (s.gradInputs.empty())
        return s;
    s.backwardFlops = 10 * n;
    if (batchNormTraining(c)) {
        s.extras.push_back({3, "saved_mean", ir::DataType::Float, channelShape(x)});
        s.extras.push_back({4, "saved_inv_std", ir::DataType::Float, channelShape(x)});
        saveInput(s, 0);
        saveInput(s, 1);
        saveOutput(s, 3);
        saveOutput(s, 4);
    } else {
        // Inference statistics: dX = dY * scale / sqrt(var + eps); dScale needs X and the mean.
        saveInput(s, 1);
        saveInput(s, 4);
        if (c.needs(1)) {
            saveInput(s, 0);
            saveInput(s, 3);
        }
    }
    return s;
}

Expected<Spec> layerNorm(const RuleContext &c)
{
    const ir::Value *x = c.input(0);
    if (!x || !x->shape.isStatic())
        return makeError(StatusCode::InvalidArgument, "LayerNormalization needs a static input shape");
    Spec s;
    gradsForAll(c, s);
    const double n = numel(x);
    s.forwardFlops = 8 * n;
    if (s.gradInputs.empty())
        return s;
    s.backwardFlops = 12 * n;
    int64_t axis = c.node->attrInt("axis", -1);
    const int64_t rank = int64_t(x->shape.rank());
    if (axis < 0)
        axis += rank;
    std::vector<int64_t> statDims = x->shape.sizes();
    for (int64_t d = std::clamp<int64_t>(axis, 0, rank); d < rank; ++d)
        statDims[size_t(d)] = 1;
    const auto stash = static_cast<ir::DataType>(c.node->attrInt("stash_type", 1));
    s.extras.push_back({1, "mean", stash, ir::Shape::fromStatic(statDims)});
    s.extras.push_back({2, "inv_std_dev", stash, ir::Shape::fromStatic(statDims)});
    saveInput(s, 0);
    saveInput(s, 1);
    saveOutput(s, 1);
    saveOutput(s, 2);
    return s;
}

double kernelVolume(const RuleContext &c)
{
    double k = 1;
    for (int64_t d : c.node->attrInts("kernel_shape"))
        k *= double(d);
    return k;
}

Expected<Spec> maxPool(const RuleContext &c)
{
    Spec s;
    gradsForAll(c, s);
    const ir::Value *y = c.output(0);
    s.forwardFlops = numel(y) * kernelVolume(c);
    if (s.gradInputs.empty())
        return s;
    s.backwardFlops = numel(y);
    s.extras.push_back({1, "indices", ir::DataType::Int64, y ? y->shape : ir::Shape()});
    saveInput(s, 0);
    saveOutput(s, 1);
    return s;
}

Expected<Spec> averagePool(const RuleContext &c)
{
    Spec s;
    gradsForAll(c, s);
    s.forwardFlops = numel(c.output(0)) * kernelVolume(c);
    if (s.gradInputs.empty())
        return s;
    s.backwardFlops = numel(c.output(0)) * kernelVolume(c);
    saveInput(s, 0); // only its shape is needed, but PyTorch's avg_pool2d keeps the input
    return s;
}

Expected<Spec> globalAveragePool(const RuleContext &c)
{
    // Only the input's shape is needed, but PyTorch keeps the input of adaptive_avg_pool2d
    // (measured: mobilenet_v2's last ReLU6 output is saved, and nothing else reads it).
    Spec s = *reduction(c);
    if (!s.gradInputs.empty())
        saveInput(s, 0);
    return s;
}

bool dropoutActive(const RuleContext &c)
{
    const ir::Node &n = *c.node;
    if (c.graph->info().opsetVersion > 0 && c.graph->info().opsetVersion < 12) {
        // Old Dropout: a `ratio` attribute; it drops when the graph asks for the mask.
        return n.attrFloat("ratio", 0.5) > 0 && n.outputs.size() > 1 && n.outputs[1].valid();
    }
    double ratio = 0.5;
    if (c.input(1)) {
        ratio = 0.5;
        if (const ir::TensorConstant *r = c.constantInput(1)) {
            auto v = r->toFloats();
            if (v && !v->empty())
                ratio = (*v)[0];
        }
    }
    bool training = false; // opset >= 12 without training_mode: inference, the identity
    if (c.input(2)) {
        training = true;   // not a constant: assume it may be on
        if (const ir::TensorConstant *t = c.constantInput(2)) {
            auto v = t->toInt64s();
            training = v && !v->empty() && (*v)[0] != 0;
        }
    }
    return training && ratio > 0;
}

Expected<Spec> dropout(const RuleContext &c)
{
    Spec s;
    gradsForAll(c, s);
    const double n = numel(c.input(0));
    s.forwardFlops = dropoutActive(c) ? 2 * n : 0;
    if (s.gradInputs.empty() || !dropoutActive(c))
        return s;
    s.backwardFlops = n;
    s.extras.push_back({1, "mask", ir::DataType::Bool, c.input(0)->shape});
    saveOutput(s, 1);
    return s;
}

Expected<Spec> gather(const RuleContext &c)
{
    Spec s;
    gradsForAll(c, s);
    if (!s.gradInputs.empty()) {
        saveInput(s, 1); // the scatter back needs the indices
        s.backwardFlops = numel(c.output(0));
    }
    return s;
}

Expected<Spec> scatterND(const RuleContext &c)
{
    Spec s;
    gradsForAll(c, s);
    s.forwardFlops = numel(c.input(2));
    if (!s.gradInputs.empty()) {
        saveInput(s, 1);
        s.backwardFlops = numel(c.input(0));
    }
    return s;
}

Expected<Spec> where(const RuleContext &c)
{
    Spec s = elementwise(c, 1, 1);
    if (!s.gradInputs.empty())
        saveInput(s, 0);
    return s;
}

Expected<Spec> modRule(const RuleContext &c)
{
    // d(a mod b)/da = 1 almost everywhere; b gets no gradient.
    return elementwise(c, 2, 0);
}

Expected<Spec> sum(const RuleContext &c)
{
    Spec s;
    gradsForAll(c, s);
    s.forwardFlops = numel(c.output(0)) * double(std::max<size_t>(1, c.node->inputs.size()) - 1);
    return s;
}

bool castDifferentiable(const ir::Node &node, size_t pos)
{
    return pos == 0 && ir::isFloatingPoint(static_cast<ir::DataType>(node.attrInt("to", 0)));
}

std::vector<GradientRule> makeTable()
{
    std::vector<GradientRule> t = {
        {"Add", all, addLike},
        {"AveragePool", first, averagePool},
        {"BatchNormalization", firstThree, batchNorm},
        {"Cast", castDifferentiable, layoutOnly},
        {"Clip", first, clip},
        {"Concat", all, layoutOnly},
        {"Constant", none, noGradient},
        {"ConstantOfShape", none, noGradient},
        {"Conv", firstThree, conv},
        {"Div", firstTwo, div},
        {"Dropout", first, dropout},
        {"Equal", none, noGradient},
        {"Erf", first, savesInput},
        {"Expand", first, reduction},
        {"Flatten", first, layoutOnly},
        {"Gather", first, gather},
        {"Gelu", first, savesInput},
        {"Gemm", firstThree, gemm},
        {"GlobalAveragePool", first, globalAveragePool},
        {"HardSigmoid", first, savesInput},
        {"HardSwish", first, savesInput},
        {"Identity", first, layoutOnly},
        {"LRN", first, lrn},
        {"LayerNormalization", firstThree, layerNorm},
        {"MatMul", firstTwo, matmul},
        {"MaxPool", first, maxPool},
        {"Mod", first, modRule},
        {"Mul", firstTwo, mul},
        {"Not", none, noGradient},
        {"Pad", first, layoutOnly},
        {"Pow", firstTwo, pow},
        {"Range", none, noGradient},
        {"ReduceMean", first, reduction},
        {"ReduceSum", first, reduction},
        {"Relu", first, savesOutput},
        {"Reshape", first, layoutOnly},
        {"Resize", first, layoutOnly},
        {"ScatterND", scatterData, scatterND},
        {"Shape", none, noGradient},
        {"Sigmoid", first, savesOutput},
        {"Slice", first, layoutOnly},
        {"Softmax", first, softmax},
        {"Split", first, layoutOnly},
        {"Sqrt", first, savesOutput},
        {"Squeeze", first, layoutOnly},
        {"Sub", all, addLike},
        {"Sum", all, sum},
        {"Tanh", first, savesOutput},
        {"Transpose", first, layoutOnly},
        {"Trilu", first, layoutOnly},
        {"Unsqueeze", first, layoutOnly},
        {"Where", whereData, where},
    };
    std::sort(t.begin(), t.end(), [](const GradientRule &a, const GradientRule &b) {
        return std::strcmp(a.opType, b.opType) < 0;
    });
    return t;
}

} // namespace

bool dropoutDrops(const ir::Graph &graph, const ir::Node &node)
{
    RuleContext c;
    c.graph = &graph;
    c.node = &node;
    return dropoutActive(c);
}

const std::vector<GradientRule> &gradientRules()
{
    static const std::vector<GradientRule> table = makeTable();
    return table;
}

const GradientRule *findGradientRule(const std::string &opType)
{
    const auto &t = gradientRules();
    auto it = std::lower_bound(t.begin(), t.end(), opType, [](const GradientRule &r, const std::string &key) {
        return std::strcmp(r.opType, key.c_str()) < 0;
    });
    if (it == t.end() || opType != it->opType)
        return nullptr;
    return &*it;
}

} // namespace remat::core::training
