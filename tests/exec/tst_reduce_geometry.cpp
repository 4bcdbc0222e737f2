// reduceGeometry (core/exec/reduce_geometry.h): ONNX ReduceMean / ReduceSum axis resolution shared
// by the CPU and CUDA backends. Each row states the input and the expected kept / output shape.
#include "core/exec/reduce_geometry.h"

#include <QTest>

using namespace remat::core;
using Shape = std::vector<int64_t>;

Q_DECLARE_METATYPE(Shape)

class TestReduceGeometry : public QObject
{
    Q_OBJECT

private slots:
    void resolvesAxes_data();
    void resolvesAxes();
    void rejectsOutOfRangeAxis();
};

void TestReduceGeometry::resolvesAxes_data()
{
    QTest::addColumn<Shape>("data");
    QTest::addColumn<Shape>("axes");
    QTest::addColumn<bool>("keepDims");
    QTest::addColumn<bool>("noop");
    QTest::addColumn<Shape>("kept");
    QTest::addColumn<Shape>("out");
    QTest::addColumn<qlonglong>("count");
    QTest::addColumn<Shape>("reduced"); // 1 per reduced input axis
    // GlobalAveragePool as ReduceMean over H, W (the ViT head's token mean is axis 1)
    QTest::newRow("spatial keepdims")
        << Shape{2, 3, 4, 5} << Shape{2, 3} << true << false << Shape{2, 3, 1, 1}
        << Shape{2, 3, 1, 1} << 20LL << Shape{0, 0, 1, 1};
    QTest::newRow("spatial dropped")
        << Shape{2, 3, 4, 5} << Shape{2, 3} << false << false << Shape{2, 3, 1, 1} << Shape{2, 3}
        << 20LL << Shape{0, 0, 1, 1};
    QTest::newRow("negative axis") << Shape{2, 16, 64} << Shape{-2} << false << false
                                   << Shape{2, 1, 64} << Shape{2, 64} << 16LL << Shape{0, 1, 0};
    QTest::newRow("repeated axis counted once") << Shape{4, 6} << Shape{1, -1} << true << false
                                                << Shape{4, 1} << Shape{4, 1} << 6LL << Shape{0, 1};
    QTest::newRow("no axes: all") << Shape{4, 6} << Shape{} << false << false << Shape{1, 1}
                                  << Shape{} << 24LL << Shape{1, 1};
    QTest::newRow("no axes, noop") << Shape{4, 6} << Shape{} << false << true << Shape{4, 6}
                                   << Shape{4, 6} << 1LL << Shape{0, 0};
    QTest::newRow("size-1 axis") << Shape{4, 1, 6} << Shape{1} << false << false << Shape{4, 1, 6}
                                 << Shape{4, 6} << 1LL << Shape{0, 1, 0};
    QTest::newRow("scalar, no axes")
        << Shape{} << Shape{} << true << false << Shape{} << Shape{} << 1LL << Shape{};
}

void TestReduceGeometry::resolvesAxes()
{
    QFETCH(Shape, data);
    QFETCH(Shape, axes);
    QFETCH(bool, keepDims);
    QFETCH(bool, noop);
    QFETCH(Shape, kept);
    QFETCH(Shape, out);
    QFETCH(qlonglong, count);
    QFETCH(Shape, reduced);
    auto g = exec::reduceGeometry(data, axes, keepDims, noop);
    QVERIFY2(g, g.status().toString().c_str());
    QCOMPARE(g->keptShape, kept);
    QCOMPARE(g->outShape, out);
    QCOMPARE(qlonglong(g->count), count);
    QCOMPARE(g->reduced.size(), reduced.size());
    for (size_t d = 0; d < reduced.size(); ++d)
        QCOMPARE(bool(g->reduced[d]), reduced[d] != 0);
}

void TestReduceGeometry::rejectsOutOfRangeAxis()
{
    // expected: an InvalidArgument naming the axis, for axis 2 and -3 of a rank-2 input
    for (int64_t bad : {int64_t(2), int64_t(-3)}) {
        auto g = exec::reduceGeometry({4, 6}, {bad}, true, false);
        QVERIFY(!g);
        QCOMPARE(g.status().code(), StatusCode::InvalidArgument);
        QVERIFY(g.status().message().find(std::to_string(bad)) != std::string::npos);
    }
}

QTEST_GUILESS_MAIN(TestReduceGeometry)
#include "tst_reduce_geometry.moc"
