#pragma once
// A tensor in host memory: dtype, static shape, little-endian row-major bytes.
//   HostTensor t = HostTensor::fromFloats({2, 3}, values);
//   std::span<const float> f = t.floats();            // dtype must be Float
//   std::vector<double> d = t.toDoubles();            // any numeric dtype

#include "core/ir/dtype.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace remat::core::exec {

struct HostTensor
{
    ir::DataType dtype = ir::DataType::Float;
    std::vector<int64_t> shape;
    std::vector<std::byte> data;

    int64_t numElements() const;
    int64_t byteCount() const { return static_cast<int64_t>(data.size()); }

    static HostTensor zeros(ir::DataType dtype, std::vector<int64_t> shape);
    static HostTensor fromFloats(std::vector<int64_t> shape, std::span<const float> values);
    static HostTensor fromDoubles(std::vector<int64_t> shape, std::span<const double> values);
    static HostTensor fromInt64s(std::vector<int64_t> shape, std::span<const int64_t> values);

    std::span<float> floats();
    std::span<const float> floats() const;
    /// Any numeric dtype converted to double (bool as 0/1; float16 / bfloat16 exactly).
    std::vector<double> toDoubles() const;
    /// Converts to `dtype` (numeric types); same shape. To float16 / bfloat16: rounded to nearest
    /// even (core/exec/half.h).
    HostTensor convertedTo(ir::DataType dtype) const;
};

} // namespace remat::core::exec
