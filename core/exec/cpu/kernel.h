#pragma once
// The CPU reference kernels: one function per op type ("Conv") and per backward type ("ConvGrad"),
// working on host memory with operands already matched to the ONNX slots they stand for.
//   KernelContext ctx;  ctx.node = &node;  ctx.in = {&x, &w};  ctx.out = {&y};
//   const KernelFn *fn = findCpuKernel("Conv");  Status s = (*fn)(ctx);
// Float tensors are float32 (half tensors reach them widened, see takesHalfOperands); reductions
// accumulate in double so results do not depend on the schedule (a recompute gives bitwise the
// same values as the first compute).

#include "core/exec/operand_context.h"
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
    template <typename T> T *as() const { return reinterpret_cast<T *>(data); }
    float *f() const { return as<float>(); }
};

/// Operands of one kernel call (core/exec/operand_context.h: slots, attributes, Slice's operands),
/// over host memory: small operands are read in place.
struct KernelContext final : OperandContext<KView>
{
    Expected<std::vector<int64_t>> hostInts(const KView &v) const override;
    Expected<std::vector<double>> hostDoubles(const KView &v) const override;
};

using KernelFn = Status (*)(KernelContext &);

/// The kernel for an op type, or null.
const KernelFn *findCpuKernel(const std::string &opType);
/// True for the op types whose kernels read and write float16 / bfloat16 operands themselves
/// (Cast, CastGrad: one rounding from the source dtype). Every other kernel sees float32: the
/// backend widens half operands into float32 copies and rounds the outputs back.
bool takesHalfOperands(const std::string &opType);
/// Every op type with a kernel, sorted (for messages and docs).
std::vector<std::string> cpuKernelTypes();

} // namespace remat::core::exec::cpu
