#pragma once
// NetworkX node-link JSON graphs: the public rematerialization benchmarks (Checkmate's training
// graphs, Moccasin's random layered graphs) and an export of our own training graphs.
//   Expected<io::NodeLinkGraph> g = io::readNodeLinkGraph("VGG16_256_224x224_train.json");
//   sim::simulate(storeAll, g->graph, g->costs);
//   Status s = io::writeNodeLinkGraph(tg, costs, "resnet18_train.json");

#include "core/cost/costs.h"
#include "core/training/training_graph.h"
#include "core/util/status.h"

#include <string>
#include <vector>

namespace remat::core::io {

/// A benchmark graph as a TrainingGraph: one op per node, producing one tensor of the node's
/// bytes in the node's time. Ops are in the file's topological order (Checkmate: id order;
/// random layered: `graph.order`).
struct NodeLinkGraph
{
    training::TrainingGraph graph;
    cost::Costs costs;            ///< opSeconds = the node's cost in the file's own time unit
    std::string name;             ///< graph.name
    std::vector<int64_t> nodeIds; ///< the file's node id of each op (indexed by OpId)
    /// Peak bytes of running every op once in graph order, freeing each tensor after its last
    /// consumer (the reference the published budget ratios multiply).
    int64_t referencePeakBytes = 0;
};

/// Reads either schema (Checkmate: id/name/backward/cost_cpu/cost_ram, links source/target;
/// random layered: name/out_cost/duration/param_cost, links "0"/"1", graph.order).
Expected<NodeLinkGraph> readNodeLinkGraph(const std::string &path);
/// Same, from JSON text (`origin` names it in errors).
Expected<NodeLinkGraph> parseNodeLinkGraph(const std::string &text, const std::string &origin);

/// Writes the Checkmate schema: one node per op (cost_ram = its output bytes, cost_cpu = its time
/// as an integer in `graph.cost_cpu_unit_seconds`), a link per producer->consumer op pair.
/// Extra keys our reader uses and other tools ignore: `phase`, `type`, `sticky_ram` (outputs kept
/// to the end, e.g. weight gradients), graph `cost_ram_fixed` (preloaded bytes).
std::string formatNodeLinkGraph(const training::TrainingGraph &graph, const cost::Costs &costs,
                                const std::string &name);
Status writeNodeLinkGraph(const training::TrainingGraph &graph, const cost::Costs &costs,
                          const std::string &path, const std::string &name = {});

/// Peak of running every op once in op order, freeing each non-preloaded, non-requiredAtEnd
/// tensor after its last consumer (an op's outputs and workspace count while it runs).
int64_t referencePeakBytes(const training::TrainingGraph &graph);

} // namespace remat::core::io
