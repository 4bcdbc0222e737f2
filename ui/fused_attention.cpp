#include "ui/fused_attention.h"

#include <algorithm>

namespace remat::ui {

using namespace core;

std::vector<ir::NodeGroup> fusedAttentionGroups(const training::TrainingGraph &graph)
{
    std::vector<ir::NodeGroup> groups;
    for (const training::FusionSite &site : graph.info().fusedSites) {
        if (site.absorbed.empty())
            continue;
        ir::NodeGroup g;
        g.name = kFusedAttentionGroup;
        g.nodes = site.absorbed;
        g.nodes.push_back(site.node);
        groups.push_back(std::move(g));
    }
    return groups;
}

int fusedSiteOf(const training::TrainingGraph &graph, NodeId node)
{
    const auto &sites = graph.info().fusedSites;
    for (size_t i = 0; i < sites.size(); ++i)
        if (sites[i].node == node || std::find(sites[i].absorbed.begin(), sites[i].absorbed.end(),
                                               node) != sites[i].absorbed.end())
            return int(i);
    return -1;
}

int nearMissAt(const training::TrainingGraph &graph, NodeId node)
{
    const auto &sites = graph.info().notFusedSites;
    for (size_t i = 0; i < sites.size(); ++i)
        if (sites[i].node == node)
            return int(i);
    return -1;
}

} // namespace remat::ui
