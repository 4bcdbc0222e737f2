#include "gpu/cuda_devices.h"

#include <cuda_runtime.h>

namespace remat::gpu {

std::vector<DeviceInfo> listDevices()
{
    std::vector<DeviceInfo> out;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        cudaGetLastError(); // clear the sticky "no driver" error
        return out;
    }
    for (int i = 0; i < count; ++i) {
        cudaDeviceProp prop{};
        if (cudaGetDeviceProperties(&prop, i) != cudaSuccess)
            continue;
        DeviceInfo d;
        d.index = i;
        d.name = prop.name;
        d.totalBytes = static_cast<int64_t>(prop.totalGlobalMem);
        d.computeMajor = prop.major;
        d.computeMinor = prop.minor;
        size_t freeB = 0, totalB = 0;
        if (cudaSetDevice(i) == cudaSuccess && cudaMemGetInfo(&freeB, &totalB) == cudaSuccess)
            d.freeBytes = static_cast<int64_t>(freeB);
        out.push_back(d);
    }
    return out;
}

} // namespace remat::gpu
