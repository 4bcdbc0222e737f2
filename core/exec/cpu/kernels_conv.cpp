// Convolution (im2col + OpenBLAS sgemm; groups, dilations, pads, strides, auto_pad; 1-D to 3-D),
// MaxPool (int64 flat indices output, as ONNX numbers them) and AveragePool, with gradients.
#include "core/exec/cpu/kernel_util.h"
#include "core/exec/window_geometry.h"

#include <algorithm>
#include <cmath>

namespace remat::core::exec::cpu {
namespace {

/// 3-D window geometry; 2-D inputs are handled as depth 1, 1-D ones as depth and height 1.
struct Window
{
    int64_t n = 1, c = 1, d = 1, h = 1, w = 1; // input
    int64_t od = 1, oh = 1, ow = 1;            // output spatial
    int64_t kd = 1, kh = 1, kw = 1, sd = 1, sh = 1, sw = 1, dd = 1, dh = 1, dw = 1;
    int64_t padFront = 0, padTop = 0, padLeft = 0;

    int64_t plane() const { return d * h * w; }
    int64_t outPlane() const { return od * oh * ow; }
    int64_t kernelVolume() const { return kd * kh * kw; }
};

Expected<Window> windowOf(const KernelContext &c, const std::vector<int64_t> &x,
                          const std::vector<int64_t> &y, std::vector<int64_t> kernel)
{
    const size_t spatial = x.size() >= 2 ? x.size() - 2 : 0;
    if (spatial < 1 || spatial > 3 || y.size() != x.size())
        return c.error("only 1-D, 2-D and 3-D windows have a cpu kernel");
    if (kernel.empty())
        kernel = c.attrInts("kernel_shape");
    auto wa =
        resolveWindow(x, std::move(kernel), c.attrInts("strides", std::vector<int64_t>(spatial, 1)),
                      c.attrInts("dilations", std::vector<int64_t>(spatial, 1)),
                      c.attrInts("pads", std::vector<int64_t>(2 * spatial, 0)),
                      c.attrString("auto_pad", "NOTSET"));
    if (!wa)
        return c.error(wa.status().message());
    const WindowAttributes &a = *wa;
    Window g;
    g.n = x[0];
    g.c = x[1];
    // Spatial dim k of the input fills the last `spatial` of (depth, height, width).
    int64_t *in[3] = {&g.d, &g.h, &g.w}, *out[3] = {&g.od, &g.oh, &g.ow};
    int64_t *k[3] = {&g.kd, &g.kh, &g.kw}, *st[3] = {&g.sd, &g.sh, &g.sw};
    int64_t *dil[3] = {&g.dd, &g.dh, &g.dw}, *pad[3] = {&g.padFront, &g.padTop, &g.padLeft};
    for (size_t i = 0; i < spatial; ++i) {
        const size_t to = 3 - spatial + i;
        *in[to] = x[2 + i];
        *out[to] = y[2 + i];
        *k[to] = a.kernel[i];
        *st[to] = a.strides[i];
        *dil[to] = a.dilations[i];
        *pad[to] = a.pads[i];
    }
    return g;
}

// ---- Conv ---------------------------------------------------------------------------------

/// col[((c*kd+a)*kh+i)*kw+j][(oz*oh+oy)*ow+ox] from channels [c0, c0+cg) of one image.
void im2col(const float *img, const Window &g, int64_t cg, float *col)
{
    const int64_t ohw = g.oh * g.ow, out = g.outPlane();
    int64_t row = 0;
    for (int64_t ch = 0; ch < cg; ++ch)
        for (int64_t a = 0; a < g.kd; ++a)
            for (int64_t i = 0; i < g.kh; ++i)
                for (int64_t j = 0; j < g.kw; ++j, ++row)
                    for (int64_t oz = 0; oz < g.od; ++oz) {
                        float *slab = col + row * out + oz * ohw;
                        const int64_t iz = oz * g.sd - g.padFront + a * g.dd;
                        if (iz < 0 || iz >= g.d) {
                            std::fill(slab, slab + ohw, 0.0f);
                            continue;
                        }
                        const float *plane = img + (ch * g.d + iz) * g.h * g.w;
                        for (int64_t oy = 0; oy < g.oh; ++oy) {
                            const int64_t iy = oy * g.sh - g.padTop + i * g.dh;
                            float *dst = slab + oy * g.ow;
                            if (iy < 0 || iy >= g.h) {
                                std::fill(dst, dst + g.ow, 0.0f);
                                continue;
                            }
                            const float *src = plane + iy * g.w;
                            for (int64_t ox = 0; ox < g.ow; ++ox) {
                                const int64_t ix = ox * g.sw - g.padLeft + j * g.dw;
                                dst[ox] = (ix >= 0 && ix < g.w) ? src[ix] : 0.0f;
                            }
                        }
                    }
}

/// img += col2im(col), in double: up to kd*kh*kw overlapping contributions per pixel are summed
/// before the one rounding to float32.
void col2imAdd(const double *col, const Window &g, int64_t cg, double *img)
{
    const int64_t ohw = g.oh * g.ow, out = g.outPlane();
    int64_t row = 0;
    for (int64_t ch = 0; ch < cg; ++ch)
        for (int64_t a = 0; a < g.kd; ++a)
            for (int64_t i = 0; i < g.kh; ++i)
                for (int64_t j = 0; j < g.kw; ++j, ++row)
                    for (int64_t oz = 0; oz < g.od; ++oz) {
                        const int64_t iz = oz * g.sd - g.padFront + a * g.dd;
                        if (iz < 0 || iz >= g.d)
                            continue;
                        const double *slab = col + row * out + oz * ohw;
                        double *plane = img + (ch * g.d + iz) * g.h * g.w;
                        for (int64_t oy = 0; oy < g.oh; ++oy) {
                            const int64_t iy = oy * g.sh - g.padTop + i * g.dh;
                            if (iy < 0 || iy >= g.h)
                                continue;
                            double *dst = plane + iy * g.w;
                            const double *in = slab + oy * g.ow;
                            for (int64_t ox = 0; ox < g.ow; ++ox) {
                                const int64_t ix = ox * g.sw - g.padLeft + j * g.dw;
                                if (ix >= 0 && ix < g.w)
                                    dst[ix] += in[ox];
                            }
                        }
                    }
}

bool isPointwise(const Window &g)
{
    return g.kernelVolume() == 1 && g.sd == 1 && g.sh == 1 && g.sw == 1 && g.padFront == 0 &&
           g.padTop == 0 && g.padLeft == 0 && g.od == g.d && g.oh == g.h && g.ow == g.w;
}

/// Per-thread kernel scratch (im2col columns, double accumulators): working memory of one kernel
/// call, like BLAS's own buffers, so it is outside the executor's tracked allocator.
template <typename T, int Slot> std::vector<T> &scratch(size_t elements)
{
    thread_local std::vector<T> buffer;
    if (buffer.size() < elements)
        buffer.resize(elements);
    return buffer;
}

std::vector<float> &colScratch(size_t elements) { return scratch<float, 0>(elements); }

struct ConvShape
{
    Window g;
    int64_t groups = 1, m = 1, cg = 1, mg = 1, ck = 1;
};

Expected<ConvShape> convShape(const KernelContext &c, const std::vector<int64_t> &x,
                              const std::vector<int64_t> &w, const std::vector<int64_t> &y)
{
    if (w.size() < 3)
        return c.error("weight rank below 3");
    ConvShape s;
    REMAT_ASSIGN_OR_RETURN(s.g, windowOf(c, x, y, std::vector<int64_t>(w.begin() + 2, w.end())));
    s.groups = c.attrInt("group", 1);
    s.m = w[0];
    if (s.groups <= 0 || s.g.c % s.groups != 0 || s.m % s.groups != 0 || w[1] * s.groups != s.g.c)
        return c.error("channels do not divide into groups");
    s.cg = s.g.c / s.groups;
    s.mg = s.m / s.groups;
    s.ck = s.cg * s.g.kernelVolume();
    return s;
}

Status convForward(KernelContext &c)
{
    KView *x = c.input(0), *w = c.input(1), *b = c.input(2), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "X"));
    REMAT_RETURN_IF_ERROR(c.require(w, "W"));
    REMAT_RETURN_IF_ERROR(c.require(y, "Y"));
    REMAT_ASSIGN_OR_RETURN(ConvShape s, convShape(c, x->shape, w->shape, y->shape));
    const Window &g = s.g;
    const int64_t ohw = g.outPlane(), hw = g.plane();
    const bool pointwise = isPointwise(g);
    std::vector<float> &col = colScratch(pointwise ? 0 : size_t(s.ck * ohw));
    for (int64_t n = 0; n < g.n; ++n)
        for (int64_t grp = 0; grp < s.groups; ++grp) {
            const float *img = x->f() + (n * g.c + grp * s.cg) * hw;
            const float *src = img;
            if (!pointwise) {
                im2col(img, g, s.cg, col.data());
                src = col.data();
            }
            float *out = y->f() + (n * s.m + grp * s.mg) * ohw;
            // The bias (exact in float32) starts the double sum: one rounding per output.
            if (b)
                for (int64_t mo = 0; mo < s.mg; ++mo)
                    std::fill(out + mo * ohw, out + (mo + 1) * ohw, b->f()[grp * s.mg + mo]);
            sgemm(false, false, s.mg, ohw, s.ck, 1, w->f() + grp * s.mg * s.ck, s.ck, src, ohw,
                  b ? 1.0f : 0.0f, out, ohw);
        }
    return Status::ok();
}

Status convGrad(KernelContext &c)
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
    REMAT_ASSIGN_OR_RETURN(ConvShape s, convShape(c, xShape, wShape, dy->shape));
    const Window &g = s.g;
    const int64_t ohw = g.outPlane(), hw = g.plane();
    const bool pointwise = isPointwise(g);
    if (dw)
        REMAT_RETURN_IF_ERROR(c.require(x, "X"));
    if (dx)
        REMAT_RETURN_IF_ERROR(c.require(w, "W"));
    std::vector<float> &col = colScratch(size_t(s.ck * ohw));
    // dW sums over the batch and dX over overlapping windows: both in double, rounded once.
    std::vector<double> &dwAcc = scratch<double, 1>(dw ? size_t(dw->numel()) : 0);
    std::vector<double> &colD = scratch<double, 2>(dx && !pointwise ? size_t(s.ck * ohw) : 0);
    std::vector<double> &imgD = scratch<double, 3>(dx && !pointwise ? size_t(s.cg * hw) : 0);
    for (int64_t n = 0; n < g.n; ++n)
        for (int64_t grp = 0; grp < s.groups; ++grp) {
            const float *gout = dy->f() + (n * s.m + grp * s.mg) * ohw;
            if (dw) {
                const float *img = x->f() + (n * g.c + grp * s.cg) * hw;
                const float *src = img;
                if (!pointwise) {
                    im2col(img, g, s.cg, col.data());
                    src = col.data();
                }
                gemmIntoDouble(false, true, s.mg, s.ck, ohw, 1, gout, ohw, src, ohw,
                               n == 0 ? 0.0 : 1.0, dwAcc.data() + grp * s.mg * s.ck, s.ck);
            }
            if (dx) {
                float *img = dx->f() + (n * g.c + grp * s.cg) * hw;
                if (pointwise) {
                    sgemm(true, false, s.ck, ohw, s.mg, 1, w->f() + grp * s.mg * s.ck, s.ck, gout,
                          ohw, 0, img, ohw);
                } else {
                    gemmIntoDouble(true, false, s.ck, ohw, s.mg, 1, w->f() + grp * s.mg * s.ck,
                                   s.ck, gout, ohw, 0, colD.data(), ohw);
                    std::fill(imgD.begin(), imgD.begin() + s.cg * hw, 0.0);
                    col2imAdd(colD.data(), g, s.cg, imgD.data());
                    for (int64_t i = 0; i < s.cg * hw; ++i)
                        img[i] = float(imgD[size_t(i)]);
                }
            }
        }
    if (dw)
        for (int64_t i = 0; i < dw->numel(); ++i)
            dw->f()[i] = float(dwAcc[size_t(i)]);
    if (db)
        for (int64_t mo = 0; mo < s.m; ++mo) {
            double acc = 0;
            for (int64_t n = 0; n < g.n; ++n) {
                const float *p = dy->f() + (n * s.m + mo) * ohw;
                for (int64_t i = 0; i < ohw; ++i)
                    acc += p[i];
            }
            db->f()[mo] = float(acc);
        }
    return Status::ok();
}

// ---- MaxPool ------------------------------------------------------------------------------

Status maxPoolForward(KernelContext &c)
{
    KView *x = c.input(0), *y = c.output(0), *ind = c.output(1);
    REMAT_RETURN_IF_ERROR(c.require(x, "X"));
    REMAT_RETURN_IF_ERROR(c.require(y, "Y"));
    if (c.attrInt("storage_order", 0) != 0)
        return c.error("storage_order 1 has no cpu kernel");
    REMAT_ASSIGN_OR_RETURN(Window g, windowOf(c, x->shape, y->shape, {}));
    const int64_t hw = g.plane(), ohw = g.outPlane();
    for (int64_t p = 0; p < g.n * g.c; ++p) {
        const float *plane = x->f() + p * hw;
        int64_t o = p * ohw;
        for (int64_t oz = 0; oz < g.od; ++oz)
            for (int64_t oy = 0; oy < g.oh; ++oy)
                for (int64_t ox = 0; ox < g.ow; ++ox, ++o) {
                    float best = -INFINITY;
                    int64_t arg = -1;
                    for (int64_t a = 0; a < g.kd; ++a) {
                        const int64_t iz = oz * g.sd - g.padFront + a * g.dd;
                        if (iz < 0 || iz >= g.d)
                            continue;
                        for (int64_t i = 0; i < g.kh; ++i) {
                            const int64_t iy = oy * g.sh - g.padTop + i * g.dh;
                            if (iy < 0 || iy >= g.h)
                                continue;
                            for (int64_t j = 0; j < g.kw; ++j) {
                                const int64_t ix = ox * g.sw - g.padLeft + j * g.dw;
                                if (ix < 0 || ix >= g.w)
                                    continue;
                                const int64_t at = (iz * g.h + iy) * g.w + ix;
                                const float v = plane[at];
                                if (arg < 0 || v > best || std::isnan(v)) {
                                    best = v;
                                    arg = at;
                                }
                            }
                        }
                    }
                    y->f()[o] = best;
                    if (ind)
                        ind->as<int64_t>()[o] = arg < 0 ? -1 : p * hw + arg;
                }
    }
    return Status::ok();
}

Status maxPoolGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *dx = c.inputGrad(0), *ind = c.output(1), *x = c.input(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "dY"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "dX"));
    std::fill(dx->f(), dx->f() + dx->numel(), 0.0f);
    if (ind) {
        const int64_t n = dy->numel();
        for (int64_t o = 0; o < n; ++o) {
            const int64_t at = ind->as<int64_t>()[o];
            if (at >= 0 && at < dx->numel())
                dx->f()[at] += dy->f()[o];
        }
        return Status::ok();
    }
    if (!x)
        return c.error("backward needs the indices or X");
    // Recompute the argmax exactly as the forward does.
    std::vector<std::byte> yBuf(size_t(dy->numel()) * sizeof(float)),
        iBuf(size_t(dy->numel()) * sizeof(int64_t));
    KView y{yBuf.data(), ir::DataType::Float, dy->shape},
        idx{iBuf.data(), ir::DataType::Int64, dy->shape};
    KernelContext fwd;
    fwd.node = c.node;
    fwd.opName = c.opName;
    fwd.in = {x};
    fwd.out = {&y, &idx};
    REMAT_RETURN_IF_ERROR(maxPoolForward(fwd));
    for (int64_t o = 0; o < dy->numel(); ++o) {
        const int64_t at = idx.as<int64_t>()[o];
        if (at >= 0)
            dx->f()[at] += dy->f()[o];
    }
    return Status::ok();
}

// ---- AveragePool --------------------------------------------------------------------------

/// Calls fn(outIndex, inIndex, divisor) over every (output, window element) pair of one plane.
/// `padsEnd` holds the end pads of (depth, height, width).
template <typename Fn>
void averageWindows(const Window &g, bool countPad, const std::vector<int64_t> &padsEnd, Fn &&fn)
{
    int64_t o = 0;
    for (int64_t oz = 0; oz < g.od; ++oz)
        for (int64_t oy = 0; oy < g.oh; ++oy)
            for (int64_t ox = 0; ox < g.ow; ++ox, ++o) {
                int64_t valid = 0, padded = 0;
                for (int64_t a = 0; a < g.kd; ++a) {
                    const int64_t iz = oz * g.sd - g.padFront + a * g.dd;
                    for (int64_t i = 0; i < g.kh; ++i) {
                        const int64_t iy = oy * g.sh - g.padTop + i * g.dh;
                        for (int64_t j = 0; j < g.kw; ++j) {
                            const int64_t ix = ox * g.sw - g.padLeft + j * g.dw;
                            valid +=
                                iz >= 0 && iz < g.d && iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;
                            padded += iz < g.d + padsEnd[0] && iy < g.h + padsEnd[1] &&
                                      ix < g.w + padsEnd[2];
                        }
                    }
                }
                const double divisor = double(countPad ? padded : valid);
                for (int64_t a = 0; a < g.kd; ++a) {
                    const int64_t iz = oz * g.sd - g.padFront + a * g.dd;
                    if (iz < 0 || iz >= g.d)
                        continue;
                    for (int64_t i = 0; i < g.kh; ++i) {
                        const int64_t iy = oy * g.sh - g.padTop + i * g.dh;
                        if (iy < 0 || iy >= g.h)
                            continue;
                        for (int64_t j = 0; j < g.kw; ++j) {
                            const int64_t ix = ox * g.sw - g.padLeft + j * g.dw;
                            if (ix >= 0 && ix < g.w)
                                fn(o, (iz * g.h + iy) * g.w + ix, divisor);
                        }
                    }
                }
            }
}

/// The end pads of (depth, height, width): 0 where the input has no such dim.
std::vector<int64_t> endPads(const KernelContext &c, size_t spatial)
{
    const std::vector<int64_t> pads = c.attrInts("pads", std::vector<int64_t>(2 * spatial, 0));
    std::vector<int64_t> end(3, 0);
    if (pads.size() == 2 * spatial && spatial <= 3)
        for (size_t i = 0; i < spatial; ++i)
            end[3 - spatial + i] = pads[spatial + i];
    return end;
}

Status avgPoolForward(KernelContext &c)
{
    KView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "X"));
    REMAT_RETURN_IF_ERROR(c.require(y, "Y"));
    REMAT_ASSIGN_OR_RETURN(Window g, windowOf(c, x->shape, y->shape, {}));
    const bool countPad = c.attrInt("count_include_pad", 0) != 0;
    const std::vector<int64_t> padsEnd = endPads(c, x->rank() - 2);
    const int64_t hw = g.plane(), ohw = g.outPlane();
    std::vector<double> acc(static_cast<size_t>(ohw));
    for (int64_t p = 0; p < g.n * g.c; ++p) {
        std::fill(acc.begin(), acc.end(), 0.0);
        const float *plane = x->f() + p * hw;
        averageWindows(g, countPad, padsEnd,
                       [&](int64_t o, int64_t i, double div) { acc[size_t(o)] += plane[i] / div; });
        for (int64_t o = 0; o < ohw; ++o)
            y->f()[p * ohw + o] = float(acc[size_t(o)]);
    }
    return Status::ok();
}

Status avgPoolGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "dY"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "dX"));
    REMAT_ASSIGN_OR_RETURN(Window g, windowOf(c, dx->shape, dy->shape, {}));
    const bool countPad = c.attrInt("count_include_pad", 0) != 0;
    const std::vector<int64_t> padsEnd = endPads(c, dx->rank() - 2);
    const int64_t hw = g.plane(), ohw = g.outPlane();
    std::vector<double> acc(static_cast<size_t>(hw));
    for (int64_t p = 0; p < g.n * g.c; ++p) {
        std::fill(acc.begin(), acc.end(), 0.0);
        const float *gout = dy->f() + p * ohw;
        averageWindows(g, countPad, padsEnd,
                       [&](int64_t o, int64_t i, double div) { acc[size_t(i)] += gout[o] / div; });
        for (int64_t i = 0; i < hw; ++i)
            dx->f()[p * hw + i] = float(acc[size_t(i)]);
    }
    return Status::ok();
}

} // namespace

void addConvKernels(KernelTable &t)
{
    t["Conv"] = convForward;
    t["ConvGrad"] = convGrad;
    t["MaxPool"] = maxPoolForward;
    t["MaxPoolGrad"] = maxPoolGrad;
    t["AveragePool"] = avgPoolForward;
    t["AveragePoolGrad"] = avgPoolGrad;
}

} // namespace remat::core::exec::cpu
