#pragma once
// CUDA devices present on this machine, for the UI's backend list and "this GPU" budgets.
//   for (const gpu::DeviceInfo &d : gpu::listDevices()) use(d.name, d.freeBytes);

#include "core/util/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace remat::gpu {

struct DeviceInfo
{
    int index = 0;
    std::string name;
    int64_t totalBytes = 0;
    int64_t freeBytes = 0;
    int computeMajor = 0, computeMinor = 0;
};

/// Empty when there is no driver or no device (never an error: the CPU backend remains).
std::vector<DeviceInfo> listDevices();

} // namespace remat::gpu
