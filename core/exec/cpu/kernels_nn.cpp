// Matrix products (Gemm, batched broadcasting MatMul through OpenBLAS), normalisation (training-
// mode BatchNormalization with saved mean / inverse std, LayerNormalization, GroupNormalization and
// InstanceNormalization), Softmax, reductions
// and GlobalAveragePool, with their gradients. Statistics accumulate in double.
#include "core/exec/axes.h"
#include "core/exec/cpu/kernel_util.h"
#include "core/exec/loss_terms.h"
#include "core/exec/reduce_geometry.h"
#include "core/ops/einsum.h"
#include "core/ops/group_norm.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

namespace remat::core::exec::cpu {
namespace {

// ---- Gemm ---------------------------------------------------------------------------------

struct GemmDims
{
    bool transA = false, transB = false;
    int64_t m = 0, k = 0, n = 0;
    float alpha = 1, beta = 1;
};

Expected<GemmDims> gemmDims(const KernelContext &c, const std::vector<int64_t> &a,
                            const std::vector<int64_t> &b)
{
    if (a.size() != 2 || b.size() != 2)
        return c.error("Gemm operands must be 2-D");
    GemmDims d;
    d.transA = c.attrInt("transA", 0) != 0;
    d.transB = c.attrInt("transB", 0) != 0;
    d.alpha = float(c.attrFloat("alpha", 1.0));
    d.beta = float(c.attrFloat("beta", 1.0));
    d.m = d.transA ? a[1] : a[0];
    d.k = d.transA ? a[0] : a[1];
    const int64_t kb = d.transB ? b[1] : b[0];
    d.n = d.transB ? b[0] : b[1];
    if (kb != d.k)
        return c.error("Gemm inner dimensions differ");
    return d;
}

Status gemmForward(KernelContext &c)
{
    KView *a = c.input(0), *b = c.input(1), *cc = c.input(2), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(a, "A"));
    REMAT_RETURN_IF_ERROR(c.require(b, "B"));
    REMAT_RETURN_IF_ERROR(c.require(y, "Y"));
    REMAT_ASSIGN_OR_RETURN(GemmDims d, gemmDims(c, a->shape, b->shape));
    float beta = 0;
    if (cc && d.beta != 0) {
        Broadcast bc;
        bc.outShape = {d.m, d.n};
        bc.strides = {rowMajorStrides(bc.outShape), broadcastStrides(cc->shape, bc.outShape)};
        const float *pc = cc->f();
        float *py = y->f();
        bc.forEach2([&](int64_t o, int64_t, int64_t j) { py[o] = pc[j] * d.beta; });
        beta = 1;
    }
    sgemm(d.transA, d.transB, d.m, d.n, d.k, d.alpha, a->f(), a->shape[1], b->f(), b->shape[1],
          beta, y->f(), d.n);
    return Status::ok();
}

Status gemmGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *a = c.input(0), *b = c.input(1);
    REMAT_RETURN_IF_ERROR(c.require(dy, "dY"));
    const std::vector<int64_t> aShape =
        a ? a->shape : (c.inShapes.size() > 0 ? c.inShapes[0] : std::vector<int64_t>{});
    const std::vector<int64_t> bShape =
        b ? b->shape : (c.inShapes.size() > 1 ? c.inShapes[1] : std::vector<int64_t>{});
    REMAT_ASSIGN_OR_RETURN(GemmDims d, gemmDims(c, aShape, bShape));
    if (KView *da = c.inputGrad(0)) {
        REMAT_RETURN_IF_ERROR(c.require(b, "B"));
        const int64_t ldb = b->shape[1];
        if (!d.transA)
            sgemm(false, !d.transB, d.m, d.k, d.n, d.alpha, dy->f(), d.n, b->f(), ldb, 0, da->f(),
                  d.k);
        else
            sgemm(d.transB, true, d.k, d.m, d.n, d.alpha, b->f(), ldb, dy->f(), d.n, 0, da->f(),
                  d.m);
    }
    if (KView *db = c.inputGrad(1)) {
        REMAT_RETURN_IF_ERROR(c.require(a, "A"));
        const int64_t lda = a->shape[1];
        if (!d.transB)
            sgemm(!d.transA, false, d.k, d.n, d.m, d.alpha, a->f(), lda, dy->f(), d.n, 0, db->f(),
                  d.n);
        else
            sgemm(true, d.transA, d.n, d.k, d.m, d.alpha, dy->f(), d.n, a->f(), lda, 0, db->f(),
                  d.k);
    }
    if (KView *dc = c.inputGrad(2)) {
        reduceToShape(dy->f(), dy->shape, dc->f(), dc->shape);
        if (d.beta != 1)
            for (int64_t i = 0; i < dc->numel(); ++i)
                dc->f()[i] *= d.beta;
    }
    return Status::ok();
}

// ---- MatMul (numpy semantics) -------------------------------------------------------------

struct MatMulGeometry
{
    std::vector<int64_t> aBatch, bBatch, outBatch; // batch dims (A and B padded to outBatch rank)
    int64_t m = 1, k = 1, n = 1;
};

Expected<MatMulGeometry> matmulGeometry(const KernelContext &c, std::vector<int64_t> a,
                                        std::vector<int64_t> b)
{
    if (a.empty() || b.empty())
        return c.error("MatMul operands must have rank >= 1");
    if (a.size() == 1)
        a.insert(a.begin(), 1);
    if (b.size() == 1)
        b.push_back(1);
    MatMulGeometry g;
    g.m = a[a.size() - 2];
    g.k = a[a.size() - 1];
    g.n = b[b.size() - 1];
    if (b[b.size() - 2] != g.k)
        return c.error("MatMul inner dimensions differ");
    g.aBatch.assign(a.begin(), a.end() - 2);
    g.bBatch.assign(b.begin(), b.end() - 2);
    REMAT_ASSIGN_OR_RETURN(Broadcast bc, Broadcast::of({g.aBatch, g.bBatch}));
    g.outBatch = bc.outShape;
    return g;
}

/// Offsets (in matrices) of A and B for every output batch index.
void batchOffsets(const MatMulGeometry &g, std::vector<int64_t> &aOff, std::vector<int64_t> &bOff)
{
    Broadcast bc;
    bc.outShape = g.outBatch;
    bc.strides = {broadcastStrides(g.aBatch, g.outBatch), broadcastStrides(g.bBatch, g.outBatch)};
    const int64_t total = numelOf(g.outBatch);
    aOff.assign(size_t(total), 0);
    bOff.assign(size_t(total), 0);
    if (g.outBatch.empty())
        return;
    bc.forEach2([&](int64_t o, int64_t i, int64_t j) {
        aOff[size_t(o)] = i;
        bOff[size_t(o)] = j;
    });
}

Status matmulForward(KernelContext &c)
{
    KView *a = c.input(0), *b = c.input(1), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(a, "A"));
    REMAT_RETURN_IF_ERROR(c.require(b, "B"));
    REMAT_RETURN_IF_ERROR(c.require(y, "Y"));
    REMAT_ASSIGN_OR_RETURN(MatMulGeometry g, matmulGeometry(c, a->shape, b->shape));
    std::vector<int64_t> aOff, bOff;
    batchOffsets(g, aOff, bOff);
    const int64_t mk = g.m * g.k, kn = g.k * g.n, mn = g.m * g.n;
    for (size_t i = 0; i < aOff.size(); ++i)
        sgemm(false, false, g.m, g.n, g.k, 1, a->f() + aOff[i] * mk, g.k, b->f() + bOff[i] * kn,
              g.n, 0, y->f() + int64_t(i) * mn, g.n);
    return Status::ok();
}

Status matmulGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *a = c.input(0), *b = c.input(1);
    REMAT_RETURN_IF_ERROR(c.require(dy, "dY"));
    const std::vector<int64_t> aShape =
        a ? a->shape : (c.inShapes.size() > 0 ? c.inShapes[0] : std::vector<int64_t>{});
    const std::vector<int64_t> bShape =
        b ? b->shape : (c.inShapes.size() > 1 ? c.inShapes[1] : std::vector<int64_t>{});
    REMAT_ASSIGN_OR_RETURN(MatMulGeometry g, matmulGeometry(c, aShape, bShape));
    std::vector<int64_t> aOff, bOff;
    batchOffsets(g, aOff, bOff);
    const int64_t mk = g.m * g.k, kn = g.k * g.n, mn = g.m * g.n;
    const size_t batches = aOff.size();
    if (KView *da = c.inputGrad(0)) {
        REMAT_RETURN_IF_ERROR(c.require(b, "B"));
        const bool direct = int64_t(batches) * mk == da->numel();
        std::vector<float> tmp(direct ? 0 : batches * size_t(mk));
        float *dst = direct ? da->f() : tmp.data();
        for (size_t i = 0; i < batches; ++i)
            sgemm(false, true, g.m, g.k, g.n, 1, dy->f() + int64_t(i) * mn, g.n,
                  b->f() + bOff[i] * kn, g.n, 0, dst + int64_t(i) * mk, g.k);
        if (!direct) {
            std::vector<int64_t> full = g.outBatch, target = g.aBatch;
            full.push_back(g.m);
            full.push_back(g.k);
            target.push_back(g.m);
            target.push_back(g.k);
            reduceToShape(tmp.data(), full, da->f(), target);
        }
    }
    if (KView *db = c.inputGrad(1)) {
        REMAT_RETURN_IF_ERROR(c.require(a, "A"));
        const bool direct = int64_t(batches) * kn == db->numel();
        std::vector<float> tmp(direct ? 0 : batches * size_t(kn));
        float *dst = direct ? db->f() : tmp.data();
        for (size_t i = 0; i < batches; ++i)
            sgemm(true, false, g.k, g.n, g.m, 1, a->f() + aOff[i] * mk, g.k,
                  dy->f() + int64_t(i) * mn, g.n, 0, dst + int64_t(i) * kn, g.n);
        if (!direct) {
            std::vector<int64_t> full = g.outBatch, target = g.bBatch;
            full.push_back(g.k);
            full.push_back(g.n);
            target.push_back(g.k);
            target.push_back(g.n);
            reduceToShape(tmp.data(), full, db->f(), target);
        }
    }
    return Status::ok();
}

// ---- BatchNormalization -------------------------------------------------------------------

struct ChannelLayout
{
    int64_t n = 1, c = 1, spatial = 1;
};

ChannelLayout channelLayout(const std::vector<int64_t> &shape)
{
    ChannelLayout l;
    l.n = shape.empty() ? 1 : shape[0];
    l.c = shape.size() > 1 ? shape[1] : 1;
    for (size_t d = 2; d < shape.size(); ++d)
        l.spatial *= shape[d];
    return l;
}

bool bnTraining(const KernelContext &c) { return c.attrInt("training_mode", 0) != 0; }

/// Batch mean and inverse std per channel, in double.
void channelStats(const KView &x, double eps, std::vector<double> &mean,
                  std::vector<double> &invstd, std::vector<double> *var = nullptr)
{
    const ChannelLayout l = channelLayout(x.shape);
    mean.assign(size_t(l.c), 0);
    invstd.assign(size_t(l.c), 0);
    if (var)
        var->assign(size_t(l.c), 0);
    const double count = double(l.n * l.spatial);
    const float *px = x.f();
    for (int64_t ch = 0; ch < l.c; ++ch) {
        double s = 0;
        for (int64_t i = 0; i < l.n; ++i) {
            const float *p = px + (i * l.c + ch) * l.spatial;
            for (int64_t j = 0; j < l.spatial; ++j)
                s += p[j];
        }
        const double mu = s / count;
        double q = 0;
        for (int64_t i = 0; i < l.n; ++i) {
            const float *p = px + (i * l.c + ch) * l.spatial;
            for (int64_t j = 0; j < l.spatial; ++j) {
                const double d = p[j] - mu;
                q += d * d;
            }
        }
        const double v = q / count; // biased, as normalisation uses
        mean[size_t(ch)] = mu;
        invstd[size_t(ch)] = 1.0 / std::sqrt(v + eps);
        if (var)
            (*var)[size_t(ch)] = v;
    }
}

Status batchNormForward(KernelContext &c)
{
    KView *x = c.input(0), *scale = c.input(1), *bias = c.input(2), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "X"));
    REMAT_RETURN_IF_ERROR(c.require(scale, "scale"));
    REMAT_RETURN_IF_ERROR(c.require(bias, "B"));
    REMAT_RETURN_IF_ERROR(c.require(y, "Y"));
    const double eps = c.attrFloat("epsilon", 1e-5), momentum = c.attrFloat("momentum", 0.9);
    const ChannelLayout l = channelLayout(x->shape);
    std::vector<double> mean, invstd, var;
    if (bnTraining(c)) {
        channelStats(*x, eps, mean, invstd, &var);
    } else {
        REMAT_RETURN_IF_ERROR(c.require(c.input(3), "input_mean"));
        REMAT_RETURN_IF_ERROR(c.require(c.input(4), "input_var"));
        mean = readDoubles(*c.input(3));
        const std::vector<double> v = readDoubles(*c.input(4));
        invstd.resize(v.size());
        for (size_t i = 0; i < v.size(); ++i)
            invstd[i] = 1.0 / std::sqrt(v[i] + eps);
    }
    const float *px = x->f(), *ps = scale->f(), *pb = bias->f();
    float *py = y->f();
    for (int64_t i = 0; i < l.n; ++i)
        for (int64_t ch = 0; ch < l.c; ++ch) {
            const double a = double(ps[ch]) * invstd[size_t(ch)], mu = mean[size_t(ch)], b = pb[ch];
            const int64_t base = (i * l.c + ch) * l.spatial;
            for (int64_t j = 0; j < l.spatial; ++j)
                py[base + j] = float((px[base + j] - mu) * a + b);
        }
    // Saved statistics for backward (extra outputs 3, 4).
    if (KView *sm = c.output(3))
        for (int64_t ch = 0; ch < l.c; ++ch)
            sm->f()[ch] = float(mean[size_t(ch)]);
    if (KView *si = c.output(4))
        for (int64_t ch = 0; ch < l.c; ++ch)
            si->f()[ch] = float(invstd[size_t(ch)]);
    // Running statistics change once per step: a recompute leaves them as the first compute did.
    if (bnTraining(c) && !c.recompute) {
        const double count = double(l.n * l.spatial);
        const std::vector<double> inMean =
            c.input(3) ? readDoubles(*c.input(3)) : std::vector<double>(size_t(l.c), 0.0);
        const std::vector<double> inVar =
            c.input(4) ? readDoubles(*c.input(4)) : std::vector<double>(size_t(l.c), 1.0);
        if (KView *rm = c.output(1))
            for (int64_t ch = 0; ch < l.c; ++ch)
                rm->f()[ch] =
                    float(inMean[size_t(ch)] * momentum + mean[size_t(ch)] * (1 - momentum));
        if (KView *rv = c.output(2))
            for (int64_t ch = 0; ch < l.c; ++ch) {
                const double unbiased =
                    count > 1 ? var[size_t(ch)] * count / (count - 1) : var[size_t(ch)];
                rv->f()[ch] = float(inVar[size_t(ch)] * momentum + unbiased * (1 - momentum));
            }
    }
    return Status::ok();
}

Status batchNormGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *x = c.input(0), *scale = c.input(1);
    KView *dx = c.inputGrad(0), *dscale = c.inputGrad(1), *dbias = c.inputGrad(2);
    REMAT_RETURN_IF_ERROR(c.require(dy, "dY"));
    // Inference statistics make dX and dB independent of X; only dScale reads X and the mean
    // (the gradient rule saves them only then).
    const bool training = bnTraining(c);
    const bool needsX = training || dscale;
    if (needsX)
        REMAT_RETURN_IF_ERROR(c.require(x, "X"));
    const double eps = c.attrFloat("epsilon", 1e-5);
    const ChannelLayout l = channelLayout(dy->shape);
    std::vector<double> mean, invstd;
    if (!training) {
        REMAT_RETURN_IF_ERROR(c.require(c.input(4), "input_var"));
        if (needsX)
            REMAT_RETURN_IF_ERROR(c.require(c.input(3), "input_mean"));
        mean = needsX ? readDoubles(*c.input(3)) : std::vector<double>(size_t(l.c), 0.0);
        const std::vector<double> v = readDoubles(*c.input(4));
        invstd.resize(v.size());
        for (size_t i = 0; i < v.size(); ++i)
            invstd[i] = 1.0 / std::sqrt(v[i] + eps);
    } else {
        // The batch statistics again, in double, rather than the saved float32 ones: the forward
        // normalised with the double values, and a rounded mean shifts every x-hat of a channel by
        // the same amount, an error dscale multiplies by sum(dY) (mobilenet_v2's first BN: 1e3x).
        channelStats(*x, eps, mean, invstd);
    }
    const float *px = needsX ? x->f() : nullptr, *pg = dy->f();
    const double count = double(l.n * l.spatial);
    if (dx)
        REMAT_RETURN_IF_ERROR(c.require(scale, "scale"));
    if (invstd.size() != size_t(l.c) || (needsX && mean.size() != size_t(l.c)))
        return c.error("statistics do not have one entry per channel");
    for (int64_t ch = 0; ch < l.c; ++ch) {
        const double mu = mean[size_t(ch)], is = invstd[size_t(ch)];
        double sumG = 0, sumGX = 0;
        for (int64_t i = 0; i < l.n; ++i) {
            const int64_t base = (i * l.c + ch) * l.spatial;
            for (int64_t j = 0; j < l.spatial; ++j) {
                sumG += pg[base + j];
                if (px)
                    sumGX += pg[base + j] * ((px[base + j] - mu) * is);
            }
        }
        if (dbias)
            dbias->f()[ch] = float(sumG);
        if (dscale)
            dscale->f()[ch] = float(sumGX);
        if (!dx)
            continue;
        const double g = scale->f()[ch];
        float *pd = dx->f();
        if (training) {
            const double meanG = sumG / count, meanGX = sumGX / count;
            for (int64_t i = 0; i < l.n; ++i) {
                const int64_t base = (i * l.c + ch) * l.spatial;
                for (int64_t j = 0; j < l.spatial; ++j) {
                    const double xhat = (px[base + j] - mu) * is;
                    pd[base + j] = float(g * is * (pg[base + j] - meanG - xhat * meanGX));
                }
            }
        } else {
            for (int64_t i = 0; i < l.n; ++i) {
                const int64_t base = (i * l.c + ch) * l.spatial;
                for (int64_t j = 0; j < l.spatial; ++j)
                    pd[base + j] = float(g * is * pg[base + j]);
            }
        }
    }
    return Status::ok();
}

// ---- LayerNormalization -------------------------------------------------------------------

Status layerNormSplit(const KernelContext &c, const std::vector<int64_t> &shape, int64_t &rows,
                      int64_t &cols)
{
    int64_t axis = c.attrInt("axis", -1);
    if (!normalizeAxis(axis, int64_t(shape.size())))
        return c.error("axis out of range");
    rows = 1;
    cols = 1;
    for (size_t d = 0; d < shape.size(); ++d)
        (int64_t(d) < axis ? rows : cols) *= shape[d];
    return Status::ok();
}

Status layerNormForward(KernelContext &c)
{
    KView *x = c.input(0), *scale = c.input(1), *bias = c.input(2), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "X"));
    REMAT_RETURN_IF_ERROR(c.require(scale, "Scale"));
    REMAT_RETURN_IF_ERROR(c.require(y, "Y"));
    int64_t rows, cols;
    REMAT_RETURN_IF_ERROR(layerNormSplit(c, x->shape, rows, cols));
    if (scale->numel() != cols || (bias && bias->numel() != cols))
        return c.error("Scale / B must cover the normalised dims exactly");
    const double eps = c.attrFloat("epsilon", 1e-5);
    const float *px = x->f(), *ps = scale->f(), *pb = bias ? bias->f() : nullptr;
    for (int64_t r = 0; r < rows; ++r) {
        const float *row = px + r * cols;
        double s = 0;
        for (int64_t j = 0; j < cols; ++j)
            s += row[j];
        const double mu = s / double(cols);
        double q = 0;
        for (int64_t j = 0; j < cols; ++j)
            q += (row[j] - mu) * (row[j] - mu);
        const double is = 1.0 / std::sqrt(q / double(cols) + eps);
        float *out = y->f() + r * cols;
        for (int64_t j = 0; j < cols; ++j)
            out[j] = float((row[j] - mu) * is * ps[j] + (pb ? pb[j] : 0.0));
        if (KView *m = c.output(1))
            m->f()[r] = float(mu);
        if (KView *v = c.output(2))
            v->f()[r] = float(is);
    }
    return Status::ok();
}

Status layerNormGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *x = c.input(0), *scale = c.input(1);
    REMAT_RETURN_IF_ERROR(c.require(dy, "dY"));
    REMAT_RETURN_IF_ERROR(c.require(x, "X"));
    int64_t rows, cols;
    REMAT_RETURN_IF_ERROR(layerNormSplit(c, x->shape, rows, cols));
    const double eps = c.attrFloat("epsilon", 1e-5);
    KView *dx = c.inputGrad(0), *dscale = c.inputGrad(1), *dbias = c.inputGrad(2);
    if (dx)
        REMAT_RETURN_IF_ERROR(c.require(scale, "Scale"));
    std::vector<double> accScale(size_t(cols), 0.0), accBias(size_t(cols), 0.0);
    const float *px = x->f(), *pg = dy->f();
    const bool saved = c.output(1) && c.output(2);
    for (int64_t r = 0; r < rows; ++r) {
        const float *row = px + r * cols, *grow = pg + r * cols;
        double mu, is;
        if (saved) {
            mu = c.output(1)->f()[r];
            is = c.output(2)->f()[r];
        } else {
            double s = 0;
            for (int64_t j = 0; j < cols; ++j)
                s += row[j];
            mu = s / double(cols);
            double q = 0;
            for (int64_t j = 0; j < cols; ++j)
                q += (row[j] - mu) * (row[j] - mu);
            is = 1.0 / std::sqrt(q / double(cols) + eps);
        }
        double sumH = 0, sumHX = 0;
        for (int64_t j = 0; j < cols; ++j) {
            const double xhat = (row[j] - mu) * is;
            accScale[size_t(j)] += grow[j] * xhat;
            accBias[size_t(j)] += grow[j];
            if (dx) {
                const double h = grow[j] * double(scale->f()[j]);
                sumH += h;
                sumHX += h * xhat;
            }
        }
        if (dx) {
            float *out = dx->f() + r * cols;
            const double meanH = sumH / double(cols), meanHX = sumHX / double(cols);
            for (int64_t j = 0; j < cols; ++j) {
                const double xhat = (row[j] - mu) * is;
                out[j] = float(is * (grow[j] * double(scale->f()[j]) - meanH - xhat * meanHX));
            }
        }
    }
    if (dscale)
        for (int64_t j = 0; j < cols; ++j)
            dscale->f()[j] = float(accScale[size_t(j)]);
    if (dbias)
        for (int64_t j = 0; j < cols; ++j)
            dbias->f()[j] = float(accBias[size_t(j)]);
    return Status::ok();
}

// ---- GroupNormalization / InstanceNormalization ---------------------------------------------

Expected<ops::GroupNormGeometry> groupNormOf(const KernelContext &c, const KView &x,
                                             const KView &scale)
{
    auto g = ops::groupNormGeometry(c.node ? c.node->opType : std::string("GroupNormalization"),
                                    c.attrInt("num_groups", 0), scale.numel(), x.shape);
    if (!g)
        return c.error(g.status().message());
    return g;
}

/// Mean and inverse std of one (sample, group) row, in double.
void groupRowStats(const float *row, int64_t len, double eps, double &mean, double &invStd)
{
    double s = 0;
    for (int64_t j = 0; j < len; ++j)
        s += row[j];
    mean = s / double(len);
    double q = 0;
    for (int64_t j = 0; j < len; ++j)
        q += (row[j] - mean) * (row[j] - mean);
    invStd = 1.0 / std::sqrt(q / double(len) + eps);
}

Status groupNormForward(KernelContext &c)
{
    KView *x = c.input(0), *scale = c.input(1), *bias = c.input(2), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "X"));
    REMAT_RETURN_IF_ERROR(c.require(scale, "scale"));
    REMAT_RETURN_IF_ERROR(c.require(bias, "B"));
    REMAT_RETURN_IF_ERROR(c.require(y, "Y"));
    REMAT_ASSIGN_OR_RETURN(ops::GroupNormGeometry g, groupNormOf(c, *x, *scale));
    if (bias->numel() != scale->numel())
        return c.error("B and scale differ in size");
    const double eps = c.attrFloat("epsilon", 1e-5);
    const int64_t len = g.rowLength(), cpg = g.channelsPerGroup();
    KView *savedMean = c.output(1), *savedInv = c.output(2);
    for (int64_t r = 0; r < g.rows(); ++r) {
        const float *row = x->f() + r * len;
        double mu, is;
        groupRowStats(row, len, eps, mu, is);
        const int64_t group = r % g.groups;
        for (int64_t k = 0; k < cpg; ++k) {
            const int64_t e = g.scaleIndex(group * cpg + k);
            const double a = double(scale->f()[e]) * is, b = bias->f()[e];
            const float *in = row + k * g.spatial;
            float *out = y->f() + r * len + k * g.spatial;
            for (int64_t j = 0; j < g.spatial; ++j)
                out[j] = float((in[j] - mu) * a + b);
        }
        if (savedMean)
            savedMean->f()[r] = float(mu);
        if (savedInv)
            savedInv->f()[r] = float(is);
    }
    return Status::ok();
}

/// dX = invstd (h - mean(h) - xhat mean(h xhat)) per row, h = dY scale; dScale = sum dY xhat and
/// dB = sum dY per scale entry. The statistics are recomputed in double from X, as
/// BatchNormalization's backward does (the saved float32 ones are what PyTorch keeps).
Status groupNormGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *x = c.input(0), *scale = c.input(1);
    REMAT_RETURN_IF_ERROR(c.require(dy, "dY"));
    REMAT_RETURN_IF_ERROR(c.require(x, "X"));
    REMAT_RETURN_IF_ERROR(c.require(scale, "scale"));
    REMAT_ASSIGN_OR_RETURN(ops::GroupNormGeometry g, groupNormOf(c, *x, *scale));
    KView *dx = c.inputGrad(0), *dscale = c.inputGrad(1), *dbias = c.inputGrad(2);
    const double eps = c.attrFloat("epsilon", 1e-5);
    const int64_t len = g.rowLength(), cpg = g.channelsPerGroup();
    std::vector<double> accScale(size_t(scale->numel()), 0.0), accBias(accScale);
    for (int64_t r = 0; r < g.rows(); ++r) {
        const float *row = x->f() + r * len, *grow = dy->f() + r * len;
        double mu, is;
        groupRowStats(row, len, eps, mu, is);
        const int64_t group = r % g.groups;
        double sumH = 0, sumHX = 0;
        for (int64_t k = 0; k < cpg; ++k) {
            const int64_t e = g.scaleIndex(group * cpg + k);
            const double gamma = scale->f()[e];
            for (int64_t j = k * g.spatial; j < (k + 1) * g.spatial; ++j) {
                const double xhat = (row[j] - mu) * is;
                accScale[size_t(e)] += grow[j] * xhat;
                accBias[size_t(e)] += grow[j];
                sumH += grow[j] * gamma;
                sumHX += grow[j] * gamma * xhat;
            }
        }
        if (!dx)
            continue;
        const double meanH = sumH / double(len), meanHX = sumHX / double(len);
        float *out = dx->f() + r * len;
        for (int64_t k = 0; k < cpg; ++k) {
            const double gamma = scale->f()[g.scaleIndex(group * cpg + k)];
            for (int64_t j = k * g.spatial; j < (k + 1) * g.spatial; ++j) {
                const double xhat = (row[j] - mu) * is;
                out[j] = float(is * (grow[j] * gamma - meanH - xhat * meanHX));
            }
        }
    }
    if (dscale)
        for (size_t e = 0; e < accScale.size(); ++e)
            dscale->f()[e] = float(accScale[e]);
    if (dbias)
        for (size_t e = 0; e < accBias.size(); ++e)
            dbias->f()[e] = float(accBias[e]);
    return Status::ok();
}

// ---- Softmax ------------------------------------------------------------------------------

Status softmaxSplit(const KernelContext &c, const std::vector<int64_t> &shape, int64_t &outer,
                    int64_t &dim, int64_t &inner)
{
    int64_t axis = c.attrInt("axis", -1);
    if (!normalizeAxis(axis, int64_t(shape.size())))
        return c.error("axis out of range");
    outer = 1;
    inner = 1;
    dim = shape.empty() ? 1 : shape[size_t(axis)];
    for (int64_t d = 0; d < axis; ++d)
        outer *= shape[size_t(d)];
    for (size_t d = size_t(axis) + 1; d < shape.size(); ++d)
        inner *= shape[d];
    return Status::ok();
}

/// Softmax (or, with `log`, LogSoftmax: x - max - log(sum exp)) along the split's middle dim.
void softmaxInto(const float *px, float *py, int64_t outer, int64_t dim, int64_t inner,
                 bool log = false)
{
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
            const float *x = px + o * dim * inner + i;
            float *y = py + o * dim * inner + i;
            float mx = -INFINITY;
            for (int64_t d = 0; d < dim; ++d)
                mx = std::max(mx, x[d * inner]);
            double s = 0;
            for (int64_t d = 0; d < dim; ++d)
                s += std::exp(double(x[d * inner]) - mx);
            if (log) {
                const double logSum = std::log(s);
                for (int64_t d = 0; d < dim; ++d)
                    y[d * inner] = float(double(x[d * inner]) - mx - logSum);
                continue;
            }
            for (int64_t d = 0; d < dim; ++d)
                y[d * inner] = float(std::exp(double(x[d * inner]) - mx) / s);
        }
}

// ---- WeightNorm (w = g v / ||v||, the norm over every axis but `axis`) ---------------------------

/// ||v[:, k, :]|| for each kept index k of v laid out as [outer, n, inner].
std::vector<double> keptNorms(const KView &v, const AxisSplit &s)
{
    std::vector<double> n(size_t(s.n), 0.0);
    for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t k = 0; k < s.n; ++k)
            for (int64_t i = 0; i < s.inner; ++i) {
                const double x = v.f()[(o * s.n + k) * s.inner + i];
                n[size_t(k)] += x * x;
            }
    for (double &x : n)
        x = std::sqrt(x);
    return n;
}

Status weightNormForward(KernelContext &c)
{
    KView *v = c.input(0), *g = c.input(1), *w = c.output(0), *norm = c.output(1);
    REMAT_RETURN_IF_ERROR(c.require(v, "v"));
    REMAT_RETURN_IF_ERROR(c.require(g, "g"));
    REMAT_RETURN_IF_ERROR(c.require(w, "w"));
    REMAT_ASSIGN_OR_RETURN(AxisSplit s, keptAxisSplit(v->shape, c.attrInt("axis", 0)));
    if (g->numel() != s.n || (norm && norm->numel() != s.n))
        return c.error("g and the norm need one value per kept index");
    const std::vector<double> n = keptNorms(*v, s);
    for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t k = 0; k < s.n; ++k)
            for (int64_t i = 0; i < s.inner; ++i) {
                const int64_t e = (o * s.n + k) * s.inner + i;
                w->f()[e] = float(double(g->f()[k]) * double(v->f()[e]) / n[size_t(k)]);
            }
    if (norm)
        for (int64_t k = 0; k < s.n; ++k)
            norm->f()[k] = float(n[size_t(k)]);
    return Status::ok();
}

/// dg = sum(dw v) / n; dv = g / n (dw - v dg / n), per kept index.
Status weightNormGrad(KernelContext &c)
{
    KView *v = c.input(0), *g = c.input(1), *dw = c.outputGrad(0), *norm = c.output(1);
    REMAT_RETURN_IF_ERROR(c.require(v, "v"));
    REMAT_RETURN_IF_ERROR(c.require(g, "g"));
    REMAT_RETURN_IF_ERROR(c.require(dw, "dw"));
    REMAT_ASSIGN_OR_RETURN(AxisSplit s, keptAxisSplit(v->shape, c.attrInt("axis", 0)));
    std::vector<double> n =
        norm ? std::vector<double>(norm->f(), norm->f() + s.n) : keptNorms(*v, s);
    std::vector<double> dg(size_t(s.n), 0.0);
    for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t k = 0; k < s.n; ++k)
            for (int64_t i = 0; i < s.inner; ++i) {
                const int64_t e = (o * s.n + k) * s.inner + i;
                dg[size_t(k)] += double(dw->f()[e]) * double(v->f()[e]);
            }
    for (int64_t k = 0; k < s.n; ++k)
        dg[size_t(k)] /= n[size_t(k)];
    if (KView *dgo = c.inputGrad(1))
        for (int64_t k = 0; k < s.n; ++k)
            dgo->f()[k] = float(dg[size_t(k)]);
    if (KView *dv = c.inputGrad(0))
        for (int64_t o = 0; o < s.outer; ++o)
            for (int64_t k = 0; k < s.n; ++k)
                for (int64_t i = 0; i < s.inner; ++i) {
                    const int64_t e = (o * s.n + k) * s.inner + i;
                    const double nk = n[size_t(k)];
                    dv->f()[e] =
                        float(double(g->f()[k]) / nk *
                              (double(dw->f()[e]) - double(v->f()[e]) * dg[size_t(k)] / nk));
                }
    return Status::ok();
}

// ---- SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss (core/exec/loss_terms.h) ---------------

Expected<LossTerms> lossTermsOf(const KernelContext &c, const std::vector<int64_t> &scoresShape)
{
    REMAT_RETURN_IF_ERROR(c.require(c.input(1), "labels"));
    std::optional<std::vector<double>> weights;
    if (const KView *w = c.input(2))
        weights = readDoubles(*w);
    std::optional<int64_t> ignore;
    if (c.hasAttr("ignore_index"))
        ignore = c.attrInt("ignore_index", 0);
    auto t = lossTerms(scoresShape, readInts(*c.input(1)), weights ? &*weights : nullptr, ignore,
                       c.attrString("reduction", "mean"));
    if (!t)
        return c.error(t.status().message());
    return t;
}

/// loss_i = -w_i logp[label_i]; none: per sample, sum: their sum, mean: over the weights' sum.
Status lossForward(KernelContext &c, bool softmax)
{
    KView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "scores"));
    REMAT_RETURN_IF_ERROR(c.require(y, "loss"));
    REMAT_ASSIGN_OR_RETURN(LossTerms t, lossTermsOf(c, x->shape));
    const float *logp = x->f();
    std::vector<float> local;
    if (softmax) {
        KView *lp = c.output(1);
        if (lp && lp->numel() != x->numel())
            return c.error("log_prob size differs from the scores'");
        float *dst = lp ? lp->f() : (local.resize(size_t(x->numel())), local.data());
        softmaxInto(x->f(), dst, t.outer, t.classes, t.inner, true);
        logp = dst;
    }
    const bool none = t.reduction == LossTerms::Reduction::None;
    if (y->numel() != (none ? int64_t(t.offset.size()) : 1))
        return c.error("loss size mismatch");
    double total = 0;
    for (size_t k = 0; k < t.offset.size(); ++k) {
        const double l = t.weight[k] == 0 ? 0.0 : -t.weight[k] * double(logp[t.offset[k]]);
        if (none)
            y->f()[k] = float(l);
        total += l;
    }
    if (!none)
        y->f()[0] = float(t.reduction == LossTerms::Reduction::Mean ? total / t.weightSum : total);
    return Status::ok();
}

/// SCE: dscores = g_i (exp(logp) - one-hot); NLL: dx = -g_i at the label, with g_i the
/// weighted per-sample gradient.
Status lossGrad(KernelContext &c, bool softmax)
{
    KView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "dloss"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "dscores"));
    REMAT_ASSIGN_OR_RETURN(LossTerms t, lossTermsOf(c, dx->shape));
    const std::vector<double> g = perSampleGradient(t, readDoubles(*dy));
    float *pd = dx->f();
    if (softmax) {
        const KView *lp = c.output(1);
        REMAT_RETURN_IF_ERROR(c.require(lp, "log_prob"));
        for (int64_t o = 0; o < t.outer; ++o)
            for (int64_t cl = 0; cl < t.classes; ++cl)
                for (int64_t i = 0; i < t.inner; ++i) {
                    const int64_t e = (o * t.classes + cl) * t.inner + i;
                    const size_t k = size_t(o * t.inner + i);
                    pd[e] = float(g[k] *
                                  (std::exp(double(lp->f()[e])) - (t.label[k] == cl ? 1.0 : 0.0)));
                }
        return Status::ok();
    }
    std::fill(pd, pd + dx->numel(), 0.f);
    for (size_t k = 0; k < t.offset.size(); ++k)
        if (t.label[k] >= 0)
            pd[t.offset[k]] = float(-g[k]);
    return Status::ok();
}

template <bool log> Status softmaxForward(KernelContext &c)
{
    KView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "input"));
    REMAT_RETURN_IF_ERROR(c.require(y, "output"));
    int64_t outer, dim, inner;
    REMAT_RETURN_IF_ERROR(softmaxSplit(c, x->shape, outer, dim, inner));
    softmaxInto(x->f(), y->f(), outer, dim, inner, log);
    return Status::ok();
}

/// Softmax: dX = Y (dY - sum(dY Y)); LogSoftmax: dX = dY - exp(Y) sum(dY), both along the axis.
template <bool log> Status softmaxGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *dx = c.inputGrad(0), *y = c.output(0), *x = c.input(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "doutput"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "dinput"));
    int64_t outer, dim, inner;
    REMAT_RETURN_IF_ERROR(softmaxSplit(c, dx->shape, outer, dim, inner));
    std::vector<float> recomputed;
    const float *py = nullptr;
    if (y)
        py = y->f();
    else if (x) {
        recomputed.resize(size_t(x->numel()));
        softmaxInto(x->f(), recomputed.data(), outer, dim, inner, log);
        py = recomputed.data();
    } else
        return c.error("backward needs the output or the input");
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
            const int64_t base = o * dim * inner + i;
            double dot = 0;
            if (log) {
                for (int64_t d = 0; d < dim; ++d)
                    dot += double(dy->f()[base + d * inner]);
                for (int64_t d = 0; d < dim; ++d)
                    dx->f()[base + d * inner] = float(double(dy->f()[base + d * inner]) -
                                                      std::exp(double(py[base + d * inner])) * dot);
                continue;
            }
            for (int64_t d = 0; d < dim; ++d)
                dot += double(dy->f()[base + d * inner]) * py[base + d * inner];
            for (int64_t d = 0; d < dim; ++d)
                dx->f()[base + d * inner] =
                    float(py[base + d * inner] * (dy->f()[base + d * inner] - dot));
        }
    return Status::ok();
}

// ---- ReduceMean / ReduceSum ---------------------------------------------------------------

/// The node's reduced axes (attribute `axes`, or input 1 from opset 18 on) resolved against `inShape`.
Expected<ReduceGeometry> reduceGeometryOf(const KernelContext &c,
                                          const std::vector<int64_t> &inShape)
{
    std::vector<int64_t> axes = c.attrInts("axes");
    if (c.input(1) && c.input(1)->numel() > 0)
        axes = readInts(*c.input(1));
    auto g = reduceGeometry(inShape, axes, c.attrInt("keepdims", 1) != 0,
                            c.attrInt("noop_with_empty_axes", 0) != 0);
    if (!g)
        return c.error(g.status().message());
    return g;
}

/// Walks every element of `shape` beside the element of the reduced `kept` shape it reduces to.
Broadcast keptBroadcast(const std::vector<int64_t> &shape, const std::vector<int64_t> &kept)
{
    Broadcast bc;
    bc.outShape = shape;
    bc.strides = {rowMajorStrides(shape), broadcastStrides(kept, shape)};
    return bc;
}

Status reduceForward(KernelContext &c, bool mean)
{
    KView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "data"));
    REMAT_RETURN_IF_ERROR(c.require(y, "reduced"));
    REMAT_ASSIGN_OR_RETURN(ReduceGeometry g, reduceGeometryOf(c, x->shape));
    if (numelOf(g.keptShape) != y->numel())
        return c.error("output size mismatch");
    reduceToShape(x->f(), x->shape, y->f(), g.keptShape);
    if (mean && g.count > 0)
        for (int64_t i = 0; i < y->numel(); ++i)
            y->f()[i] = float(double(y->f()[i]) / double(g.count));
    return Status::ok();
}

Status reduceGrad(KernelContext &c, bool mean)
{
    KView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "dreduced"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "ddata"));
    REMAT_ASSIGN_OR_RETURN(ReduceGeometry g, reduceGeometryOf(c, dx->shape));
    if (numelOf(g.keptShape) != dy->numel())
        return c.error("output gradient size mismatch");
    const float scale = mean && g.count > 0 ? float(1.0 / double(g.count)) : 1.0f;
    const Broadcast bc = keptBroadcast(dx->shape, g.keptShape);
    const float *grad = dy->f();
    float *d = dx->f();
    bc.forEach2([&](int64_t o, int64_t, int64_t j) { d[o] = grad[j] * scale; });
    return Status::ok();
}

/// The mean of the x that reduce to each kept element.
std::vector<double> keptMeans(const KView &x, const ReduceGeometry &g, int64_t kept)
{
    std::vector<double> mean(size_t(kept), 0.0);
    keptBroadcast(x.shape, g.keptShape).forEach2([&](int64_t o, int64_t, int64_t j) {
        mean[size_t(j)] += x.f()[o];
    });
    for (double &m : mean)
        m /= double(std::max<int64_t>(1, g.count));
    return mean;
}

/// Variance over the reduced axes: sum((x - mean)^2) / (count - correction).
Status varianceForward(KernelContext &c)
{
    KView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "data"));
    REMAT_RETURN_IF_ERROR(c.require(y, "variance"));
    REMAT_ASSIGN_OR_RETURN(ReduceGeometry g, reduceGeometryOf(c, x->shape));
    if (numelOf(g.keptShape) != y->numel())
        return c.error("output size mismatch");
    const double denom = double(g.count - c.attrInt("correction", 1));
    const std::vector<double> mean = keptMeans(*x, g, y->numel());
    std::vector<double> sq(size_t(y->numel()), 0.0);
    keptBroadcast(x->shape, g.keptShape).forEach2([&](int64_t o, int64_t, int64_t j) {
        const double d = x->f()[o] - mean[size_t(j)];
        sq[size_t(j)] += d * d;
    });
    for (int64_t j = 0; j < y->numel(); ++j)
        y->f()[j] = float(sq[size_t(j)] / denom);
    return Status::ok();
}

/// dx = dy 2 (x - mean) / (count - correction), the mean recomputed from x.
Status varianceGrad(KernelContext &c)
{
    KView *x = c.input(0), *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "data"));
    REMAT_RETURN_IF_ERROR(c.require(dy, "dvariance"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "ddata"));
    REMAT_ASSIGN_OR_RETURN(ReduceGeometry g, reduceGeometryOf(c, x->shape));
    if (numelOf(g.keptShape) != dy->numel())
        return c.error("output gradient size mismatch");
    const double denom = double(g.count - c.attrInt("correction", 1));
    const std::vector<double> mean = keptMeans(*x, g, dy->numel());
    keptBroadcast(x->shape, g.keptShape).forEach2([&](int64_t o, int64_t, int64_t j) {
        dx->f()[o] = float(double(dy->f()[j]) * 2.0 * (x->f()[o] - mean[size_t(j)]) / denom);
    });
    return Status::ok();
}

/// ReduceMax / ReduceMin: out[j] = max (min) of the x[o] that reduce to j.
Status reduceExtremumForward(KernelContext &c, bool isMax)
{
    KView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "data"));
    REMAT_RETURN_IF_ERROR(c.require(y, "reduced"));
    REMAT_ASSIGN_OR_RETURN(ReduceGeometry g, reduceGeometryOf(c, x->shape));
    if (numelOf(g.keptShape) != y->numel())
        return c.error("output size mismatch");
    if (g.count == 0)
        return c.error("reducing an empty tensor has no extremum");
    if (KView *idx = c.output(1)) {
        // torch.max(x, dim): the value and the index of the first extremum along the axis
        REMAT_RETURN_IF_ERROR(c.require(idx, "indices"));
        auto split = singleAxisSplit(x->shape, g.keptShape);
        if (!split)
            return c.error(split.status().message());
        const float *px = x->f();
        float *py = y->f();
        auto *pi = static_cast<int64_t *>(static_cast<void *>(idx->data));
        for (int64_t o = 0; o < split->outer; ++o)
            for (int64_t i = 0; i < split->inner; ++i) {
                const float *line = px + o * split->n * split->inner + i;
                int64_t best = 0;
                for (int64_t k = 1; k < split->n; ++k)
                    if (isMax ? line[k * split->inner] > line[best * split->inner]
                              : line[k * split->inner] < line[best * split->inner])
                        best = k;
                py[o * split->inner + i] = line[best * split->inner];
                pi[o * split->inner + i] = best;
            }
        return Status::ok();
    }
    const float init =
        isMax ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
    std::fill(y->f(), y->f() + y->numel(), init);
    const Broadcast bc = keptBroadcast(x->shape, g.keptShape);
    const float *px = x->f();
    float *py = y->f();
    bc.forEach2([&](int64_t o, int64_t, int64_t j) {
        py[j] = isMax ? std::max(py[j], px[o]) : std::min(py[j], px[o]);
    });
    return Status::ok();
}

/// dx[o] = dy[j] / ties[j] where x[o] equals the result y[j], else 0 (torch.amax's rule).
Status reduceExtremumGrad(KernelContext &c)
{
    if (KView *idx = c.output(1)) {
        // torch.max(x, dim)'s backward: each gradient to its index
        KView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
        REMAT_RETURN_IF_ERROR(c.require(dy, "dreduced"));
        REMAT_RETURN_IF_ERROR(c.require(dx, "ddata"));
        REMAT_ASSIGN_OR_RETURN(ReduceGeometry g, reduceGeometryOf(c, dx->shape));
        auto split = singleAxisSplit(dx->shape, g.keptShape);
        if (!split)
            return c.error(split.status().message());
        if (dy->numel() != split->outer * split->inner || idx->numel() != dy->numel())
            return c.error("output gradient size mismatch");
        const auto *pi = static_cast<const int64_t *>(static_cast<const void *>(idx->data));
        float *pd = dx->f();
        std::fill(pd, pd + dx->numel(), 0.f);
        for (int64_t o = 0; o < split->outer; ++o)
            for (int64_t i = 0; i < split->inner; ++i) {
                const int64_t k = pi[o * split->inner + i];
                if (k < 0 || k >= split->n)
                    return c.error("index out of range");
                pd[(o * split->n + k) * split->inner + i] = dy->f()[o * split->inner + i];
            }
        return Status::ok();
    }
    KView *dy = c.outputGrad(0), *dx = c.inputGrad(0), *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "dreduced"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "ddata"));
    REMAT_RETURN_IF_ERROR(c.require(x, "data"));
    REMAT_RETURN_IF_ERROR(c.require(y, "reduced"));
    REMAT_ASSIGN_OR_RETURN(ReduceGeometry g, reduceGeometryOf(c, x->shape));
    if (numelOf(g.keptShape) != dy->numel() || y->numel() != dy->numel())
        return c.error("output gradient size mismatch");
    const Broadcast bc = keptBroadcast(x->shape, g.keptShape);
    const float *px = x->f(), *py = y->f(), *pg = dy->f();
    float *pd = dx->f();
    std::vector<int64_t> ties(size_t(y->numel()), 0);
    bc.forEach2([&](int64_t o, int64_t, int64_t j) { ties[size_t(j)] += px[o] == py[j]; });
    bc.forEach2([&](int64_t o, int64_t, int64_t j) {
        pd[o] = px[o] == py[j]
                    ? float(double(pg[j]) / double(std::max<int64_t>(1, ties[size_t(j)])))
                    : 0.f;
    });
    return Status::ok();
}

// ---- Einsum ------------------------------------------------------------------------------------

/// out = sum over the loop's inner letters of the product of the factors (accumulated in double).
void runEinsumLoop(const ops::EinsumLoop &l, const std::vector<const float *> &factors, float *out)
{
    const size_t no = l.outerSize.size(), ni = l.innerSize.size(), nf = factors.size();
    std::vector<int64_t> oi(no, 0), ii(ni, 0), base(nf);
    for (int64_t o = 0; o < l.outerCount; ++o) {
        int64_t outAt = 0;
        for (size_t f = 0; f < nf; ++f)
            base[f] = 0;
        for (size_t d = 0; d < no; ++d) {
            outAt += oi[d] * l.outStride[d];
            for (size_t f = 0; f < nf; ++f)
                base[f] += oi[d] * l.factorOuter[f][d];
        }
        double acc = 0;
        std::fill(ii.begin(), ii.end(), 0);
        for (int64_t i = 0; i < l.innerCount; ++i) {
            double p = 1;
            for (size_t f = 0; f < nf; ++f) {
                int64_t at = base[f];
                for (size_t d = 0; d < ni; ++d)
                    at += ii[d] * l.factorInner[f][d];
                p *= double(factors[f][at]);
            }
            acc += p;
            for (size_t d = ni; d-- > 0;) { // odometer over the inner letters
                if (++ii[d] < l.innerSize[d])
                    break;
                ii[d] = 0;
            }
        }
        out[outAt] = float(acc);
        for (size_t d = no; d-- > 0;) {
            if (++oi[d] < l.outerSize[d])
                break;
            oi[d] = 0;
        }
    }
}

Status einsumForward(KernelContext &c)
{
    KView *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(y, "Output"));
    const size_t n = c.in.size();
    std::vector<std::vector<int64_t>> shapes;
    std::vector<const float *> data;
    for (size_t i = 0; i < n; ++i) {
        KView *x = c.input(i);
        REMAT_RETURN_IF_ERROR(c.require(x, "Inputs"));
        shapes.push_back(x->shape);
        data.push_back(x->f());
    }
    auto r = ops::resolveEinsum(c.node ? c.node->attrString("equation") : std::string(), shapes);
    if (!r)
        return c.error(r.status().message());
    const ops::EinsumLoop l = ops::einsumForwardLoop(*r, y->shape);
    if (l.outerCount != y->numel())
        return c.error("output size mismatch");
    runEinsumLoop(l, data, y->f());
    return Status::ok();
}

/// dX_k = einsum(dY and the other operands -> X_k's letters); a broadcast dim of X_k sums.
Status einsumGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "dOutput"));
    // Every operand's shape: the saved ones', else the forward node's slots', else the gradient's.
    const size_t n = std::max({c.in.size(), c.inShapes.size(), c.dIn.size()});
    std::vector<std::vector<int64_t>> shapes(n);
    for (size_t i = 0; i < n; ++i) {
        if (KView *x = c.input(i))
            shapes[i] = x->shape;
        else if (i < c.inShapes.size() && !c.inShapes[i].empty())
            shapes[i] = c.inShapes[i];
        else if (KView *dx = c.inputGrad(i))
            shapes[i] = dx->shape;
        else
            return c.error("Einsum's backward needs every operand's shape");
    }
    auto r = ops::resolveEinsum(c.node ? c.node->attrString("equation") : std::string(), shapes);
    if (!r)
        return c.error(r.status().message());
    for (size_t k = 0; k < n; ++k) {
        KView *dx = c.inputGrad(k);
        if (!dx)
            continue;
        std::vector<const float *> data = {dy->f()};
        for (size_t m = 0; m < n; ++m) {
            if (m == k)
                continue;
            KView *x = c.input(m);
            REMAT_RETURN_IF_ERROR(c.require(x, "Inputs"));
            data.push_back(x->f());
        }
        const ops::EinsumLoop l = ops::einsumGradLoop(*r, k, dy->shape);
        if (l.outerCount != dx->numel())
            return c.error("gradient size mismatch");
        runEinsumLoop(l, data, dx->f());
    }
    return Status::ok();
}

/// ArgMax / ArgMin: the index of the first extremum along the axis (the last with
/// select_last_index), as int64. NaN compares as std::max does (never chosen over a number).
Status argExtremumForward(KernelContext &c, bool isMax)
{
    KView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "data"));
    REMAT_RETURN_IF_ERROR(c.require(y, "reduced"));
    if (y->dtype != ir::DataType::Int64)
        return c.error("the output must be int64");
    auto geo = gatherGeometry(c.attrInt("axis", 0), x->shape);
    if (!geo)
        return c.error(geo.status().message());
    const GatherGeometry &a = *geo; // [outer, dim, inner] around the axis
    if (a.dim == 0)
        return c.error("ArgMax / ArgMin of an empty axis has no index");
    if (y->numel() != a.outer * a.inner)
        return c.error("output size mismatch");
    const bool last = c.attrInt("select_last_index", 0) != 0;
    const float *px = x->f();
    int64_t *py = y->as<int64_t>();
    for (int64_t o = 0; o < a.outer; ++o)
        for (int64_t i = 0; i < a.inner; ++i) {
            const float *p = px + o * a.dim * a.inner + i;
            int64_t best = 0;
            for (int64_t j = 1; j < a.dim; ++j) {
                const float v = p[j * a.inner], b = p[best * a.inner];
                if (isMax ? (v > b || (last && v == b)) : (v < b || (last && v == b)))
                    best = j;
            }
            py[o * a.inner + i] = best;
        }
    return Status::ok();
}

/// TopK: per line along the axis, the k largest (smallest) values and their indices, in that
/// order; equal values keep the lower index first (ONNX's rule; the CUDA kernel selects the same).
Status topKForward(KernelContext &c)
{
    KView *x = c.input(0), *vals = c.output(0), *idx = c.output(1);
    REMAT_RETURN_IF_ERROR(c.require(x, "X"));
    REMAT_RETURN_IF_ERROR(c.require(vals, "Values"));
    auto geo = gatherGeometry(c.attrInt("axis", -1), x->shape);
    if (!geo)
        return c.error(geo.status().message());
    const GatherGeometry &a = *geo; // [outer, dim, inner] around the axis
    int64_t k = c.attrInt("k", -1);
    if (KView *kv = c.input(1)) {
        REMAT_ASSIGN_OR_RETURN(std::vector<int64_t> ks, c.hostInts(*kv));
        if (ks.size() != 1)
            return c.error("K must hold one value");
        k = ks[0];
    }
    if (k < 0 || k > a.dim)
        return c.error("K (" + std::to_string(k) + ") is outside 0.." + std::to_string(a.dim));
    if (vals->numel() != a.outer * k * a.inner || (idx && idx->numel() != vals->numel()))
        return c.error("output size mismatch");
    if (idx && idx->dtype != ir::DataType::Int64)
        return c.error("Indices must be int64");
    const bool largest = c.attrInt("largest", 1) != 0;
    const float *px = x->f();
    std::vector<int64_t> order(size_t(a.dim));
    for (int64_t o = 0; o < a.outer; ++o)
        for (int64_t i = 0; i < a.inner; ++i) {
            const float *p = px + o * a.dim * a.inner + i;
            for (int64_t j = 0; j < a.dim; ++j)
                order[size_t(j)] = j;
            std::partial_sort(order.begin(), order.begin() + k, order.end(),
                              [&](int64_t l, int64_t r) {
                                  const float vl = p[l * a.inner], vr = p[r * a.inner];
                                  if (vl != vr)
                                      return largest ? vl > vr : vl < vr;
                                  return l < r;
                              });
            for (int64_t t = 0; t < k; ++t) {
                const int64_t at = (o * k + t) * a.inner + i;
                vals->f()[at] = p[order[size_t(t)] * a.inner];
                if (idx)
                    idx->as<int64_t>()[at] = order[size_t(t)];
            }
        }
    return Status::ok();
}

/// dX = 0 but at the indices TopK chose, where it is dValues.
Status topKGrad(KernelContext &c)
{
    KView *dv = c.outputGrad(0), *dx = c.inputGrad(0), *idx = c.output(1);
    REMAT_RETURN_IF_ERROR(c.require(dv, "dValues"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "dX"));
    REMAT_RETURN_IF_ERROR(c.require(idx, "Indices"));
    auto geo = gatherGeometry(c.attrInt("axis", -1), dx->shape);
    if (!geo)
        return c.error(geo.status().message());
    const GatherGeometry &a = *geo; // [outer, dim, inner] around the axis
    if (dv->numel() != idx->numel() || a.outer * a.inner == 0 ||
        dv->numel() % (a.outer * a.inner) != 0)
        return c.error("gradient size mismatch");
    const int64_t k = dv->numel() / (a.outer * a.inner);
    std::fill(dx->f(), dx->f() + dx->numel(), 0.f);
    const int64_t *pi = idx->as<int64_t>();
    for (int64_t o = 0; o < a.outer; ++o)
        for (int64_t t = 0; t < k; ++t)
            for (int64_t i = 0; i < a.inner; ++i) {
                const int64_t at = (o * k + t) * a.inner + i, j = pi[at];
                if (j < 0 || j >= a.dim)
                    return c.error("an index of TopK's output is out of range");
                dx->f()[(o * a.dim + j) * a.inner + i] += dv->f()[at];
            }
    return Status::ok();
}

/// ReduceSumSquare, ReduceL2 (sqrt of the sum of squares), ReduceL1 (sum of |x|) and
/// ReduceLogSumExp (log of the sum of exp(x), from the largest element up).
enum class Norm { SumSquare, L2, L1, LogSumExp };

Status reduceNormForward(KernelContext &c, Norm kind)
{
    KView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "data"));
    REMAT_RETURN_IF_ERROR(c.require(y, "reduced"));
    REMAT_ASSIGN_OR_RETURN(ReduceGeometry g, reduceGeometryOf(c, x->shape));
    if (numelOf(g.keptShape) != y->numel())
        return c.error("output size mismatch");
    std::vector<double> acc(size_t(y->numel()), 0.0);
    const float *px = x->f();
    if (kind == Norm::LogSumExp) {
        std::vector<double> top(size_t(y->numel()), -std::numeric_limits<double>::infinity());
        keptBroadcast(x->shape, g.keptShape).forEach2([&](int64_t o, int64_t, int64_t j) {
            top[size_t(j)] = std::max(top[size_t(j)], double(px[o]));
        });
        keptBroadcast(x->shape, g.keptShape).forEach2([&](int64_t o, int64_t, int64_t j) {
            acc[size_t(j)] += std::exp(double(px[o]) - top[size_t(j)]);
        });
        for (int64_t j = 0; j < y->numel(); ++j)
            y->f()[j] =
                float(std::isinf(top[size_t(j)]) ? top[size_t(j)]
                                                 : top[size_t(j)] + std::log(acc[size_t(j)]));
        return Status::ok();
    }
    keptBroadcast(x->shape, g.keptShape).forEach2([&](int64_t o, int64_t, int64_t j) {
        const double v = px[o];
        acc[size_t(j)] += kind == Norm::L1 ? std::abs(v) : v * v;
    });
    for (int64_t j = 0; j < y->numel(); ++j)
        y->f()[j] = float(kind == Norm::L2 ? std::sqrt(acc[size_t(j)]) : acc[size_t(j)]);
    return Status::ok();
}

/// SumSquare: 2 x dy; L2: dy x / y (0 where the norm is 0, as PyTorch); L1: dy sign(x);
/// LogSumExp: dy exp(x - y) (softmax of x along the reduced dims).
Status reduceNormGrad(KernelContext &c, Norm kind)
{
    KView *dy = c.outputGrad(0), *dx = c.inputGrad(0), *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "dreduced"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "ddata"));
    REMAT_RETURN_IF_ERROR(c.require(x, "data"));
    if (kind == Norm::L2 || kind == Norm::LogSumExp)
        REMAT_RETURN_IF_ERROR(c.require(y, "reduced"));
    REMAT_ASSIGN_OR_RETURN(ReduceGeometry g, reduceGeometryOf(c, x->shape));
    if (numelOf(g.keptShape) != dy->numel())
        return c.error("output gradient size mismatch");
    const float *px = x->f(), *pg = dy->f(), *py = y ? y->f() : nullptr;
    float *pd = dx->f();
    keptBroadcast(x->shape, g.keptShape).forEach2([&](int64_t o, int64_t, int64_t j) {
        const double v = px[o], d = pg[j];
        switch (kind) {
        case Norm::SumSquare: pd[o] = float(2 * v * d); break;
        case Norm::L2: pd[o] = py[j] == 0 ? 0.f : float(d * v / double(py[j])); break;
        case Norm::L1: pd[o] = float(v > 0 ? d : (v < 0 ? -d : 0.0)); break;
        case Norm::LogSumExp: pd[o] = float(d * std::exp(v - double(py[j]))); break;
        }
    });
    return Status::ok();
}

Status reduceMeanForward(KernelContext &c) { return reduceForward(c, true); }
Status reduceSumForward(KernelContext &c) { return reduceForward(c, false); }
Status reduceMeanGrad(KernelContext &c) { return reduceGrad(c, true); }
Status reduceSumGrad(KernelContext &c) { return reduceGrad(c, false); }

// ---- GlobalAveragePool --------------------------------------------------------------------

Status globalAvgPoolForward(KernelContext &c)
{
    KView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "X"));
    REMAT_RETURN_IF_ERROR(c.require(y, "Y"));
    const ChannelLayout l = channelLayout(x->shape);
    for (int64_t i = 0; i < l.n * l.c; ++i) {
        double s = 0;
        const float *p = x->f() + i * l.spatial;
        for (int64_t j = 0; j < l.spatial; ++j)
            s += p[j];
        y->f()[i] = float(s / double(l.spatial));
    }
    return Status::ok();
}

Status globalAvgPoolGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "dY"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "dX"));
    const ChannelLayout l = channelLayout(dx->shape);
    const float inv = float(1.0 / double(l.spatial));
    for (int64_t i = 0; i < l.n * l.c; ++i) {
        const float g = dy->f()[i] * inv;
        float *p = dx->f() + i * l.spatial;
        for (int64_t j = 0; j < l.spatial; ++j)
            p[j] = g;
    }
    return Status::ok();
}

// ---- LRN (across channels) ----------------------------------------------------------------

struct LrnParams
{
    double alpha, beta, bias;
    int64_t lo, hi, size;
};

Expected<LrnParams> lrnParams(const KernelContext &c)
{
    LrnParams p;
    p.size = c.attrInt("size", 0);
    if (p.size <= 0)
        return c.error("LRN needs a positive size");
    p.alpha = c.attrFloat("alpha", 1e-4);
    p.beta = c.attrFloat("beta", 0.75);
    p.bias = c.attrFloat("bias", 1.0);
    p.lo = (p.size - 1) / 2;
    p.hi = p.size - 1 - p.lo;
    return p;
}

/// s[n,c,i] = bias + alpha / size * sum of x^2 over the channel window.
std::vector<double> lrnScale(const KView &x, const LrnParams &p)
{
    const ChannelLayout l = channelLayout(x.shape);
    std::vector<double> s(size_t(x.numel()));
    const float *px = x.f();
    for (int64_t n = 0; n < l.n; ++n)
        for (int64_t ch = 0; ch < l.c; ++ch)
            for (int64_t i = 0; i < l.spatial; ++i) {
                double sum = 0;
                for (int64_t k = std::max<int64_t>(0, ch - p.lo); k <= std::min(l.c - 1, ch + p.hi);
                     ++k) {
                    const double v = px[(n * l.c + k) * l.spatial + i];
                    sum += v * v;
                }
                s[size_t((n * l.c + ch) * l.spatial + i)] = p.bias + p.alpha / double(p.size) * sum;
            }
    return s;
}

Status lrnForward(KernelContext &c)
{
    KView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "X"));
    REMAT_RETURN_IF_ERROR(c.require(y, "Y"));
    REMAT_ASSIGN_OR_RETURN(LrnParams p, lrnParams(c));
    const std::vector<double> s = lrnScale(*x, p);
    for (int64_t i = 0; i < x->numel(); ++i)
        y->f()[i] = float(x->f()[i] * std::pow(s[size_t(i)], -p.beta));
    return Status::ok();
}

Status lrnGrad(KernelContext &c)
{
    KView *x = c.input(0), *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "X"));
    REMAT_RETURN_IF_ERROR(c.require(dy, "dY"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "dX"));
    REMAT_ASSIGN_OR_RETURN(LrnParams p, lrnParams(c));
    const std::vector<double> s = lrnScale(*x, p);
    const ChannelLayout l = channelLayout(x->shape);
    // t[c] = dy_c * x_c * s_c^(-beta-1): the part every channel in c's window receives
    std::vector<double> t(s.size());
    for (size_t i = 0; i < s.size(); ++i)
        t[i] = double(dy->f()[i]) * x->f()[i] * std::pow(s[i], -p.beta - 1);
    const double k = -2.0 * p.beta * p.alpha / double(p.size);
    for (int64_t n = 0; n < l.n; ++n)
        for (int64_t j = 0; j < l.c; ++j)
            for (int64_t i = 0; i < l.spatial; ++i) {
                const size_t at = size_t((n * l.c + j) * l.spatial + i);
                double cross = 0;
                // channels c whose window holds j: j - hi <= c <= j + lo
                for (int64_t ch = std::max<int64_t>(0, j - p.hi); ch <= std::min(l.c - 1, j + p.lo);
                     ++ch)
                    cross += t[size_t((n * l.c + ch) * l.spatial + i)];
                dx->f()[at] =
                    float(double(dy->f()[at]) * std::pow(s[at], -p.beta) + k * x->f()[at] * cross);
            }
    return Status::ok();
}

} // namespace

void addNnKernels(KernelTable &t)
{
    t["Gemm"] = gemmForward;
    t["GemmGrad"] = gemmGrad;
    t["MatMul"] = matmulForward;
    t["MatMulGrad"] = matmulGrad;
    t["BatchNormalization"] = batchNormForward;
    t["BatchNormalizationGrad"] = batchNormGrad;
    t["LayerNormalization"] = layerNormForward;
    t["LayerNormalizationGrad"] = layerNormGrad;
    t["GroupNormalization"] = groupNormForward;
    t["GroupNormalizationGrad"] = groupNormGrad;
    t["InstanceNormalization"] = groupNormForward;
    t["InstanceNormalizationGrad"] = groupNormGrad;
    t["Softmax"] = softmaxForward<false>;
    t["SoftmaxGrad"] = softmaxGrad<false>;
    t["LogSoftmax"] = softmaxForward<true>;
    t["Variance"] = varianceForward;
    t["VarianceGrad"] = varianceGrad;
    t["WeightNorm"] = weightNormForward;
    t["WeightNormGrad"] = weightNormGrad;
    t["SoftmaxCrossEntropyLoss"] = [](KernelContext &c) { return lossForward(c, true); };
    t["SoftmaxCrossEntropyLossGrad"] = [](KernelContext &c) { return lossGrad(c, true); };
    t["NegativeLogLikelihoodLoss"] = [](KernelContext &c) { return lossForward(c, false); };
    t["NegativeLogLikelihoodLossGrad"] = [](KernelContext &c) { return lossGrad(c, false); };
    t["LogSoftmaxGrad"] = softmaxGrad<true>;
    t["ReduceMean"] = reduceMeanForward;
    t["ReduceMeanGrad"] = reduceMeanGrad;
    t["ReduceSum"] = reduceSumForward;
    t["ReduceSumGrad"] = reduceSumGrad;
    t["ReduceMax"] = [](KernelContext &c) { return reduceExtremumForward(c, true); };
    t["ReduceMaxGrad"] = reduceExtremumGrad;
    t["ArgMax"] = [](KernelContext &c) { return argExtremumForward(c, true); };
    t["ArgMin"] = [](KernelContext &c) { return argExtremumForward(c, false); };
    t["TopK"] = topKForward;
    t["Einsum"] = einsumForward;
    t["EinsumGrad"] = einsumGrad;
    t["TopKGrad"] = topKGrad;
    t["ReduceMin"] = [](KernelContext &c) { return reduceExtremumForward(c, false); };
    t["ReduceMinGrad"] = reduceExtremumGrad;
    t["ReduceSumSquare"] = [](KernelContext &c) { return reduceNormForward(c, Norm::SumSquare); };
    t["ReduceSumSquareGrad"] = [](KernelContext &c) { return reduceNormGrad(c, Norm::SumSquare); };
    t["ReduceL2"] = [](KernelContext &c) { return reduceNormForward(c, Norm::L2); };
    t["ReduceL2Grad"] = [](KernelContext &c) { return reduceNormGrad(c, Norm::L2); };
    t["ReduceLogSumExp"] = [](KernelContext &c) { return reduceNormForward(c, Norm::LogSumExp); };
    t["ReduceLogSumExpGrad"] = [](KernelContext &c) { return reduceNormGrad(c, Norm::LogSumExp); };
    t["ReduceL1"] = [](KernelContext &c) { return reduceNormForward(c, Norm::L1); };
    t["ReduceL1Grad"] = [](KernelContext &c) { return reduceNormGrad(c, Norm::L1); };
    t["GlobalAveragePool"] = globalAvgPoolForward;
    t["GlobalAveragePoolGrad"] = globalAvgPoolGrad;
    t["LRN"] = lrnForward;
    t["LRNGrad"] = lrnGrad;
}

} // namespace remat::core::exec::cpu
