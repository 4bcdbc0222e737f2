#pragma once
// A device backend kept in its own shared library, opened the first time a device is listed or
// used (ONNX Runtime's execution providers, PyTorch's lazy CUDA): a process that never asks for a
// GPU maps no CUDA library. The CUDA backend is libremat_cuda.so (gpu/), found beside the
// executable, in ../lib, through $REMAT_CUDA_MODULE or the loader's search path.
//   Expected<const DeviceModule *> cuda = exec::loadCudaModule();
//   if (!cuda) report(cuda.status());      // "this build has no CUDA backend ..." (as before)
//   for (const DeviceInfo &d : (*cuda)->listDevices()) use(d);
//   auto be = (*cuda)->makeBackend({.device = 0});

#include "core/exec/backend.h"
#include "core/util/status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace remat::core::exec {

/// One device a module offers.
struct DeviceInfo
{
    int index = 0;
    std::string name;
    int64_t totalBytes = 0;
    int64_t freeBytes = 0;
    int computeMajor = 0, computeMinor = 0;
};

/// How a module's backend is made (the CUDA backend's options; gpu::CudaBackendOptions says more).
struct DeviceBackendOptions
{
    int device = 0;
    bool synchronous = true; ///< wait for every op, so errors name the step that caused them
    bool useCudnn = true;    ///< convolutions through cuDNN when the module has it
    bool planMemory = true;  ///< serve repeated steps from one planned arena
};

/// What a device module's entry point returns: a factory for its backends. Lives as long as the
/// process (the library is never closed: backends and their code stay valid).
class DeviceModule
{
public:
    virtual ~DeviceModule() = default;
    /// "CUDA toolkit 13.0, cuDNN 9.1" for the About box.
    virtual std::string description() const = 0;
    /// Empty when there is no driver or no device (never an error).
    virtual std::vector<DeviceInfo> listDevices() const = 0;
    /// A backend on options.device. Unsupported without a device ("no CUDA device: ..."),
    /// DeviceError when it cannot be initialised.
    virtual Expected<std::unique_ptr<Backend>>
    makeBackend(const DeviceBackendOptions &options) const = 0;
    /// Op types with a kernel on this device (forward and "<Type>Grad"), sorted.
    virtual std::vector<std::string> kernelTypes() const = 0;
};

/// Bumped whenever DeviceModule, DeviceInfo, DeviceBackendOptions or Backend change shape: a module
/// built against another version refuses to load instead of crashing.
inline constexpr int kDeviceModuleAbi = 1;

/// The C entry point a module exports: its DeviceModule for `abi`, null when it was built for
/// another one.
using DeviceModuleEntry = const DeviceModule *(*)(int abi);
inline constexpr const char *kCudaModuleEntry = "remat_cuda_module";
inline constexpr const char *kCudaModuleFile = "libremat_cuda.so";

/// Opens libremat_cuda.so on the first call (later calls return the same module or the same
/// error). Unsupported when no module is found ("this build has no CUDA backend ..."), DeviceError
/// when it is found but cannot be loaded (the loader's message: a missing libcudart, say).
Expected<const DeviceModule *> loadCudaModule();

/// Whether loadCudaModule() has opened the module in this process (tests: a CPU-only process
/// never does).
bool cudaModuleLoaded();

} // namespace remat::core::exec
