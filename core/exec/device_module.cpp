#include "core/exec/device_module.h"

#include <fmt/format.h>

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>

namespace remat::core::exec {

namespace {

namespace fs = std::filesystem;

/// The folder of the running executable ("" when /proc is not there).
fs::path executableDir()
{
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? fs::path() : exe.parent_path();
}

/// Where the module may be when $REMAT_CUDA_MODULE does not say: beside the executable (the build
/// tree and a flat install), then ../lib (a prefix install).
std::vector<fs::path> candidatePaths()
{
    std::vector<fs::path> out;
    if (const fs::path dir = executableDir(); !dir.empty()) {
        out.push_back(dir / kCudaModuleFile);
        out.push_back(dir.parent_path() / "lib" / kCudaModuleFile);
    }
    return out;
}

struct LoadResult
{
    const DeviceModule *module = nullptr;
    Status error;
};

LoadResult openCudaModule()
{
    std::string path; // empty: not found in a known place
    std::string tried;
    std::error_code ec;
    if (const char *env = std::getenv("REMAT_CUDA_MODULE"); env && *env) {
        // An explicit choice is final: no silent fallback to another copy.
        if (!fs::exists(env, ec))
            return {nullptr, makeError(StatusCode::NotFound,
                                       fmt::format("REMAT_CUDA_MODULE names {}, which does not "
                                                   "exist (unset it to use the module beside "
                                                   "the executable)",
                                                   env))};
        path = env;
    } else {
        for (const fs::path &p : candidatePaths()) {
            if (fs::exists(p, ec)) {
                path = p.string();
                break;
            }
            tried += (tried.empty() ? "" : ", ") + p.string();
        }
    }
    // Found nowhere we know: the loader's own search path (LD_LIBRARY_PATH, the RUNPATH) last.
    const std::string name = path.empty() ? std::string(kCudaModuleFile) : path;
    void *handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        if (path.empty())
            return {nullptr,
                    makeError(StatusCode::Unsupported,
                              fmt::format("this build has no CUDA backend ({} not found in {} "
                                          "or the library path): configure with the CUDA "
                                          "toolkit to use the CUDA backend, or point "
                                          "REMAT_CUDA_MODULE at the library",
                                          kCudaModuleFile, tried.empty() ? "-" : tried))};
        return {nullptr, makeError(StatusCode::DeviceError,
                                   fmt::format("the CUDA backend {} could not be loaded: {}", path,
                                               why ? why : "unknown loader error"))};
    }
    auto entry = reinterpret_cast<DeviceModuleEntry>(dlsym(handle, kCudaModuleEntry));
    if (!entry) {
        dlclose(handle);
        return {nullptr, makeError(StatusCode::DeviceError,
                                   fmt::format("{} is not a Remat device module (no {} entry)",
                                               name, kCudaModuleEntry))};
    }
    const DeviceModule *module = entry(kDeviceModuleAbi);
    if (!module) {
        dlclose(handle);
        return {nullptr, makeError(StatusCode::DeviceError,
                                   fmt::format("{} was built for another version of Remat Studio "
                                               "(module interface {} expected): rebuild it",
                                               name, kDeviceModuleAbi))};
    }
    // Never closed: backends made by the module run its code until the process ends.
    return {module, Status::ok()};
}

std::once_flag g_once;
LoadResult g_result;
std::atomic<bool> g_loaded{false};

} // namespace

Expected<const DeviceModule *> loadCudaModule()
{
    std::call_once(g_once, [] {
        g_result = openCudaModule();
        g_loaded = g_result.module != nullptr;
    });
    if (!g_result.module)
        return g_result.error;
    return g_result.module;
}

bool cudaModuleLoaded() { return g_loaded; }

} // namespace remat::core::exec
