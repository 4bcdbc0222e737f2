#include "tensor_data.h"

#include <cstring>

namespace remat::core::ir {

Expected<std::span<const std::byte>> TensorConstant::bytes() const
{
    if (!data)
        return makeError(StatusCode::NotFound,
                         "tensor '" + name + "' has no data in the model file");
    auto loaded = data->load();
    if (!loaded)
        return loaded.status().withContext("tensor '" + name + "'");
    if (static_cast<int64_t>(loaded->size()) != byteCount)
        return makeError(StatusCode::ParseError,
                         "tensor '" + name + "' holds " + std::to_string(loaded->size()) +
                             " bytes but its shape " + shape.toString() + " and dtype " +
                             dataTypeName(dtype) + " need " + std::to_string(byteCount));
    return loaded;
}

namespace {

template <typename Out> Expected<std::vector<Out>> convert(const TensorConstant &t)
{
    auto raw = t.bytes();
    if (!raw)
        return raw.status();
    const std::byte *p = raw->data();
    const int64_t es = elementSize(t.dtype);
    if (es == 0)
        return makeError(StatusCode::Unsupported, "tensor '" + t.name + "' has dtype " +
                                                      dataTypeName(t.dtype) +
                                                      " which is not numeric");
    const size_t n = raw->size() / static_cast<size_t>(es);
    std::vector<Out> out(n);
    auto read = [&](auto tag, size_t i) {
        using T = decltype(tag);
        T v;
        std::memcpy(&v, p + i * sizeof(T), sizeof(T));
        return static_cast<Out>(v);
    };
    for (size_t i = 0; i < n; ++i) {
        switch (t.dtype) {
        case DataType::Float: out[i] = read(float{}, i); break;
        case DataType::Double: out[i] = read(double{}, i); break;
        case DataType::Int64: out[i] = read(int64_t{}, i); break;
        case DataType::Int32: out[i] = read(int32_t{}, i); break;
        case DataType::Int16: out[i] = read(int16_t{}, i); break;
        case DataType::Int8: out[i] = read(int8_t{}, i); break;
        case DataType::UInt8: out[i] = read(uint8_t{}, i); break;
        case DataType::UInt16: out[i] = read(uint16_t{}, i); break;
        case DataType::UInt32: out[i] = read(uint32_t{}, i); break;
        case DataType::UInt64: out[i] = read(uint64_t{}, i); break;
        case DataType::Bool: out[i] = static_cast<Out>(read(uint8_t{}, i) != 0); break;
        default:
            return makeError(StatusCode::Unsupported, "cannot convert tensor '" + t.name +
                                                          "' of dtype " + dataTypeName(t.dtype));
        }
    }
    return out;
}

} // namespace

Expected<std::vector<float>> TensorConstant::toFloats() const { return convert<float>(*this); }

Expected<std::vector<int64_t>> TensorConstant::toInt64s() const { return convert<int64_t>(*this); }

} // namespace remat::core::ir
