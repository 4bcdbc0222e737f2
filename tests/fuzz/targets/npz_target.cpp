// NumPy .npz feeds (`remat run --feed`, the GUI's run panel): parseNpz, and parseNpy on the same
// bytes; every entry read must survive serializeNpy -> parseNpy unchanged.
#include "fuzz_targets.h"
#include "pipeline.h"

#include "core/exec/npz.h"

namespace remat::fuzz {

using namespace remat::core;

Status runNpz(const uint8_t *data, size_t size)
{
    if (size > kMaxInputBytes)
        return makeError(StatusCode::Unsupported, "fuzz: input over the size cap");
    const std::string bytes(reinterpret_cast<const char *>(data), size);
    const std::string origin = "fuzz.npz";
    auto npy = exec::parseNpy(bytes, "fuzz.npy");
    requireNamesOrigin(npy.status(), "fuzz.npy", "exec::parseNpy");
    auto archive = exec::parseNpz(bytes, origin);
    requireNamesOrigin(archive.status(), origin, "exec::parseNpz");
    if (!archive)
        return archive.status();
    for (const auto &[name, tensor] : archive->entries()) {
        auto back = exec::parseNpy(exec::serializeNpy(tensor), name);
        if (!back)
            fail("npz entry '" + name +
                 "' does not survive serializeNpy: " + back.status().toString());
        if (back->shape != tensor.shape || back->dtype != tensor.dtype || back->data != tensor.data)
            fail("npz entry '" + name + "' changes through serializeNpy -> parseNpy");
    }
    return Status::ok();
}

} // namespace remat::fuzz
