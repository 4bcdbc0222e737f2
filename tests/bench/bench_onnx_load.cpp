// ONNX import time per corpus and onnx-light model: parse + classify + shape inference (median
// of several runs), at the file's batch with its value_info and at batch 16 with value_info
// ignored (all shapes ours). Target: under 1 s each.
#include "core/onnx/importer.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

using namespace remat::core;

namespace {

struct Timing
{
    double medianMs = 0;
    size_t nodes = 0;
    int64_t batch = 0;
    std::string error;
};

Timing timeImport(const std::string &path, const onnx::ImportOptions &opt, int runs)
{
    Timing t;
    std::vector<double> ms;
    for (int r = 0; r < runs; ++r) {
        const auto start = std::chrono::steady_clock::now();
        auto g = onnx::importModel(path, opt);
        const auto end = std::chrono::steady_clock::now();
        if (!g) {
            t.error = g.status().message();
            return t;
        }
        t.nodes = g->nodeCount();
        t.batch = g->info().batch;
        ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
    }
    std::sort(ms.begin(), ms.end());
    t.medianMs = ms[ms.size() / 2];
    return t;
}

} // namespace

int main(int argc, char **argv)
{
    const std::string shared = argc > 1 ? argv[1] : REMAT_SHARED_DIR;
    const int runs = 7;
    std::vector<std::string> files;
    for (const char *dir : {"corpus/graph_only", "corpus/with_weights", "onnx-light"}) {
        std::vector<std::string> here;
        std::error_code ec;
        for (const auto &e : std::filesystem::directory_iterator(shared + "/" + dir, ec))
            if (e.path().extension() == ".onnx")
                here.push_back(e.path().string());
        std::sort(here.begin(), here.end());
        files.insert(files.end(), here.begin(), here.end());
    }
    if (files.empty()) {
        fmt::print(stderr, "no models under {}\n", shared);
        return 1;
    }
    fmt::print("ONNX import (parse, classify, infer shapes), median of {} runs\n", runs);
    fmt::print("{:<34} {:>10} {:>6} {:>6} {:>12} {:>16}\n", "model", "size", "nodes", "batch",
               "file (ms)", "batch 16, ours (ms)");
    double worst = 0;
    for (const std::string &f : files) {
        onnx::ImportOptions atFile;
        onnx::ImportOptions at16;
        at16.batch = 16;
        at16.ignoreFileValueInfo = true;
        const Timing a = timeImport(f, atFile, runs);
        const Timing b = timeImport(f, at16, runs);
        const std::string name = std::filesystem::path(f).parent_path().filename().string() + "/" +
                                 std::filesystem::path(f).filename().string();
        if (!a.error.empty() || !b.error.empty()) {
            fmt::print("{:<34} FAILED: {}\n", name, a.error.empty() ? b.error : a.error);
            continue;
        }
        worst = std::max({worst, a.medianMs, b.medianMs});
        fmt::print("{:<34} {:>9.1f}K {:>6} {:>6} {:>12.2f} {:>16.2f}\n", name,
                   double(std::filesystem::file_size(f)) / 1024.0, a.nodes, a.batch, a.medianMs,
                   b.medianMs);
    }
    fmt::print("slowest: {:.2f} ms (target < 1000 ms)\n", worst);
    return 0;
}
