#pragma once
// Initializer and constant data, loaded lazily.
//   const TensorConstant &w = *graph.value(id).initializer;
//   Expected<std::span<const std::byte>> bytes = w.bytes();  // reads on first use, then cached
//   std::vector<float> f = w.toFloats().value();

#include "core/ir/dtype.h"
#include "core/ir/shape.h"
#include "core/util/status.h"

#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace remat::core::ir {

/// Where a tensor's bytes come from. Implemented by importers (protobuf raw_data kept alive
/// by a shared pointer, an external-data file region, or an owned buffer); data is read only
/// when someone asks for it.
class TensorDataSource
{
public:
    virtual ~TensorDataSource() = default;
    /// Exactly `byteCount` bytes in the tensor's dtype, little-endian, row-major.
    virtual Expected<std::span<const std::byte>> load() const = 0;
    /// A short description for errors and the inspector ("raw_data", "external weights.bin@4096").
    virtual std::string describe() const = 0;
};

/// A source that owns its bytes (constants built in memory, ConstantOfShape fills).
class OwnedTensorData : public TensorDataSource
{
public:
    explicit OwnedTensorData(std::vector<std::byte> bytes) : m_bytes(std::move(bytes)) {}
    Expected<std::span<const std::byte>> load() const override
    {
        return std::span<const std::byte>(m_bytes);
    }
    std::string describe() const override { return "in memory"; }

private:
    std::vector<std::byte> m_bytes;
};

/// Metadata always; bytes on demand.
struct TensorConstant
{
    std::string name;
    DataType dtype = DataType::Undefined;
    Shape shape;                                  ///< always static
    int64_t byteCount = 0;                        ///< elements x element size
    std::shared_ptr<const TensorDataSource> data; ///< null: dims only (no weights in the file)

    bool hasData() const { return data != nullptr; }
    Expected<std::span<const std::byte>> bytes() const;
    /// Converts any numeric dtype to float (for kernels) or int64 (for shape arithmetic).
    Expected<std::vector<float>> toFloats() const;
    Expected<std::vector<int64_t>> toInt64s() const;
};

} // namespace remat::core::ir
