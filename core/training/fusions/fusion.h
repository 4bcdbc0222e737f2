#pragma once
// What a fusion pass of the training builder sees of the forward graph, and what it hands back: a
// synthetic node replacing a pattern (its id is the pattern's last node's), the nodes it absorbs,
// and a line for the user saying what was fused, or why a pattern that almost matched was not.
//   FusionView view{graph, resolve, available, isConstant};
//   FusionResult r = fuseAttention(view);   // fusions/attention.h
//   for (const FusedPattern &p : r.fused) skip(p.absorbed), replace(p.node.id, p.node);

#include "core/ir/graph.h"

#include <functional>
#include <string>
#include <vector>

namespace remat::core::training::fusions {

struct FusionView
{
    const ir::Graph &graph;
    /// The value a consumer really reads (through the Identity / no-op Dropout the builder removed).
    std::function<ValueId(ValueId)> resolve;
    /// Whether a node may be taken into a pattern: not constant-folded, not removed, not already
    /// part of another fusion.
    std::function<bool(const ir::Node &)> available;
    /// Whether a value is constant (folded shape arithmetic or an initializer used as data).
    std::function<bool(ValueId)> isConstant;
    /// Whether a node was removed as an alias of its input (Identity, Dropout dropping nothing).
    std::function<bool(const ir::Node &)> isAlias;

    /// The node computing `v` (through removed aliases), or null for graph inputs and weights.
    const ir::Node *producer(ValueId v) const
    {
        const ir::Value &val = graph.value(resolve(v));
        return val.producer.valid() ? &graph.node(val.producer) : nullptr;
    }
    /// The single consumer of `v` (null when several, none, or `v` is a graph output). The
    /// builder's aliases are looked through: a removed Identity's consumer counts as v's.
    const ir::Node *soleConsumer(ValueId v) const
    {
        const ir::Node *only = nullptr;
        int count = 0;
        const std::function<void(ValueId)> walk = [&](ValueId x) {
            const ir::Value &val = graph.value(x);
            if (val.isGraphOutput)
                count += 2;
            for (NodeId c : val.consumers) {
                const ir::Node &n = graph.node(c);
                if (isAlias(n) && !n.outputs.empty() && n.outputs[0].valid()) {
                    walk(n.outputs[0]);
                } else {
                    only = &n;
                    ++count;
                }
            }
        };
        walk(v);
        return count == 1 ? only : nullptr;
    }
};

struct FusedPattern
{
    ir::Node node;                ///< the replacement (id and outputs: the last node's)
    std::vector<NodeId> absorbed; ///< the pattern's other nodes, removed from the step
    std::string description;      ///< "attention '/h.0/attn/MatMul' .. '/h.0/attn/MatMul_1' ..."
};

struct FusionResult
{
    std::vector<FusedPattern> fused;
    std::vector<std::string> notFused; ///< near misses, each with its reason
    std::vector<NodeId> notFusedAt;    ///< per near miss: its Softmax
};

} // namespace remat::core::training::fusions
