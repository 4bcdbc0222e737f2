#pragma once
// ONNX node attributes as plain values.
//   const Attribute *a = node.attribute("kernel_shape");
//   if (a && a->isInts()) use(a->ints());
//   int64_t group = node.attrInt("group", 1);

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace remat::core::ir {

struct TensorConstant; // defined in tensor_data.h

struct Attribute
{
    using Payload =
        std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>,
                     std::vector<std::string>, std::shared_ptr<const TensorConstant>>;
    std::string name;
    Payload payload;

    bool isInt() const { return std::holds_alternative<int64_t>(payload); }
    bool isFloat() const { return std::holds_alternative<double>(payload); }
    bool isString() const { return std::holds_alternative<std::string>(payload); }
    bool isInts() const { return std::holds_alternative<std::vector<int64_t>>(payload); }
    bool isFloats() const { return std::holds_alternative<std::vector<double>>(payload); }
    bool isStrings() const { return std::holds_alternative<std::vector<std::string>>(payload); }
    bool isTensor() const
    {
        return std::holds_alternative<std::shared_ptr<const TensorConstant>>(payload);
    }

    int64_t i() const { return std::get<int64_t>(payload); }
    double f() const { return std::get<double>(payload); }
    const std::string &s() const { return std::get<std::string>(payload); }
    const std::vector<int64_t> &ints() const { return std::get<std::vector<int64_t>>(payload); }
    const std::vector<double> &floats() const { return std::get<std::vector<double>>(payload); }
    const std::vector<std::string> &strings() const
    {
        return std::get<std::vector<std::string>>(payload);
    }
    const TensorConstant &tensor() const
    {
        return *std::get<std::shared_ptr<const TensorConstant>>(payload);
    }

    /// Short human-readable form for the inspector: "[3,3]", "1", "0.5", "'NOTSET'", "tensor float32[64]".
    std::string toString() const;
};

} // namespace remat::core::ir
