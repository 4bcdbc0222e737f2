#pragma once
// Strong integer ids: a NodeId cannot be passed where a ValueId is expected.
//   NodeId n{3};  if (n.valid()) nodes[n.index()];
//   std::unordered_map<ValueId, int, IdHash> m;

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>

namespace remat::core {

template <typename Tag> struct Id
{
    static constexpr int32_t kInvalid = -1;
    int32_t value = kInvalid;

    constexpr Id() = default;
    constexpr explicit Id(int32_t v) : value(v) {}
    constexpr explicit Id(size_t v) : value(static_cast<int32_t>(v)) {}

    constexpr bool valid() const { return value >= 0; }
    constexpr size_t index() const { return static_cast<size_t>(value); }
    constexpr auto operator<=>(const Id &) const = default;
};

struct IdHash
{
    template <typename Tag> size_t operator()(Id<Tag> id) const noexcept
    {
        return std::hash<int32_t>()(id.value);
    }
};

// ir::Graph ids.
using NodeId = Id<struct NodeTag>;
using ValueId = Id<struct ValueTag>;
using NamespaceId = Id<struct NamespaceTag>;
// TrainingGraph ids (distinct from the forward graph's: backward ops have no ONNX node).
using OpId = Id<struct OpTag>;
using TensorId = Id<struct TensorTag>;
// Position in a Schedule.
using StepIndex = Id<struct StepTag>;

} // namespace remat::core
