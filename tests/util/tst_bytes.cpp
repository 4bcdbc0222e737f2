// Byte parsing and formatting: the units users type into --budget and the budget field.
#include "core/util/bytes.h"

#include <QTest>

using namespace remat::core;

class TestBytes : public QObject
{
    Q_OBJECT
private slots:
    void parsesUnits_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<qint64>("expected");
        QTest::newRow("plain") << "1234" << qint64(1234);
        QTest::newRow("GiB") << "6GiB" << qint64(6LL << 30);
        QTest::newRow("space MiB") << "512 MiB" << qint64(512LL << 20);
        QTest::newRow("decimal GB") << "1.5GB" << qint64(1500000000LL);
        QTest::newRow("KiB") << "64KiB" << qint64(65536);
        QTest::newRow("fraction GiB") << "0.5GiB" << qint64(1LL << 29);
    }
    void parsesUnits()
    {
        QFETCH(QString, text);
        QFETCH(qint64, expected);
        auto v = parseBytes(text.toStdString());
        QVERIFY2(v.hasValue(), v.status().toString().c_str());
        QCOMPARE(qint64(*v), expected);
    }
    void rejectsGarbage()
    {
        auto bad = parseBytes("lots");
        QVERIFY(!bad);
        QCOMPARE(bad.status().code(), StatusCode::InvalidArgument);
        auto unit = parseBytes("5 parsecs");
        QVERIFY(!unit);
        QVERIFY(unit.status().message().find("parsecs") != std::string::npos);
        QVERIFY(!parseBytes("1e30GiB"));
    }
    void formats()
    {
        QCOMPARE(QString::fromStdString(formatBytes(512)), QString("512 B"));
        QCOMPARE(QString::fromStdString(formatBytes(3LL << 30)), QString("3.00 GiB"));
        QCOMPARE(QString::fromStdString(formatBytes(1536)), QString("1.50 KiB"));
    }
    // Axes pick the unit formatBytes would print for their largest value.
    void unitsByMagnitude()
    {
        QCOMPARE(QString(byteUnitFor(512).name), QString("B"));
        QCOMPARE(QString(byteUnitFor(1024).name), QString("KiB"));
        QCOMPARE(QString(byteUnitFor(500LL << 10).name), QString("KiB"));
        QCOMPARE(QString(byteUnitFor(3LL << 20).name), QString("MiB"));
        QCOMPARE(byteUnitFor(3LL << 20).bytes, double(1 << 20));
        QCOMPARE(QString(byteUnitFor(3LL << 30).name), QString("GiB"));
        QCOMPARE(QString(byteUnitFor(5LL << 40).name), QString("TiB"));
        for (int64_t b : {int64_t(1536), int64_t(7) << 20, int64_t(9) << 30})
            QVERIFY(QString::fromStdString(formatBytes(b)).endsWith(byteUnitFor(b).name));
    }
    void overflowChecks()
    {
        int64_t out = 0;
        QVERIFY(mulOverflows(int64_t(1) << 40, int64_t(1) << 40, &out));
        QVERIFY(!mulOverflows(1000, 1000, &out));
        QCOMPARE(out, int64_t(1000000));
    }
};

QTEST_GUILESS_MAIN(TestBytes)
#include "tst_bytes.moc"
