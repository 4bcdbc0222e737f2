// The entry point of libremat_cuda.so: core::exec::loadCudaModule() opens the library the first
// time a CUDA device is listed or used and calls remat_cuda_module(), the one symbol it looks up.
#include "core/exec/device_module.h"
#include "gpu/cuda_backend.h"
#include "gpu/cuda_devices.h"

#include <cuda_runtime_api.h>
#if defined(REMAT_HAVE_CUDNN)
#include <cudnn.h>
#endif

#include <fmt/format.h>

namespace remat::gpu {

namespace {

class CudaModule final : public core::exec::DeviceModule
{
public:
    std::string description() const override
    {
        std::string s = fmt::format("CUDA toolkit {}.{} (this build)", CUDART_VERSION / 1000,
                                    (CUDART_VERSION % 1000) / 10);
#if defined(REMAT_HAVE_CUDNN)
        s += fmt::format(", cuDNN {}.{}", CUDNN_MAJOR, CUDNN_MINOR);
#else
        s += ", without cuDNN";
#endif
        return s;
    }
    std::vector<core::exec::DeviceInfo> listDevices() const override { return gpu::listDevices(); }
    core::Expected<std::unique_ptr<core::exec::Backend>>
    makeBackend(const core::exec::DeviceBackendOptions &options) const override
    {
        CudaBackendOptions o;
        o.device = options.device;
        o.synchronous = options.synchronous;
        o.useCudnn = options.useCudnn;
        o.planMemory = options.planMemory;
        return makeCudaBackend(o);
    }
    std::vector<std::string> kernelTypes() const override { return cudaKernelTypes(); }
};

} // namespace

} // namespace remat::gpu

extern "C" __attribute__((visibility("default"))) const remat::core::exec::DeviceModule *
remat_cuda_module(int abi)
{
    if (abi != remat::core::exec::kDeviceModuleAbi)
        return nullptr;
    static const remat::gpu::CudaModule module;
    return &module;
}
