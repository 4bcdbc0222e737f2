#pragma once
// SHA-256 of files and byte strings, to identify model files in plans and sessions.
//   Sha256 h;  h.update(bytes.data(), bytes.size());  std::string hex = h.hexDigest();
//   std::string same = sha256Hex(bytes);
// Backed by OpenSSL's libcrypto (hardware SHA extensions where the CPU has them): model files
// reach gigabytes and are hashed on every load.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace remat::core {

class Sha256
{
public:
    Sha256();
    ~Sha256();
    Sha256(const Sha256 &) = delete;
    Sha256 &operator=(const Sha256 &) = delete;

    void update(const void *data, size_t size);
    /// Finishes the hash; the object must not be updated afterwards.
    std::array<uint8_t, 32> digest();
    /// Lower-case hex of digest().
    std::string hexDigest();

private:
    struct Context;
    std::unique_ptr<Context> m_ctx;
};

/// Lower-case hex SHA-256 of `bytes`.
std::string sha256Hex(std::string_view bytes);

} // namespace remat::core
