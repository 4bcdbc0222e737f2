#pragma once
// NumPy .npz archives as written by np.savez (a zip of stored, uncompressed .npy entries).
//   Expected<NpzArchive> a = readNpz("mlp.npz");   const HostTensor *x = a->find("input");
//   NpzArchive out;  out.set("loss", HostTensor::fromDoubles({}, {&loss, 1}));
//   REMAT_RETURN_IF_ERROR(writeNpz("grads.npz", out));
// Supported dtypes: float32, float64, float16, int64, int32, bool (little-endian, C order); a
// bfloat16 tensor is written as float32 (numpy has no bfloat16; the widening is exact). Compressed
// entries (np.savez_compressed) are refused with a clear message.

#include "core/exec/host_tensor.h"
#include "core/util/status.h"

#include <map>
#include <string>

namespace remat::core::exec {

class NpzArchive
{
public:
    /// Entry names without the ".npy" suffix, e.g. "grad:fc1.weight".
    const std::map<std::string, HostTensor> &entries() const { return m_entries; }
    const HostTensor *find(const std::string &name) const;
    void set(const std::string &name, HostTensor tensor) { m_entries[name] = std::move(tensor); }
    bool empty() const { return m_entries.empty(); }

private:
    std::map<std::string, HostTensor> m_entries;
};

Expected<NpzArchive> readNpz(const std::string &path);
Expected<NpzArchive> parseNpz(const std::string &bytes, const std::string &pathForMessages);
Status writeNpz(const std::string &path, const NpzArchive &archive);

/// One .npy entry (exposed for tests).
Expected<HostTensor> parseNpy(const std::string &bytes, const std::string &nameForMessages);
std::string serializeNpy(const HostTensor &tensor);

} // namespace remat::core::exec
