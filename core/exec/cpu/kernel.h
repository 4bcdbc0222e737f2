#pragma once
// The CPU reference kernels: one function per op type ("Conv") and per backward type ("ConvGrad"),
// working on host memory with operands already matched to the ONNX slots they stand for.
//   KernelContext ctx;  ctx.node = &node;  ctx.in = {&x, &w};  ctx.out = {&y};
//   const KernelFn *fn = findCpuKernel("Conv");  Status s = (*fn)(ctx);
// Float tensors are float32; reductions accumulate in double so results do not depend on the
// schedule (a recompute gives bitwise the same values as the first compute).

#include "core/ir/dtype.h"
#include "core/util/status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace remat::core::ir {
struct Node;
}

namespace remat::core::exec::cpu {

/// A host tensor seen by a kernel (memory owned elsewhere).
struct KView
{
    std::byte *data = nullptr;
    ir::DataType dtype = ir::DataType::Float;
    std::vector<int64_t> shape;

    int64_t numel() const
    {
        int64_t n = 1;
        for (int64_t d : shape)
            n *= d;
        return n;
    }
    size_t rank() const { return shape.size(); }
    template <typename T>
    T *as() const { return reinterpret_cast<T *>(data); }
    float *f() const { return as<float>(); }
};

/// Operands of one kernel call, aligned to ONNX slots of the forward node (null: absent).
///  - forward kernels: `in` = node inputs, `out` = node outputs (BatchNormalization and
///    LayerNormalization also write saved statistics at output slots 3, 4 / 1, 2).
///  - backward kernels: `in` / `out` = the forward inputs / outputs the backward reads,
///    `dOut` = gradients of forward outputs, `dIn` = gradients of forward inputs to write.
///  - Loss / Accumulate: `in`, `out` in the training op's order.
struct KernelContext
{
    const ir::Node *node = nullptr; ///< attributes; null for Loss / Accumulate
    std::string opName;             ///< for messages
    std::vector<KView *> in, out, dOut, dIn;
    /// Static shapes of the forward node's inputs and outputs (every slot, present or not), so a
    /// backward kernel knows the sizes of operands it was not given (Concat, Slice, Split).
    std::vector<std::vector<int64_t>> inShapes, outShapes;
    bool recompute = false;
    uint64_t seed = 0;

    KView *input(size_t k) const { return k < in.size() ? in[k] : nullptr; }
    KView *output(size_t k) const { return k < out.size() ? out[k] : nullptr; }
    KView *outputGrad(size_t k) const { return k < dOut.size() ? dOut[k] : nullptr; }
    KView *inputGrad(size_t k) const { return k < dIn.size() ? dIn[k] : nullptr; }

    int64_t attrInt(const char *name, int64_t fallback) const;
    double attrFloat(const char *name, double fallback) const;
    std::vector<int64_t> attrInts(const char *name, std::vector<int64_t> fallback = {}) const;
    std::string attrString(const char *name, std::string fallback = {}) const;
    bool hasAttr(const char *name) const;

    /// InvalidArgument "<op>: <what>".
    Status error(const std::string &what) const;
    /// Error unless `v` is present (naming `what`).
    Status require(const KView *v, const char *what) const;
};

using KernelFn = Status (*)(KernelContext &);

/// The kernel for an op type, or null.
const KernelFn *findCpuKernel(const std::string &opType);
/// Every op type with a kernel, sorted (for messages and docs).
std::vector<std::string> cpuKernelTypes();

} // namespace remat::core::exec::cpu
