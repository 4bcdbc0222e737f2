// ConvTranspose over 1 to 3 (any number of) spatial dims, with groups, strides, dilations, pads,
// output_padding, output_shape and auto_pad (core/ops/conv_transpose_geometry.h). It is Conv's
// machinery run the other way: per image and group, columns = W^T X (OpenBLAS), then every column
// entry is added to the output pixel it lands on (col2im); the backward gathers dY into the same
// columns (im2col), dX = W columns and dW = X columns^T. Sums are taken in double and rounded once.
#include "core/exec/cpu/kernel_util.h"
#include "core/ops/conv_transpose_geometry.h"

#include <algorithm>

namespace remat::core::exec::cpu {
namespace {

struct Geometry
{
    ops::ConvTransposeGeometry a;
    int64_t n = 0, c = 0, m = 0, cg = 0, mg = 0;
    int64_t inPlane = 1, outPlane = 1, kernelVolume = 1;
    /// landing[k * inPlane + i]: the output pixel that kernel offset k of input pixel i lands on,
    /// -1 in the cropped padding.
    std::vector<int64_t> landing;
};

Expected<Geometry> geometryOf(const KernelContext &c, const std::vector<int64_t> &x,
                              const std::vector<int64_t> &w, const std::vector<int64_t> &y)
{
    auto a = ops::resolveConvTranspose(c.node, x, w);
    if (!a)
        return c.error(a.status().message());
    Geometry g;
    g.a = std::move(*a);
    const size_t sp = x.size() - 2;
    if (y.size() != x.size() || y[0] != x[0] || y[1] != g.a.outChannels ||
        !std::equal(g.a.out.begin(), g.a.out.end(), y.begin() + 2))
        return c.error("the output's shape differs from what the attributes give");
    g.n = x[0];
    g.c = x[1];
    g.m = g.a.outChannels;
    g.cg = g.c / g.a.groups;
    g.mg = g.m / g.a.groups;
    for (size_t d = 0; d < sp; ++d) {
        g.inPlane *= x[2 + d];
        g.outPlane *= y[2 + d];
        g.kernelVolume *= g.a.kernel[d];
    }
    g.landing.assign(size_t(g.kernelVolume * g.inPlane), -1);
    std::vector<int64_t> k(sp, 0), i(sp, 0);
    for (int64_t kk = 0; kk < g.kernelVolume; ++kk) {
        std::fill(i.begin(), i.end(), 0);
        for (int64_t ii = 0; ii < g.inPlane; ++ii) {
            int64_t o = 0;
            bool inside = true;
            for (size_t d = 0; d < sp && inside; ++d) {
                const int64_t od = i[d] * g.a.strides[d] - g.a.pads[d] + k[d] * g.a.dilations[d];
                inside = od >= 0 && od < y[2 + d];
                o = o * y[2 + d] + od;
            }
            g.landing[size_t(kk * g.inPlane + ii)] = inside ? o : -1;
            for (size_t d = sp; d-- > 0;) { // next input pixel (row-major)
                if (++i[d] < x[2 + d])
                    break;
                i[d] = 0;
            }
        }
        for (size_t d = sp; d-- > 0;) { // next kernel offset
            if (++k[d] < g.a.kernel[d])
                break;
            k[d] = 0;
        }
    }
    return g;
}

template <typename T, int Slot> std::vector<T> &scratch(size_t elements)
{
    thread_local std::vector<T> buffer;
    if (buffer.size() < elements)
        buffer.resize(elements);
    return buffer;
}

Status convTransposeForward(KernelContext &c)
{
    KView *x = c.input(0), *w = c.input(1), *b = c.input(2), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "X"));
    REMAT_RETURN_IF_ERROR(c.require(w, "W"));
    REMAT_RETURN_IF_ERROR(c.require(y, "Y"));
    REMAT_ASSIGN_OR_RETURN(const Geometry g, geometryOf(c, x->shape, w->shape, y->shape));
    const int64_t rows = g.mg * g.kernelVolume;
    std::vector<double> &col = scratch<double, 0>(size_t(rows * g.inPlane));
    std::vector<double> &acc = scratch<double, 1>(size_t(g.mg * g.outPlane));
    for (int64_t n = 0; n < g.n; ++n)
        for (int64_t grp = 0; grp < g.a.groups; ++grp) {
            // W_g is [cg, mg * K] row-major: columns [mg * K, in] = W_g^T X_g.
            gemmIntoDouble(true, false, rows, g.inPlane, g.cg, 1, w->f() + grp * g.cg * rows, rows,
                           x->f() + (n * g.c + grp * g.cg) * g.inPlane, g.inPlane, 0, col.data(),
                           g.inPlane);
            for (int64_t mo = 0; mo < g.mg; ++mo)
                std::fill(acc.begin() + mo * g.outPlane, acc.begin() + (mo + 1) * g.outPlane,
                          b ? double(b->f()[grp * g.mg + mo]) : 0.0);
            for (int64_t mo = 0; mo < g.mg; ++mo)
                for (int64_t kk = 0; kk < g.kernelVolume; ++kk) {
                    const double *src = col.data() + (mo * g.kernelVolume + kk) * g.inPlane;
                    const int64_t *land = g.landing.data() + kk * g.inPlane;
                    double *dst = acc.data() + mo * g.outPlane;
                    for (int64_t i = 0; i < g.inPlane; ++i)
                        if (land[i] >= 0)
                            dst[land[i]] += src[i];
                }
            float *out = y->f() + (n * g.m + grp * g.mg) * g.outPlane;
            for (int64_t i = 0; i < g.mg * g.outPlane; ++i)
                out[i] = float(acc[size_t(i)]);
        }
    return Status::ok();
}

Status convTransposeGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *x = c.input(0), *w = c.input(1);
    REMAT_RETURN_IF_ERROR(c.require(dy, "dY"));
    KView *dx = c.inputGrad(0), *dw = c.inputGrad(1), *db = c.inputGrad(2);
    const std::vector<int64_t> xShape =
        x ? x->shape
          : (dx ? dx->shape : (c.inShapes.empty() ? std::vector<int64_t>{} : c.inShapes[0]));
    const std::vector<int64_t> wShape =
        w ? w->shape
          : (dw ? dw->shape : (c.inShapes.size() > 1 ? c.inShapes[1] : std::vector<int64_t>{}));
    if (dx)
        REMAT_RETURN_IF_ERROR(c.require(w, "W"));
    if (dw)
        REMAT_RETURN_IF_ERROR(c.require(x, "X"));
    REMAT_ASSIGN_OR_RETURN(const Geometry g, geometryOf(c, xShape, wShape, dy->shape));
    const int64_t rows = g.mg * g.kernelVolume;
    std::vector<float> &col = scratch<float, 2>(size_t(rows * g.inPlane));
    std::vector<double> &dwAcc = scratch<double, 3>(dw ? size_t(dw->numel()) : 0);
    for (int64_t n = 0; n < g.n; ++n)
        for (int64_t grp = 0; grp < g.a.groups; ++grp) {
            if (!dx && !dw)
                break;
            const float *gout = dy->f() + (n * g.m + grp * g.mg) * g.outPlane;
            for (int64_t mo = 0; mo < g.mg; ++mo)
                for (int64_t kk = 0; kk < g.kernelVolume; ++kk) {
                    float *dst = col.data() + (mo * g.kernelVolume + kk) * g.inPlane;
                    const int64_t *land = g.landing.data() + kk * g.inPlane;
                    const float *plane = gout + mo * g.outPlane;
                    for (int64_t i = 0; i < g.inPlane; ++i)
                        dst[i] = land[i] >= 0 ? plane[land[i]] : 0.0f;
                }
            if (dx) // dX_g [cg, in] = W_g [cg, mg * K] columns
                sgemm(false, false, g.cg, g.inPlane, rows, 1, w->f() + grp * g.cg * rows, rows,
                      col.data(), g.inPlane, 0, dx->f() + (n * g.c + grp * g.cg) * g.inPlane,
                      g.inPlane);
            if (dw) // dW_g [cg, mg * K] += X_g columns^T, summed over the batch in double
                gemmIntoDouble(false, true, g.cg, rows, g.inPlane, 1,
                               x->f() + (n * g.c + grp * g.cg) * g.inPlane, g.inPlane, col.data(),
                               g.inPlane, n == 0 ? 0.0 : 1.0, dwAcc.data() + grp * g.cg * rows,
                               rows);
        }
    if (dw)
        for (int64_t i = 0; i < dw->numel(); ++i)
            dw->f()[i] = float(dwAcc[size_t(i)]);
    if (db)
        for (int64_t mo = 0; mo < g.m; ++mo) {
            double acc = 0;
            for (int64_t n = 0; n < g.n; ++n) {
                const float *p = dy->f() + (n * g.m + mo) * g.outPlane;
                for (int64_t i = 0; i < g.outPlane; ++i)
                    acc += p[i];
            }
            db->f()[mo] = float(acc);
        }
    return Status::ok();
}

} // namespace

void addConvTransposeKernels(KernelTable &t)
{
    t["ConvTranspose"] = convTransposeForward;
    t["ConvTransposeGrad"] = convTransposeGrad;
}

} // namespace remat::core::exec::cpu
