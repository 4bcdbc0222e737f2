// Layout speed: every corpus model and onnx-light file, flat (one layered layout of all nodes) and
// grouped by namespace (expanded, collapsed to depth 1, and re-expanded from the cache), plus
// synthetic layered DAGs of 1k, 10k and 50k nodes. Prints a table; median of a few runs.
#include "core/layout/graph_layout.h"
#include "core/layout/layered_layout.h"
#ifndef REMAT_BENCH_NO_ONNX
#include "core/onnx/importer.h"
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace remat::core;
using namespace remat::core::layout;

namespace {

double medianMs(int runs, const std::function<void()> &fn)
{
    std::vector<double> ms;
    for (int i = 0; i < runs; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        fn();
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

/// Random DAG in layers of 1..width nodes; 1-3 inputs from the layer above; ~3% of nodes take a
/// long edge from 2-20 layers above (skip connections).
LayeredInput syntheticDag(int nodes, int width, unsigned seed)
{
    std::mt19937 rng(seed);
    LayeredInput in;
    std::vector<std::vector<int>> byLayer;
    int next = 0;
    while (next < nodes) {
        const int w = std::min(1 + int(rng() % unsigned(width)), nodes - next);
        const size_t l = byLayer.size();
        byLayer.emplace_back();
        for (int i = 0; i < w; ++i) {
            const int v = next++;
            byLayer.back().push_back(v);
            in.sizes.push_back(Size{double(60 + rng() % 100), 34});
            if (l == 0)
                continue;
            const auto &above = byLayer[l - 1];
            const int k = 1 + int(rng() % 3);
            for (int j = 0; j < k; ++j)
                in.edges.push_back({above[rng() % above.size()], v});
            if (rng() % 100 < 3 && l >= 2) {
                const size_t back = 2 + rng() % 19;
                const auto &far = byLayer[l > back ? l - back : 0];
                in.edges.push_back({far[rng() % far.size()], v});
            }
        }
    }
    return in;
}

void printRow(const std::string &name, size_t nodes, size_t edges, double flatMs, size_t dummies,
              int64_t crossings, const std::string &grouped)
{
    std::printf("| %-22s | %6zu | %6zu | %9.1f | %7zu | %9lld | %s\n", name.c_str(), nodes, edges,
                flatMs, dummies, static_cast<long long>(crossings), grouped.c_str());
}

#ifndef REMAT_BENCH_NO_ONNX
void benchModel(const std::filesystem::path &file)
{
    onnx::ImportOptions opt;
    auto g = onnx::importModel(file.string(), opt);
    if (!g) {
        std::printf("| %-22s | import failed: %s\n", file.stem().string().c_str(),
                    g.status().toString().c_str());
        return;
    }
    auto graph = std::make_shared<const ir::Graph>(std::move(*g));
    GraphLayoutSizes sizes;
    for (const ir::Node &n : graph->nodes()) {
        const size_t chars = std::max(n.opType.size(), n.displayName().size());
        sizes.node.push_back(Size{double(std::min<size_t>(chars, 28) * 7 + 16), 34});
    }
    for (const ir::Namespace &ns : graph->namespaces())
        sizes.collapsedGroup.push_back(
            Size{double(std::min<size_t>(ns.name.size(), 28) * 7 + 40), 40});

    // flat: every node in one layered layout
    LayeredInput flat;
    flat.sizes = sizes.node;
    size_t edgeCount = 0;
    for (const ir::Node &n : graph->nodes())
        for (ValueId v : n.inputs)
            if (v.valid() && graph->value(v).producer.valid()) {
                flat.edges.push_back({int(graph->value(v).producer.index()), int(n.id.index())});
                ++edgeCount;
            }
    LayeredResult flatResult;
    const double flatMs = medianMs(5, [&] { flatResult = *layeredLayout(flat); });

    // grouped: fresh layouter each run (no cache), then collapse / re-expand on a warm cache
    CollapseSet none;
    GraphLayout l;
    const double groupedMs = medianMs(5, [&] {
        GraphLayouter lay(graph, sizes);
        l = *lay.layout(none);
    });
    GraphLayouter lay(graph, sizes);
    (void)*lay.layout(none);
    const CollapseSet d1 = collapseAtDepth(lay, 1);
    double collapseMs = medianMs(1, [&] { l = *lay.layout(d1); });
    const int items = int(l.items.size());
    double reexpandMs = 0;
    int laidOut = 0;
    reexpandMs = medianMs(1, [&] {
        l = *lay.layout(none);
        laidOut = l.groupsLaidOut;
    });
    char grouped[200];
    std::snprintf(grouped, sizeof grouped, "%9.1f | %5zu | %7.1f (%4d items) | %7.1f (%d of %zu) |",
                  groupedMs, lay.groups().size(), collapseMs, items, reexpandMs, laidOut,
                  lay.groups().size() + 1);
    printRow(file.stem().string(), graph->nodeCount(), edgeCount, flatMs, flatResult.dummyCount,
             flatResult.crossings, grouped);
}
#endif

} // namespace

int main()
{
    std::printf("Layout benchmark (ms, median of 5 unless noted; one thread)\n");
    std::printf("| %-22s | %6s | %6s | %9s | %7s | %9s | %9s | %5s | %s | %s |\n", "graph", "nodes",
                "edges", "flat ms", "bends", "crossings", "groups ms", "groups", "collapse d1 ms",
                "re-expand ms (groups laid out)");
#ifndef REMAT_BENCH_NO_ONNX
    const std::filesystem::path shared(REMAT_SHARED_DIR);
    std::vector<std::filesystem::path> files;
    for (const char *dir : {"corpus/graph_only", "corpus/with_weights", "onnx-light"}) {
        std::error_code ec;
        for (const auto &e : std::filesystem::directory_iterator(shared / dir, ec))
            if (e.path().extension() == ".onnx")
                files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto &f : files)
        benchModel(f);
#endif
    for (int n : {1000, 10000, 50000}) {
        const LayeredInput in = syntheticDag(n, 12, 7);
        LayeredResult r;
        const double ms = medianMs(n >= 50000 ? 3 : 5, [&] { r = *layeredLayout(in); });
        printRow("synthetic " + std::to_string(n), in.sizes.size(), in.edges.size(), ms,
                 r.dummyCount, r.crossings, "        - |     - | - | - |");
    }
    return 0;
}
