#include "core/exec/host_tensor.h"

#include "core/exec/half.h"

#include <cstring>

namespace remat::core::exec {

using ir::DataType;

int64_t HostTensor::numElements() const
{
    int64_t n = 1;
    for (int64_t d : shape)
        n *= d;
    return n;
}

HostTensor HostTensor::zeros(DataType dtype, std::vector<int64_t> shape)
{
    HostTensor t;
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.data.assign(static_cast<size_t>(t.numElements() * ir::elementSize(dtype)), std::byte{0});
    return t;
}

HostTensor HostTensor::fromFloats(std::vector<int64_t> shape, std::span<const float> values)
{
    HostTensor t = zeros(DataType::Float, std::move(shape));
    std::memcpy(t.data.data(), values.data(), std::min(t.data.size(), values.size_bytes()));
    return t;
}

HostTensor HostTensor::fromDoubles(std::vector<int64_t> shape, std::span<const double> values)
{
    HostTensor t = zeros(DataType::Double, std::move(shape));
    std::memcpy(t.data.data(), values.data(), std::min(t.data.size(), values.size_bytes()));
    return t;
}

HostTensor HostTensor::fromInt64s(std::vector<int64_t> shape, std::span<const int64_t> values)
{
    HostTensor t = zeros(DataType::Int64, std::move(shape));
    std::memcpy(t.data.data(), values.data(), std::min(t.data.size(), values.size_bytes()));
    return t;
}

std::span<float> HostTensor::floats()
{
    return {reinterpret_cast<float *>(data.data()), data.size() / sizeof(float)};
}

std::span<const float> HostTensor::floats() const
{
    return {reinterpret_cast<const float *>(data.data()), data.size() / sizeof(float)};
}

std::vector<double> HostTensor::toDoubles() const
{
    const size_t n = static_cast<size_t>(numElements());
    std::vector<double> out(n, 0.0);
    const std::byte *p = data.data();
    for (size_t i = 0; i < n; ++i) {
        switch (dtype) {
        case DataType::Float: {
            float v;
            std::memcpy(&v, p + i * 4, 4);
            out[i] = v;
            break;
        }
        case DataType::Double: {
            double v;
            std::memcpy(&v, p + i * 8, 8);
            out[i] = v;
            break;
        }
        case DataType::Int64: {
            int64_t v;
            std::memcpy(&v, p + i * 8, 8);
            out[i] = double(v);
            break;
        }
        case DataType::Int32: {
            int32_t v;
            std::memcpy(&v, p + i * 4, 4);
            out[i] = v;
            break;
        }
        case DataType::Bool:
        case DataType::UInt8: out[i] = double(static_cast<uint8_t>(p[i])); break;
        case DataType::Int8: out[i] = double(static_cast<int8_t>(p[i])); break;
        case DataType::Float16:
        case DataType::BFloat16: {
            uint16_t h;
            std::memcpy(&h, p + i * 2, 2);
            out[i] = halfOfToFloat(dtype, h);
            break;
        }
        default: break;
        }
    }
    return out;
}

HostTensor HostTensor::convertedTo(DataType target) const
{
    if (target == dtype)
        return *this;
    const std::vector<double> v = toDoubles();
    HostTensor t = zeros(target, shape);
    std::byte *p = t.data.data();
    for (size_t i = 0; i < v.size(); ++i) {
        switch (target) {
        case DataType::Float: {
            const float f = float(v[i]);
            std::memcpy(p + i * 4, &f, 4);
            break;
        }
        case DataType::Double: std::memcpy(p + i * 8, &v[i], 8); break;
        case DataType::Int64: {
            const int64_t x = int64_t(v[i]);
            std::memcpy(p + i * 8, &x, 8);
            break;
        }
        case DataType::Int32: {
            const int32_t x = int32_t(v[i]);
            std::memcpy(p + i * 4, &x, 4);
            break;
        }
        case DataType::Bool: p[i] = std::byte(v[i] != 0 ? 1 : 0); break;
        case DataType::UInt8: p[i] = std::byte(uint8_t(v[i])); break;
        case DataType::Float16:
        case DataType::BFloat16: {
            // from float32 data: the one rounding of c10's float -> half conversion
            const uint16_t h = dtype == DataType::Float ? floatToHalfOf(target, float(v[i]))
                                                        : doubleToHalfOf(target, v[i]);
            std::memcpy(p + i * 2, &h, 2);
            break;
        }
        default: break;
        }
    }
    return t;
}

} // namespace remat::core::exec
