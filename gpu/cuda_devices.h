#pragma once
// CUDA devices present on this machine, for the UI's backend list and "this GPU" budgets.
//   for (const gpu::DeviceInfo &d : gpu::listDevices()) use(d.name, d.freeBytes);

#include "core/exec/device_module.h"

#include <cstdint>
#include <string>
#include <vector>

namespace remat::gpu {

/// The module interface's type (core/exec/device_module.h), so listings cross it unchanged.
using DeviceInfo = core::exec::DeviceInfo;

/// Empty when there is no driver or no device (never an error: the CPU backend remains).
std::vector<DeviceInfo> listDevices();

} // namespace remat::gpu
