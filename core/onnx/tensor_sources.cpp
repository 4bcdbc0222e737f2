#include "tensor_sources.h"

#include <cstring>
#include <fstream>

namespace remat::core::onnx {

using ir::DataType;

int64_t typedElementCount(const ::onnx::TensorProto &t)
{
    switch (DataType(t.data_type())) {
    case DataType::Float: return t.float_data_size();
    case DataType::Complex64: return t.float_data_size() / 2;
    case DataType::Double: return t.double_data_size();
    case DataType::Complex128: return t.double_data_size() / 2;
    case DataType::Int64: return t.int64_data_size();
    case DataType::UInt32:
    case DataType::UInt64: return t.uint64_data_size();
    case DataType::Int32:
    case DataType::Int16:
    case DataType::Int8:
    case DataType::UInt16:
    case DataType::UInt8:
    case DataType::Bool:
    case DataType::Float16:
    case DataType::BFloat16: return t.int32_data_size();
    default: return -1;
    }
}

ProtoTensorData::ProtoTensorData(std::shared_ptr<const ::onnx::ModelProto> model,
                                 const ::onnx::TensorProto *tensor, int64_t byteCount)
    : m_model(std::move(model)), m_tensor(tensor), m_byteCount(byteCount)
{
}

namespace {

template <typename T, typename Field>
void packInto(std::vector<std::byte> &out, const Field &field, size_t count)
{
    out.resize(count * sizeof(T));
    for (size_t i = 0; i < count; ++i) {
        const T v = static_cast<T>(field.Get(static_cast<int>(i)));
        std::memcpy(out.data() + i * sizeof(T), &v, sizeof(T));
    }
}

} // namespace

Expected<std::span<const std::byte>> ProtoTensorData::load() const
{
    const ::onnx::TensorProto &t = *m_tensor;
    if (t.has_raw_data()) {
        const std::string &raw = t.raw_data();
        return std::span<const std::byte>(reinterpret_cast<const std::byte *>(raw.data()),
                                          raw.size());
    }
    std::call_once(m_once, [&] {
        const int64_t es = ir::elementSize(DataType(t.data_type()));
        const int64_t n = es > 0 ? m_byteCount / es : 0;
        // The importer checked that the typed field holds exactly n elements.
        if (typedElementCount(t) != n && !(DataType(t.data_type()) == DataType::Complex64 ||
                                           DataType(t.data_type()) == DataType::Complex128)) {
            m_error =
                makeError(StatusCode::ParseError, "typed data of '" + t.name() + "' has " +
                                                      std::to_string(typedElementCount(t)) +
                                                      " elements, expected " + std::to_string(n));
            return;
        }
        const size_t count = static_cast<size_t>(n);
        switch (DataType(t.data_type())) {
        case DataType::Float: packInto<float>(m_converted, t.float_data(), count); break;
        case DataType::Complex64: packInto<float>(m_converted, t.float_data(), count * 2); break;
        case DataType::Double: packInto<double>(m_converted, t.double_data(), count); break;
        case DataType::Complex128: packInto<double>(m_converted, t.double_data(), count * 2); break;
        case DataType::Int64: packInto<int64_t>(m_converted, t.int64_data(), count); break;
        case DataType::UInt32: packInto<uint32_t>(m_converted, t.uint64_data(), count); break;
        case DataType::UInt64: packInto<uint64_t>(m_converted, t.uint64_data(), count); break;
        case DataType::Int32: packInto<int32_t>(m_converted, t.int32_data(), count); break;
        case DataType::Int16: packInto<int16_t>(m_converted, t.int32_data(), count); break;
        case DataType::Int8: packInto<int8_t>(m_converted, t.int32_data(), count); break;
        case DataType::UInt16:
        case DataType::Float16:
        case DataType::BFloat16: packInto<uint16_t>(m_converted, t.int32_data(), count); break;
        case DataType::UInt8:
        case DataType::Bool: packInto<uint8_t>(m_converted, t.int32_data(), count); break;
        default:
            m_error = makeError(StatusCode::Unsupported,
                                "tensor '" + t.name() + "' has data type " +
                                    std::to_string(t.data_type()) + " with no typed storage");
        }
    });
    if (!m_error.isOk())
        return m_error;
    return std::span<const std::byte>(m_converted);
}

std::string ProtoTensorData::describe() const
{
    return m_tensor->has_raw_data() ? "raw_data" : "typed data";
}

ExternalTensorData::ExternalTensorData(std::string filePath, std::string location, int64_t offset,
                                       int64_t length)
    : m_filePath(std::move(filePath)), m_location(std::move(location)), m_offset(offset),
      m_length(length)
{
}

Expected<std::span<const std::byte>> ExternalTensorData::load() const
{
    std::call_once(m_once, [&] {
        std::ifstream in(m_filePath, std::ios::binary);
        if (!in) {
            m_error = makeError(StatusCode::NotFound,
                                "cannot open external data file '" + m_location + "'");
            return;
        }
        in.seekg(0, std::ios::end);
        const int64_t size = static_cast<int64_t>(in.tellg());
        if (size < m_offset || size - m_offset < m_length) {
            m_error =
                makeError(StatusCode::ParseError,
                          "external data file '" + m_location + "' has " + std::to_string(size) +
                              " bytes, shorter than the declared region " +
                              std::to_string(m_offset) + "+" + std::to_string(m_length));
            return;
        }
        m_bytes.resize(static_cast<size_t>(m_length));
        in.seekg(m_offset);
        in.read(reinterpret_cast<char *>(m_bytes.data()), m_length);
        if (in.gcount() != m_length) {
            m_bytes.clear();
            m_error = makeError(StatusCode::ParseError,
                                "short read from external data file '" + m_location + "'");
        }
    });
    if (!m_error.isOk())
        return m_error;
    return std::span<const std::byte>(m_bytes);
}

std::string ExternalTensorData::describe() const
{
    return "external " + m_location + "@" + std::to_string(m_offset);
}

FillTensorData::FillTensorData(std::vector<std::byte> element, int64_t byteCount)
    : m_element(std::move(element)), m_byteCount(byteCount)
{
}

Expected<std::span<const std::byte>> FillTensorData::load() const
{
    std::call_once(m_once, [&] {
        m_bytes.resize(static_cast<size_t>(m_byteCount));
        const size_t es = m_element.size();
        if (es == 0)
            return;
        for (size_t off = 0; off + es <= m_bytes.size(); off += es)
            std::memcpy(m_bytes.data() + off, m_element.data(), es);
    });
    return std::span<const std::byte>(m_bytes);
}

std::string FillTensorData::describe() const { return "constant fill"; }

} // namespace remat::core::onnx
