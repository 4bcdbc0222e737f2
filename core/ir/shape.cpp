#include "shape.h"

#include "core/util/bytes.h"

namespace remat::core::ir {

Shape Shape::fromStatic(const std::vector<int64_t> &sizes)
{
    Shape s;
    s.dims.reserve(sizes.size());
    for (int64_t v : sizes)
        s.dims.emplace_back(v);
    return s;
}

bool Shape::isStatic() const
{
    if (!rankKnown)
        return false;
    for (const Dim &d : dims)
        if (!d.isStatic())
            return false;
    return true;
}

std::vector<int64_t> Shape::sizes() const
{
    std::vector<int64_t> out;
    out.reserve(dims.size());
    for (const Dim &d : dims)
        out.push_back(d.value);
    return out;
}

Expected<int64_t> Shape::numElements() const
{
    if (!rankKnown)
        return makeError(StatusCode::InvalidArgument, "shape of unknown rank");
    int64_t n = 1;
    for (const Dim &d : dims) {
        if (!d.isStatic())
            return makeError(StatusCode::InvalidArgument,
                             "shape " + toString() + " has an unknown dimension" +
                                 (d.symbol.empty() ? std::string() : " '" + d.symbol + "'"));
        if (mulOverflows(n, d.value, &n))
            return makeError(StatusCode::OutOfRange,
                             "shape " + toString() + " has more elements than fit in 64 bits");
    }
    return n;
}

std::string Shape::toString() const
{
    if (!rankKnown)
        return "[?]";
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i) {
        if (i)
            s += ',';
        if (dims[i].isStatic())
            s += std::to_string(dims[i].value);
        else if (!dims[i].symbol.empty())
            s += dims[i].symbol;
        else
            s += '?';
    }
    s += ']';
    return s;
}

} // namespace remat::core::ir
