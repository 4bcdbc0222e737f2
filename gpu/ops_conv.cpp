// Convolution through cuDNN (when the build found it): forward, backward data, backward filter,
// with groups, strides, dilations and symmetric pads over 1 to 3 spatial dims. Algorithms are
// picked from cuDNN's heuristics: deterministic, non-transform ones whose workspace fits the op's
// declared workspace first (so measured memory matches the simulator), and FMA math only (no
// TF32), so results compare with the float32 CPU reference.
// Without cuDNN (or with CudaBackendOptions::useCudnn off) 1-D and 2-D convolutions run as
// im2col + cuBLAS products per image and channel group, col2im as a deterministic gather.
// Half convolutions (X, W, Y of one type, float16 or bfloat16): cuDNN with CUDNN_DATA_HALF /
// CUDNN_DATA_BFLOAT16 tensors and a float32 compute type (cuDNN's pseudo-half configurations:
// float32 accumulation), tensor-core math allowed as PyTorch allows it; the bias added to the
// rounded convolution and rounded again, as PyTorch's cudnn_convolution then add_ does; the bias
// gradient summed in float32 and rounded once. Without cuDNN the backend widens
// half operands to float32 for the im2col path (cuda_backend.cpp).
#include "gpu/kernels/elementwise.h"
#include "gpu/kernels/im2col.h"
#include "gpu/ops_internal.h"

#include "core/exec/half.h"
#include "core/ir/graph.h"
#include "core/ops/conv_transpose_geometry.h"
#include "gpu/cuda_status.h"

#include <fmt/format.h>

#if defined(REMAT_HAVE_CUDNN)
#include <cudnn.h>
#endif

#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace remat::gpu {

#if defined(REMAT_HAVE_CUDNN)
namespace {

using core::Status;
using namespace kernels;

struct ConvGeometry
{
    int spatial = 0;
    std::vector<int> x, w, y; ///< padded to at least 4 dims (1-D conv gets a unit dim)
    std::vector<int> pads, strides, dilations;
    int groups = 1;
    /// The storage type of X, W and Y (cudnnDataType_t: float, half or bfloat16).
    int dataType = CUDNN_DATA_FLOAT;
};

using core::ir::DataType;

/// cuDNN's data type for a tensor's dtype; false for the ones it is not given here.
bool cudnnTypeOf(DataType t, int &out)
{
    switch (t) {
    case DataType::Float: out = CUDNN_DATA_FLOAT; return true;
    case DataType::Float16: out = CUDNN_DATA_HALF; return true;
    case DataType::BFloat16: out = CUDNN_DATA_BFLOAT16; return true;
    default: return false;
    }
}

/// The storage type the operands of one cuDNN convolution share (null operands are skipped);
/// error naming the operands when they differ (the backend widens a mixed call beforehand).
Status sharedDataType(const OpContext &c, std::initializer_list<const DView *> views,
                      ConvGeometry &g)
{
    const DView *first = nullptr;
    for (const DView *v : views) {
        if (!v || !v->data)
            continue;
        if (!first) {
            first = v;
            if (!cudnnTypeOf(v->dtype, g.dataType))
                return c.unsupported("convolution of " + core::ir::dataTypeName(v->dtype));
        } else if (v->dtype != first->dtype) {
            return c.unsupported(fmt::format("convolution operands of two dtypes ({} and {})",
                                             core::ir::dataTypeName(first->dtype),
                                             core::ir::dataTypeName(v->dtype)));
        }
    }
    return Status::ok();
}

bool toInts(const std::vector<int64_t> &v, std::vector<int> &out)
{
    out.clear();
    for (int64_t d : v) {
        if (d < 0 || d > (int64_t(1) << 31) - 1)
            return false;
        out.push_back(static_cast<int>(d));
    }
    return true;
}

Status convGeometry(const OpContext &c, const std::vector<int64_t> &x,
                    const std::vector<int64_t> &w, const std::vector<int64_t> &y, ConvGeometry &g)
{
    if (x.size() < 3 || x.size() > 5 || w.size() != x.size() || y.size() != x.size())
        return c.unsupported("convolution rank (1 to 3 spatial dims)");
    const size_t sp = x.size() - 2;
    g.spatial = static_cast<int>(sp);
    REMAT_ASSIGN_OR_RETURN(core::exec::WindowAttributes a,
                           windowOf(c, x, std::vector<int64_t>(w.begin() + 2, w.end())));
    std::vector<int64_t> &pads = a.pads, &st = a.strides, &dil = a.dilations;
    for (size_t d = 0; d < sp; ++d)
        if (pads[d] != pads[d + sp])
            return c.unsupported(fmt::format(
                "asymmetric padding {}/{} (cuDNN pads both sides alike)", pads[d], pads[d + sp]));
    pads.resize(sp);
    if (!toInts(x, g.x) || !toInts(w, g.w) || !toInts(y, g.y) || !toInts(pads, g.pads) ||
        !toInts(st, g.strides) || !toInts(dil, g.dilations))
        return c.unsupported("dims above 2^31");
    if (sp == 1) { // cuDNN wants at least 2 spatial dims
        g.x.push_back(1);
        g.w.push_back(1);
        g.y.push_back(1);
        g.pads.push_back(0);
        g.strides.push_back(1);
        g.dilations.push_back(1);
        g.spatial = 2;
    }
    g.groups = static_cast<int>(c.attrInt("group", 1));
    if (g.groups < 1 || g.x[1] % g.groups != 0)
        return c.error("group does not divide the channels");
    return Status::ok();
}

std::vector<int> packedStrides(const std::vector<int> &dims)
{
    std::vector<int> s(dims.size(), 1);
    for (size_t i = dims.size(); i-- > 1;)
        s[i - 1] = s[i] * dims[i];
    return s;
}

// RAII owners of the descriptors of one call.
struct TensorDesc
{
    cudnnTensorDescriptor_t d = nullptr;
    TensorDesc() { cudnnCreateTensorDescriptor(&d); }
    ~TensorDesc()
    {
        if (d)
            cudnnDestroyTensorDescriptor(d);
    }
    TensorDesc(const TensorDesc &) = delete;
    TensorDesc &operator=(const TensorDesc &) = delete;
};
struct FilterDesc
{
    cudnnFilterDescriptor_t d = nullptr;
    FilterDesc() { cudnnCreateFilterDescriptor(&d); }
    ~FilterDesc()
    {
        if (d)
            cudnnDestroyFilterDescriptor(d);
    }
    FilterDesc(const FilterDesc &) = delete;
    FilterDesc &operator=(const FilterDesc &) = delete;
};
struct ConvDesc
{
    cudnnConvolutionDescriptor_t d = nullptr;
    ConvDesc() { cudnnCreateConvolutionDescriptor(&d); }
    ~ConvDesc()
    {
        if (d)
            cudnnDestroyConvolutionDescriptor(d);
    }
    ConvDesc(const ConvDesc &) = delete;
    ConvDesc &operator=(const ConvDesc &) = delete;
};

struct ConvDescriptors
{
    TensorDesc x, y;
    FilterDesc w;
    ConvDesc conv;
};

Status describe(const OpContext &c, const ConvGeometry &g, ConvDescriptors &d)
{
    if (!d.x.d || !d.y.d || !d.w.d || !d.conv.d)
        return c.unsupported("cuDNN descriptors could not be created");
    const int nb = static_cast<int>(g.x.size());
    const auto data = static_cast<cudnnDataType_t>(g.dataType);
    REMAT_RETURN_IF_ERROR(cudnnStatusOf(
        cudnnSetTensorNdDescriptor(d.x.d, data, nb, g.x.data(), packedStrides(g.x).data()),
        c.opName + ": x descriptor"));
    REMAT_RETURN_IF_ERROR(cudnnStatusOf(
        cudnnSetTensorNdDescriptor(d.y.d, data, nb, g.y.data(), packedStrides(g.y).data()),
        c.opName + ": y descriptor"));
    REMAT_RETURN_IF_ERROR(
        cudnnStatusOf(cudnnSetFilterNdDescriptor(d.w.d, data, CUDNN_TENSOR_NCHW, nb, g.w.data()),
                      c.opName + ": filter descriptor"));
    // float32 compute for every storage type (half data: cuDNN's pseudo-half configurations)
    REMAT_RETURN_IF_ERROR(
        cudnnStatusOf(cudnnSetConvolutionNdDescriptor(d.conv.d, g.spatial, g.pads.data(),
                                                      g.strides.data(), g.dilations.data(),
                                                      CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                      c.opName + ": convolution descriptor"));
    REMAT_RETURN_IF_ERROR(cudnnStatusOf(cudnnSetConvolutionGroupCount(d.conv.d, g.groups),
                                        c.opName + ": group count"));
    // float32: FMA only (no TF32), comparable with the CPU reference; half: tensor cores (which
    // accumulate in float32 here), as PyTorch runs half convolutions
    const cudnnMathType_t math = data == CUDNN_DATA_FLOAT ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
    REMAT_RETURN_IF_ERROR(
        cudnnStatusOf(cudnnSetConvolutionMathType(d.conv.d, math), c.opName + ": math type"));
    return Status::ok();
}

cudnnHandle_t handleOf(const OpContext &c) { return static_cast<cudnnHandle_t>(c.rt->cudnn()); }

// FFT and Winograd transforms trade float32 accuracy for speed (errors well above a direct sum's):
// kept as a last resort only, so results stay comparable with the CPU reference.
bool accurate(cudnnConvolutionFwdAlgo_t a)
{
    return a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM ||
           a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
           a == CUDNN_CONVOLUTION_FWD_ALGO_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT;
}
bool accurate(cudnnConvolutionBwdDataAlgo_t a)
{
    return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
}
bool accurate(cudnnConvolutionBwdFilterAlgo_t a)
{
    return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 ||
           a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3;
}

/// Picks from heuristic results (fastest first): deterministic, accurate and within `limit`
/// (the declared workspace), then deterministic within it, then any within it, then the one
/// needing the least workspace (taken from private scratch).
template <typename Perf> const Perf *pickAlgo(const Perf *perf, int count, size_t limit)
{
    const Perf *best = nullptr;
    for (int i = 0; i < count; ++i)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= limit &&
            perf[i].determinism == CUDNN_DETERMINISTIC && accurate(perf[i].algo))
            return &perf[i];
    for (int i = 0; i < count; ++i)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= limit &&
            perf[i].determinism == CUDNN_DETERMINISTIC)
            return &perf[i];
    for (int i = 0; i < count; ++i)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= limit)
            return &perf[i];
    for (int i = 0; i < count; ++i)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && (!best || perf[i].memory < best->memory))
            best = &perf[i];
    return best;
}

/// The algorithm picked for one convolution geometry, per device and pass: cuDNN's heuristics
/// cost far more host time than a small convolution's kernel, and a training step asks for the
/// same geometries again and again (every step, every recompute).
struct AlgoChoice
{
    int algo = 0;
    size_t memory = 0;
};

class AlgoCache
{
public:
    static AlgoCache &instance()
    {
        static AlgoCache cache;
        return cache;
    }
    /// The cached choice for (pass, geometry, workspace limit) on the current device, else the
    /// result of `pick` (cached when it succeeds).
    template <typename Pick>
    core::Expected<AlgoChoice> get(int pass, const ConvGeometry &g, size_t limit, Pick &&pick)
    {
        int device = 0;
        cudaGetDevice(&device);
        std::vector<int64_t> key{pass, device, g.groups, int64_t(limit), g.dataType};
        for (const std::vector<int> *v : {&g.x, &g.w, &g.y, &g.pads, &g.strides, &g.dilations}) {
            key.push_back(int64_t(v->size()));
            key.insert(key.end(), v->begin(), v->end());
        }
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            if (const auto it = m_choices.find(key); it != m_choices.end())
                return it->second;
        }
        core::Expected<AlgoChoice> choice = pick();
        if (choice) {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_choices.emplace(std::move(key), *choice);
        }
        return choice;
    }

private:
    std::mutex m_mutex;
    std::map<std::vector<int64_t>, AlgoChoice> m_choices;
};

/// Asks cuDNN's heuristics (`query(requested, &returned, perf)`) and picks with pickAlgo.
template <typename Perf, int Count, typename Query>
core::Expected<AlgoChoice> chooseAlgo(const OpContext &c, size_t limit, const char *pass,
                                      Query &&query)
{
    Perf perf[Count];
    int count = 0;
    REMAT_RETURN_IF_ERROR(
        cudnnStatusOf(query(Count, &count, perf), fmt::format("{}: {} algorithm", c.opName, pass)));
    const Perf *p = pickAlgo(perf, count, limit);
    if (!p)
        return c.unsupported(fmt::format("no cuDNN {} algorithm for this convolution", pass));
    return AlgoChoice{int(p->algo), p->memory};
}

/// The most workspace an algorithm may take without private scratch: the declared one.
size_t workspaceLimit(const OpContext &c)
{
    return size_t(std::max<int64_t>(0, c.rt->workspaceBytes()));
}

core::Expected<void *> workspaceFor(const OpContext &c, size_t bytes)
{
    if (bytes == 0)
        return static_cast<void *>(nullptr);
    if (static_cast<int64_t>(bytes) <= c.rt->workspaceBytes())
        return c.rt->workspace();
    return c.rt->scratch(static_cast<int64_t>(bytes));
}

Status convCudnnF(OpContext &c)
{
    DView *x = c.input(0), *w = c.input(1), *b = c.input(2), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(requireFloating(c, x, "X"));
    REMAT_RETURN_IF_ERROR(requireFloating(c, w, "W"));
    REMAT_RETURN_IF_ERROR(requireFloating(c, y, "Y"));
    ConvGeometry g;
    REMAT_RETURN_IF_ERROR(convGeometry(c, x->shape, w->shape, y->shape, g));
    REMAT_RETURN_IF_ERROR(sharedDataType(c, {x, w, y, b}, g));
    ConvDescriptors d;
    REMAT_RETURN_IF_ERROR(describe(c, g, d));
    cudnnHandle_t h = handleOf(c);
    const size_t limit = workspaceLimit(c);
    REMAT_ASSIGN_OR_RETURN(const AlgoChoice algo, AlgoCache::instance().get(0, g, limit, [&] {
        return chooseAlgo<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
            c, limit, "forward", [&](int n, int *count, cudnnConvolutionFwdAlgoPerf_t *perf) {
                return cudnnGetConvolutionForwardAlgorithm_v7(h, d.x.d, d.w.d, d.conv.d, d.y.d, n,
                                                              count, perf);
            });
    }));
    REMAT_ASSIGN_OR_RETURN(void *ws, workspaceFor(c, algo.memory));
    const float one = 1.f, zero = 0.f;
    REMAT_RETURN_IF_ERROR(
        cudnnStatusOf(cudnnConvolutionForward(h, &one, d.x.d, x->data, d.w.d, w->data, d.conv.d,
                                              cudnnConvolutionFwdAlgo_t(algo.algo), ws, algo.memory,
                                              &zero, d.y.d, y->data),
                      c.opName + ": convolution forward"));
    if (b && b->data) {
        // y += b per channel; half Y: the rounded convolution plus the bias in float32, rounded
        // again (PyTorch's cudnn_convolution, then add_ in the half type)
        std::vector<int64_t> bShape(y->shape.size() - 1, 1);
        bShape[0] = y->shape[1];
        NdIter it;
        const std::vector<int64_t> ys = contiguousStrides(y->shape);
        if (!buildIter(y->shape, {ys, ys, broadcastStrides(bShape, y->shape)}, it))
            return c.unsupported("rank");
        REMAT_ASSIGN_OR_RETURN(const float *yf, floatOperand(c, *y));
        REMAT_ASSIGN_OR_RETURN(const float *bf, floatOperand(c, *b));
        auto *sum = const_cast<float *>(yf); // y itself, or its float32 copy in scratch
        REMAT_RETURN_IF_ERROR(
            c.check(binaryForward(c.rt->stream(), BinaryOp::Add, ElemType::Float, it, yf, bf, sum),
                    "bias"));
        REMAT_RETURN_IF_ERROR(roundResult(c, sum, *y));
    }
    return Status::ok();
}

Status convCudnnB(OpContext &c)
{
    DView *x = c.input(0), *w = c.input(1), *dy = c.outputGrad(0);
    REMAT_RETURN_IF_ERROR(requireFloating(c, dy, "dY"));
    DView *dx = c.inputGrad(0), *dw = c.inputGrad(1), *db = c.inputGrad(2);
    const std::vector<int64_t> xs = x ? x->shape : (dx ? dx->shape : c.inShapes.at(0));
    const std::vector<int64_t> wsh = w ? w->shape : (dw ? dw->shape : c.inShapes.at(1));
    ConvGeometry g;
    REMAT_RETURN_IF_ERROR(convGeometry(c, xs, wsh, dy->shape, g));
    REMAT_RETURN_IF_ERROR(sharedDataType(c, {dy, x, w, dx, dw}, g));
    ConvDescriptors d;
    REMAT_RETURN_IF_ERROR(describe(c, g, d));
    cudnnHandle_t h = handleOf(c);
    const size_t limit = workspaceLimit(c);
    const float one = 1.f, zero = 0.f;
    if (dx) {
        REMAT_RETURN_IF_ERROR(requireFloating(c, w, "W"));
        REMAT_ASSIGN_OR_RETURN(const AlgoChoice algo, AlgoCache::instance().get(1, g, limit, [&] {
            return chooseAlgo<cudnnConvolutionBwdDataAlgoPerf_t,
                              CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
                c, limit, "backward-data",
                [&](int n, int *count, cudnnConvolutionBwdDataAlgoPerf_t *perf) {
                    return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w.d, d.y.d, d.conv.d,
                                                                       d.x.d, n, count, perf);
                });
        }));
        REMAT_ASSIGN_OR_RETURN(void *ws, workspaceFor(c, algo.memory));
        REMAT_RETURN_IF_ERROR(cudnnStatusOf(
            cudnnConvolutionBackwardData(h, &one, d.w.d, w->data, d.y.d, dy->data, d.conv.d,
                                         cudnnConvolutionBwdDataAlgo_t(algo.algo), ws, algo.memory,
                                         &zero, d.x.d, dx->data),
            c.opName + ": convolution backward data"));
    }
    if (dw) {
        REMAT_RETURN_IF_ERROR(requireFloating(c, x, "X"));
        REMAT_ASSIGN_OR_RETURN(const AlgoChoice algo, AlgoCache::instance().get(2, g, limit, [&] {
            return chooseAlgo<cudnnConvolutionBwdFilterAlgoPerf_t,
                              CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
                c, limit, "backward-filter",
                [&](int n, int *count, cudnnConvolutionBwdFilterAlgoPerf_t *perf) {
                    return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x.d, d.y.d, d.conv.d,
                                                                         d.w.d, n, count, perf);
                });
        }));
        REMAT_ASSIGN_OR_RETURN(void *ws, workspaceFor(c, algo.memory));
        REMAT_RETURN_IF_ERROR(cudnnStatusOf(
            cudnnConvolutionBackwardFilter(h, &one, d.x.d, x->data, d.y.d, dy->data, d.conv.d,
                                           cudnnConvolutionBwdFilterAlgo_t(algo.algo), ws,
                                           algo.memory, &zero, d.w.d, dw->data),
            c.opName + ": convolution backward filter"));
    }
    if (db) {
        std::vector<int64_t> target(dy->shape.size() - 1, 1);
        target[0] = dy->shape[1];
        // half dY / dB: summed in float32, rounded once
        REMAT_RETURN_IF_ERROR(requireFloating(c, db, "dB"));
        REMAT_ASSIGN_OR_RETURN(const float *dyf, floatOperand(c, *dy));
        REMAT_ASSIGN_OR_RETURN(float *dbf, floatResult(c, *db));
        REMAT_RETURN_IF_ERROR(
            reduceTermsTo(c, GradTerm::Dy, dy->shape, dyf, {}, nullptr, {}, nullptr, target, dbf));
        REMAT_RETURN_IF_ERROR(roundResult(c, dbf, *db));
    }
    return Status::ok();
}

// ---- ConvTranspose through cuDNN: the convolution from Y-space to X-space run backwards --------
// Its forward is that convolution's backward-data, its dX the convolution's forward and its dW the
// convolution's backward-filter with the roles of input and output gradient swapped.

/// The convolution whose transpose the node is: input Y-space, filter W, output X-space. False
/// (with the reason) when cuDNN cannot take it (asymmetric pads): the caller uses im2col.
Status transposedGeometry(const OpContext &c, const std::vector<int64_t> &x,
                          const std::vector<int64_t> &w, const std::vector<int64_t> &y,
                          ConvGeometry &g, bool &usable)
{
    usable = false;
    auto a = core::ops::resolveConvTranspose(c.node, x, w);
    if (!a)
        return c.error(a.status().message());
    const size_t sp = x.size() - 2;
    if (sp > 3)
        return c.unsupported("convolution rank (1 to 3 spatial dims)");
    for (size_t d = 0; d < sp; ++d)
        if (a->pads[d] != a->pads[d + sp])
            return Status::ok();
    std::vector<int64_t> pads(a->pads.begin(), a->pads.begin() + int64_t(sp));
    if (!toInts(y, g.x) || !toInts(w, g.w) || !toInts(x, g.y) || !toInts(pads, g.pads) ||
        !toInts(a->strides, g.strides) || !toInts(a->dilations, g.dilations))
        return c.unsupported("dims above 2^31");
    g.spatial = int(sp);
    if (sp == 1) {
        g.x.push_back(1);
        g.w.push_back(1);
        g.y.push_back(1);
        g.pads.push_back(0);
        g.strides.push_back(1);
        g.dilations.push_back(1);
        g.spatial = 2;
    }
    g.groups = int(a->groups);
    usable = true;
    return Status::ok();
}

Status convTransposeCudnnF(OpContext &c, const ConvGeometry &g)
{
    DView *x = c.input(0), *w = c.input(1), *y = c.output(0);
    ConvDescriptors d;
    REMAT_RETURN_IF_ERROR(describe(c, g, d));
    cudnnHandle_t h = handleOf(c);
    const size_t limit = workspaceLimit(c);
    REMAT_ASSIGN_OR_RETURN(const AlgoChoice algo, AlgoCache::instance().get(1, g, limit, [&] {
        return chooseAlgo<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
            c, limit, "backward-data",
            [&](int n, int *count, cudnnConvolutionBwdDataAlgoPerf_t *perf) {
                return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w.d, d.y.d, d.conv.d, d.x.d,
                                                                   n, count, perf);
            });
    }));
    REMAT_ASSIGN_OR_RETURN(void *ws, workspaceFor(c, algo.memory));
    const float one = 1.f, zero = 0.f;
    return cudnnStatusOf(cudnnConvolutionBackwardData(h, &one, d.w.d, w->data, d.y.d, x->data,
                                                      d.conv.d,
                                                      cudnnConvolutionBwdDataAlgo_t(algo.algo), ws,
                                                      algo.memory, &zero, d.x.d, y->data),
                         c.opName + ": transposed convolution forward");
}

Status convTransposeCudnnB(OpContext &c, const ConvGeometry &g)
{
    DView *x = c.input(0), *w = c.input(1), *dy = c.outputGrad(0);
    DView *dx = c.inputGrad(0), *dw = c.inputGrad(1);
    ConvDescriptors d;
    REMAT_RETURN_IF_ERROR(describe(c, g, d));
    cudnnHandle_t h = handleOf(c);
    const size_t limit = workspaceLimit(c);
    const float one = 1.f, zero = 0.f;
    if (dx) { // dX = conv(dY, W)
        REMAT_RETURN_IF_ERROR(c.requireFloat(w, "W"));
        REMAT_ASSIGN_OR_RETURN(const AlgoChoice algo, AlgoCache::instance().get(0, g, limit, [&] {
            return chooseAlgo<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
                c, limit, "forward", [&](int n, int *count, cudnnConvolutionFwdAlgoPerf_t *perf) {
                    return cudnnGetConvolutionForwardAlgorithm_v7(h, d.x.d, d.w.d, d.conv.d, d.y.d,
                                                                  n, count, perf);
                });
        }));
        REMAT_ASSIGN_OR_RETURN(void *ws, workspaceFor(c, algo.memory));
        REMAT_RETURN_IF_ERROR(
            cudnnStatusOf(cudnnConvolutionForward(h, &one, d.x.d, dy->data, d.w.d, w->data,
                                                  d.conv.d, cudnnConvolutionFwdAlgo_t(algo.algo),
                                                  ws, algo.memory, &zero, d.y.d, dx->data),
                          c.opName + ": transposed convolution backward data"));
    }
    if (dw) { // dW: the convolution's filter gradient with dY as its input and X as its output gradient
        REMAT_RETURN_IF_ERROR(c.requireFloat(x, "X"));
        REMAT_ASSIGN_OR_RETURN(const AlgoChoice algo, AlgoCache::instance().get(2, g, limit, [&] {
            return chooseAlgo<cudnnConvolutionBwdFilterAlgoPerf_t,
                              CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
                c, limit, "backward-filter",
                [&](int n, int *count, cudnnConvolutionBwdFilterAlgoPerf_t *perf) {
                    return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x.d, d.y.d, d.conv.d,
                                                                         d.w.d, n, count, perf);
                });
        }));
        REMAT_ASSIGN_OR_RETURN(void *ws, workspaceFor(c, algo.memory));
        REMAT_RETURN_IF_ERROR(cudnnStatusOf(
            cudnnConvolutionBackwardFilter(h, &one, d.x.d, dy->data, d.y.d, x->data, d.conv.d,
                                           cudnnConvolutionBwdFilterAlgo_t(algo.algo), ws,
                                           algo.memory, &zero, d.w.d, dw->data),
            c.opName + ": transposed convolution backward filter"));
    }
    return Status::ok();
}

} // namespace
#endif

namespace {

using core::Status;
using namespace kernels;

struct Im2colGeometry
{
    int64_t n = 0, groups = 1, cg = 0, mg = 0, k = 0, ohw = 0;
    ConvWindow w;
};

Status im2colGeometry(const OpContext &c, const std::vector<int64_t> &x,
                      const std::vector<int64_t> &wt, const std::vector<int64_t> &y,
                      Im2colGeometry &g)
{
    if (x.size() < 3 || x.size() > 4 || wt.size() != x.size() || y.size() != x.size())
        return c.unsupported("im2col convolution handles 1-D and 2-D only; a 3-D one needs cuDNN "
                             "(remat run --cuda-convolution cudnn, or --backend cpu)");
    const size_t sp = x.size() - 2;
    REMAT_ASSIGN_OR_RETURN(const core::exec::WindowAttributes a,
                           windowOf(c, x, std::vector<int64_t>(wt.begin() + 2, wt.end())));
    const std::vector<int64_t> &pads = a.pads, &st = a.strides, &dil = a.dilations;
    g.groups = c.attrInt("group", 1);
    if (g.groups < 1 || x[1] % g.groups != 0 || wt[0] % g.groups != 0)
        return c.error("group does not divide the channels");
    g.n = x[0];
    g.cg = x[1] / g.groups;
    g.mg = wt[0] / g.groups;
    const bool oneD = sp == 1;
    g.w.c = g.cg;
    g.w.h = oneD ? 1 : x[2];
    g.w.w = x.back();
    g.w.kh = oneD ? 1 : wt[2];
    g.w.kw = wt.back();
    g.w.oh = oneD ? 1 : y[2];
    g.w.ow = y.back();
    g.w.sh = oneD ? 1 : st[0];
    g.w.sw = st.back();
    g.w.ph = oneD ? 0 : pads[0];
    g.w.pw = pads[sp - 1];
    g.w.dh = oneD ? 1 : dil[0];
    g.w.dw = dil.back();
    g.k = g.cg * g.w.kh * g.w.kw;
    g.ohw = g.w.oh * g.w.ow;
    return Status::ok();
}

Status addBias(OpContext &c, DView *b, DView *y)
{
    if (!b || !b->data)
        return Status::ok();
    REMAT_RETURN_IF_ERROR(c.requireFloat(b, "B"));
    std::vector<int64_t> bShape(y->shape.size() - 1, 1);
    bShape[0] = y->shape[1];
    NdIter it;
    const std::vector<int64_t> ys = contiguousStrides(y->shape);
    if (!buildIter(y->shape, {ys, ys, broadcastStrides(bShape, y->shape)}, it))
        return c.unsupported("rank");
    return c.check(binaryForward(c.rt->stream(), BinaryOp::Add, ElemType::Float, it, y->data,
                                 b->data, y->data),
                   "bias");
}

Status convIm2colF(OpContext &c)
{
    DView *x = c.input(0), *w = c.input(1), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(x, "X"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(w, "W"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(y, "Y"));
    Im2colGeometry g;
    REMAT_RETURN_IF_ERROR(im2colGeometry(c, x->shape, w->shape, y->shape, g));
    REMAT_ASSIGN_OR_RETURN(void *colsRaw, c.rt->scratch(g.k * g.ohw * 4));
    float *cols = static_cast<float *>(colsRaw);
    const int64_t xImage = g.groups * g.cg * g.w.h * g.w.w, yImage = g.groups * g.mg * g.ohw;
    for (int64_t n = 0; n < g.n; ++n)
        for (int64_t grp = 0; grp < g.groups; ++grp) {
            REMAT_RETURN_IF_ERROR(c.check(
                im2col(c.rt->stream(), g.w, x->f() + n * xImage + grp * g.cg * g.w.h * g.w.w, cols),
                "im2col"));
            REMAT_RETURN_IF_ERROR(rowGemm(c, false, false, g.mg, g.ohw, g.k, 1.f,
                                          w->f() + grp * g.mg * g.k, 0, cols, 0, 0.f,
                                          y->f() + n * yImage + grp * g.mg * g.ohw, 0));
        }
    return addBias(c, c.input(2), y);
}

Status convIm2colB(OpContext &c)
{
    DView *x = c.input(0), *w = c.input(1), *dy = c.outputGrad(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "dY"));
    DView *dx = c.inputGrad(0), *dw = c.inputGrad(1), *db = c.inputGrad(2);
    const std::vector<int64_t> xs = x ? x->shape : (dx ? dx->shape : c.inShapes.at(0));
    const std::vector<int64_t> wsh = w ? w->shape : (dw ? dw->shape : c.inShapes.at(1));
    Im2colGeometry g;
    REMAT_RETURN_IF_ERROR(im2colGeometry(c, xs, wsh, dy->shape, g));
    REMAT_ASSIGN_OR_RETURN(void *colsRaw, c.rt->scratch(g.k * g.ohw * 4));
    float *cols = static_cast<float *>(colsRaw);
    const int64_t plane = g.w.h * g.w.w;
    const int64_t xImage = g.groups * g.cg * plane, yImage = g.groups * g.mg * g.ohw;
    if (dx)
        REMAT_RETURN_IF_ERROR(c.requireFloat(w, "W"));
    if (dw)
        REMAT_RETURN_IF_ERROR(c.requireFloat(x, "X"));
    for (int64_t n = 0; n < g.n; ++n)
        for (int64_t grp = 0; grp < g.groups; ++grp) {
            const float *dyg = dy->f() + n * yImage + grp * g.mg * g.ohw;
            if (dw) { // dW_g += dY_g cols^T, summed over the images in order
                REMAT_RETURN_IF_ERROR(c.check(
                    im2col(c.rt->stream(), g.w, x->f() + n * xImage + grp * g.cg * plane, cols),
                    "im2col"));
                REMAT_RETURN_IF_ERROR(rowGemm(c, false, true, g.mg, g.k, g.ohw, 1.f, dyg, 0, cols,
                                              0, n > 0 ? 1.f : 0.f, dw->f() + grp * g.mg * g.k, 0));
            }
            if (dx) { // dcols = W_g^T dY_g, then gathered back onto the image
                REMAT_RETURN_IF_ERROR(rowGemm(c, true, false, g.k, g.ohw, g.mg, 1.f,
                                              w->f() + grp * g.mg * g.k, 0, dyg, 0, 0.f, cols, 0));
                REMAT_RETURN_IF_ERROR(c.check(
                    col2im(c.rt->stream(), g.w, cols, dx->f() + n * xImage + grp * g.cg * plane),
                    "col2im"));
            }
        }
    if (db) {
        std::vector<int64_t> target(dy->shape.size() - 1, 1);
        target[0] = dy->shape[1];
        REMAT_RETURN_IF_ERROR(reduceTermsTo(c, GradTerm::Dy, dy->shape, dy->f(), {}, nullptr, {},
                                            nullptr, target, db->f()));
    }
    return Status::ok();
}

// cuDNN when the build has it and the backend uses it, im2col otherwise.
Status convF(OpContext &c)
{
#if defined(REMAT_HAVE_CUDNN)
    if (c.rt->cudnn())
        return convCudnnF(c);
#endif
    return convIm2colF(c);
}

Status convB(OpContext &c)
{
#if defined(REMAT_HAVE_CUDNN)
    if (c.rt->cudnn())
        return convCudnnB(c);
#endif
    return convIm2colB(c);
}

// ---- ConvTranspose through im2col + cuBLAS (1-D and 2-D; any pads) ----------------------------
// The window is the convolution's from Y-space (the "image", mg channels per group) to X-space (the
// columns' pixels): forward columns = W_g^T X_g then col2im onto Y; backward columns = im2col(dY),
// dX_g = W_g columns, dW_g += X_g columns^T.
struct TransposeIm2col
{
    int64_t n = 0, groups = 1, cg = 0, mg = 0, rows = 0, inPlane = 0, outPlane = 0;
    ConvWindow w;
};

Status transposeIm2colGeometry(const OpContext &c, const std::vector<int64_t> &x,
                               const std::vector<int64_t> &wt, const std::vector<int64_t> &y,
                               TransposeIm2col &g)
{
    auto a = core::ops::resolveConvTranspose(c.node, x, wt);
    if (!a)
        return c.error(a.status().message());
    if (x.size() > 4)
        return c.unsupported("3-D ConvTranspose with asymmetric pads (cuDNN pads both sides alike; "
                             "im2col handles 1-D and 2-D)");
    const bool oneD = x.size() == 3;
    g.n = x[0];
    g.groups = a->groups;
    g.cg = x[1] / g.groups;
    g.mg = wt[1];
    g.w.c = g.mg;
    g.w.h = oneD ? 1 : y[2];
    g.w.w = y.back();
    g.w.kh = oneD ? 1 : a->kernel[0];
    g.w.kw = a->kernel.back();
    g.w.oh = oneD ? 1 : x[2];
    g.w.ow = x.back();
    g.w.sh = oneD ? 1 : a->strides[0];
    g.w.sw = a->strides.back();
    g.w.ph = oneD ? 0 : a->pads[0];
    g.w.pw = a->pads[oneD ? 0 : 1];
    g.w.dh = oneD ? 1 : a->dilations[0];
    g.w.dw = a->dilations.back();
    g.rows = g.mg * g.w.kh * g.w.kw;
    g.inPlane = g.w.oh * g.w.ow;
    g.outPlane = g.w.h * g.w.w;
    return Status::ok();
}

Status convTransposeIm2colF(OpContext &c)
{
    DView *x = c.input(0), *w = c.input(1), *y = c.output(0);
    TransposeIm2col g;
    REMAT_RETURN_IF_ERROR(transposeIm2colGeometry(c, x->shape, w->shape, y->shape, g));
    REMAT_ASSIGN_OR_RETURN(void *colsRaw, c.rt->scratch(g.rows * g.inPlane * 4));
    float *cols = static_cast<float *>(colsRaw);
    for (int64_t n = 0; n < g.n; ++n)
        for (int64_t grp = 0; grp < g.groups; ++grp) {
            REMAT_RETURN_IF_ERROR(
                rowGemm(c, true, false, g.rows, g.inPlane, g.cg, 1.f, w->f() + grp * g.cg * g.rows,
                        0, x->f() + (n * g.groups + grp) * g.cg * g.inPlane, 0, 0.f, cols, 0));
            REMAT_RETURN_IF_ERROR(c.check(col2im(c.rt->stream(), g.w, cols,
                                                 y->f() + (n * g.groups + grp) * g.mg * g.outPlane),
                                          "col2im"));
        }
    return Status::ok();
}

Status convTransposeIm2colB(OpContext &c)
{
    DView *x = c.input(0), *w = c.input(1), *dy = c.outputGrad(0);
    DView *dx = c.inputGrad(0), *dw = c.inputGrad(1);
    const std::vector<int64_t> xs = x ? x->shape : (dx ? dx->shape : c.inShapes.at(0));
    const std::vector<int64_t> wsh = w ? w->shape : (dw ? dw->shape : c.inShapes.at(1));
    TransposeIm2col g;
    REMAT_RETURN_IF_ERROR(transposeIm2colGeometry(c, xs, wsh, dy->shape, g));
    if (dx)
        REMAT_RETURN_IF_ERROR(c.requireFloat(w, "W"));
    if (dw)
        REMAT_RETURN_IF_ERROR(c.requireFloat(x, "X"));
    if (!dx && !dw)
        return Status::ok();
    REMAT_ASSIGN_OR_RETURN(void *colsRaw, c.rt->scratch(g.rows * g.inPlane * 4));
    float *cols = static_cast<float *>(colsRaw);
    for (int64_t n = 0; n < g.n; ++n)
        for (int64_t grp = 0; grp < g.groups; ++grp) {
            REMAT_RETURN_IF_ERROR(
                c.check(im2col(c.rt->stream(), g.w,
                               dy->f() + (n * g.groups + grp) * g.mg * g.outPlane, cols),
                        "im2col"));
            if (dx)
                REMAT_RETURN_IF_ERROR(rowGemm(
                    c, false, false, g.cg, g.inPlane, g.rows, 1.f, w->f() + grp * g.cg * g.rows, 0,
                    cols, 0, 0.f, dx->f() + (n * g.groups + grp) * g.cg * g.inPlane, 0));
            if (dw)
                REMAT_RETURN_IF_ERROR(rowGemm(c, false, true, g.cg, g.rows, g.inPlane, 1.f,
                                              x->f() + (n * g.groups + grp) * g.cg * g.inPlane, 0,
                                              cols, 0, n > 0 ? 1.f : 0.f,
                                              dw->f() + grp * g.cg * g.rows, 0));
        }
    return Status::ok();
}

Status convTransposeF(OpContext &c)
{
    DView *x = c.input(0), *w = c.input(1), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(x, "X"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(w, "W"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(y, "Y"));
#if defined(REMAT_HAVE_CUDNN)
    if (c.rt->cudnn()) {
        ConvGeometry g;
        bool usable = false;
        REMAT_RETURN_IF_ERROR(transposedGeometry(c, x->shape, w->shape, y->shape, g, usable));
        if (usable) {
            REMAT_RETURN_IF_ERROR(convTransposeCudnnF(c, g));
            return addBias(c, c.input(2), y);
        }
    }
#endif
    REMAT_RETURN_IF_ERROR(convTransposeIm2colF(c));
    return addBias(c, c.input(2), y);
}

Status convTransposeB(OpContext &c)
{
    DView *dy = c.outputGrad(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "dY"));
    bool done = false;
#if defined(REMAT_HAVE_CUDNN)
    if (c.rt->cudnn()) {
        DView *x = c.input(0), *w = c.input(1), *dx = c.inputGrad(0), *dw = c.inputGrad(1);
        const std::vector<int64_t> xs = x ? x->shape : (dx ? dx->shape : c.inShapes.at(0));
        const std::vector<int64_t> wsh = w ? w->shape : (dw ? dw->shape : c.inShapes.at(1));
        ConvGeometry g;
        bool usable = false;
        REMAT_RETURN_IF_ERROR(transposedGeometry(c, xs, wsh, dy->shape, g, usable));
        if (usable) {
            REMAT_RETURN_IF_ERROR(convTransposeCudnnB(c, g));
            done = true;
        }
    }
#endif
    if (!done)
        REMAT_RETURN_IF_ERROR(convTransposeIm2colB(c));
    if (DView *db = c.inputGrad(2)) {
        std::vector<int64_t> target(dy->shape.size() - 1, 1);
        target[0] = dy->shape[1];
        REMAT_RETURN_IF_ERROR(reduceTermsTo(c, GradTerm::Dy, dy->shape, dy->f(), {}, nullptr, {},
                                            nullptr, target, db->f()));
    }
    return Status::ok();
}

} // namespace

void addConvOps(OpTable &t)
{
    t["Conv"] = convF;
    t["ConvGrad"] = convB;
    t["ConvTranspose"] = convTransposeF;
    t["ConvTransposeGrad"] = convTransposeB;
}

} // namespace remat::gpu
