#pragma once
// The CUDA kernels of the training-graph op types ("Conv", "ConvGrad", ...), one function per
// type, with operands matched to the ONNX slots they stand for (the same convention as the CPU
// reference's core/exec/cpu/kernel.h, so both read alike and test-compare op by op).
//   OpContext ctx;  ctx.in = {&x, &w};  ctx.out = {&y};  ctx.rt = &runtime;
//   const OpFn *fn = findCudaOp("Conv");  Status s = (*fn)(ctx);  // queued on rt->stream()

#include "core/exec/operand_context.h"
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
    template <typename T> T *as() const { return static_cast<T *>(data); }
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

/// Operands of one call (core/exec/operand_context.h: slots, attributes, Slice's operands, the
/// same binding as the CPU reference's), over device memory; small operands are copied to the
/// host through the runtime.
struct OpContext final : core::exec::OperandContext<DView>
{
    std::string opType;
    OpRuntime *rt = nullptr;

    core::Expected<std::vector<int64_t>> hostInts(const DView &v) const override
    {
        return rt->hostInts(v);
    }
    core::Expected<std::vector<double>> hostDoubles(const DView &v) const override
    {
        return rt->hostDoubles(v);
    }

    core::Status unsupported(const std::string &what) const;
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
