#pragma once
// The finite-difference rows of tst_kernel_gradients.cpp: one op call on tiny inputs each, with
// the inputs kept away from kinks. tests/ops/tst_op_table.cpp checks that every differentiable
// op type of the op table has a row here.
//   for (auto &[name, c] : kernelGradientCases()) checkGradient(c);

#include "core/exec/host_tensor.h"
#include "core/ir/graph.h"

#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace remat::tests {

using core::exec::HostTensor;
namespace ir = core::ir;

struct In
{
    HostTensor t;
    bool differentiable = true;
};

inline In randn(std::vector<int64_t> shape, uint64_t seed, double scale = 1.0, double offset = 0.0,
                double minAbs = 0.0)
{
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> d(0, 1);
    HostTensor t = HostTensor::zeros(ir::DataType::Float, shape);
    for (float &v : t.floats()) {
        double x = d(rng) * scale;
        if (std::abs(x) < minAbs)
            x = x < 0 ? x - minAbs : x + minAbs;
        v = float(x + offset);
    }
    return {t, true};
}

inline In ints(std::vector<int64_t> shape, std::vector<int64_t> values)
{
    return {HostTensor::fromInt64s(std::move(shape), values), false};
}

inline In constant(std::vector<int64_t> shape, std::vector<float> values)
{
    return {HostTensor::fromFloats(std::move(shape), values), false};
}

inline In bools(std::vector<int64_t> shape, std::vector<bool> values)
{
    HostTensor t = HostTensor::zeros(ir::DataType::Bool, std::move(shape));
    for (size_t i = 0; i < values.size(); ++i)
        t.data[i] = std::byte(values[i] ? 1 : 0);
    return {t, false};
}

struct Out
{
    std::vector<int64_t> shape;
    ir::DataType dtype = ir::DataType::Float;
};

inline ir::Attribute attr(std::string name, ir::Attribute::Payload p)
{
    return {std::move(name), std::move(p)};
}

struct OpCase
{
    std::string type;
    std::vector<ir::Attribute> attrs;
    std::vector<std::optional<In>> inputs; // nullopt: omitted optional input
    std::vector<std::optional<Out>> outputs;
    bool training = false; // recompute / seed semantics do not matter here
};

/// Every row: a name and the op call.
inline std::vector<std::pair<std::string, OpCase>> kernelGradientCases()
{
    using V = std::vector<int64_t>;
    std::vector<std::pair<std::string, OpCase>> rows;
    auto add = [&rows](const char *name, OpCase c) { rows.emplace_back(name, std::move(c)); };
    const Out f23{V{2, 3}};
    // element-wise, broadcasting
    add("Add broadcast", {"Add", {}, {randn({2, 3}, 1), randn({3}, 2)}, {f23}});
    add("Sub broadcast", {"Sub", {}, {randn({2, 1}, 1), randn({2, 3}, 2)}, {f23}});
    add("Mul broadcast", {"Mul", {}, {randn({2, 1, 3}, 1), randn({4, 3}, 2)}, {Out{V{2, 4, 3}}}});
    add("Div", {"Div", {}, {randn({2, 3}, 1), randn({3}, 2, 0.3, 0, 1.0)}, {f23}});
    add("Pow", {"Pow", {}, {randn({2, 3}, 1, 0.3, 1.5), randn({1}, 2, 0.2, 2.0)}, {f23}});
    add("Mod fmod", {"Mod",
                     {attr("fmod", int64_t(1))},
                     {randn({2, 3}, 1, 0.3, 4.0), constant({3}, {1.5f, 2.5f, 1.75f})},
                     {f23}});
    add("Where",
        {"Where",
         {},
         {bools({2, 3}, {true, false, true, true, false, false}), randn({2, 3}, 1), randn({3}, 2)},
         {f23}});
    add("Sum", {"Sum", {}, {randn({2, 3}, 1), randn({3}, 2), randn({2, 1}, 3)}, {f23}});
    add("Max broadcast", {"Max", {}, {randn({2, 3}, 1), randn({3}, 2)}, {f23}});
    add("Min broadcast", {"Min", {}, {randn({2, 1}, 1), randn({2, 3}, 2)}, {f23}});
    add("PRelu per channel", {"PRelu",
                              {},
                              {randn({2, 3, 2}, 1, 1.0, 0, 0.05), randn({3, 1}, 2, 0.3, 0.2)},
                              {Out{V{2, 3, 2}}}});
    add("PRelu scalar slope",
        {"PRelu", {}, {randn({2, 3}, 3, 1.0, 0, 0.05), constant({1}, {0.25f})}, {f23}});
    add("Relu", {"Relu", {}, {randn({2, 3}, 1, 1.0, 0, 0.05)}, {f23}});
    add("Sigmoid", {"Sigmoid", {}, {randn({2, 3}, 1)}, {f23}});
    add("Tanh", {"Tanh", {}, {randn({2, 3}, 1)}, {f23}});
    add("Erf", {"Erf", {}, {randn({2, 3}, 1)}, {f23}});
    add("Sqrt", {"Sqrt", {}, {randn({2, 3}, 1, 0.2, 1.0)}, {f23}});
    add("Exp", {"Exp", {}, {randn({2, 3}, 1)}, {f23}});
    add("Log", {"Log", {}, {randn({2, 3}, 1, 0.2, 1.0)}, {f23}});
    add("Neg", {"Neg", {}, {randn({2, 3}, 1)}, {f23}});
    add("Abs", {"Abs", {}, {randn({2, 3}, 1, 1.0, 0, 0.05)}, {f23}});
    add("Reciprocal", {"Reciprocal", {}, {randn({2, 3}, 1, 0.2, 1.5)}, {f23}});
    add("Sin", {"Sin", {}, {randn({2, 3}, 1)}, {f23}});
    add("Cos", {"Cos", {}, {randn({2, 3}, 1)}, {f23}});
    add("Elu", {"Elu", {attr("alpha", 0.7)}, {randn({2, 3}, 1, 1.0, 0, 0.05)}, {f23}});
    add("Selu", {"Selu", {}, {randn({2, 3}, 1, 1.0, 0, 0.05)}, {f23}});
    add("Celu", {"Celu", {attr("alpha", 1.3)}, {randn({2, 3}, 1, 1.0, 0, 0.05)}, {f23}});
    add("Softplus", {"Softplus", {}, {randn({2, 3}, 1, 2.0)}, {f23}});
    add("Softsign", {"Softsign", {}, {randn({2, 3}, 1, 1.0, 0, 0.05)}, {f23}});
    add("ThresholdedRelu",
        {"ThresholdedRelu", {attr("alpha", 0.5)}, {randn({2, 3}, 3, 1.0, 0, 0.05)}, {f23}});
    add("Mish", {"Mish", {}, {randn({2, 3}, 1, 1.5)}, {f23}});
    add("Silu", {"Silu", {}, {randn({2, 3}, 1, 2.0)}, {f23}});
    add("LeakyRelu", {"LeakyRelu", {attr("alpha", 0.2)}, {randn({2, 3}, 1, 1.0, 0, 0.05)}, {f23}});
    add("Gelu", {"Gelu", {}, {randn({2, 3}, 1)}, {f23}});
    add("Gelu tanh",
        {"Gelu", {attr("approximate", std::string("tanh"))}, {randn({2, 3}, 1)}, {f23}});
    add("HardSigmoid", {"HardSigmoid", {}, {randn({2, 3}, 1, 3.0, 0, 0.05)}, {f23}});
    add("HardSwish", {"HardSwish", {}, {randn({2, 3}, 1, 3.0, 0, 0.05)}, {f23}});
    add("Clip ReLU6",
        {"Clip",
         {},
         {randn({2, 4}, 1, 4.0, 3.0, 0.1), constant({}, {0.0f}), constant({}, {6.0f})},
         {Out{V{2, 4}}}});
    add("Identity", {"Identity", {}, {randn({2, 3}, 1)}, {f23}});
    add("Cast", {"Cast", {attr("to", int64_t(1))}, {randn({2, 3}, 1)}, {f23}});
    add("Dropout", {"Dropout",
                    {},
                    {randn({4, 5}, 1),
                     constant({}, {0.4f}),
                     {In{[] {
                             HostTensor t = HostTensor::zeros(ir::DataType::Bool, {});
                             t.data[0] = std::byte{1};
                             return t;
                         }(),
                         false}}},
                    {Out{V{4, 5}}, Out{V{4, 5}, ir::DataType::Bool}}});
    // layout
    add("Reshape", {"Reshape", {}, {randn({2, 3}, 1), ints({2}, {3, 2})}, {Out{V{3, 2}}}});
    add("Flatten", {"Flatten", {}, {randn({2, 3, 2}, 1)}, {Out{V{2, 6}}}});
    add("Squeeze", {"Squeeze", {}, {randn({2, 1, 3}, 1), ints({1}, {1})}, {f23}});
    add("Unsqueeze", {"Unsqueeze", {}, {randn({2, 3}, 1), ints({1}, {0})}, {Out{V{1, 2, 3}}}});
    add("Transpose",
        {"Transpose", {attr("perm", V{2, 0, 1})}, {randn({2, 3, 4}, 1)}, {Out{V{4, 2, 3}}}});
    add("Concat", {"Concat",
                   {attr("axis", int64_t(1))},
                   {randn({2, 1}, 1), randn({2, 3}, 2)},
                   {Out{V{2, 4}}}});
    add("Split", {"Split",
                  {attr("axis", int64_t(1))},
                  {randn({2, 5}, 1), ints({2}, {2, 3})},
                  {Out{V{2, 2}}, Out{V{2, 3}}}});
    add("Slice steps", {"Slice",
                        {},
                        {randn({3, 6}, 1), ints({2}, {0, 5}), ints({2}, {3, 0}), ints({2}, {0, 1}),
                         ints({2}, {2, -2})},
                        {Out{V{2, 3}}}});
    add("DepthToSpace DCR", {"DepthToSpace",
                             {attr("blocksize", int64_t(2))},
                             {randn({1, 8, 2, 3}, 1)},
                             {Out{V{1, 2, 4, 6}}}});
    add("DepthToSpace CRD", {"DepthToSpace",
                             {attr("blocksize", int64_t(2)), attr("mode", std::string("CRD"))},
                             {randn({2, 4, 1, 2}, 1)},
                             {Out{V{2, 1, 2, 4}}}});
    add("SpaceToDepth", {"SpaceToDepth",
                         {attr("blocksize", int64_t(2))},
                         {randn({1, 2, 4, 2}, 1)},
                         {Out{V{1, 8, 2, 1}}}});
    add("Gather",
        {"Gather", {attr("axis", int64_t(1))}, {randn({2, 4}, 1), ints({3}, {3, 0, -1})}, {f23}});
    add("Expand", {"Expand", {}, {randn({3, 1}, 1), ints({3}, {2, 3, 4})}, {Out{V{2, 3, 4}}}});
    add("Tile", {"Tile", {}, {randn({2, 3}, 1), ints({2}, {2, 3})}, {Out{V{4, 9}}}});
    add("CumSum", {"CumSum", {}, {randn({2, 4, 2}, 1), ints({}, {1})}, {Out{V{2, 4, 2}}}});
    add("CumSum exclusive reverse", {"CumSum",
                                     {attr("exclusive", int64_t(1)), attr("reverse", int64_t(1))},
                                     {randn({3, 4}, 2), ints({1}, {-1})},
                                     {Out{V{3, 4}}}});
    add("Einsum attention scores", {"Einsum",
                                    {attr("equation", std::string("bhid,bhjd->bhij"))},
                                    {randn({2, 2, 3, 4}, 1), randn({2, 2, 5, 4}, 2)},
                                    {Out{V{2, 2, 3, 5}}}});
    add("Einsum ellipsis broadcast", {"Einsum",
                                      {attr("equation", std::string("...ij,jk->...ik"))},
                                      {randn({2, 3, 4}, 3), randn({4, 2}, 4)},
                                      {Out{V{2, 3, 2}}}});
    add("Einsum implicit, sum out", {"Einsum",
                                     {attr("equation", std::string("ab,bc"))},
                                     {randn({3, 4}, 5), randn({4, 2}, 6)},
                                     {Out{V{3, 2}}}});
    add("Einsum one operand reduce", {"Einsum",
                                      {attr("equation", std::string("abc->ca"))},
                                      {randn({2, 3, 4}, 7)},
                                      {Out{V{4, 2}}}});
    add("Einsum size-1 broadcast", {"Einsum",
                                    {attr("equation", std::string("ij,ij->i"))},
                                    {randn({3, 4}, 8), randn({1, 4}, 9)},
                                    {Out{V{3}}}});
    add("TopK largest axis 1", {"TopK",
                                {attr("axis", int64_t(1))},
                                {randn({3, 5}, 1), ints({1}, {2})},
                                {Out{V{3, 2}}, Out{V{3, 2}, ir::DataType::Int64}}});
    add("TopK smallest axis 0 of 3-D", {"TopK",
                                        {attr("axis", int64_t(0)), attr("largest", int64_t(0))},
                                        {randn({4, 2, 3}, 2), ints({1}, {3})},
                                        {Out{V{3, 2, 3}}, Out{V{3, 2, 3}, ir::DataType::Int64}}});
    add("GatherElements axis 0", {"GatherElements",
                                  {},
                                  {randn({3, 4}, 1), ints({2, 4}, {0, 2, -1, 0, 2, 2, 1, 0})},
                                  {Out{V{2, 4}}}});
    add("GatherElements axis 1 repeated", {"GatherElements",
                                           {attr("axis", int64_t(1))},
                                           {randn({2, 5}, 2), ints({2, 3}, {4, 0, 0, 1, -2, 3})},
                                           {Out{V{2, 3}}}});
    add("GatherND elements",
        {"GatherND", {}, {randn({3, 4}, 1), ints({3, 2}, {0, 1, 2, 3, 0, 1})}, {Out{V{3}}}});
    add("GatherND rows",
        {"GatherND", {}, {randn({3, 4}, 2), ints({2, 1}, {2, -3})}, {Out{V{2, 4}}}});
    add("ScatterElements", {"ScatterElements",
                            {},
                            {randn({3, 3}, 3), ints({1, 3}, {1, 0, 2}), randn({1, 3}, 4)},
                            {Out{V{3, 3}}}});
    add("ScatterElements add, repeated",
        {"ScatterElements",
         {attr("reduction", std::string("add"))},
         {randn({3, 3}, 3), ints({2, 3}, {1, 0, 1, 1, 2, 1}), randn({2, 3}, 4)},
         {Out{V{3, 3}}}});
    add("Scatter-9 axis 1", {"Scatter",
                             {attr("axis", int64_t(1))},
                             {randn({2, 4}, 5), ints({2, 2}, {3, -4, 1, 2}), randn({2, 2}, 6)},
                             {Out{V{2, 4}}}});
    add("Pad constant", {"Pad", {}, {randn({2, 3}, 1), ints({4}, {1, 0, 0, 2})}, {Out{V{3, 5}}}});
    add("Pad reflect", {"Pad",
                        {attr("mode", std::string("reflect"))},
                        {randn({2, 3}, 1), ints({4}, {0, 1, 0, 2})},
                        {Out{V{2, 6}}}});
    add("Pad edge", {"Pad",
                     {attr("mode", std::string("edge"))},
                     {randn({2, 3}, 1), ints({4}, {1, 2, 0, 1})},
                     {Out{V{3, 6}}}});
    add("Pad wrap", {"Pad",
                     {attr("mode", std::string("wrap"))},
                     {randn({2, 3}, 1), ints({4}, {1, 4, 0, 2})},
                     {Out{V{3, 9}}}});
    add("Trilu", {"Trilu", {attr("upper", int64_t(0))}, {randn({3, 3}, 1)}, {Out{V{3, 3}}}});
    add("ScatterND", {"ScatterND",
                      {},
                      {randn({4, 2}, 1), ints({2, 1}, {2, 0}), randn({2, 2}, 2)},
                      {Out{V{4, 2}}}});
    add("Resize nearest", {"Resize",
                           {attr("mode", std::string("nearest")),
                            attr("coordinate_transformation_mode", std::string("asymmetric")),
                            attr("nearest_mode", std::string("floor"))},
                           {randn({1, 1, 2, 3}, 1), std::nullopt, constant({4}, {1, 1, 2, 2})},
                           {Out{V{1, 1, 4, 6}}}});
    add("Resize linear half_pixel",
        {"Resize",
         {attr("mode", std::string("linear"))},
         {randn({1, 2, 3, 4}, 1), std::nullopt, constant({4}, {1, 1, 2, 1.5f})},
         {Out{V{1, 2, 6, 6}}}});
    add("Resize linear align_corners sizes",
        {"Resize",
         {attr("mode", std::string("linear")),
          attr("coordinate_transformation_mode", std::string("align_corners"))},
         {randn({1, 1, 3, 2}, 2), std::nullopt, std::nullopt, ints({4}, {1, 1, 5, 3})},
         {Out{V{1, 1, 5, 3}}}});
    add("Resize linear pytorch_half_pixel down",
        {"Resize",
         {attr("mode", std::string("linear")),
          attr("coordinate_transformation_mode", std::string("pytorch_half_pixel"))},
         {randn({1, 1, 5, 6}, 3), std::nullopt, std::nullopt, ints({4}, {1, 1, 1, 4})},
         {Out{V{1, 1, 1, 4}}}});
    add("Resize linear asymmetric 3-D",
        {"Resize",
         {attr("mode", std::string("linear")),
          attr("coordinate_transformation_mode", std::string("asymmetric"))},
         {randn({1, 1, 2, 2, 3}, 4), std::nullopt, constant({5}, {1, 1, 2, 1, 2})},
         {Out{V{1, 1, 4, 2, 6}}}});
    add("Resize cubic half_pixel up",
        {"Resize",
         {attr("mode", std::string("cubic"))},
         {randn({1, 2, 3, 4}, 6), std::nullopt, constant({4}, {1, 1, 2, 1.5f})},
         {Out{V{1, 2, 6, 6}}}});
    add("Resize cubic align_corners sizes a=-0.5",
        {"Resize",
         {attr("mode", std::string("cubic")), attr("cubic_coeff_a", -0.5),
          attr("coordinate_transformation_mode", std::string("align_corners"))},
         {randn({1, 1, 4, 3}, 7), std::nullopt, std::nullopt, ints({4}, {1, 1, 7, 2})},
         {Out{V{1, 1, 7, 2}}}});
    add("Resize cubic pytorch_half_pixel exclude_outside",
        {"Resize",
         {attr("mode", std::string("cubic")), attr("exclude_outside", int64_t(1)),
          attr("coordinate_transformation_mode", std::string("pytorch_half_pixel"))},
         {randn({1, 1, 5, 4}, 8), std::nullopt, std::nullopt, ints({4}, {1, 1, 3, 6})},
         {Out{V{1, 1, 3, 6}}}});
    add("Resize-18 linear antialias down",
        {"Resize",
         {attr("mode", std::string("linear")), attr("antialias", int64_t(1))},
         {randn({1, 1, 8, 7}, 9), std::nullopt, std::nullopt, ints({4}, {1, 1, 3, 2})},
         {Out{V{1, 1, 3, 2}}}});
    add("Resize-18 cubic antialias down exclude_outside",
        {"Resize",
         {attr("mode", std::string("cubic")), attr("antialias", int64_t(1)),
          attr("cubic_coeff_a", -0.5), attr("exclude_outside", int64_t(1))},
         {randn({1, 2, 9, 5}, 10), std::nullopt, std::nullopt, ints({4}, {1, 2, 4, 3})},
         {Out{V{1, 2, 4, 3}}}});
    add("Upsample-9 linear", {"Upsample",
                              {attr("mode", std::string("linear"))},
                              {randn({1, 2, 2, 3}, 5), constant({4}, {1, 1, 2, 2})},
                              {Out{V{1, 2, 4, 6}}}});
    // matrix products and normalisation
    add("Gemm transB + C", {"Gemm",
                            {attr("transB", int64_t(1)), attr("alpha", 0.7), attr("beta", 1.3)},
                            {randn({2, 3}, 1), randn({4, 3}, 2), randn({4}, 3)},
                            {Out{V{2, 4}}}});
    add("Gemm transA", {"Gemm",
                        {attr("transA", int64_t(1))},
                        {randn({3, 2}, 1), randn({3, 4}, 2)},
                        {Out{V{2, 4}}}});
    add("MatMul batched broadcast",
        {"MatMul", {}, {randn({2, 1, 3, 4}, 1), randn({3, 4, 2}, 2)}, {Out{V{2, 3, 3, 2}}}});
    add("MatMul 1-D", {"MatMul", {}, {randn({4}, 1), randn({2, 4, 3}, 2)}, {Out{V{2, 3}}}});
    add("BatchNormalization train",
        {"BatchNormalization",
         {attr("training_mode", int64_t(1)), attr("epsilon", 1e-5)},
         {randn({2, 3, 2, 2}, 1), randn({3}, 2, 0.5, 1.0), randn({3}, 3), constant({3}, {0, 0, 0}),
          constant({3}, {1, 1, 1})},
         {Out{V{2, 3, 2, 2}}, std::nullopt, std::nullopt, Out{V{3}}, Out{V{3}}}});
    add("LayerNormalization", {"LayerNormalization",
                               {attr("axis", int64_t(-1))},
                               {randn({2, 3, 4}, 1), randn({4}, 2, 0.5, 1.0), randn({4}, 3)},
                               {Out{V{2, 3, 4}}, Out{V{2, 3, 1}}, Out{V{2, 3, 1}}}});
    add("GroupNormalization per channel",
        {"GroupNormalization",
         {attr("num_groups", int64_t(2)), attr("epsilon", 1e-5)},
         {randn({2, 4, 3}, 1), randn({4}, 2, 0.5, 1.0), randn({4}, 3)},
         {Out{V{2, 4, 3}}, Out{V{2, 2}}, Out{V{2, 2}}}});
    add("GroupNormalization-18 per group",
        {"GroupNormalization",
         {attr("num_groups", int64_t(3))},
         {randn({2, 6, 2, 2}, 4), randn({3}, 5, 0.5, 1.0), randn({3}, 6)},
         {Out{V{2, 6, 2, 2}}, Out{V{2, 3}}, Out{V{2, 3}}}});
    add("InstanceNormalization", {"InstanceNormalization",
                                  {attr("epsilon", 1e-3)},
                                  {randn({2, 3, 2, 3}, 7), randn({3}, 8, 0.5, 1.0), randn({3}, 9)},
                                  {Out{V{2, 3, 2, 3}}, Out{V{2, 3}}, Out{V{2, 3}}}});
    add("Softmax",
        {"Softmax", {attr("axis", int64_t(1))}, {randn({2, 4, 2}, 1)}, {Out{V{2, 4, 2}}}});
    add("LogSoftmax",
        {"LogSoftmax", {attr("axis", int64_t(1))}, {randn({2, 4, 2}, 1)}, {Out{V{2, 4, 2}}}});
    add("Variance unbiased, axes 1 2",
        {"Variance",
         {attr("axes", V{1, 2}), attr("keepdims", int64_t(1)), attr("correction", int64_t(1))},
         {randn({2, 3, 4}, 1)},
         {Out{V{2, 1, 1}}}});
    add("Variance biased, axis 0",
        {"Variance",
         {attr("axes", V{0}), attr("keepdims", int64_t(0)), attr("correction", int64_t(0))},
         {randn({3, 5}, 2)},
         {Out{V{5}}}});
    add("WeightNorm axis 0", {"WeightNorm",
                              {attr("axis", int64_t(0))},
                              {randn({3, 2, 2}, 1), randn({3, 1, 1}, 2)},
                              {Out{V{3, 2, 2}}, Out{V{3, 1, 1}}}});
    add("WeightNorm axis 2", {"WeightNorm",
                              {attr("axis", int64_t(2))},
                              {randn({2, 3, 4}, 3), randn({1, 1, 4}, 4)},
                              {Out{V{2, 3, 4}}, Out{V{1, 1, 4}}}});
    add("WeightNorm of everything", {"WeightNorm",
                                     {attr("axis", int64_t(-1))},
                                     {randn({2, 5}, 5), randn({1, 1}, 6)},
                                     {Out{V{2, 5}}, Out{V{1, 1}}}});
    // the fused attention of --attention sdpa (core/ops/attention.h): grouped-query heads, a scale,
    // a learned bias and a causal-style mask; K^T given as the file's MatMul read it, dropout
    add("ScaledDotProductAttention grouped, scale, bias, mask",
        {"ScaledDotProductAttention",
         {attr("k_transposed", int64_t(0)), attr("logit_ops", V{1, 2, 3}),
          attr("logit_values", std::vector<double>{0.5, 0.0, -1e4}), attr("dropout", 0.0)},
         {randn({1, 4, 3, 2}, 1), randn({1, 2, 5, 2}, 2), randn({1, 2, 5, 3}, 3),
          randn({1, 1, 3, 5}, 4, 0.5),
          bools({3, 5}, {true, true, true, false, false, true, true, true, true, false, true, true,
                         true, true, true})},
         {Out{V{1, 4, 3, 3}}, Out{V{1, 4, 3}}}});
    add("ScaledDotProductAttention K transposed, dropout",
        {"ScaledDotProductAttention",
         {attr("k_transposed", int64_t(1)), attr("logit_ops", V{1}),
          attr("logit_values", std::vector<double>{0.7}), attr("dropout", 0.3)},
         {randn({2, 3, 4}, 5), randn({2, 4, 3}, 6), randn({2, 3, 2}, 7)},
         {Out{V{2, 3, 2}}, Out{V{2, 3}}, Out{V{2}, ir::DataType::Int64}}});
    // onnxruntime's [B, S, heads x D] layout (MultiHeadAttention / GroupQueryAttention, ONNX
    // Attention's 3-D form): 4 query heads over 2 K/V heads, a [B, heads, S, S] bias, causal
    add("ScaledDotProductAttention [B, S, heads x D], grouped, bias, causal",
        {"ScaledDotProductAttention",
         {attr("k_transposed", int64_t(0)), attr("logit_ops", V{1, 2, 5}),
          attr("logit_values", std::vector<double>{0.6, 0.0, -1e4}), attr("dropout", 0.0),
          attr("num_heads", int64_t(4)), attr("kv_num_heads", int64_t(2))},
         {randn({2, 3, 8}, 11), randn({2, 3, 4}, 12), randn({2, 3, 6}, 13),
          randn({1, 4, 3, 3}, 14, 0.5)},
         {Out{V{2, 3, 12}}, Out{V{2, 4, 3}}}});
    // MultiHeadAttention's bias input (the projections' biases folded in): the fused op's input 5
    add("ScaledDotProductAttention [B, S, heads x D], Q K V bias",
        {"ScaledDotProductAttention",
         {attr("k_transposed", int64_t(0)), attr("logit_ops", V{1, 5}),
          attr("logit_values", std::vector<double>{0.6, -1e4}), attr("dropout", 0.0),
          attr("num_heads", int64_t(4)), attr("kv_num_heads", int64_t(2))},
         {randn({2, 3, 8}, 31), randn({2, 3, 4}, 32), randn({2, 3, 6}, 33), std::nullopt,
          std::nullopt, randn({18}, 34, 0.5)},
         {Out{V{2, 3, 12}}, Out{V{2, 4, 3}}}});
    // com.microsoft Attention: the Q, K, V projection inside (X W + bias), 2 heads, causal
    add("ScaledDotProductAttention projected, bias, causal",
        {"ScaledDotProductAttention",
         {attr("k_transposed", int64_t(0)), attr("logit_ops", V{1, 5}),
          attr("logit_values", std::vector<double>{0.7, -1e4}), attr("dropout", 0.0),
          attr("num_heads", int64_t(2)), attr("kv_num_heads", int64_t(2)),
          attr("projected", int64_t(1)), attr("qkv_hidden_sizes", V{4, 4, 6})},
         {randn({2, 3, 5}, 21), randn({5, 14}, 22, 0.5), randn({14}, 23, 0.3)},
         {Out{V{2, 3, 6}}, Out{V{2, 2, 3}}, Out{V{2, 3, 14}}}});
    add("SoftmaxCrossEntropyLoss mean", {"SoftmaxCrossEntropyLoss",
                                         {},
                                         {randn({3, 5}, 1), ints({3}, {4, 0, 2})},
                                         {Out{V{}}, Out{V{3, 5}}}});
    add("SoftmaxCrossEntropyLoss none, weights, ignore, [N,C,d]",
        {"SoftmaxCrossEntropyLoss",
         {attr("reduction", std::string("none")), attr("ignore_index", int64_t(1))},
         {randn({2, 4, 3}, 2), ints({2, 3}, {0, 1, 3, 2, 2, 1}),
          constant({4}, {0.5f, 2.f, 1.f, 1.5f})},
         {Out{V{2, 3}}, Out{V{2, 4, 3}}}});
    add("SoftmaxCrossEntropyLoss sum", {"SoftmaxCrossEntropyLoss",
                                        {attr("reduction", std::string("sum"))},
                                        {randn({4, 3}, 3), ints({4}, {2, 2, 0, 1})},
                                        {Out{V{}}, Out{V{4, 3}}}});
    add("NegativeLogLikelihoodLoss mean, weights, ignore",
        {"NegativeLogLikelihoodLoss",
         {attr("ignore_index", int64_t(-100))},
         {randn({4, 3}, 4), ints({4}, {2, -100, 0, 1}), constant({3}, {1.f, 0.25f, 3.f})},
         {Out{V{}}}});
    add("ReduceMean", {"ReduceMean",
                       {attr("axes", V{1}), attr("keepdims", int64_t(0))},
                       {randn({2, 3, 2}, 1)},
                       {Out{V{2, 2}}}});
    add("ReduceSum",
        {"ReduceSum", {}, {randn({2, 3, 2}, 1), ints({2}, {0, 2})}, {Out{V{1, 3, 1}}}});
    add("ReduceMax", {"ReduceMax",
                      {attr("axes", V{1}), attr("keepdims", int64_t(1))},
                      {randn({2, 3, 2}, 4)},
                      {Out{V{2, 1, 2}}, Out{V{2, 1, 2}, ir::DataType::Int64}}});
    add("ReduceMin one axis (opset 18), indices",
        {"ReduceMin",
         {attr("keepdims", int64_t(0))},
         {randn({2, 3, 4}, 7), ints({1}, {-1})},
         {Out{V{2, 3}}, Out{V{2, 3}, ir::DataType::Int64}}});
    add("ReduceMin", {"ReduceMin",
                      {attr("axes", V{0, 2}), attr("keepdims", int64_t(0))},
                      {randn({2, 3, 2}, 5)},
                      {Out{V{3}}}});
    add("ReduceSumSquare", {"ReduceSumSquare",
                            {attr("axes", V{1}), attr("keepdims", int64_t(0))},
                            {randn({2, 3, 2}, 6)},
                            {Out{V{2, 2}}}});
    add("ReduceL2", {"ReduceL2", {}, {randn({2, 3, 2}, 7), ints({1}, {2})}, {Out{V{2, 3, 1}}}});
    add("ReduceLogSumExp", {"ReduceLogSumExp",
                            {attr("axes", V{1}), attr("keepdims", int64_t(0))},
                            {randn({2, 3, 2}, 9)},
                            {Out{V{2, 2}}}});
    add("ReduceL1", {"ReduceL1",
                     {attr("axes", V{0, 1}), attr("keepdims", int64_t(1))},
                     {randn({2, 3, 2}, 8, 1.0, 0, 0.05)},
                     {Out{V{1, 1, 2}}}});
    add("LRN",
        {"LRN",
         {attr("size", int64_t(3)), attr("alpha", 0.5), attr("beta", 0.75), attr("bias", 1.0)},
         {randn({2, 5, 2, 1}, 1)},
         {Out{V{2, 5, 2, 1}}}});
    add("GlobalAveragePool",
        {"GlobalAveragePool", {}, {randn({2, 2, 3, 3}, 1)}, {Out{V{2, 2, 1, 1}}}});
    // windows
    add("Conv groups/stride/pad/dilation",
        {"Conv",
         {attr("group", int64_t(2)), attr("strides", V{2, 1}), attr("pads", V{1, 1, 1, 0}),
          attr("dilations", V{1, 2})},
         {randn({2, 4, 5, 5}, 1), randn({2, 2, 3, 2}, 2), randn({2}, 3)},
         {Out{V{2, 2, 3, 4}}}});
    add("Conv pointwise",
        {"Conv", {}, {randn({2, 3, 2, 2}, 1), randn({4, 3, 1, 1}, 2)}, {Out{V{2, 4, 2, 2}}}});
    add("Conv depthwise SAME",
        {"Conv",
         {attr("group", int64_t(3)), attr("auto_pad", std::string("SAME_UPPER"))},
         {randn({1, 3, 4, 4}, 1), randn({3, 1, 3, 3}, 2)},
         {Out{V{1, 3, 4, 4}}}});
    add("Conv 1-D", {"Conv",
                     {attr("strides", V{2})},
                     {randn({2, 2, 7}, 1), randn({3, 2, 3}, 2), randn({3}, 3)},
                     {Out{V{2, 3, 3}}}});
    add("Conv 3-D groups/stride/pads/dilation",
        {"Conv",
         {attr("group", int64_t(2)), attr("strides", V{2, 1, 1}), attr("pads", V{1, 0, 1, 0, 1, 0}),
          attr("dilations", V{1, 1, 2})},
         {randn({1, 2, 4, 3, 3}, 1), randn({2, 1, 2, 2, 2}, 2), randn({2}, 3)},
         {Out{V{1, 2, 2, 3, 2}}}});
    add("ConvTranspose 2-D groups/stride/pads/output_padding/dilation",
        {"ConvTranspose",
         {attr("group", int64_t(2)), attr("strides", V{2, 1}), attr("pads", V{1, 0, 0, 1}),
          attr("output_padding", V{1, 0}), attr("dilations", V{1, 2})},
         {randn({2, 4, 3, 3}, 1), randn({4, 1, 3, 2}, 2), randn({2}, 3)},
         {Out{V{2, 2, 7, 4}}}});
    add("ConvTranspose 1-D SAME_UPPER",
        {"ConvTranspose",
         {attr("strides", V{2}), attr("auto_pad", std::string("SAME_UPPER"))},
         {randn({1, 2, 4}, 1), randn({2, 3, 3}, 2)},
         {Out{V{1, 3, 8}}}});
    add("ConvTranspose 3-D output_shape",
        {"ConvTranspose",
         {attr("strides", V{2, 1, 1}), attr("output_shape", V{3, 3, 3})},
         {randn({1, 2, 2, 2, 2}, 1), randn({2, 2, 2, 2, 2}, 2), randn({2}, 3)},
         {Out{V{1, 2, 3, 3, 3}}}});
    add("MaxPool",
        {"MaxPool",
         {attr("kernel_shape", V{3, 3}), attr("strides", V{2, 2}), attr("pads", V{1, 1, 1, 1})},
         {randn({1, 2, 5, 5}, 1)},
         {Out{V{1, 2, 3, 3}}, Out{V{1, 2, 3, 3}, ir::DataType::Int64}}});
    add("AveragePool",
        {"AveragePool",
         {attr("kernel_shape", V{2, 2}), attr("strides", V{2, 2}), attr("pads", V{0, 0, 1, 1})},
         {randn({1, 2, 3, 3}, 1)},
         {Out{V{1, 2, 2, 2}}}});
    add("AveragePool count pad", {"AveragePool",
                                  {attr("kernel_shape", V{3, 3}), attr("pads", V{1, 1, 1, 1}),
                                   attr("count_include_pad", int64_t(1))},
                                  {randn({1, 1, 3, 3}, 1)},
                                  {Out{V{1, 1, 3, 3}}}});
    add("MaxPool 1-D", {"MaxPool",
                        {attr("kernel_shape", V{3}), attr("strides", V{2}), attr("pads", V{1, 1})},
                        {randn({2, 2, 7}, 1)},
                        {Out{V{2, 2, 4}}, Out{V{2, 2, 4}, ir::DataType::Int64}}});
    add("MaxPool 3-D", {"MaxPool",
                        {attr("kernel_shape", V{2, 2, 2}), attr("strides", V{1, 2, 2}),
                         attr("pads", V{0, 1, 1, 1, 0, 0})},
                        {randn({1, 2, 3, 4, 4}, 1)},
                        {Out{V{1, 2, 3, 2, 2}}, Out{V{1, 2, 3, 2, 2}, ir::DataType::Int64}}});
    add("AveragePool 1-D", {"AveragePool",
                            {attr("kernel_shape", V{3}), attr("pads", V{0, 2})},
                            {randn({1, 2, 6}, 1)},
                            {Out{V{1, 2, 6}}}});
    add("AveragePool 3-D count pad",
        {"AveragePool",
         {attr("kernel_shape", V{2, 3, 2}), attr("strides", V{1, 1, 2}),
          attr("pads", V{1, 1, 0, 0, 1, 1}), attr("count_include_pad", int64_t(1))},
         {randn({1, 1, 3, 3, 4}, 1)},
         {Out{V{1, 1, 3, 3, 2}}}});
    // recurrent: Y, Y_h (, Y_c), then the saved state the gradient rule appends (core/ops/recurrent.h)
    using Strings = std::vector<std::string>;
    using Floats = std::vector<double>;
    add("LSTM",
        {"LSTM",
         {attr("hidden_size", int64_t(2))},
         {randn({3, 2, 3}, 1), randn({1, 8, 3}, 2, 0.5), randn({1, 8, 2}, 3, 0.5),
          randn({1, 16}, 4, 0.3), std::nullopt, randn({1, 2, 2}, 5, 0.5), randn({1, 2, 2}, 6, 0.5)},
         {Out{V{3, 1, 2, 2}}, Out{V{1, 2, 2}}, Out{V{1, 2, 2}}, Out{V{3, 1, 2, 2}},
          Out{V{3, 1, 2, 2}}, Out{V{3, 1, 2, 8}}, Out{V{3, 1, 2, 2}}}});
    add("LSTM bidirectional peepholes sequence_lens",
        {"LSTM",
         {attr("hidden_size", int64_t(2)), attr("direction", std::string("bidirectional"))},
         {randn({3, 2, 3}, 1), randn({2, 8, 3}, 2, 0.5), randn({2, 8, 2}, 3, 0.5),
          randn({2, 16}, 4, 0.3), ints({2}, {3, 2}), randn({2, 2, 2}, 5, 0.5),
          randn({2, 2, 2}, 6, 0.5), randn({2, 6}, 7, 0.5)},
         {Out{V{3, 2, 2, 2}}, Out{V{2, 2, 2}}, Out{V{2, 2, 2}}, Out{V{3, 2, 2, 2}},
          Out{V{3, 2, 2, 2}}, Out{V{3, 2, 2, 8}}, Out{V{3, 2, 2, 2}}}});
    add("LSTM reverse batch-first input_forget activations clip",
        {"LSTM",
         {attr("hidden_size", int64_t(2)), attr("direction", std::string("reverse")),
          attr("layout", int64_t(1)), attr("input_forget", int64_t(1)), attr("clip", 3.0),
          attr("activations", Strings{"Sigmoid", "ScaledTanh", "Softsign"}),
          attr("activation_alpha", Floats{0.8}), attr("activation_beta", Floats{1.2})},
         {randn({2, 3, 3}, 1), randn({1, 8, 3}, 2, 0.5), randn({1, 8, 2}, 3, 0.5),
          randn({1, 16}, 4, 0.3), std::nullopt, randn({2, 1, 2}, 5, 0.5), std::nullopt},
         {Out{V{2, 3, 1, 2}}, Out{V{2, 1, 2}}, std::nullopt, Out{V{3, 1, 2, 2}}, Out{V{3, 1, 2, 2}},
          Out{V{3, 1, 2, 8}}, Out{V{3, 1, 2, 2}}}});
    add("GRU", {"GRU",
                {attr("hidden_size", int64_t(2))},
                {randn({3, 2, 3}, 1), randn({1, 6, 3}, 2, 0.5), randn({1, 6, 2}, 3, 0.5),
                 randn({1, 12}, 4, 0.3), std::nullopt, randn({1, 2, 2}, 5, 0.5)},
                {Out{V{3, 1, 2, 2}}, Out{V{1, 2, 2}}, Out{V{3, 1, 2, 2}}, Out{V{3, 1, 2, 6}},
                 Out{V{3, 1, 2, 2}}, Out{V{3, 1, 2, 2}}, Out{V{3, 1, 2, 2}}}});
    add("GRU bidirectional linear_before_reset batch-first sequence_lens",
        {"GRU",
         {attr("hidden_size", int64_t(2)), attr("direction", std::string("bidirectional")),
          attr("linear_before_reset", int64_t(1)), attr("layout", int64_t(1))},
         {randn({2, 3, 3}, 1), randn({2, 6, 3}, 2, 0.5), randn({2, 6, 2}, 3, 0.5),
          randn({2, 12}, 4, 0.3), ints({2}, {2, 3}), randn({2, 2, 2}, 5, 0.5)},
         {Out{V{2, 3, 2, 2}}, Out{V{2, 2, 2}}, Out{V{3, 2, 2, 2}}, Out{V{3, 2, 2, 6}},
          Out{V{3, 2, 2, 2}}, Out{V{3, 2, 2, 2}}, Out{V{3, 2, 2, 2}}}});
    add("RNN reverse sequence_lens",
        {"RNN",
         {attr("hidden_size", int64_t(2)), attr("direction", std::string("reverse"))},
         {randn({3, 2, 3}, 1), randn({1, 2, 3}, 2, 0.5), randn({1, 2, 2}, 3, 0.5),
          randn({1, 4}, 4, 0.3), ints({2}, {1, 3}), randn({1, 2, 2}, 5, 0.5)},
         {Out{V{3, 1, 2, 2}}, Out{V{1, 2, 2}}, Out{V{4, 1, 2, 2}}}});
    add("RNN bidirectional Softplus",
        {"RNN",
         {attr("hidden_size", int64_t(2)), attr("direction", std::string("bidirectional")),
          attr("activations", Strings{"Tanh", "Softplus"})},
         {randn({3, 2, 3}, 1), randn({2, 2, 3}, 2, 0.5), randn({2, 2, 2}, 3, 0.5),
          randn({2, 4}, 4, 0.3)},
         {Out{V{3, 2, 2, 2}}, Out{V{2, 2, 2}}, Out{V{4, 2, 2, 2}}}});
    return rows;
}

} // namespace remat::tests
