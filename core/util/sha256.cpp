#include "core/util/sha256.h"

#include <openssl/evp.h>

#include <cassert>

namespace remat::core {

struct Sha256::Context
{
    EVP_MD_CTX *md = nullptr;
    ~Context() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : m_ctx(std::make_unique<Context>())
{
    m_ctx->md = EVP_MD_CTX_new();
    // Only fails on allocation failure or a libcrypto without SHA-256: both are broken installs.
    [[maybe_unused]] const int ok =
        m_ctx->md && EVP_DigestInit_ex(m_ctx->md, EVP_sha256(), nullptr);
    assert(ok == 1);
}

Sha256::~Sha256() = default;

void Sha256::update(const void *data, size_t size)
{
    if (size > 0)
        EVP_DigestUpdate(m_ctx->md, data, size);
}

std::array<uint8_t, 32> Sha256::digest()
{
    std::array<uint8_t, 32> out{};
    unsigned int length = 0;
    EVP_DigestFinal_ex(m_ctx->md, out.data(), &length);
    return out;
}

std::string Sha256::hexDigest()
{
    static const char kHex[] = "0123456789abcdef";
    const std::array<uint8_t, 32> d = digest();
    std::string s(64, '0');
    for (size_t i = 0; i < d.size(); ++i) {
        s[2 * i] = kHex[d[i] >> 4];
        s[2 * i + 1] = kHex[d[i] & 15];
    }
    return s;
}

std::string sha256Hex(std::string_view bytes)
{
    Sha256 h;
    h.update(bytes.data(), bytes.size());
    return h.hexDigest();
}

} // namespace remat::core
