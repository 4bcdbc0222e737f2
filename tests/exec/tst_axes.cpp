// Axis arithmetic shared by the CPU and CUDA backends (core/exec/axes.h). Expected:
// - normalizeAxis: -1 of rank 3 is 2, 3 and -4 are out of range, a scalar takes 0 (not -1);
// - gatherGeometry of a [2, 3, 4] tensor: axis 1 -> 2 x 3 x 4, axis -1 -> 6 x 4 x 1, axis 0 ->
//   1 x 2 x 12; axis 3 and a scalar are errors naming the axis.
#include "core/exec/axes.h"

#include <QTest>

using namespace remat::core::exec;

class TestAxes : public QObject
{
    Q_OBJECT
private slots:
    void normalizesNegativeAxes()
    {
        int64_t a = -1;
        QVERIFY(normalizeAxis(a, 3));
        QCOMPARE(a, int64_t(2));
        a = 3;
        QVERIFY(!normalizeAxis(a, 3));
        a = -4;
        QVERIFY(!normalizeAxis(a, 3));
        a = 0;
        QVERIFY(normalizeAxis(a, 0));
        a = -1;
        QVERIFY(!normalizeAxis(a, 0)); // -1 + 0 stays negative
    }

    void gatherSplitsTheShape_data()
    {
        QTest::addColumn<qint64>("axis");
        QTest::addColumn<qint64>("outer");
        QTest::addColumn<qint64>("dim");
        QTest::addColumn<qint64>("inner");
        QTest::newRow("axis 1") << qint64(1) << qint64(2) << qint64(3) << qint64(4);
        QTest::newRow("axis -1") << qint64(-1) << qint64(6) << qint64(4) << qint64(1);
        QTest::newRow("axis 0") << qint64(0) << qint64(1) << qint64(2) << qint64(12);
    }

    void gatherSplitsTheShape()
    {
        QFETCH(qint64, axis);
        auto g = gatherGeometry(axis, {2, 3, 4});
        QVERIFY(g.hasValue());
        QTEST(qint64(g->outer), "outer");
        QTEST(qint64(g->dim), "dim");
        QTEST(qint64(g->inner), "inner");
    }

    void gatherRejectsBadAxes()
    {
        auto g = gatherGeometry(3, {2, 3, 4});
        QVERIFY(!g.hasValue());
        QVERIFY(g.status().message().find("axis") != std::string::npos);
        QVERIFY(!gatherGeometry(0, {}).hasValue());
    }
};

QTEST_GUILESS_MAIN(TestAxes)
#include "tst_axes.moc"
