// NetworkX node-link graphs (the benchmark format): parse -> store-all and chen-sqrtn ->
// simulate, and the graph written back (formatNodeLinkGraph) must read again.
#include "fuzz_targets.h"
#include "pipeline.h"

#include "core/io/node_link.h"

namespace remat::fuzz {

using namespace remat::core;

Status runNodeLink(const uint8_t *data, size_t size)
{
    if (size > kMaxInputBytes)
        return makeError(StatusCode::Unsupported, "fuzz: input over the size cap");
    const std::string origin = "fuzz.nodelink.json";
    auto g =
        io::parseNodeLinkGraph(std::string(reinterpret_cast<const char *>(data), size), origin);
    requireNamesOrigin(g.status(), origin, "io::parseNodeLinkGraph");
    if (!g)
        return g.status();
    (void)runSchedules(g->graph, g->costs);
    return Status::ok();
}

} // namespace remat::fuzz
