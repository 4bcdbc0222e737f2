#pragma once
// Host evaluation of forward values that do not depend on the batch data: initializers, Constant
// nodes, and the shape arithmetic built on them (Shape -> Gather -> Concat -> Reshape's shape).
//   StaticEvaluator ev(graph);
//   Expected<const HostTensor *> starts = ev.evaluate(node.inputs[1]);   // cached
// Used by the executor to fill preloaded Constant tensors, and by the CPU backend for constant
// operands a backward kernel needs but was not given (Slice starts, Pad pads).

#include "core/exec/host_tensor.h"
#include "core/util/ids.h"
#include "core/util/status.h"

#include <map>
#include <memory>

namespace remat::core::ir {
class Graph;
}

namespace remat::core::exec {

class StaticEvaluator
{
public:
    explicit StaticEvaluator(const ir::Graph &graph) : m_graph(&graph) {}

    /// The value's data; NotFound when it depends on a graph input or a parameter without data.
    Expected<const HostTensor *> evaluate(ValueId value);
    /// True when the value has an initializer or comes from constants only (no evaluation done).
    bool isStatic(ValueId value) const;

private:
    const ir::Graph *m_graph;
    std::map<int32_t, std::unique_ptr<HostTensor>> m_cache;
    mutable std::map<int32_t, bool> m_static; // isStatic() answers
};

} // namespace remat::core::exec
