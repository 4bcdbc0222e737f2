#pragma once
// The rows of tests/gpu/tst_cuda_ops.cpp (each run on the CUDA backend and the CPU reference and
// compared), CUDA-free so that the op-table completeness test can read them too.

#include "common/mini_graph.h"

#include <functional>
#include <utility>
#include <vector>

namespace remat::tests {

using core::ValueId;
using core::ir::DataType;

using CudaCaseBuilder = std::function<core::ValueId(MiniGraph &)>;

/// The CUDA-vs-CPU rows: one tiny graph per case, named; tests/ops/tst_op_table.cpp checks that
/// every differentiable op type of the op table appears in one of them.
inline std::vector<std::pair<const char *, CudaCaseBuilder>> cudaOpCases()
{
    return {
        {"relu",
         [](MiniGraph &g) {
             return g.op("Relu", {g.input("x", {4, 5})}, {4, 5});
         }},
        {"add_mul_broadcast",
         [](MiniGraph &g) {
             const ValueId a =
                 g.op("Add", {g.input("x", {2, 3, 4}), g.param("p", {3, 1})}, {2, 3, 4});
             return g.op("Mul", {a, g.param("q", {4})}, {2, 3, 4});
         }},
        {"sub_div",
         [](MiniGraph &g) {
             const ValueId s = g.op("Sigmoid", {g.param("p", {3, 4})}, {3, 4});
             const ValueId d = g.op("Add", {s, g.constFloats("one", {1.f})}, {3, 4});
             const ValueId x = g.op("Sub", {g.input("x", {2, 3, 4}), g.param("q", {4})}, {2, 3, 4});
             return g.op("Div", {x, d}, {2, 3, 4});
         }},
        {"pow_sqrt_tanh",
         [](MiniGraph &g) {
             const ValueId p =
                 g.op("Pow", {g.input("x", {3, 5}), g.constFloats("two", {2.f})}, {3, 5});
             const ValueId s =
                 g.op("Sqrt", {g.op("Add", {p, g.constFloats("one", {1.f})}, {3, 5})}, {3, 5});
             return g.op("Tanh", {s}, {3, 5});
         }},
        {"leaky_relu",
         [](MiniGraph &g) {
             return g.op("LeakyRelu", {g.input("x", {4, 5})}, {4, 5}, {attrFloat("alpha", 0.2)});
         }},
        {"mod_sum",
         [](MiniGraph &g) {
             const ValueId m = g.op("Mod", {g.input("x", {3, 4}), g.constFloats("b", {1.5f})},
                                    {3, 4}, {attrInt("fmod", 1)});
             return g.op("Sum", {m, g.param("p", {4}), g.input("y", {3, 1})}, {3, 4});
         }},
        {"cast_reduce_sum",
         [](MiniGraph &g) {
             const ValueId c =
                 g.op("Cast", {g.input("x", {2, 3, 4})}, {2, 3, 4}, {attrInt("to", 1)});
             return g.op("ReduceSum", {c, g.constInts("axes", {1})}, {2, 1, 4},
                         {attrInt("keepdims", 1)});
         }},
        {"split_squeeze_unsqueeze",
         [](MiniGraph &g) {
             const ValueId x = g.input("x", {2, 5, 3});
             const ValueId a = g.op("Split", {x, g.constInts("split", {2, 3})}, {2, 2, 3},
                                    {attrInt("axis", 1)}, {{{2, 3, 3}, DataType::Float}});
             const ValueId u = g.op("Unsqueeze", {a, g.constInts("axes", {0})}, {1, 2, 2, 3});
             return g.op("Squeeze", {u, g.constInts("axes0", {0})}, {2, 2, 3});
         }},
        {"abs_reciprocal_softsign",
         [](MiniGraph &g) {
             const ValueId a = g.op("Abs", {g.input("x", {4, 5})}, {4, 5});
             const ValueId r = g.op(
                 "Reciprocal", {g.op("Add", {a, g.constFloats("one", {1.f})}, {4, 5})}, {4, 5});
             return g.op("Softsign", {g.op("Sub", {r, g.param("p", {5})}, {4, 5})}, {4, 5});
         }},
        {"sin_cos",
         [](MiniGraph &g) {
             return g.op("Cos", {g.op("Sin", {g.input("x", {3, 7})}, {3, 7})}, {3, 7});
         }},
        {"silu",
         [](MiniGraph &g) {
             return g.op("Silu", {g.input("x", {4, 7})}, {4, 7});
         }},
        {"elu_selu_celu",
         [](MiniGraph &g) {
             const ValueId e =
                 g.op("Elu", {g.input("x", {4, 6})}, {4, 6}, {attrFloat("alpha", 0.7)});
             const ValueId s = g.op("Selu", {g.op("Sub", {e, g.param("p", {6})}, {4, 6})}, {4, 6});
             return g.op("Celu", {g.op("Sub", {s, g.param("q", {6})}, {4, 6})}, {4, 6},
                         {attrFloat("alpha", 1.3)});
         }},
        {"softplus_mish_thresholded_relu",
         [](MiniGraph &g) {
             const ValueId s = g.op("Softplus", {g.input("x", {4, 6})}, {4, 6});
             const ValueId m = g.op("Mish", {g.op("Sub", {s, g.param("p", {6})}, {4, 6})}, {4, 6});
             return g.op("ThresholdedRelu", {m}, {4, 6}, {attrFloat("alpha", 0.1)});
         }},
        {"exp_log_neg",
         [](MiniGraph &g) {
             const ValueId e = g.op("Exp", {g.input("x", {3, 5})}, {3, 5});
             const ValueId l =
                 g.op("Log", {g.op("Add", {e, g.constFloats("one", {1.f})}, {3, 5})}, {3, 5});
             return g.op("Neg", {l}, {3, 5});
         }},
        {"max_min_broadcast",
         [](MiniGraph &g) {
             const ValueId m =
                 g.op("Max", {g.input("x", {2, 3, 4}), g.param("p", {3, 1})}, {2, 3, 4});
             return g.op("Min", {m, g.param("q", {4})}, {2, 3, 4});
         }},
        {"greater_less_where",
         [](MiniGraph &g) {
             const ValueId x = g.input("x", {4, 6});
             const ValueId p = g.param("p", {6});
             const ValueId w = g.op("Where", {g.opBool("Greater", {x, p}, {4, 6}), x, p}, {4, 6});
             return g.op("Where",
                         {g.opBool("Less", {w, g.constFloats("z", {0.f})}, {4, 6}),
                          g.constFloats("zero", {0.f}), w},
                         {4, 6});
         }},
        {"prelu_compare_logic",
         [](MiniGraph &g) {
             const ValueId x = g.input("x", {2, 3, 4});
             const ValueId pr = g.op("PRelu", {x, g.param("slope", {3, 1})}, {2, 3, 4});
             const ValueId ge =
                 g.opBool("GreaterOrEqual", {pr, g.constFloats("lo", {-0.1f})}, {2, 3, 4});
             const ValueId le =
                 g.opBool("LessOrEqual", {pr, g.constFloats("hi", {0.5f})}, {2, 3, 4});
             return g.op("Where",
                         {g.opBool("Xor", {ge, le}, {2, 3, 4}), pr, g.constFloats("zero", {0.f})},
                         {2, 3, 4});
         }},
        {"reduce_max_min_trilu",
         [](MiniGraph &g) {
             const ValueId x = g.input("x", {2, 4, 4});
             const ValueId t = g.op("Trilu", {x}, {2, 4, 4}, {attrInt("upper", 0)});
             const ValueId mx = g.op("ReduceMax", {t}, {2, 1, 4}, {attrInts("axes", {1})});
             const ValueId mn = g.op("ReduceMin", {x}, {2, 4, 1}, {attrInts("axes", {2})});
             return g.op("Add", {mx, mn}, {2, 4, 4});
         }},
        {"resize_nearest_scatter_nd",
         [](MiniGraph &g) {
             const ValueId up = g.op("Resize",
                                     {g.input("x", {1, 2, 2, 3}), g.constFloats("roi", {}, {0}),
                                      g.constFloats("scales", {1.f, 1.f, 2.f, 2.f}, {4})},
                                     {1, 2, 4, 6},
                                     {attrString("mode", "nearest"),
                                      attrString("coordinate_transformation_mode", "asymmetric"),
                                      attrString("nearest_mode", "floor")});
             const ValueId flat = g.op("Reshape", {up, g.constInts("shape", {8, 6})}, {8, 6});
             return g.op("ScatterND",
                         {flat, g.constInts("idx", {5, 1}, {2, 1}), g.param("upd", {2, 6})},
                         {8, 6});
         }},
        {"resize_linear_upsample",
         [](MiniGraph &g) {
             // torchvision's FPN / segmentation heads: bilinear upsampling (half_pixel), then
             // align_corners sizes, then Upsample-9 (asymmetric)
             const ValueId a = g.op("Resize",
                                    {g.input("x", {2, 3, 5, 4}), g.constFloats("roi", {}, {0}),
                                     g.constFloats("scales", {1.f, 1.f, 2.f, 1.5f}, {4})},
                                    {2, 3, 10, 6}, {attrString("mode", "linear")});
             const ValueId b =
                 g.op("Resize",
                      {a, g.constFloats("roi2", {}, {0}), g.constFloats("none", {}, {0}),
                       g.constInts("sizes", {2, 3, 7, 9})},
                      {2, 3, 7, 9},
                      {attrString("mode", "linear"),
                       attrString("coordinate_transformation_mode", "align_corners")});
             return g.op("Upsample", {b, g.constFloats("up", {1.f, 1.f, 2.f, 2.f}, {4})},
                         {2, 3, 14, 18}, {attrString("mode", "linear")});
         }},
        {"resize_cubic_antialias",
         [](MiniGraph &g) {
             // torchvision's bicubic (a -0.75, half_pixel), then Resize-18's antialiased cubic
             // (a -0.5, exclude_outside) and linear shrinking one dim and growing the other
             const ValueId a = g.op(
                 "Resize",
                 {g.input("x", {2, 3, 5, 4}), g.constFloats("roi", {}, {0}),
                  g.constFloats("scales", {1.f, 1.f, 2.f, 1.5f}, {4})},
                 {2, 3, 10, 6}, {attrString("mode", "cubic"), attrFloat("cubic_coeff_a", -0.75)});
             const ValueId b =
                 g.op("Resize",
                      {a, g.constFloats("roi2", {}, {0}), g.constFloats("none", {}, {0}),
                       g.constInts("sizes", {2, 3, 4, 9})},
                      {2, 3, 4, 9},
                      {attrString("mode", "cubic"), attrFloat("cubic_coeff_a", -0.5),
                       attrInt("antialias", 1), attrInt("exclude_outside", 1)});
             return g.op("Resize",
                         {b, g.constFloats("roi3", {}, {0}), g.constFloats("none3", {}, {0}),
                          g.constInts("sizes3", {2, 3, 3, 4})},
                         {2, 3, 3, 4},
                         {attrString("mode", "linear"), attrInt("antialias", 1),
                          attrString("coordinate_transformation_mode", "align_corners")});
         }},
        {"log_softmax",
         [](MiniGraph &g) {
             return g.op("LogSoftmax", {g.input("x", {3, 4, 7})}, {3, 4, 7}, {attrInt("axis", 1)});
         }},
        {"erf_gelu",
         [](MiniGraph &g) {
             const ValueId e = g.op("Erf", {g.input("x", {4, 6})}, {4, 6});
             return g.op("Gelu", {e}, {4, 6});
         }},
        {"hard_sigmoid_swish",
         [](MiniGraph &g) {
             const ValueId h = g.op("HardSwish", {g.input("x", {4, 9})}, {4, 9});
             return g.op("HardSigmoid", {h}, {4, 9},
                         {attrFloat("alpha", 0.3), attrFloat("beta", 0.4)});
         }},
        {"lrn",
         [](MiniGraph &g) {
             return g.op("LRN", {g.input("x", {2, 7, 3, 3})}, {2, 7, 3, 3},
                         {attrInt("size", 4), attrFloat("alpha", 0.01), attrFloat("beta", 0.75),
                          attrFloat("bias", 1.5)});
         }},
        {"clip",
         [](MiniGraph &g) {
             return g.op(
                 "Clip",
                 {g.input("x", {5, 7}), g.constFloats("lo", {-0.5f}), g.constFloats("hi", {0.5f})},
                 {5, 7});
         }},
        {"weight_standardisation",
         [](MiniGraph &g) {
             // (W - W.mean(dims)) / W.std(dims) as torch.onnx writes std out: ReduceMean, Sub,
             // Mul, ReduceMean, the correction (Mul by N, Div by N - 1), Sqrt; the builder fuses
             // the variance
             const ValueId w = g.param("w", {4, 3, 3});
             const std::vector<int64_t> axes{1, 2};
             const ValueId m1 = g.op("ReduceMean", {w}, {4, 1, 1}, {attrInts("axes", axes)});
             const ValueId m2 = g.op("ReduceMean", {w}, {4, 1, 1}, {attrInts("axes", axes)});
             const ValueId d = g.op("Sub", {w, m2}, {4, 3, 3});
             const ValueId sq = g.op("Mul", {d, d}, {4, 3, 3});
             const ValueId v = g.op("ReduceMean", {sq}, {4, 1, 1}, {attrInts("axes", axes)});
             const ValueId vn = g.op("Mul", {v, g.constFloats("n", {9.f})}, {4, 1, 1});
             const ValueId vu = g.op("Div", {vn, g.constFloats("n1", {8.f})}, {4, 1, 1});
             const ValueId sd = g.op("Sqrt", {vu}, {4, 1, 1});
             const ValueId ws = g.op("Div", {g.op("Sub", {w, m1}, {4, 3, 3}), sd}, {4, 3, 3});
             return g.op("Conv", {g.input("x", {2, 3, 9}), ws}, {2, 4, 7},
                         {attrInts("kernel_shape", {3})});
         }},
        {"weight_norm_conv",
         [](MiniGraph &g) {
             // torch.nn.utils.weight_norm(Conv1d, dim=0) exported: ReduceL2 / Div / Mul, which the
             // builder fuses into WeightNorm
             const ValueId v = g.param("v", {4, 3, 3});
             const ValueId n = g.op("ReduceL2", {v}, {4, 1, 1},
                                    {attrInts("axes", {1, 2}), attrInt("keepdims", 1)});
             const ValueId w =
                 g.op("Mul", {g.op("Div", {v, n}, {4, 3, 3}), g.param("g", {4, 1, 1})}, {4, 3, 3});
             return g.op("Conv", {g.input("x", {2, 3, 9}), w}, {2, 4, 7},
                         {attrInts("kernel_shape", {3})});
         }},
        {"reparameterisation",
         [](MiniGraph &g) {
             // a VAE's z = mu + exp(logvar / 2) * randn_like(mu), plus uniform noise
             const ValueId mu = g.input("mu", {3, 4});
             const ValueId half =
                 g.op("Mul", {g.input("logvar", {3, 4}), g.constFloats("h", {0.5f})}, {3, 4});
             const ValueId eps = g.op("RandomNormalLike", {mu}, {3, 4});
             const ValueId u = g.op("RandomUniformLike", {mu}, {3, 4},
                                    {attrFloat("low", -1.0), attrFloat("high", 1.0)});
             const ValueId z =
                 g.op("Add", {mu, g.op("Mul", {g.op("Exp", {half}, {3, 4}), eps}, {3, 4})}, {3, 4});
             return g.op("Mul", {z, u}, {3, 4});
         }},
        {"cross_entropy_nll",
         [](MiniGraph &g) {
             // F.cross_entropy over [N, C, d] with an ignored label, then F.nll_loss of a
             // log_softmax (mean with class weights): both losses summed
             const ValueId sce =
                 g.op("SoftmaxCrossEntropyLoss",
                      {g.input("x", {3, 5, 2}), g.constInts("labels", {4, 0, -1, 2, 1, 4}, {3, 2})},
                      {}, {attrInt("ignore_index", -1)});
             const ValueId lp =
                 g.op("LogSoftmax", {g.input("z", {4, 6})}, {4, 6}, {attrInt("axis", 1)});
             const ValueId nll = g.op("NegativeLogLikelihoodLoss",
                                      {lp, g.constInts("t", {5, 0, 3, 3}, {4}),
                                       g.constFloats("w", {1, 2, 0.5f, 1, 1, 3}, {6})},
                                      {});
             return g.op("Add", {sce, nll}, {});
         }},
        {"softmax_last",
         [](MiniGraph &g) {
             return g.op("Softmax", {g.input("x", {3, 4, 7})}, {3, 4, 7}, {attrInt("axis", -1)});
         }},
        {"softmax_middle",
         [](MiniGraph &g) {
             return g.op("Softmax", {g.input("x", {3, 4, 7})}, {3, 4, 7}, {attrInt("axis", 1)});
         }},
        {"layer_norm",
         [](MiniGraph &g) {
             return g.op("LayerNormalization",
                         {g.input("x", {2, 5, 8}), g.param("s", {8}), g.param("b", {8})}, {2, 5, 8},
                         {attrInt("axis", -1), attrFloat("epsilon", 1e-5)});
         }},
        {"group_instance_norm",
         [](MiniGraph &g) {
             // GroupNormalization per channel (opset 21) and per group (opset 18), then
             // InstanceNormalization over a 3-D volume. The Tanh between them matters: an
             // InstanceNormalization right after is blind to the per-group scale and bias (a
             // per-channel affine map), so their gradients would be exactly zero and the
             // comparison one of float noise (what the first H200 run found).
             const ValueId a =
                 g.op("GroupNormalization",
                      {g.input("x", {2, 6, 5, 7}), g.param("s", {6}), g.param("b", {6})},
                      {2, 6, 5, 7}, {attrInt("num_groups", 3), attrFloat("epsilon", 1e-5)});
             const ValueId b =
                 g.op("GroupNormalization", {a, g.param("s2", {2}), g.param("b2", {2})},
                      {2, 6, 5, 7}, {attrInt("num_groups", 2)});
             const ValueId t = g.op("Tanh", {b}, {2, 6, 5, 7});
             const ValueId v =
                 g.op("Reshape", {t, g.constInts("shape", {2, 6, 5, 7, 1})}, {2, 6, 5, 7, 1});
             return g.op("InstanceNormalization", {v, g.param("s3", {6}), g.param("b3", {6})},
                         {2, 6, 5, 7, 1}, {attrFloat("epsilon", 1e-5)});
         }},
        {"batch_norm_training",
         [](MiniGraph &g) {
             const ValueId m = g.value("rm", {3}, core::ir::ValueKind::Buffer);
             const ValueId v = g.value("rv", {3}, core::ir::ValueKind::Buffer);
             return g.op("BatchNormalization",
                         {g.input("x", {4, 3, 5, 5}), g.param("s", {3}), g.param("b", {3}), m, v},
                         {4, 3, 5, 5},
                         {attrInt("training_mode", 1), attrFloat("epsilon", 1e-5),
                          attrFloat("momentum", 0.9)},
                         {{{3}, DataType::Float}, {{3}, DataType::Float}});
         }},
        {"conv_grouped_strided",
         [](MiniGraph &g) {
             return g.op(
                 "Conv",
                 {g.input("x", {2, 4, 9, 9}), g.param("w", {6, 2, 3, 3}), g.param("b", {6})},
                 {2, 6, 5, 5},
                 {attrInts("kernel_shape", {3, 3}), attrInts("strides", {2, 2}),
                  attrInts("pads", {1, 1, 1, 1}), attrInt("group", 2)});
         }},
        {"conv_1d_asymmetric_pads",
         [](MiniGraph &g) {
             // cuDNN pads both sides alike: the cuDNN path refuses this at prepare() (checked
             // below); the comparison runs it through im2col
             return g.op("Conv", {g.input("x", {2, 3, 11}), g.param("w", {4, 3, 3})}, {2, 4, 6},
                         {attrInts("kernel_shape", {3}), attrInts("strides", {2}),
                          attrInts("pads", {2, 1})});
         }},
        {"conv_3d_grouped_strided",
         [](MiniGraph &g) {
             // video: 3-D convolution (cuDNN's N-d path), then 3-D max and average pools
             const ValueId c = g.op(
                 "Conv",
                 {g.input("x", {2, 4, 5, 6, 6}), g.param("w", {4, 2, 3, 3, 3}), g.param("b", {4})},
                 {2, 4, 3, 6, 6},
                 {attrInts("kernel_shape", {3, 3, 3}), attrInts("strides", {2, 1, 1}),
                  attrInts("pads", {1, 1, 1, 1, 1, 1}), attrInt("group", 2)});
             const ValueId m =
                 g.op("MaxPool", {c}, {2, 4, 2, 3, 3},
                      {attrInts("kernel_shape", {2, 2, 2}), attrInts("strides", {1, 2, 2})});
             return g.op("AveragePool", {m}, {2, 4, 2, 3, 3},
                         {attrInts("kernel_shape", {1, 3, 3}), attrInts("pads", {0, 1, 1, 0, 1, 1}),
                          attrInt("count_include_pad", 1)});
         }},
        {"pool_1d",
         [](MiniGraph &g) {
             // audio: 1-D max and average pools
             const ValueId m = g.op("MaxPool", {g.input("x", {2, 3, 16})}, {2, 3, 8},
                                    {attrInts("kernel_shape", {3}), attrInts("strides", {2}),
                                     attrInts("pads", {1, 1})});
             return g.op("AveragePool", {m}, {2, 3, 4},
                         {attrInts("kernel_shape", {2}), attrInts("strides", {2})});
         }},
        {"conv_dilated_depthwise",
         [](MiniGraph &g) {
             return g.op("Conv", {g.input("x", {1, 3, 10, 10}), g.param("w", {3, 1, 3, 3})},
                         {1, 3, 10, 10},
                         {attrInts("kernel_shape", {3, 3}), attrInts("dilations", {2, 2}),
                          attrInts("pads", {2, 2, 2, 2}), attrInt("group", 3)});
         }},
        {"conv_transpose_grouped_strided",
         [](MiniGraph &g) {
             return g.op(
                 "ConvTranspose",
                 {g.input("x", {2, 4, 5, 5}), g.param("w", {4, 3, 3, 3}), g.param("b", {6})},
                 {2, 6, 10, 10},
                 {attrInts("kernel_shape", {3, 3}), attrInts("strides", {2, 2}),
                  attrInts("pads", {1, 1, 1, 1}), attrInts("output_padding", {1, 1}),
                  attrInt("group", 2)});
         }},
        {"conv_transpose_1d_asymmetric_pads",
         [](MiniGraph &g) {
             // asymmetric pads: the cuDNN path refuses them, the comparison runs through im2col
             return g.op("ConvTranspose", {g.input("x", {2, 3, 6}), g.param("w", {3, 2, 3})},
                         {2, 2, 12}, {attrInts("strides", {2}), attrInts("pads", {1, 0})});
         }},
        {"lstm_bidirectional_sequence_lens",
         [](MiniGraph &g) {
             return g.op("LSTM",
                         {g.input("x", {4, 2, 3}), g.param("w", {2, 16, 3}),
                          g.param("r", {2, 16, 4}), g.param("b", {2, 32}),
                          g.constInts("lens", {4, 3}), g.input("h0", {2, 2, 4}),
                          g.input("c0", {2, 2, 4})},
                         {4, 2, 2, 4},
                         {attrInt("hidden_size", 4), attrString("direction", "bidirectional")},
                         {{{2, 2, 4}, DataType::Float}, {{2, 2, 4}, DataType::Float}});
         }},
        {"gru_reverse_batch_first",
         [](MiniGraph &g) {
             return g.op("GRU",
                         {g.input("x", {2, 4, 3}), g.param("w", {1, 12, 3}),
                          g.param("r", {1, 12, 4}), g.param("b", {1, 24})},
                         {2, 4, 1, 4},
                         {attrInt("hidden_size", 4), attrString("direction", "reverse"),
                          attrInt("layout", 1)},
                         {{{2, 1, 4}, DataType::Float}});
         }},
        {"gru_linear_before_reset",
         [](MiniGraph &g) {
             return g.op(
                 "GRU",
                 {g.input("x", {3, 2, 3}), g.param("w", {1, 12, 3}), g.param("r", {1, 12, 4}),
                  g.param("b", {1, 24}), ValueId(), g.input("h0", {1, 2, 4})},
                 {3, 1, 2, 4}, {attrInt("hidden_size", 4), attrInt("linear_before_reset", 1)},
                 {{{1, 2, 4}, DataType::Float}});
         }},
        {"rnn_tanh_sequence_lens",
         [](MiniGraph &g) {
             return g.op("RNN",
                         {g.input("x", {3, 2, 3}), g.param("w", {1, 4, 3}), g.param("r", {1, 4, 4}),
                          g.param("b", {1, 8}), g.constInts("lens", {2, 3})},
                         {3, 1, 2, 4}, {attrInt("hidden_size", 4)}, {{{1, 2, 4}, DataType::Float}});
         }},
        {"depth_to_space_space_to_depth",
         [](MiniGraph &g) {
             const ValueId d = g.op("DepthToSpace", {g.input("x", {2, 8, 3, 2})}, {2, 2, 6, 4},
                                    {attrInt("blocksize", 2), attrString("mode", "CRD")});
             const ValueId s =
                 g.op("SpaceToDepth", {g.op("Mul", {d, g.param("p", {4})}, {2, 2, 6, 4})},
                      {2, 8, 3, 2}, {attrInt("blocksize", 2)});
             return g.op("DepthToSpace", {s}, {2, 2, 6, 4}, {attrInt("blocksize", 2)});
         }},
        {"reduce_norms",
         [](MiniGraph &g) {
             const ValueId x = g.op("Mul", {g.input("x", {2, 3, 4}), g.param("p", {4})}, {2, 3, 4});
             const ValueId l2 =
                 g.op("ReduceL2", {x}, {2, 1, 4}, {attrInts("axes", {1}), attrInt("keepdims", 1)});
             const ValueId l1 =
                 g.op("ReduceL1", {x}, {2, 3, 1}, {attrInts("axes", {2}), attrInt("keepdims", 1)});
             const ValueId ss = g.op("ReduceSumSquare", {x}, {1, 1, 1}, {attrInt("keepdims", 1)});
             return g.op("Sum", {l2, l1, ss}, {2, 3, 4});
         }},
        {"max_pool",
         [](MiniGraph &g) {
             return g.op("MaxPool", {g.input("x", {2, 3, 9, 9})}, {2, 3, 5, 5},
                         {attrInts("kernel_shape", {3, 3}), attrInts("strides", {2, 2}),
                          attrInts("pads", {1, 1, 1, 1})});
         }},
        {"average_pool",
         [](MiniGraph &g) {
             return g.op("AveragePool", {g.input("x", {2, 3, 9, 9})}, {2, 3, 5, 5},
                         {attrInts("kernel_shape", {3, 3}), attrInts("strides", {2, 2}),
                          attrInts("pads", {1, 1, 1, 1}), attrInt("count_include_pad", 0)});
         }},
        {"global_average_pool_flatten",
         [](MiniGraph &g) {
             const ValueId p =
                 g.op("GlobalAveragePool", {g.input("x", {2, 3, 4, 4})}, {2, 3, 1, 1});
             return g.op("Flatten", {p}, {2, 3}, {attrInt("axis", 1)});
         }},
        {"matmul_shared_weight",
         [](MiniGraph &g) {
             return g.op("MatMul", {g.input("x", {2, 3, 4, 5}), g.param("w", {5, 6})},
                         {2, 3, 4, 6});
         }},
        {"matmul_broadcast_batch",
         [](MiniGraph &g) {
             return g.op("MatMul", {g.input("x", {2, 1, 4, 5}), g.param("w", {3, 5, 6})},
                         {2, 3, 4, 6});
         }},
        {"gemm_transB_bias",
         [](MiniGraph &g) {
             return g.op("Gemm", {g.input("x", {4, 5}), g.param("w", {6, 5}), g.param("b", {6})},
                         {4, 6},
                         {attrInt("transB", 1), attrFloat("alpha", 0.5), attrFloat("beta", 2.0)});
         }},
        {"gemm_transA",
         [](MiniGraph &g) {
             return g.op("Gemm", {g.input("x", {5, 4}), g.param("w", {5, 6}), g.param("b", {4, 6})},
                         {4, 6}, {attrInt("transA", 1)});
         }},
        {"transpose",
         [](MiniGraph &g) {
             return g.op("Transpose", {g.input("x", {2, 3, 4, 5})}, {2, 4, 3, 5},
                         {attrInts("perm", {0, 2, 1, 3})});
         }},
        {"concat_slice",
         [](MiniGraph &g) {
             const ValueId c = g.op("Concat", {g.input("x", {2, 3, 4}), g.param("p", {2, 2, 4})},
                                    {2, 5, 4}, {attrInt("axis", 1)});
             return g.op("Slice",
                         {c, g.constInts("st", {1}), g.constInts("en", {5}), g.constInts("ax", {1}),
                          g.constInts("sp", {2})},
                         {2, 2, 4});
         }},
        {"gather",
         [](MiniGraph &g) {
             return g.op("Gather", {g.input("x", {2, 5, 3}), g.constInts("idx", {4, 0, 4})},
                         {2, 3, 3}, {attrInt("axis", 1)});
         }},
        {"expand",
         [](MiniGraph &g) {
             const ValueId e = g.op(
                 "Expand", {g.param("p", {1, 1, 4}), g.constInts("shape", {2, 3, 4})}, {2, 3, 4});
             return g.op("Add", {e, g.input("x", {2, 3, 4})}, {2, 3, 4});
         }},
        {"pad_reflect_edge",
         [](MiniGraph &g) {
             // silero's STFT pads its audio by reflection; edge pads repeat the border
             const ValueId r =
                 g.op("Pad", {g.input("x", {2, 3, 6}), g.constInts("pads", {0, 0, 2, 0, 0, 3})},
                      {2, 3, 11}, {attrString("mode", "reflect")});
             return g.op("Pad", {r, g.constInts("pads2", {0, 1, 1, 0, 0, 2})}, {2, 4, 14},
                         {attrString("mode", "edge")});
         }},
        {"tile_cumsum",
         [](MiniGraph &g) {
             // repeat(2, 1, 3) and cumsum along the middle, then a reverse exclusive scan
             const ValueId t = g.op(
                 "Tile", {g.input("x", {2, 3, 4}), g.constInts("reps", {2, 1, 3})}, {4, 3, 12});
             const ValueId c = g.op("CumSum", {t, g.constInts("axis", {1})}, {4, 3, 12});
             return g.op("CumSum", {c, g.constInts("axis2", {-1})}, {4, 3, 12},
                         {attrInt("exclusive", 1), attrInt("reverse", 1)});
         }},
        {"einsum",
         [](MiniGraph &g) {
             // MaxViT-style attention scores and their product with the values
             const ValueId q = g.input("q", {2, 3, 4, 5});
             const ValueId s = g.op("Einsum", {q, g.param("k", {2, 3, 6, 5})}, {2, 3, 4, 6},
                                    {attrString("equation", "bhid,bhjd->bhij")});
             return g.op("Einsum", {s, g.param("v", {2, 3, 6, 5})}, {2, 3, 4, 5},
                         {attrString("equation", "...ij,...jd->...id")});
         }},
        {"topk_argmax",
         [](MiniGraph &g) {
             // torch.topk(x, 3, dim=1) of a 3-D input (values on, indices aside), and an argmax
             // beside it (forward-only, an integer result nothing differentiates)
             const ValueId x = g.input("x", {2, 6, 3});
             g.opInt64("ArgMax", {x}, {2, 1, 3}, {attrInt("axis", 1)});
             return g.op("TopK", {x, g.constInts("k", {3})}, {2, 3, 3}, {attrInt("axis", 1)},
                         {{{2, 3, 3}, core::ir::DataType::Int64}});
         }},
        {"gather_scatter_elements",
         [](MiniGraph &g) {
             // torch.gather along the channels (a repeated index), then torch.scatter of a
             // parameter into the result (ScatterElements, and opset 9's Scatter)
             const ValueId ge =
                 g.op("GatherElements",
                      {g.input("x", {2, 4, 3}),
                       g.constInts("idx", {3, 0, 0, 1, 2, 3, -1, 1, 0, 0, 2, 2}, {2, 2, 3})},
                      {2, 2, 3}, {attrInt("axis", 1)});
             const ValueId se =
                 g.op("ScatterElements",
                      {ge, g.constInts("sidx", {1, 0, 2, 0}, {1, 2, 2}), g.param("upd", {1, 2, 2})},
                      {2, 2, 3}, {attrInt("axis", 2)});
             const ValueId s9 =
                 g.op("Scatter",
                      {se, g.constInts("sidx9", {1, 0, 1}, {1, 1, 3}), g.param("upd9", {1, 1, 3})},
                      {2, 2, 3}, {attrInt("axis", 0)});
             // torch.scatter_add with a repeated index (message passing into a node twice)
             return g.op("ScatterElements",
                         {s9, g.constInts("aidx", {0, 0, 1, 1, 1, 0}, {1, 2, 3}),
                          g.param("addupd", {1, 2, 3})},
                         {2, 2, 3}, {attrInt("axis", 1), attrString("reduction", "add")});
         }},
        {"pad_wrap",
         [](MiniGraph &g) {
             // opset 19's circular padding, wider than the input on one side
             return g.op("Pad", {g.input("x", {2, 3, 4}), g.constInts("pads", {0, 0, 5, 0, 1, 2})},
                         {2, 4, 11}, {attrString("mode", "wrap")});
         }},
        {"pad_constant",
         [](MiniGraph &g) {
             return g.op(
                 "Pad", {g.input("x", {2, 3, 4, 4}), g.constInts("pads", {0, 0, 1, 2, 0, 0, 2, 1})},
                 {2, 3, 7, 7}, {attrString("mode", "constant")});
         }},
        {"reshape",
         [](MiniGraph &g) {
             return g.op("Reshape", {g.input("x", {2, 3, 4}), g.constInts("shape", {6, 4})},
                         {6, 4});
         }},
        {"reduce_mean",
         [](MiniGraph &g) {
             return g.op("ReduceMean", {g.input("x", {2, 3, 4})}, {2, 1, 4},
                         {attrInts("axes", {1}), attrInt("keepdims", 1)});
         }},
        {"dropout_training",
         [](MiniGraph &g) {
             const bool t = true;
             const ValueId mode = g.constant("mode", DataType::Bool, {}, &t, 1);
             return g.op("Dropout", {g.input("x", {8, 16}), g.constFloats("ratio", {0.3f}), mode},
                         {8, 16}, {}, {{{8, 16}, DataType::Bool}});
         }},
        // the fused attention of --attention sdpa (core/ops/attention.h; gpu/ops_attention.cpp):
        // sequences of 37 / 45 / 40, no multiple of the kernels' 32-row tiles
        {"sdpa_grouped_bias_mask_causal",
         [](MiniGraph &g) {
             // 4 query heads over 2 K/V heads, a bias broadcast over batch and heads, a mask
             const ValueId mask =
                 g.opBool("Greater", {g.input("m", {37, 37}), g.constFloats("z", {0.f})}, {37, 37});
             return g.op("ScaledDotProductAttention",
                         {g.input("q", {2, 4, 37, 8}), g.param("k", {2, 2, 37, 8}),
                          g.param("v", {2, 2, 37, 6}), g.param("bias", {1, 1, 37, 37}), mask},
                         {2, 4, 37, 6},
                         {attrInts("logit_ops", {1, 2, 3, 5}),
                          {"logit_values", std::vector<double>{0.35, 0.0, -1e4, -1e4}}});
         }},
        {"sdpa_k_transposed",
         [](MiniGraph &g) {
             return g.op("ScaledDotProductAttention",
                         {g.input("q", {2, 3, 45, 8}), g.param("kt", {2, 3, 8, 50}),
                          g.param("v", {2, 3, 50, 8})},
                         {2, 3, 45, 8},
                         {attrInt("k_transposed", 1),
                          attrInts("logit_ops", {1}),
                          {"logit_values", std::vector<double>{0.35}}});
         }},
        {"sdpa_heads_layout_causal",
         [](MiniGraph &g) {
             // onnxruntime's [B, S, heads x D]: 4 query heads over 2 K/V heads, causal
             return g.op(
                 "ScaledDotProductAttention",
                 {g.input("q", {2, 40, 32}), g.param("k", {2, 40, 16}), g.param("v", {2, 40, 16})},
                 {2, 40, 32},
                 {attrInt("num_heads", 4),
                  attrInt("kv_num_heads", 2),
                  attrInts("logit_ops", {1, 5}),
                  {"logit_values", std::vector<double>{0.35, -3.4028234663852886e38}}});
         }},
    };
}

} // namespace remat::tests
