#pragma once
// Lazy tensor data for imported models: protobuf fields kept alive with the parsed model, file
// regions of external data, and constant fills (ConstantOfShape weights of "light" files).
//   auto src = std::make_shared<ProtoTensorData>(model, &tensorProto, byteCount);
//   constant.data = src;   // nothing is read or converted until constant.bytes()

#include "core/ir/tensor_data.h"

#include <onnx/onnx_pb.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace remat::core::onnx {

/// Bytes of a TensorProto held in the parsed model: raw_data is handed out in place; typed
/// fields (float_data, int64_data, ...) are converted to little-endian bytes on first load.
class ProtoTensorData : public ir::TensorDataSource
{
public:
    ProtoTensorData(std::shared_ptr<const ::onnx::ModelProto> model,
                    const ::onnx::TensorProto *tensor, int64_t byteCount);
    Expected<std::span<const std::byte>> load() const override;
    std::string describe() const override;

private:
    std::shared_ptr<const ::onnx::ModelProto> m_model; // owns *m_tensor
    const ::onnx::TensorProto *m_tensor;
    int64_t m_byteCount;
    mutable std::once_flag m_once;
    mutable std::vector<std::byte> m_converted;
    mutable Status m_error;
};

/// A region of an external-data file, read on first load (and then cached).
class ExternalTensorData : public ir::TensorDataSource
{
public:
    ExternalTensorData(std::string filePath, std::string location, int64_t offset, int64_t length);
    Expected<std::span<const std::byte>> load() const override;
    std::string describe() const override;

private:
    std::string m_filePath;
    std::string m_location; // as written in the model, for messages
    int64_t m_offset;
    int64_t m_length;
    mutable std::once_flag m_once;
    mutable std::vector<std::byte> m_bytes;
    mutable Status m_error;
};

/// `byteCount` bytes repeating one element (ConstantOfShape's value), built on first load.
class FillTensorData : public ir::TensorDataSource
{
public:
    FillTensorData(std::vector<std::byte> element, int64_t byteCount);
    Expected<std::span<const std::byte>> load() const override;
    std::string describe() const override;

private:
    std::vector<std::byte> m_element;
    int64_t m_byteCount;
    mutable std::once_flag m_once;
    mutable std::vector<std::byte> m_bytes;
};

/// Number of elements a TensorProto's typed field holds for its data_type (raw_data excluded);
/// -1 when the dtype stores no typed data we know.
int64_t typedElementCount(const ::onnx::TensorProto &tensor);

} // namespace remat::core::onnx
