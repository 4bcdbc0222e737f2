#pragma once
// Element types, numbered as ONNX's TensorProto.DataType so importers can cast directly.
//   DataType t = DataType::Float;  elementSize(t) == 4;  dataTypeName(t) == "float32"

#include <cstdint>
#include <string>

namespace remat::core::ir {

enum class DataType : int32_t {
    Undefined = 0,
    Float = 1,
    UInt8 = 2,
    Int8 = 3,
    UInt16 = 4,
    Int16 = 5,
    Int32 = 6,
    Int64 = 7,
    String = 8,
    Bool = 9,
    Float16 = 10,
    Double = 11,
    UInt32 = 12,
    UInt64 = 13,
    Complex64 = 14,
    Complex128 = 15,
    BFloat16 = 16,
};

/// True for the codes above except Undefined.
bool isKnownDataType(int32_t onnxCode);
/// Bytes per element; 0 for Undefined and String (strings have no fixed size).
int64_t elementSize(DataType type);
/// "float32", "int64", "bool", ...
std::string dataTypeName(DataType type);
bool isFloatingPoint(DataType type);

} // namespace remat::core::ir
