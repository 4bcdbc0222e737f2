#pragma once
// Tensor shapes with static and symbolic dims.
//   Shape s{{Dim::symbolic("batch"), Dim(3), Dim(224), Dim(224)}};
//   s.isStatic() == false;  s.toString() == "[batch,3,224,224]"
//   auto n = Shape{{Dim(2), Dim(3)}}.numElements();  // Expected<int64_t>, 6; overflow is an error

#include "core/util/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace remat::core::ir {

struct Dim
{
    int64_t value = -1; ///< >= 0 when known
    std::string symbol; ///< the dim_param name when symbolic ("batch", "N"); empty otherwise

    Dim() = default;
    explicit Dim(int64_t v) : value(v) {}
    static Dim symbolic(std::string name)
    {
        Dim d;
        d.symbol = std::move(name);
        return d;
    }
    bool isStatic() const { return value >= 0; }
    bool operator==(const Dim &) const = default;
};

struct Shape
{
    std::vector<Dim> dims;
    bool rankKnown = true; ///< false when not even the rank is known

    Shape() = default;
    explicit Shape(std::vector<Dim> d) : dims(std::move(d)) {}
    static Shape fromStatic(const std::vector<int64_t> &sizes);
    static Shape unknownRank()
    {
        Shape s;
        s.rankKnown = false;
        return s;
    }

    size_t rank() const { return dims.size(); }
    bool isStatic() const;
    /// Static sizes; only meaningful when isStatic().
    std::vector<int64_t> sizes() const;
    /// Element count; an error when a dim is unknown or the product overflows int64.
    Expected<int64_t> numElements() const;
    std::string toString() const;
    bool operator==(const Shape &) const = default;
};

} // namespace remat::core::ir
