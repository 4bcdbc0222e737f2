#pragma once
// The CUDA kernels of the training-graph op types ("Conv", "ConvGrad", ...), one function per
// type, with operands matched to the ONNX slots they stand for (the same convention as the CPU
// reference's core/exec/cpu/kernel.h, so both read alike and test-compare op by op).
//   OpContext ctx;  ctx.in = {&x, &w};  ctx.out = {&y};  ctx.rt = &runtime;
//   const OpFn *fn = findCudaOp("Conv");  Status s = (*fn)(ctx);  // queued on rt->stream()

#include "core/ir/dtype.h"
#include "core/training/training_graph.h"
#include "core/util/status.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace remat::core::ir {
struct Node;
}

namespace remat::gpu {

/// A device tensor seen by a kernel (memory owned by the backend).
struct DView
{
    void *data = nullptr;
    core::ir::DataType dtype = core::ir::DataType::Float;
    std::vector<int64_t> shape;
    core::TensorId tensor;
    core::training::TensorRole role = core::training::TensorRole::Activation;
    /// Host copy of the data when the operand came from the model's constants (else null).
    const std::vector<std::byte> *host = nullptr;

    int64_t numel() const
    {
        int64_t n = 1;
        for (int64_t d : shape)
            n *= d;
        return n;
    }
    float *f() const { return static_cast<float *>(data); }
    template <typename T>
    T *as() const { return static_cast<T *>(data); }
};

/// What kernels need from the backend besides their operands: the stream, library handles,
/// private scratch and small host copies of constant operands (shape vectors, pads, bounds).
class OpRuntime
{
public:
    virtual ~OpRuntime() = default;
    virtual cudaStream_t stream() const = 0;
    virtual cublasHandle_t cublas() const = 0;
    /// The cudnnHandle_t (as void*: the type exists only with cuDNN); null without cuDNN.
    virtual void *cudnn() const = 0;
    /// Device scratch valid until the op returns (and its queued work ran); not counted as a
    /// tensor (reported as private scratch).
    virtual core::Expected<void *> scratch(int64_t bytes) = 0;
    /// The declared workspace of this call (op->workspaceBytes; null/0 when none).
    virtual void *workspace() const = 0;
    virtual int64_t workspaceBytes() const = 0;
    /// Host copy of a small operand's values (cached for constant tensors).
    virtual core::Expected<std::vector<int64_t>> hostInts(const DView &v) = 0;
    virtual core::Expected<std::vector<double>> hostDoubles(const DView &v) = 0;
    /// Host -> device copy on the stream (the host buffer must stay valid until the op ends).
    virtual core::Status uploadAsync(void *dst, const void *src, int64_t bytes) = 0;
};

/// Operands of one call, aligned to ONNX slots of the forward node (null: absent).
///  - forward: `in` = node inputs, `out` = node outputs (BatchNormalization writes its saved
///    mean / inverse std at output slots 3, 4; LayerNormalization at 1, 2).
///  - backward: `in` / `out` = forward inputs / outputs the backward reads, `dOut` = gradients of
///    forward outputs, `dIn` = gradients of forward inputs to write.
///  - Loss / Accumulate: `in`, `out` in the training op's order.
struct OpContext
{
    const core::ir::Node *node = nullptr;
    std::string opName;
    std::string opType;
    std::vector<DView *> in, out, dOut, dIn;
    /// Static shapes of every forward input / output slot (present or not).
    std::vector<std::vector<int64_t>> inShapes, outShapes;
    bool recompute = false;
    uint64_t seed = 0;
    OpRuntime *rt = nullptr;

    DView *input(size_t k) const { return k < in.size() ? in[k] : nullptr; }
    DView *output(size_t k) const { return k < out.size() ? out[k] : nullptr; }
    DView *outputGrad(size_t k) const { return k < dOut.size() ? dOut[k] : nullptr; }
    DView *inputGrad(size_t k) const { return k < dIn.size() ? dIn[k] : nullptr; }

    int64_t attrInt(const char *name, int64_t fallback) const;
    double attrFloat(const char *name, double fallback) const;
    std::vector<int64_t> attrInts(const char *name, std::vector<int64_t> fallback = {}) const;
    std::string attrString(const char *name, std::string fallback = {}) const;
    bool hasAttr(const char *name) const;

    /// InvalidArgument "<op>: <what>".
    core::Status error(const std::string &what) const;
    core::Status unsupported(const std::string &what) const;
    core::Status require(const DView *v, const char *what) const;
    /// A kernel launch / runtime result as a Status naming the op.
    core::Status check(cudaError_t err, const char *what) const;
    core::Status checkBlas(cublasStatus_t err, const char *what) const;
    /// Error unless `v` is float32.
    core::Status requireFloat(const DView *v, const char *what) const;
};

using OpFn = core::Status (*)(OpContext &);

/// The CUDA kernel for an op type, or null.
const OpFn *findCudaOp(const std::string &opType);
/// Every op type with a CUDA kernel, sorted.
std::vector<std::string> cudaOpTypes();

} // namespace remat::gpu
