#include "gpu/kernels/nd.h"

#include <algorithm>

namespace remat::gpu::kernels {

std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape)
{
    std::vector<int64_t> st(shape.size(), 1);
    int64_t acc = 1;
    for (size_t i = shape.size(); i-- > 0;) {
        st[i] = acc;
        acc *= shape[i];
    }
    return st;
}

std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &shape,
                                      const std::vector<int64_t> &target)
{
    std::vector<int64_t> own = contiguousStrides(shape);
    std::vector<int64_t> out(target.size(), 0);
    const size_t off = target.size() - std::min(target.size(), shape.size());
    for (size_t i = 0; i < target.size(); ++i) {
        if (i < off)
            continue;
        const size_t j = i - off;
        out[i] = (shape[j] == 1 && target[i] != 1) ? 0 : own[j];
    }
    return out;
}

bool broadcastShapes(const std::vector<int64_t> &a, const std::vector<int64_t> &b,
                     std::vector<int64_t> &out)
{
    const size_t r = std::max(a.size(), b.size());
    out.assign(r, 1);
    for (size_t i = 0; i < r; ++i) {
        const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
        const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
        if (da != db && da != 1 && db != 1)
            return false;
        out[i] = da == 1 ? db : da;
    }
    return true;
}

bool buildIter(const std::vector<int64_t> &dims, const std::vector<std::vector<int64_t>> &strides,
               NdIter &out)
{
    out = NdIter{};
    const size_t nOps = strides.size();
    // Keep dims of size != 1, then merge a dim into its left neighbour when, for every operand,
    // stride[left] == stride[right] * dims[right].
    std::vector<int64_t> d;
    std::vector<std::vector<int64_t>> s(nOps);
    for (size_t i = 0; i < dims.size(); ++i) {
        if (dims[i] == 1)
            continue;
        bool merge = !d.empty();
        for (size_t k = 0; k < nOps && merge; ++k)
            merge = s[k].back() == strides[k][i] * dims[i];
        if (merge) {
            d.back() *= dims[i];
            for (size_t k = 0; k < nOps; ++k)
                s[k].back() = strides[k][i];
        } else {
            d.push_back(dims[i]);
            for (size_t k = 0; k < nOps; ++k)
                s[k].push_back(strides[k][i]);
        }
    }
    if (d.size() > static_cast<size_t>(kMaxRank) || nOps > static_cast<size_t>(kMaxOperands))
        return false;
    out.rank = static_cast<int>(d.size());
    for (size_t i = 0; i < d.size(); ++i) {
        out.dims[i] = d[i];
        for (size_t k = 0; k < nOps; ++k)
            out.s[k][i] = s[k][i];
    }
    return true;
}

} // namespace remat::gpu::kernels
