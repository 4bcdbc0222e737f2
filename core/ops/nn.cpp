// Neural-network ops (onnx/defs/nn): convolution, matrix products, normalisation, pooling,
// dropout.
#include "core/ops/conv_transpose_geometry.h"
#include "core/ops/einsum.h"
#include "core/ops/families.h"
#include "core/ops/group_norm.h"
#include "core/ops/shape_context.h"

#include <map>

namespace remat::core::ops {
namespace {

using namespace rules;

// ---- shape functions -------------------------------------------------------------------------
Status inferConv(ShapeContext &c, bool transpose)
{
    const Shape *x = c.inShape(0);
    const Shape *w = c.inShape(1);
    if (!x || x->rank() < 3)
        return Status::ok();
    const size_t nsp = x->rank() - 2;
    std::vector<int64_t> kernel = c.node.attrInts("kernel_shape");
    if (kernel.empty() && w && w->rank() == x->rank() && w->isStatic())
        for (size_t i = 0; i < nsp; ++i)
            kernel.push_back(w->dims[2 + i].value);
    if (kernel.size() != nsp)
        return Status::ok();
    const auto strides = c.node.attrInts("strides", std::vector<int64_t>(nsp, 1));
    const auto dil = c.node.attrInts("dilations", std::vector<int64_t>(nsp, 1));
    const auto pads = c.node.attrInts("pads", std::vector<int64_t>(2 * nsp, 0));
    if (strides.size() != nsp || dil.size() != nsp || pads.size() != 2 * nsp)
        return c.fail("strides, dilations or pads do not match the input's rank");
    const std::string autoPad = c.node.attrString("auto_pad", "NOTSET");
    const int64_t group = c.node.attrInt("group", 1);
    Shape out;
    out.dims.push_back(x->dims[0]);
    if (w && w->rank() >= 2)
        out.dims.push_back(transpose
                               ? (w->dims[1].isStatic() ? Dim(w->dims[1].value * group) : Dim())
                               : w->dims[0]);
    else
        out.dims.push_back(Dim());
    if (transpose) {
        // Every spatial size follows from static input sizes and W (auto_pad, output_shape and
        // output_padding resolved as the kernels resolve them); a free input size stays unknown
        // unless output_shape gives it.
        std::vector<int64_t> xs; // a free size stands in as 64 (its output size stays unknown)
        for (const Dim &d : x->dims)
            xs.push_back(d.isStatic() ? d.value : 64);
        if (!w || !w->isStatic() || w->rank() != x->rank())
            return Status::ok();
        if (!x->dims[1].isStatic())
            xs[1] = w->dims[0].value;
        auto g = resolveConvTranspose(&c.node, xs, w->sizes());
        if (!g)
            return c.fail(g.status().message());
        const bool fixedByAttr = !c.node.attrInts("output_shape").empty();
        for (size_t i = 0; i < nsp; ++i)
            out.dims.push_back(x->dims[2 + i].isStatic() || fixedByAttr ? Dim(g->out[i]) : Dim());
    } else {
        for (size_t i = 0; i < nsp; ++i)
            out.dims.push_back(windowDim(x->dims[2 + i], kernel[i], strides[i], dil[i], pads[i],
                                         pads[nsp + i], autoPad, false));
    }
    c.set(0, c.inType(0), out);
    return Status::ok();
}

Status inferPool(ShapeContext &c)
{
    const Shape *x = c.inShape(0);
    if (!x || x->rank() < 3)
        return Status::ok();
    const size_t nsp = x->rank() - 2;
    const auto kernel = c.node.attrInts("kernel_shape");
    if (kernel.size() != nsp)
        return c.fail("kernel_shape does not match the input's rank");
    const auto strides = c.node.attrInts("strides", std::vector<int64_t>(nsp, 1));
    const auto dil = c.node.attrInts("dilations", std::vector<int64_t>(nsp, 1));
    const auto pads = c.node.attrInts("pads", std::vector<int64_t>(2 * nsp, 0));
    if (strides.size() != nsp || dil.size() != nsp || pads.size() != 2 * nsp)
        return c.fail("strides, dilations or pads do not match the input's rank");
    const std::string autoPad = c.node.attrString("auto_pad", "NOTSET");
    const bool ceilMode = c.node.attrInt("ceil_mode", 0) != 0;
    Shape out;
    out.dims = {x->dims[0], x->dims[1]};
    for (size_t i = 0; i < nsp; ++i)
        out.dims.push_back(windowDim(x->dims[2 + i], kernel[i], strides[i], dil[i], pads[i],
                                     pads[nsp + i], autoPad, ceilMode));
    c.set(0, c.inType(0), out);
    c.set(1, DataType::Int64, out); // MaxPool indices
    return Status::ok();
}

Status inferMatMul(ShapeContext &c)
{
    const Shape *a = c.inShape(0);
    const Shape *b = c.inShape(1);
    if (!a || !b || a->rank() == 0 || b->rank() == 0)
        return Status::ok();
    Shape A = *a, B = *b;
    const bool aVec = A.rank() == 1, bVec = B.rank() == 1;
    if (aVec)
        A.dims.insert(A.dims.begin(), Dim(1));
    if (bVec)
        B.dims.push_back(Dim(1));
    const Dim &ka = A.dims[A.rank() - 1];
    const Dim &kb = B.dims[B.rank() - 2];
    if (ka.isStatic() && kb.isStatic() && ka.value != kb.value)
        return c.fail("inner dimensions " + std::to_string(ka.value) + " and " +
                      std::to_string(kb.value) + " differ (" + a->toString() + " x " +
                      b->toString() + ")");
    Shape ba(std::vector<Dim>(A.dims.begin(), A.dims.end() - 2));
    Shape bb(std::vector<Dim>(B.dims.begin(), B.dims.end() - 2));
    auto batch = broadcast({&ba, &bb});
    if (!batch)
        return Status::ok();
    Shape out = *batch;
    if (!aVec)
        out.dims.push_back(A.dims[A.rank() - 2]);
    if (!bVec)
        out.dims.push_back(B.dims[B.rank() - 1]);
    c.set(0, c.inType(0), out);
    return Status::ok();
}

Status inferGemm(ShapeContext &c)
{
    const Shape *a = c.inShape(0);
    const Shape *b = c.inShape(1);
    if (!a || !b)
        return Status::ok();
    if (a->rank() != 2 || b->rank() != 2)
        return c.fail("Gemm needs 2-D inputs, got " + a->toString() + " and " + b->toString());
    const bool ta = c.node.attrInt("transA", 0) != 0, tb = c.node.attrInt("transB", 0) != 0;
    const Dim m = a->dims[ta ? 1 : 0], ka = a->dims[ta ? 0 : 1];
    const Dim kb = b->dims[tb ? 1 : 0], n = b->dims[tb ? 0 : 1];
    if (ka.isStatic() && kb.isStatic() && ka.value != kb.value)
        return c.fail("inner dimensions " + std::to_string(ka.value) + " and " +
                      std::to_string(kb.value) + " differ (" + a->toString() + " x " +
                      b->toString() + ")");
    c.set(0, c.inType(0), Shape({m, n}));
    return Status::ok();
}

Status inferLayerNorm(ShapeContext &c)
{
    const Shape *x = c.inShape(0);
    if (!x)
        return Status::ok();
    c.set(0, c.inType(0), *x);
    const int64_t axis = normAxis(c.node.attrInt("axis", -1), int64_t(x->rank()));
    Shape stat = *x;
    for (size_t i = size_t(std::max<int64_t>(axis, 0)); i < stat.rank(); ++i)
        stat.dims[i] = Dim(1);
    const int64_t stash = c.node.attrInt("stash_type", 1);
    const DataType st =
        ir::isKnownDataType(int32_t(stash)) ? DataType(int32_t(stash)) : DataType::Float;
    c.set(1, st, stat);
    c.set(2, st, stat);
    return Status::ok();
}

Status inferBatchNorm(ShapeContext &c)
{
    const Shape *x = c.inShape(0);
    if (x)
        c.set(0, c.inType(0), *x);
    const Shape *scale = c.inShape(1);
    if (scale)
        for (size_t i = 1; i < c.node.outputs.size(); ++i)
            c.set(i, c.inType(1), *scale);
    return Status::ok();
}

Status convShape(ShapeContext &c) { return inferConv(c, false); }
Status convTransposeShape(ShapeContext &c) { return inferConv(c, true); }

Status globalPoolShape(ShapeContext &c)
{
    const Shape *x = c.inShape(0);
    if (x && x->rank() >= 2) {
        Shape out = *x;
        for (size_t i = 2; i < out.rank(); ++i)
            out.dims[i] = Dim(1);
        c.set(0, c.inType(0), out);
    }
    return Status::ok();
}

Status dropoutShape(ShapeContext &c)
{
    const Shape *x = c.inShape(0);
    if (x) {
        c.set(0, c.inType(0), *x, nullptr);
        c.set(1, DataType::Bool, *x);
    }
    return Status::ok();
}

/// SoftmaxCrossEntropyLoss / NegativeLogLikelihoodLoss: scores [N, C, d...], labels [N, d...];
/// the loss is a scalar, or [N, d...] with reduction none; SoftmaxCrossEntropyLoss's optional
/// log_prob is shaped like the scores.
Status lossShape(ShapeContext &c)
{
    const Shape *x = c.inShape(0);
    if (!x || !x->rankKnown || x->rank() < 2)
        return Status::ok();
    Shape out = Shape::fromStatic({});
    if (c.node.attrString("reduction", "mean") == "none") {
        out = *x;
        out.dims.erase(out.dims.begin() + 1);
    }
    c.set(0, c.inType(0), out);
    if (c.node.opType == "SoftmaxCrossEntropyLoss")
        c.set(1, c.inType(0), *x);
    return Status::ok();
}

/// ConvTranspose: W is [C, M/group, k...]; every input element feeds M/group * prod(k) MACs.
double convTransposeFlops(const RuleContext &c)
{
    const ir::Value *w = c.input(1);
    if (!w || !w->shape.isStatic() || w->shape.rank() < 2)
        return 0;
    double perIn = 1;
    for (size_t i = 1; i < w->shape.rank(); ++i)
        perIn *= double(w->shape.dims[i].value);
    return 2 * numel(c.input(0)) * perIn;
}

// ---- gradient rules --------------------------------------------------------------------------
/// torch's ConvolutionBackward keeps the input and the weight whenever the node exists, unlike
/// mm, which keeps only what the wanted gradients read: a frozen conv weight still keeps the
/// activation it reads, and a modulated kernel (StyleGAN2) is kept even when the image is data.
void keepInputAndWeight(Spec &s)
{
    if (s.gradInputs.empty())
        return;
    saveInput(s, 0);
    saveInput(s, 1);
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
    keepInputAndWeight(s);
    return s;
}

/// ConvTranspose: PyTorch's conv_transpose saves the input and the weight (convolution_backward
/// reads both), whichever needs a gradient, as for Conv.
Expected<Spec> convTranspose(const RuleContext &c)
{
    const ir::Value *w = c.input(1);
    if (!w || w->shape.rank() < 3 || !w->shape.isStatic())
        return makeError(StatusCode::InvalidArgument,
                         "ConvTranspose needs a weight with a static shape");
    const double macs = convTransposeFlops(c) / 2;
    Spec s;
    s.forwardFlops = 2 * macs;
    if (wantGrad(c, s, 0)) { // dX = conv(dY, W)
        saveInput(s, 1);
        s.backwardFlops += 2 * macs;
    }
    if (wantGrad(c, s, 1)) { // dW = X (*) im2col(dY)
        saveInput(s, 0);
        s.backwardFlops += 2 * macs;
    }
    if (wantGrad(c, s, 2))
        s.backwardFlops += numel(c.output(0));
    keepInputAndWeight(s);
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

/// Einsum: the output's dims from the letters' sizes (a static size over 1 wins over a 1 that
/// broadcasts, a symbolic dim is carried as it is).
Status inferEinsum(ShapeContext &c)
{
    std::vector<size_t> ranks;
    std::vector<const Shape *> shapes;
    for (size_t i = 0; i < c.node.inputs.size(); ++i) {
        const Shape *x = c.inShape(i);
        if (!x || !x->rankKnown)
            return Status::ok();
        ranks.push_back(x->rank());
        shapes.push_back(x);
    }
    auto e = parseEinsum(c.node.attrString("equation"), ranks);
    if (!e)
        return c.fail(e.status().message());
    std::map<char, Dim> dim;
    for (size_t t = 0; t < shapes.size(); ++t)
        for (size_t d = 0; d < e->inputs[t].size(); ++d) {
            const char ch = e->inputs[t][d];
            const Dim &n = shapes[t]->dims[d];
            auto it = dim.find(ch);
            if (it == dim.end() || (it->second.isStatic() && it->second.value == 1))
                dim[ch] = n;
            else if (n.isStatic() && it->second.isStatic() && n.value != 1 &&
                     n.value != it->second.value)
                return c.fail(std::string("index '") + ch + "' has sizes " +
                              std::to_string(it->second.value) + " and " + std::to_string(n.value));
        }
    Shape out;
    for (char ch : e->output)
        out.dims.push_back(dim.at(ch));
    c.set(0, c.inType(0), out);
    return Status::ok();
}

/// Einsum (torch.einsum): each operand's gradient is an einsum of dY with the other operands.
/// torch contracts pairwise, left to right (torchEinsumSteps): each bmm or mul keeps its two
/// sides, the left one past the first step being the product so far, a tensor that exists only
/// inside the einsum (an extra output here: linear attention's q . kv before the normaliser).
Expected<Spec> einsum(const RuleContext &c)
{
    std::vector<size_t> ranks;
    std::vector<std::vector<int64_t>> shapes;
    for (size_t i = 0; i < c.node->inputs.size(); ++i) {
        const ir::Value *x = c.input(i);
        if (!x || !x->shape.isStatic())
            return makeError(StatusCode::InvalidArgument, "Einsum needs operands of known shape");
        ranks.push_back(x->shape.rank());
        shapes.push_back(x->shape.sizes());
    }
    REMAT_ASSIGN_OR_RETURN(EinsumEquation e, parseEinsum(c.node->attrString("equation"), ranks));
    REMAT_ASSIGN_OR_RETURN(auto size, einsumSizes(e, shapes));
    double work = 1;
    for (const auto &[ch, n] : size)
        work *= double(n);
    const double perTerm = e.inputs.size() > 1 ? double(e.inputs.size()) : 1.0;
    Spec s;
    s.forwardFlops = perTerm * work;
    for (size_t k = 0; k < e.inputs.size(); ++k) {
        if (!wantGrad(c, s, int(k)))
            continue;
        // (every other operand: what both backends' gradient kernels read)
        for (size_t m = 0; m < e.inputs.size(); ++m)
            if (m != k)
                saveInput(s, int(m));
    }
    if (e.inputs.size() < 3 || s.gradInputs.empty())
        return s;
    // Three or more operands: the product so far, the left side of step i + 1, is kept when
    // operand i + 1 needs a gradient.
    const std::vector<TorchEinsumStep> steps = torchEinsumSteps(e, shapes);
    const ir::Value *y = c.output(0);
    for (size_t k = 0; k + 1 < steps.size(); ++k) {
        if (!c.needs(steps[k + 1].operand))
            continue;
        std::vector<int64_t> dims;
        for (char ch : steps[k].result)
            dims.push_back(size.at(ch));
        const int pos = int(1 + k);
        s.extras.push_back({pos, "einsum_product" + std::to_string(k + 1),
                            y ? y->dtype : ir::DataType::Float, ir::Shape::fromStatic(dims),
                            /*intermediate=*/true});
        saveOutput(s, pos);
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
        return makeError(StatusCode::InvalidArgument,
                         "LayerNormalization needs a static input shape");
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

/// GroupNormalization and InstanceNormalization (core/ops/group_norm.h). PyTorch's group_norm
/// saves the input, the weight and float32 mean and rstd per (sample, group); instance_norm runs
/// batch_norm over the input viewed as [1, N*C, ...] and saves the same with one group per
/// channel, plus its affine weight repeated per sample (N*C floats, not modelled: under 0.1% of
/// the input it normalises). Both statistics are extras at positions 1 and 2 (neither op has
/// ONNX outputs there).
Expected<Spec> groupNorm(const RuleContext &c)
{
    const ir::Value *x = c.input(0), *scale = c.input(1);
    if (!x || !x->shape.isStatic() || !scale || !scale->shape.isStatic())
        return makeError(StatusCode::InvalidArgument,
                         std::string(c.node->opType) + " needs static input and scale shapes");
    auto g = groupNormGeometry(c.node->opType, c.node->attrInt("num_groups", 0), elementsOf(scale),
                               x->shape.sizes());
    if (!g)
        return g.status();
    Spec s;
    gradsForAll(c, s);
    const double n = numel(x);
    s.forwardFlops = 8 * n;
    if (s.gradInputs.empty())
        return s;
    s.backwardFlops = 12 * n;
    const ir::Shape stat = ir::Shape::fromStatic({g->n, g->groups});
    s.extras.push_back({1, "mean", ir::DataType::Float, stat});
    s.extras.push_back({2, "inv_std_dev", ir::DataType::Float, stat});
    saveInput(s, 0);
    saveInput(s, 1);
    saveOutput(s, 1);
    saveOutput(s, 2);
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

Expected<Spec> softmax(const RuleContext &c)
{
    Spec s = elementwise(c, 5, 4);
    if (!s.gradInputs.empty())
        saveOutput(s, 0);
    return s;
}

/// SoftmaxCrossEntropyLoss (F.cross_entropy): log_softmax keeps its result and nll_loss keeps
/// that same tensor, the labels and the class weights; the backward is softmax minus the one-hot
/// label, so the log-probabilities (ONNX's own optional output 1) are what it reads.
Expected<Spec> softmaxCrossEntropy(const RuleContext &c)
{
    if (c.outputHasGrad.size() > 1 && c.outputHasGrad[1])
        return makeError(StatusCode::Unsupported,
                         "the log_prob output of SoftmaxCrossEntropyLoss feeds the loss, and only "
                         "the loss output has a gradient rule; export the model with "
                         "F.log_softmax and F.nll_loss written out");
    Spec s;
    gradsForAll(c, s);
    s.forwardFlops = 6 * numel(c.input(0));
    if (s.gradInputs.empty())
        return s;
    s.extras.push_back({1, "log_prob", c.input(0)->dtype, c.input(0)->shape});
    saveOutput(s, 1);
    saveInput(s, 1);
    if (c.input(2))
        saveInput(s, 2);
    s.backwardFlops = 3 * numel(c.input(0));
    return s;
}

/// NegativeLogLikelihoodLoss (F.nll_loss): autograd keeps the input (only its shape is read),
/// the labels and the class weights; the gradient is minus the weight at each label.
Expected<Spec> negativeLogLikelihood(const RuleContext &c)
{
    Spec s;
    gradsForAll(c, s);
    s.forwardFlops = 2 * numel(c.output(0));
    if (s.gradInputs.empty())
        return s;
    saveInput(s, 0);
    saveInput(s, 1);
    if (c.input(2))
        saveInput(s, 2);
    s.backwardFlops = numel(c.input(0));
    return s;
}

/// WeightNorm (torch.nn.utils.weight_norm: w = g v / ||v||, the norm over every axis but one;
/// not an ONNX op: the builder fuses torch's ReduceL2 / Div / Mul export into it): autograd keeps
/// v, g and the norms (_weight_norm_interface's second output), recomputing v / ||v||.
Expected<Spec> weightNorm(const RuleContext &c)
{
    Spec s;
    gradsForAll(c, s);
    s.forwardFlops = 3 * numel(c.input(0));
    if (s.gradInputs.empty() || !c.input(1))
        return s;
    saveInput(s, 0);
    saveInput(s, 1);
    s.extras.push_back({1, "norm", c.input(0)->dtype, c.input(1)->shape});
    saveOutput(s, 1);
    s.backwardFlops = 5 * numel(c.input(0));
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
        training = true; // not a constant: assume it may be on
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

} // namespace

bool dropoutDrops(const ir::Graph &graph, const ir::Node &node)
{
    RuleContext c;
    c.graph = &graph;
    c.node = &node;
    return dropoutActive(c);
}

namespace {

/// torch 1.13's CPU autocast list has max_pool3d and avg_pool3d (not their 2-D forms) on fp32.
AutocastPolicy pool3dOnCpuFp32(const ir::Node *, size_t rank, AutocastDevice device,
                               AutocastPolicy listed)
{
    return device == AutocastDevice::Cpu && rank == 5 ? AutocastPolicy::Fp32 : listed;
}

} // namespace

void addNnOps(std::vector<OpDef> &t)
{
    t.push_back({.type = "Conv",
                 .family = OpFamily::Convolution,
                 .inferShape = convShape,
                 .differentiable = firstThree,
                 .derive = conv,
                 .autocast = {.cuda = AutocastPolicy::LowerPrecision,
                              .cpu = AutocastPolicy::LowerPrecision}});
    t.push_back(
        {.type = "ConvTranspose",
         .family = OpFamily::Convolution,
         .inferShape = convTransposeShape,
         .differentiable = firstThree,
         .derive = convTranspose,
         .autocast = {.cuda = AutocastPolicy::LowerPrecision, .cpu = AutocastPolicy::Fp32}});
    t.push_back({.type = "Gemm",
                 .family = OpFamily::MatrixProduct,
                 .inferShape = inferGemm,
                 .differentiable = firstThree,
                 .derive = gemm,
                 .autocast = {.cuda = AutocastPolicy::LowerPrecision,
                              .cpu = AutocastPolicy::LowerPrecision}});
    t.push_back({.type = "MatMul",
                 .family = OpFamily::MatrixProduct,
                 .inferShape = inferMatMul,
                 .differentiable = firstTwo,
                 .derive = matmul,
                 .autocast = {.cuda = AutocastPolicy::LowerPrecision,
                              .cpu = AutocastPolicy::LowerPrecision}});
    t.push_back({.type = "Einsum",
                 .family = OpFamily::MatrixProduct,
                 .sinceOpset = 12,
                 .inferShape = inferEinsum,
                 .differentiable = [](const ir::Node &, size_t) { return true; },
                 .derive = einsum,
                 .autocast = {.cuda = AutocastPolicy::LowerPrecision,
                              .cpu = AutocastPolicy::LowerPrecision}});
    t.push_back({.type = "BatchNormalization",
                 .family = OpFamily::Normalisation,
                 .inferShape = inferBatchNorm,
                 .differentiable = firstThree,
                 .derive = batchNorm});
    t.push_back({.type = "LayerNormalization",
                 .family = OpFamily::Normalisation,
                 .sinceOpset = 17,
                 .inferShape = inferLayerNorm,
                 .differentiable = firstThree,
                 .derive = layerNorm,
                 .autocast = {.cuda = AutocastPolicy::Fp32}});
    t.push_back({.type = "LRN",
                 .family = OpFamily::Normalisation,
                 .inferShape = unaryShape,
                 .differentiable = first,
                 .derive = lrn});
    t.push_back({.type = "GroupNormalization",
                 .family = OpFamily::Normalisation,
                 .sinceOpset = 18,
                 .inferShape = unaryShape,
                 .differentiable = firstThree,
                 .derive = groupNorm,
                 .autocast = {.cuda = AutocastPolicy::Fp32}});
    t.push_back({.type = "WeightNorm",
                 .family = OpFamily::Normalisation,
                 .inferShape = unaryShape,
                 .differentiable = firstTwo,
                 .derive = weightNorm});
    t.push_back({.type = "InstanceNormalization",
                 .family = OpFamily::Normalisation,
                 .inferShape = unaryShape,
                 .differentiable = firstThree,
                 .derive = groupNorm});
    t.push_back({.type = "LpNormalization",
                 .family = OpFamily::Normalisation,
                 .inferShape = unaryShape,
                 .flops = fivePerOutput,
                 .autocast = {.cuda = AutocastPolicy::Fp32}});
    t.push_back({.type = "MeanVarianceNormalization",
                 .family = OpFamily::Normalisation,
                 .inferShape = unaryShape,
                 .flops = fivePerOutput});
    t.push_back({.type = "Softmax",
                 .family = OpFamily::Activation,
                 .inferShape = unaryShape,
                 .differentiable = first,
                 .derive = softmax,
                 .autocast = {.cuda = AutocastPolicy::Fp32}});
    t.push_back({.type = "LogSoftmax",
                 .family = OpFamily::Activation,
                 .inferShape = unaryShape,
                 .differentiable = first,
                 .derive = softmax,
                 .autocast = {.cuda = AutocastPolicy::Fp32}});
    t.push_back({.type = "SoftmaxCrossEntropyLoss",
                 .family = OpFamily::Other,
                 .sinceOpset = 12,
                 .inferShape = lossShape,
                 .differentiable = first,
                 .derive = softmaxCrossEntropy,
                 .autocast = {.cuda = AutocastPolicy::Fp32, .cpu = AutocastPolicy::Fp32}});
    t.push_back({.type = "NegativeLogLikelihoodLoss",
                 .family = OpFamily::Other,
                 .sinceOpset = 12,
                 .inferShape = lossShape,
                 .differentiable = first,
                 .derive = negativeLogLikelihood,
                 .autocast = {.cuda = AutocastPolicy::Fp32, .cpu = AutocastPolicy::Fp32}});
    t.push_back({.type = "Hardmax",
                 .family = OpFamily::Activation,
                 .inferShape = unaryShape,
                 .differentiable = OpDef::noInputs, // a one-hot of the arg max: no gradient
                 .flops = perOutput});
    t.push_back({.type = "MaxPool",
                 .family = OpFamily::Pooling,
                 .inferShape = inferPool,
                 .differentiable = first,
                 .derive = maxPool,
                 .autocast = {.refine = pool3dOnCpuFp32}});
    t.push_back({.type = "AveragePool",
                 .family = OpFamily::Pooling,
                 .inferShape = inferPool,
                 .differentiable = first,
                 .derive = averagePool,
                 .autocast = {.refine = pool3dOnCpuFp32}});
    t.push_back({.type = "LpPool",
                 .family = OpFamily::Pooling,
                 .inferShape = inferPool,
                 .flops = perInput});
    t.push_back({.type = "GlobalAveragePool",
                 .family = OpFamily::Pooling,
                 .inferShape = globalPoolShape,
                 .differentiable = first,
                 .derive = globalAveragePool});
    t.push_back({.type = "GlobalMaxPool",
                 .family = OpFamily::Pooling,
                 .inferShape = globalPoolShape,
                 .flops = perInput});
    t.push_back({.type = "GlobalLpPool",
                 .family = OpFamily::Pooling,
                 .inferShape = globalPoolShape,
                 .flops = perInput});
    t.push_back({.type = "Dropout",
                 .family = OpFamily::Dropout,
                 .inferShape = dropoutShape,
                 .differentiable = first,
                 .derive = dropout});
}

} // namespace remat::core::ops
