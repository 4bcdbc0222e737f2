// Shape functions of the op table on one-node graphs, in each opset form ONNX allows: the
// expected output dtype and shape are written beside each input. Gradient-rule refusals of bad
// attributes name the problem.
#include "core/onnx/shape_inference.h"
#include "core/ops/op_def.h"

#include <QtTest>

using namespace remat::core;
using ir::DataType;
using ir::Shape;

namespace {

/// One node over given inputs (shape, dtype, optional int64 constant data) and one output.
struct OneNode
{
    std::vector<ir::Value> values;
    ir::Node node;
    std::vector<std::vector<int64_t>> data; // per input; empty: no data

    void input(std::vector<int64_t> shape, DataType dtype = DataType::Float,
               std::vector<int64_t> ints = {})
    {
        ir::Value v;
        v.id = ValueId(values.size());
        v.name = "in" + std::to_string(values.size());
        v.kind = ints.empty() ? ir::ValueKind::Input : ir::ValueKind::Constant;
        v.dtype = dtype;
        v.shape = Shape::fromStatic(shape);
        values.push_back(v);
        data.push_back(std::move(ints));
        node.inputs.push_back(v.id);
    }

    /// The inferred output (dtype, shape) at `opset`, or the error.
    Expected<onnx::InferredValue> infer(const std::string &op, int64_t opset = 17)
    {
        REMAT_ASSIGN_OR_RETURN(auto outs, inferAll(op, opset, 1));
        return outs[0];
    }

    /// The node with `outputs` outputs: each inferred output, or the error.
    Expected<std::vector<onnx::InferredValue>> inferAll(const std::string &op, int64_t opset,
                                                        size_t outputs)
    {
        std::vector<ir::Value> all = values;
        node.outputs.clear();
        for (size_t k = 0; k < outputs; ++k) {
            ir::Value out;
            out.id = ValueId(all.size());
            out.name = "out" + std::to_string(k);
            out.shape = Shape::unknownRank();
            node.outputs.push_back(out.id);
            all.push_back(out);
        }
        node.id = NodeId(0);
        node.name = "n";
        node.opType = op;
        std::vector<ValueId> inputs;
        for (const ir::Value &v : values)
            if (v.kind == ir::ValueKind::Input)
                inputs.push_back(v.id);
        ir::ModelInfo info;
        info.opsetVersion = opset;
        REMAT_ASSIGN_OR_RETURN(ir::Graph g,
                               ir::Graph::build(info, {node}, all, inputs, node.outputs));
        std::vector<onnx::InferredValue> vals(g.valueCount());
        for (size_t i = 0; i < values.size(); ++i) {
            vals[i].dtype = values[i].dtype;
            vals[i].shape = values[i].shape;
            if (!data[i].empty()) {
                auto c = std::make_shared<ops::ConstTensor>();
                c->dtype = values[i].dtype;
                c->dims = values[i].shape.sizes();
                c->ints = data[i];
                vals[i].constant = c;
            }
        }
        REMAT_RETURN_IF_ERROR(onnx::inferShapes(g, opset, vals));
        std::vector<onnx::InferredValue> outs;
        for (ValueId o : node.outputs)
            outs.push_back(vals[o.index()]);
        return outs;
    }
};

ir::Attribute intAttr(const char *name, int64_t v) { return {name, v}; }

} // namespace

class TstOpShapes : public QObject
{
    Q_OBJECT

private slots:
    void groupAndInstanceNormKeepTheInput()
    {
        // GroupNormalization-18 (scale per group) and -21 (per channel) and InstanceNormalization:
        // the output is the input's shape and dtype.
        OneNode gn;
        gn.input({2, 6, 4, 4});
        gn.input({3});
        gn.input({3});
        gn.node.attributes = {intAttr("num_groups", 3)};
        auto y = gn.infer("GroupNormalization", 18);
        QVERIFY2(y, y.status().message().c_str());
        QCOMPARE(y->shape, Shape::fromStatic({2, 6, 4, 4}));
        QCOMPARE(y->dtype, DataType::Float);
        // Before opset 18 there is no GroupNormalization: left for ONNX's own inference.
        QVERIFY(!ops::findOp("GroupNormalization", 17));
        OneNode in;
        in.input({2, 3, 5});
        in.input({3});
        in.input({3});
        y = in.infer("InstanceNormalization", 9);
        QVERIFY2(y, y.status().message().c_str());
        QCOMPARE(y->shape, Shape::fromStatic({2, 3, 5}));
    }

    void tileMultipliesEachDim()
    {
        // [2, 3] tiled by repeats [2, 1] (an input since opset 6): [4, 3].
        OneNode t;
        t.input({2, 3});
        t.input({2}, DataType::Int64, {2, 1});
        auto y = t.infer("Tile");
        QVERIFY2(y, y.status().message().c_str());
        QCOMPARE(y->shape, Shape::fromStatic({4, 3}));
        // repeats of the wrong length: the node and the problem
        OneNode bad;
        bad.input({2, 3});
        bad.input({3}, DataType::Int64, {1, 2, 3});
        auto e = bad.infer("Tile");
        QVERIFY(!e);
        QVERIFY2(e.status().message().find("repeats") != std::string::npos,
                 e.status().message().c_str());
    }

    void oneHotInsertsTheDepth()
    {
        // F.one_hot of int64 [2, 3] with depth 10 and int64 values: int64 [2, 3, 10] (axis -1);
        // axis 0 puts the depth first; depth 0 and an axis past the rank are refused by name.
        OneNode c;
        c.input({2, 3}, DataType::Int64);
        c.input({}, DataType::Int64, {10});
        c.input({2}, DataType::Int64, {0, 1});
        auto y = c.infer("OneHot", 11);
        QVERIFY2(y, y.status().message().c_str());
        QCOMPARE(y->shape, Shape::fromStatic({2, 3, 10}));
        QCOMPARE(y->dtype, DataType::Int64);
        c.node.attributes = {intAttr("axis", 0)};
        y = c.infer("OneHot", 11);
        QVERIFY2(y, y.status().message().c_str());
        QCOMPARE(y->shape, Shape::fromStatic({10, 2, 3}));
        c.node.attributes = {intAttr("axis", 3)};
        auto far = c.infer("OneHot", 11);
        QVERIFY(!far);
        QVERIFY2(far.status().message().find("axis 3 is out of range") != std::string::npos,
                 far.status().message().c_str());
        OneNode none;
        none.input({2}, DataType::Int64);
        none.input({}, DataType::Int64, {0});
        none.input({2}, DataType::Float);
        auto empty = none.infer("OneHot", 11);
        QVERIFY(!empty);
        QVERIFY2(empty.status().message().find("depth must be at least 1") != std::string::npos,
                 empty.status().message().c_str());
    }

    void cumSumKeepsShapeAndDtype()
    {
        // CumSum of int64 [2, 5] along axis 1 (opset 11's axis input): int64 [2, 5].
        OneNode c;
        c.input({2, 5}, DataType::Int64);
        c.input({}, DataType::Int64, {1});
        c.node.attributes = {intAttr("exclusive", 1), intAttr("reverse", 1)};
        auto y = c.infer("CumSum", 11);
        QVERIFY2(y, y.status().message().c_str());
        QCOMPARE(y->shape, Shape::fromStatic({2, 5}));
        QCOMPARE(y->dtype, DataType::Int64);
    }

    void topKCutsTheAxisToK()
    {
        // TopK of float [2, 7, 3] with K = 4 along axis 1: float [2, 4, 3] and int64 [2, 4, 3];
        // K larger than the axis is refused naming both; an unknown K leaves the axis unknown.
        OneNode c;
        c.input({2, 7, 3}, DataType::Float);
        c.input({1}, DataType::Int64, {4});
        c.node.attributes = {intAttr("axis", 1)};
        auto y = c.infer("TopK", 11);
        QVERIFY2(y, y.status().message().c_str());
        QCOMPARE(y->shape, Shape::fromStatic({2, 4, 3}));
        QCOMPARE(y->dtype, DataType::Float);
        OneNode big;
        big.input({2, 7, 3}, DataType::Float);
        big.input({1}, DataType::Int64, {9});
        big.node.attributes = {intAttr("axis", -2)};
        auto refused = big.infer("TopK", 11);
        QVERIFY(!refused);
        QVERIFY2(refused.status().message().find("K (9) is larger than the axis (7)") !=
                     std::string::npos,
                 refused.status().message().c_str());
    }

    void einsumTakesItsLettersSizes()
    {
        // bhid,bhjd->bhij of [2,3,5,8] and [2,3,7,8]: [2,3,5,7]; implicit output of "ij,jk":
        // "ik"; a diagonal is refused by name; mismatched sizes too.
        auto infer = [](std::vector<std::vector<int64_t>> shapes, const std::string &eq) {
            OneNode c;
            for (auto &s : shapes)
                c.input(s);
            c.node.attributes = {ir::Attribute{"equation", eq}};
            return c.infer("Einsum", 13);
        };
        auto y = infer({{2, 3, 5, 8}, {2, 3, 7, 8}}, "bhid,bhjd->bhij");
        QVERIFY2(y, y.status().message().c_str());
        QCOMPARE(y->shape, Shape::fromStatic({2, 3, 5, 7}));
        y = infer({{4, 5}, {5, 6}}, "ij,jk");
        QVERIFY2(y, y.status().message().c_str());
        QCOMPARE(y->shape, Shape::fromStatic({4, 6}));
        y = infer({{2, 9, 4, 5}, {5, 6}}, "...ij,jk->...ik");
        QVERIFY2(y, y.status().message().c_str());
        QCOMPARE(y->shape, Shape::fromStatic({2, 9, 4, 6}));
        auto diag = infer({{3, 3}}, "ii->i");
        QVERIFY(!diag);
        QVERIFY2(diag.status().message().find("repeats within one operand") != std::string::npos,
                 diag.status().message().c_str());
        auto bad = infer({{3, 4}, {5, 2}}, "ij,jk->ik");
        QVERIFY(!bad);
        QVERIFY2(bad.status().message().find("'j' has sizes 4 and 5") != std::string::npos,
                 bad.status().message().c_str());
    }

    void argMaxIsInt64WithoutTheAxis()
    {
        OneNode c;
        c.input({2, 7, 3}, DataType::Float);
        c.node.attributes = {intAttr("axis", 1), intAttr("keepdims", 0)};
        auto y = c.infer("ArgMax", 13);
        QVERIFY2(y, y.status().message().c_str());
        QCOMPARE(y->shape, Shape::fromStatic({2, 3}));
        QCOMPARE(y->dtype, DataType::Int64);
    }

    void gatherElementsTakesTheIndicesShape()
    {
        // GatherElements of float [3, 4] by int64 indices [2, 4]: float [2, 4].
        OneNode g;
        g.input({3, 4});
        g.input({2, 4}, DataType::Int64);
        auto y = g.infer("GatherElements", 13);
        QVERIFY2(y, y.status().message().c_str());
        QCOMPARE(y->shape, Shape::fromStatic({2, 4}));
        QCOMPARE(y->dtype, DataType::Float);
        // ScatterElements (11+) and its opset-9 name Scatter keep the data's shape.
        for (const char *op : {"ScatterElements", "Scatter"}) {
            OneNode s;
            s.input({3, 3});
            s.input({1, 3}, DataType::Int64);
            s.input({1, 3});
            y = s.infer(op, std::string(op) == "Scatter" ? 9 : 16);
            QVERIFY2(y, y.status().message().c_str());
            QCOMPARE(y->shape, Shape::fromStatic({3, 3}));
        }
    }

    void generatorsKeepTheInputsShape()
    {
        // EyeLike (torch.eye, torch.diagonal), RandomNormalLike / RandomUniformLike (randn_like):
        // the input's shape; the dtype attribute, else the input's type.
        for (const char *op : {"EyeLike", "RandomNormalLike", "RandomUniformLike"}) {
            OneNode g;
            g.input({4, 6}, DataType::Int64);
            g.node.attributes = {{"dtype", int64_t(DataType::Float)}};
            auto y = g.infer(op, 17);
            QVERIFY2(y, y.status().message().c_str());
            QCOMPARE(y->shape, Shape::fromStatic({4, 6}));
            QCOMPARE(y->dtype, DataType::Float);
            OneNode h;
            h.input({3, 3});
            y = h.infer(op, 17);
            QVERIFY2(y, y.status().message().c_str());
            QCOMPARE(y->dtype, DataType::Float);
        }
    }

    void padWrapPadsLikeEveryMode()
    {
        // Pad-19 mode wrap, pads [1, 4, 0, 2] on [2, 3]: [3, 9] (wider than the input is fine).
        OneNode p;
        p.input({2, 3});
        p.input({4}, DataType::Int64, {1, 4, 0, 2});
        p.node.attributes = {{"mode", std::string("wrap")}};
        auto y = p.infer("Pad", 19);
        QVERIFY2(y, y.status().message().c_str());
        QCOMPARE(y->shape, Shape::fromStatic({3, 9}));
    }

    void splitOfAConstantKeepsTheData()
    {
        // tf2onnx (M-LSD) builds Pad's pads as Concat(Split(const [0 0 0 0 0 1 1 0])): each
        // piece must stay a constant. Split-11 split [3, 1, 4] -> [0 0 0], [0], [0 1 1 0];
        // Split-13 takes the sizes as an input.
        for (int64_t opset : {11, 13}) {
            OneNode p;
            p.input({8}, DataType::Int64, {0, 0, 0, 0, 0, 1, 1, 0});
            if (opset >= 13)
                p.input({3}, DataType::Int64, {3, 1, 4});
            else
                p.node.attributes = {{"split", std::vector<int64_t>{3, 1, 4}}};
            auto y = p.inferAll("Split", opset, 3);
            QVERIFY2(y, y.status().message().c_str());
            const std::vector<std::vector<int64_t>> expected = {{0, 0, 0}, {0}, {0, 1, 1, 0}};
            for (size_t k = 0; k < 3; ++k) {
                QCOMPARE((*y)[k].shape, Shape::fromStatic({int64_t(expected[k].size())}));
                QVERIFY((*y)[k].constant);
                QCOMPARE((*y)[k].constant->ints, expected[k]);
            }
        }
        // A 2-D constant split on axis 1: [[1 2 3] [4 5 6]] -> [[1] [4]], [[2 3] [5 6]].
        OneNode q;
        q.input({2, 3}, DataType::Int64, {1, 2, 3, 4, 5, 6});
        q.node.attributes = {{"axis", int64_t(1)}, {"split", std::vector<int64_t>{1, 2}}};
        auto z = q.inferAll("Split", 11, 2);
        QVERIFY2(z, z.status().message().c_str());
        QVERIFY((*z)[0].constant && (*z)[1].constant);
        QCOMPARE((*z)[0].constant->ints, (std::vector<int64_t>{1, 4}));
        QCOMPARE((*z)[1].constant->ints, (std::vector<int64_t>{2, 3, 5, 6}));
    }

    void groupNormRuleRefusesBadGroups()
    {
        // 6 channels in 4 groups, and a scale of 5 values: each refusal names the problem.
        for (auto [groups, scale, expected] :
             {std::tuple<int64_t, int64_t, const char *>{4, 4, "does not divide"},
              {3, 5, "one per channel (6)"}}) {
            std::vector<ir::Value> values(4);
            const char *names[] = {"x", "s", "b", "y"};
            const std::vector<int64_t> shapes[] = {{2, 6, 3}, {scale}, {scale}, {2, 6, 3}};
            for (size_t i = 0; i < 4; ++i) {
                values[i].id = ValueId(i);
                values[i].name = names[i];
                values[i].kind = i == 0  ? ir::ValueKind::Input
                                 : i < 3 ? ir::ValueKind::Parameter
                                         : ir::ValueKind::Intermediate;
                values[i].shape = Shape::fromStatic(shapes[i]);
            }
            ir::Node n;
            n.id = NodeId(0);
            n.opType = "GroupNormalization";
            n.inputs = {ValueId(0), ValueId(1), ValueId(2)};
            n.outputs = {ValueId(3)};
            n.attributes = {intAttr("num_groups", groups)};
            ir::ModelInfo info;
            info.opsetVersion = 21;
            auto g = ir::Graph::build(info, {n}, values, {ValueId(0), ValueId(1), ValueId(2)},
                                      {ValueId(3)});
            QVERIFY2(g, g.status().message().c_str());
            ops::RuleContext c;
            c.graph = &*g;
            c.node = &g->node(NodeId(0));
            c.inputNeedsGrad = {true, true, true};
            c.outputHasGrad = {true};
            auto spec = ops::findOp("GroupNormalization")->derive(c);
            QVERIFY(!spec);
            QVERIFY2(spec.status().message().find(expected) != std::string::npos,
                     spec.status().message().c_str());
        }
    }
};

QTEST_GUILESS_MAIN(TstOpShapes)
#include "tst_op_shapes.moc"
