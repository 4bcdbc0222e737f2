#include "core/exec/npz.h"

#include "core/util/reader_guard.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cstring>
#include <fstream>
#include <sstream>

namespace remat::core::exec {

using ir::DataType;

namespace {

Status parseError(const std::string &where, const std::string &what)
{
    return makeError(StatusCode::ParseError, fmt::format("{}: {}", where, what));
}

uint32_t rd16(const std::string &b, size_t at)
{
    return uint32_t(uint8_t(b[at])) | uint32_t(uint8_t(b[at + 1])) << 8;
}
uint32_t rd32(const std::string &b, size_t at) { return rd16(b, at) | rd16(b, at + 2) << 16; }
uint64_t rd64(const std::string &b, size_t at)
{
    return uint64_t(rd32(b, at)) | uint64_t(rd32(b, at + 4)) << 32;
}

/// Whether `len` bytes at `offset` lie inside `b`. Written without `offset + len`: zip64 offsets
/// and sizes come from the file, and near 2^64 the sum wraps to a small number that passes.
bool fits(const std::string &b, uint64_t offset, uint64_t len)
{
    return offset <= b.size() && len <= b.size() - offset;
}

void wr16(std::string &b, uint32_t v)
{
    b.push_back(char(v & 0xff));
    b.push_back(char((v >> 8) & 0xff));
}
void wr32(std::string &b, uint32_t v)
{
    wr16(b, v & 0xffff);
    wr16(b, v >> 16);
}

uint32_t crc32(const std::string &data)
{
    static const std::array<uint32_t, 256> table = [] {
        std::array<uint32_t, 256> t{};
        for (uint32_t i = 0; i < 256; ++i) {
            uint32_t c = i;
            for (int k = 0; k < 8; ++k)
                c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            t[i] = c;
        }
        return t;
    }();
    uint32_t c = 0xffffffffu;
    for (char ch : data)
        c = table[(c ^ uint8_t(ch)) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

Expected<DataType> dtypeOfDescr(const std::string &descr, const std::string &name)
{
    if (descr == "<f4")
        return DataType::Float;
    if (descr == "<f8")
        return DataType::Double;
    if (descr == "<f2")
        return DataType::Float16;
    if (descr == "<i8")
        return DataType::Int64;
    if (descr == "<i4")
        return DataType::Int32;
    if (descr == "|b1")
        return DataType::Bool;
    if (descr == "|u1")
        return DataType::UInt8;
    if (descr == "|i1")
        return DataType::Int8;
    return makeError(StatusCode::Unsupported,
                     fmt::format("{}: unsupported npy dtype '{}'", name, descr));
}

Expected<std::string> descrOf(DataType t)
{
    switch (t) {
    case DataType::Float: return std::string("<f4");
    case DataType::Double: return std::string("<f8");
    case DataType::Float16: return std::string("<f2");
    case DataType::Int64: return std::string("<i8");
    case DataType::Int32: return std::string("<i4");
    case DataType::Bool: return std::string("|b1");
    case DataType::UInt8: return std::string("|u1");
    case DataType::Int8: return std::string("|i1");
    default:
        return makeError(StatusCode::Unsupported, "npy: unsupported dtype " + ir::dataTypeName(t));
    }
}

/// The text after `'key':` in a numpy header dict, trimmed.
std::string headerField(const std::string &header, const std::string &key)
{
    const size_t at = header.find("'" + key + "'");
    if (at == std::string::npos)
        return {};
    size_t p = header.find(':', at);
    if (p == std::string::npos)
        return {};
    ++p;
    while (p < header.size() && header[p] == ' ')
        ++p;
    if (p < header.size() && header[p] == '(') {
        const size_t e = header.find(')', p);
        return e == std::string::npos ? std::string() : header.substr(p, e - p + 1);
    }
    if (p < header.size() && header[p] == '\'') {
        const size_t e = header.find('\'', p + 1);
        return e == std::string::npos ? std::string() : header.substr(p + 1, e - p - 1);
    }
    size_t e = p;
    while (e < header.size() && header[e] != ',' && header[e] != '}')
        ++e;
    return header.substr(p, e - p);
}

} // namespace

const HostTensor *NpzArchive::find(const std::string &name) const
{
    const auto it = m_entries.find(name);
    return it == m_entries.end() ? nullptr : &it->second;
}

static Expected<HostTensor> parseNpyUnguarded(const std::string &b, const std::string &name)
{
    if (b.size() < 10 || b.compare(0, 6, "\x93NUMPY") != 0)
        return parseError(name, "not an .npy entry (bad magic)");
    const int major = uint8_t(b[6]);
    size_t headerLen, start;
    if (major == 1) {
        headerLen = rd16(b, 8);
        start = 10;
    } else if (major == 2 || major == 3) {
        if (b.size() < 12)
            return parseError(name, "truncated .npy header");
        headerLen = rd32(b, 8);
        start = 12;
    } else {
        return parseError(name, fmt::format("unsupported .npy version {}", major));
    }
    if (start + headerLen > b.size())
        return parseError(name, "truncated .npy header");
    const std::string header = b.substr(start, headerLen);
    REMAT_ASSIGN_OR_RETURN(DataType dtype, dtypeOfDescr(headerField(header, "descr"), name));
    if (headerField(header, "fortran_order") == "True")
        return makeError(StatusCode::Unsupported,
                         name + ": Fortran-order arrays are not supported");
    const std::string shapeText = headerField(header, "shape");
    if (shapeText.size() < 2 || shapeText.front() != '(')
        return parseError(name, "no shape in .npy header");
    HostTensor t;
    t.dtype = dtype;
    std::stringstream ss(shapeText.substr(1, shapeText.size() - 2));
    std::string part;
    while (std::getline(ss, part, ',')) {
        size_t p = part.find_first_not_of(" L");
        if (p == std::string::npos)
            continue;
        try {
            const long long d = std::stoll(part.substr(p));
            if (d < 0)
                return parseError(name, "negative dim");
            t.shape.push_back(d);
        } catch (...) {
            return parseError(name, "bad shape '" + shapeText + "'");
        }
    }
    int64_t elems = 1;
    for (int64_t d : t.shape)
        if (d != 0 && elems > (int64_t(1) << 40) / d)
            return parseError(name, "shape too large");
        else
            elems *= d;
    const size_t bytes = size_t(elems * ir::elementSize(dtype));
    const size_t dataStart = start + headerLen;
    if (b.size() - dataStart < bytes)
        return parseError(name, fmt::format("truncated data: {} bytes, expected {}",
                                            b.size() - dataStart, bytes));
    t.data.resize(bytes);
    if (bytes >
        0) // an empty array (shape (0, 3)) has no buffer: memcpy(nullptr, ..., 0) is undefined
        std::memcpy(t.data.data(), b.data() + dataStart, bytes);
    return t;
}

Expected<HostTensor> parseNpy(const std::string &bytes, const std::string &name)
{
    return guardReader(name, [&] { return parseNpyUnguarded(bytes, name); });
}

std::string serializeNpy(const HostTensor &t)
{
    std::string shape;
    if (t.shape.size() == 1)
        shape = fmt::format("({},)", t.shape[0]);
    else
        shape = fmt::format("({})", fmt::join(t.shape, ", "));
    auto descr = descrOf(t.dtype);
    std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                     descr ? *descr : std::string("<f4"), shape);
    // pad so the data starts on a 64-byte boundary, header ends with '\n'
    const size_t total = 10 + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header.push_back('\n');
    std::string out("\x93NUMPY\x01\x00", 8);
    wr16(out, uint32_t(header.size()));
    out += header;
    out.append(reinterpret_cast<const char *>(t.data.data()), t.data.size());
    return out;
}

static Expected<NpzArchive> parseNpzUnguarded(const std::string &b, const std::string &path)
{
    if (b.size() < 22)
        return parseError(path, "too small to be an .npz (zip) archive");
    // End of central directory: scan back over a possible comment.
    size_t eocd = std::string::npos;
    for (size_t p = b.size() - 22 + 1; p-- > 0 && b.size() - p <= 22 + 65535;) {
        if (rd32(b, p) == 0x06054b50) {
            eocd = p;
            break;
        }
    }
    if (eocd == std::string::npos)
        return parseError(path, "no zip end-of-central-directory record (not an .npz?)");
    uint64_t entries = rd16(b, eocd + 10);
    uint64_t cdOffset = rd32(b, eocd + 16);
    if ((entries == 0xffff || cdOffset == 0xffffffffu) && eocd >= 20 &&
        rd32(b, eocd - 20) == 0x07064b50) {
        const uint64_t z64 = rd64(b, eocd - 20 + 8);
        if (!fits(b, z64, 56) || rd32(b, size_t(z64)) != 0x06064b50)
            return parseError(path, "bad zip64 end record");
        entries = rd64(b, size_t(z64) + 32);
        cdOffset = rd64(b, size_t(z64) + 48);
    }
    NpzArchive archive;
    size_t p = size_t(cdOffset);
    for (uint64_t e = 0; e < entries; ++e) {
        if (!fits(b, p, 46) || rd32(b, p) != 0x02014b50)
            return parseError(path, "bad zip central directory");
        const uint32_t method = rd16(b, p + 10);
        uint64_t compSize = rd32(b, p + 20);
        uint64_t size = rd32(b, p + 24);
        const size_t nameLen = rd16(b, p + 28), extraLen = rd16(b, p + 30),
                     commentLen = rd16(b, p + 32);
        uint64_t localOffset = rd32(b, p + 42);
        if (!fits(b, p + 46, nameLen + extraLen))
            return parseError(path, "truncated zip central directory");
        std::string name = b.substr(p + 46, nameLen);
        // zip64 extra field: the 0xffffffff fields, in order
        size_t x = p + 46 + nameLen;
        const size_t xEnd = x + extraLen;
        while (x + 4 <= xEnd) {
            const uint32_t tag = rd16(b, x), len = rd16(b, x + 2);
            if (x + 4 + len > xEnd)
                return parseError(path,
                                  fmt::format("bad zip extra field in the entry for '{}'", name));
            if (tag == 0x0001) {
                size_t q = x + 4;
                if (size == 0xffffffffu && q + 8 <= x + 4 + len) {
                    size = rd64(b, q);
                    q += 8;
                }
                if (compSize == 0xffffffffu && q + 8 <= x + 4 + len) {
                    compSize = rd64(b, q);
                    q += 8;
                }
                if (localOffset == 0xffffffffu && q + 8 <= x + 4 + len) {
                    localOffset = rd64(b, q);
                    q += 8;
                }
            }
            x += 4 + len;
        }
        p += 46 + nameLen + extraLen + commentLen;
        if (method != 0)
            return makeError(
                StatusCode::Unsupported,
                fmt::format("{}: entry '{}' is compressed (np.savez_compressed); use np.savez",
                            path, name));
        if (!fits(b, localOffset, 30) || rd32(b, size_t(localOffset)) != 0x04034b50)
            return parseError(path, fmt::format("bad local header for '{}'", name));
        const size_t dataStart = size_t(localOffset) + 30 + rd16(b, size_t(localOffset) + 26) +
                                 rd16(b, size_t(localOffset) + 28);
        if (compSize != size || !fits(b, dataStart, size))
            return parseError(path, fmt::format("truncated entry '{}'", name));
        if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0)
            name.resize(name.size() - 4);
        REMAT_ASSIGN_OR_RETURN(
            HostTensor t, parseNpyUnguarded(b.substr(dataStart, size_t(size)), path + ":" + name));
        archive.set(name, std::move(t));
    }
    return archive;
}

Expected<NpzArchive> parseNpz(const std::string &bytes, const std::string &path)
{
    return guardReader(path, [&] { return parseNpzUnguarded(bytes, path); });
}

Expected<NpzArchive> readNpz(const std::string &path)
{
    return guardReader(path, [&]() -> Expected<NpzArchive> {
        std::ifstream in(path, std::ios::binary);
        if (!in)
            return makeError(StatusCode::NotFound, fmt::format("{}: cannot open", path));
        std::stringstream ss;
        ss << in.rdbuf();
        return parseNpz(ss.str(), path);
    });
}

Status writeNpz(const std::string &path, const NpzArchive &archive)
{
    std::string out, central;
    uint32_t count = 0;
    for (const auto &[name, stored] : archive.entries()) {
        // numpy has no bfloat16: such an entry is written as float32 (exact)
        const HostTensor widened =
            stored.dtype == DataType::BFloat16 ? stored.convertedTo(DataType::Float) : HostTensor{};
        const HostTensor &tensor = stored.dtype == DataType::BFloat16 ? widened : stored;
        REMAT_RETURN_IF_ERROR(descrOf(tensor.dtype).status());
        const std::string entryName = name + ".npy";
        const std::string data = serializeNpy(tensor);
        if (data.size() >= 0xffffffffu || out.size() >= 0xffffffffu)
            return makeError(StatusCode::OutOfRange,
                             path + ": archives over 4 GiB are not supported");
        const uint32_t crc = crc32(data), offset = uint32_t(out.size());
        // local header
        wr32(out, 0x04034b50);
        wr16(out, 20);
        wr16(out, 0);
        wr16(out, 0);
        wr16(out, 0);
        wr16(out, 0x21);
        wr32(out, crc);
        wr32(out, uint32_t(data.size()));
        wr32(out, uint32_t(data.size()));
        wr16(out, uint32_t(entryName.size()));
        wr16(out, 0);
        out += entryName;
        out += data;
        // central directory entry
        wr32(central, 0x02014b50);
        wr16(central, 20);
        wr16(central, 20);
        wr16(central, 0);
        wr16(central, 0);
        wr16(central, 0);
        wr16(central, 0x21);
        wr32(central, crc);
        wr32(central, uint32_t(data.size()));
        wr32(central, uint32_t(data.size()));
        wr16(central, uint32_t(entryName.size()));
        wr16(central, 0);
        wr16(central, 0);
        wr16(central, 0);
        wr16(central, 0);
        wr32(central, 0);
        wr32(central, offset);
        central += entryName;
        ++count;
    }
    const uint32_t cdOffset = uint32_t(out.size());
    out += central;
    wr32(out, 0x06054b50);
    wr16(out, 0);
    wr16(out, 0);
    wr16(out, count);
    wr16(out, count);
    wr32(out, uint32_t(central.size()));
    wr32(out, cdOffset);
    wr16(out, 0);
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f)
        return makeError(StatusCode::NotFound, fmt::format("{}: cannot write", path));
    f.write(out.data(), std::streamsize(out.size()));
    if (!f)
        return makeError(StatusCode::Internal, fmt::format("{}: write failed", path));
    return Status::ok();
}

} // namespace remat::core::exec
