#pragma once
// SHA-256 of files and byte strings, to identify model files in plans and sessions.
//   Sha256 h;  h.update(bytes.data(), bytes.size());  std::string hex = h.hexDigest();
//   std::string same = sha256Hex(bytes);

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace remat::core {

class Sha256
{
public:
    Sha256();
    void update(const void *data, size_t size);
    /// Finishes the hash; the object must not be updated afterwards.
    std::array<uint8_t, 32> digest();
    /// Lower-case hex of digest().
    std::string hexDigest();

private:
    void compress(const uint8_t *block);

    std::array<uint32_t, 8> m_state;
    std::array<uint8_t, 64> m_buffer{};
    size_t m_buffered = 0;
    uint64_t m_totalBytes = 0;
};

/// Lower-case hex SHA-256 of `bytes`.
std::string sha256Hex(std::string_view bytes);

} // namespace remat::core
