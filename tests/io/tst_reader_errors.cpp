// Readers on inputs that used to throw through their API (std::terminate in `remat`, a crash in
// the GUI): each now returns an error Status whose message names the input and the problem.
// - plans: `9e859` and "version": 1e400 (nlohmann out_of_range 406, number overflow), a string
//   where solver.bound wants a number (type_error from value()), figures.peak_bytes 1e300 (a
//   plain double -> int64 cast, undefined) and compute_steps -1 (wrapped to 2^64-1);
// - node-link: an id of 1e400 and a string id that is not a number (std::stoll);
// - byte counts: "1.2.3GiB", ".", 400 digits (std::stod threw), text after the unit;
// - guardReader itself: bad_alloc -> ResourceExhausted, length_error -> OutOfRange, a
//   std::exception -> ParseError with its what(), anything else -> Internal; all name the origin.
#include "solvers/random_graphs.h"

#include "core/io/node_link.h"
#include "core/io/plan_file.h"
#include "core/schedule/store_all.h"
#include "core/util/bytes.h"
#include "core/util/reader_guard.h"

#include <QTest>

#include <nlohmann/json.hpp>

#include <new>
#include <stdexcept>

using namespace remat::core;

namespace {

remat::tests::RandomGraph graph()
{
    remat::tests::RandomGraphOptions o;
    o.forwardOps = 6;
    o.info.modelPath = "random.onnx";
    o.info.batch = 4;
    return remat::tests::randomTrainingGraph(3, o);
}

bool mentions(const Status &s, const std::string &text)
{
    return s.message().find(text) != std::string::npos;
}

} // namespace

class TstReaderErrors : public QObject
{
    Q_OBJECT
private slots:
    void overflowingNumbersInAPlan_data()
    {
        QTest::addColumn<QByteArray>("text");
        QTest::newRow("9e859") << QByteArray("9e859");
        QTest::newRow("version 1e400")
            << QByteArray(R"({"format": "remat-plan", "version": 1e400})");
        QTest::newRow("deep 1e400")
            << QByteArray(R"({"format": "remat-plan", "schedule": [[1e400]]})");
    }
    void overflowingNumbersInAPlan()
    {
        QFETCH(QByteArray, text);
        const auto rg = graph();
        for (const cost::Costs *costs : {&rg.costs, static_cast<const cost::Costs *>(nullptr)}) {
            auto p = io::parsePlan(text.toStdString(), rg.graph, costs, "big.plan.json");
            QVERIFY(!p);
            QCOMPARE(p.status().code(), StatusCode::ParseError);
            QVERIFY2(mentions(p.status(), "big.plan.json: not valid JSON"),
                     p.status().toString().c_str());
            QVERIFY2(mentions(p.status(), "number overflow"), p.status().toString().c_str());
        }
    }

    void wrongTypesAndRangesInAPlan_data()
    {
        QTest::addColumn<QString>("pointer");
        QTest::addColumn<QString>("value");
        QTest::addColumn<QString>("expected");
        QTest::newRow("bound string") << "/solver/bound"
                                      << R"("high")"
                                      << R"("bound" must be a number)";
        QTest::newRow("note number") << "/solver/note"
                                     << "3"
                                     << R"("note" must be a string)";
        QTest::newRow("peak 1e300") << "/figures/peak_bytes"
                                    << "1e300"
                                    << R"("peak_bytes" must be an integer in range)";
        QTest::newRow("steps -1") << "/figures/compute_steps"
                                  << "-1"
                                  << R"("compute_steps" must be a non-negative integer)";
        QTest::newRow("batch 4.5") << "/model/batch"
                                   << "4.5"
                                   << R"("batch" must be an integer in range)";
    }
    void wrongTypesAndRangesInAPlan()
    {
        QFETCH(QString, pointer);
        QFETCH(QString, value);
        QFETCH(QString, expected);
        const auto rg = graph();
        solvers::Plan plan;
        plan.solver = "store-all";
        plan.schedule = schedule::storeAllSchedule(rg.graph);
        nlohmann::json j =
            nlohmann::json::parse(io::writePlan(plan, rg.graph, io::ModelIdentity::of(rg.graph)));
        j[nlohmann::json::json_pointer(pointer.toStdString())] =
            nlohmann::json::parse(value.toStdString());
        // Without costs: the figures are read from the file (with costs they are re-simulated).
        auto p = io::parsePlan(j.dump(), rg.graph, nullptr, "edited.plan.json");
        QVERIFY(!p);
        QVERIFY2(mentions(p.status(), "edited.plan.json: "), p.status().toString().c_str());
        QVERIFY2(mentions(p.status(), expected.toStdString()), p.status().toString().c_str());
    }

    void invalidUtf8InAPlanIsAnError()
    {
        // The JSON parser refuses ill-formed UTF-8; error messages print values with dump(), which
        // would throw type_error 316 on it, so they replace such bytes instead.
        const auto rg = graph();
        const std::string text =
            "{\"format\": \"remat-plan\", \"version\": 1, \"model\": {\"sha256\": \"\", "
            "\"batch\": 4}, \"solver\": {\"id\": \"x\", \"status\": \"optimal\", "
            "\"objective\": \"min-peak\", \"budget_bytes\": 0}, \"schedule\": [[\"\xff\"]]}";
        auto p = io::parsePlan(text, rg.graph, &rg.costs, "utf8.plan.json");
        QVERIFY(!p);
        QVERIFY2(mentions(p.status(), "utf8.plan.json: "), p.status().toString().c_str());
    }

    void nodeLinkNumbers()
    {
        auto big = io::parseNodeLinkGraph(
            R"({"nodes": [{"id": 1e400, "cost_ram": 1, "cost_cpu": 1}]})", "big.json");
        QVERIFY(!big);
        QVERIFY2(mentions(big.status(), "big.json: "), big.status().toString().c_str());
        auto text = io::parseNodeLinkGraph(
            R"({"nodes": [{"id": "one", "cost_ram": 1, "cost_cpu": 1}]})", "text.json");
        QVERIFY(!text);
        QVERIFY2(mentions(text.status(), "text.json: "), text.status().toString().c_str());
    }

    void byteCounts_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<int>("code");
        QTest::newRow("two dots") << "1.2.3GiB" << int(StatusCode::InvalidArgument);
        QTest::newRow("a dot") << "." << int(StatusCode::InvalidArgument);
        QTest::newRow("dot unit") << ".GiB" << int(StatusCode::InvalidArgument);
        QTest::newRow("400 digits") << QString(400, '9') << int(StatusCode::OutOfRange);
        QTest::newRow("text after the unit") << "6 GiB please" << int(StatusCode::InvalidArgument);
        QTest::newRow("exabytes") << "9 EB" << int(StatusCode::InvalidArgument);
        QTest::newRow("PiB") << "1PiB" << int(StatusCode::Ok);
        QTest::newRow("trailing space") << " 6GiB  " << int(StatusCode::Ok);
    }
    void byteCounts()
    {
        QFETCH(QString, text);
        QFETCH(int, code);
        auto b = parseBytes(text.toStdString());
        QCOMPARE(int(b.status().code()), code);
        if (!b)
            QVERIFY2(mentions(b.status(), text.toStdString()), b.status().toString().c_str());
    }

    void formattedBytesReadBack()
    {
        for (int64_t v :
             {int64_t(0), int64_t(1023), int64_t(3) << 30, int64_t(5) << 50, int64_t(7.5e18)}) {
            auto back = parseBytes(formatBytes(v));
            QVERIFY2(back.hasValue(), (formatBytes(v) + ": " + back.status().toString()).c_str());
            QVERIFY(std::abs(double(*back) - double(v)) <= 0.005 * double(v) + 1);
        }
    }

    void guardTurnsExceptionsIntoStatus()
    {
        auto oom = guardReader("a.bin", []() -> Expected<int> { throw std::bad_alloc(); });
        QCOMPARE(oom.status().code(), StatusCode::ResourceExhausted);
        QVERIFY(mentions(oom.status(), "a.bin: "));
        auto huge =
            guardReader("b.bin", []() -> Status { throw std::length_error("vector::reserve"); });
        QCOMPARE(huge.code(), StatusCode::OutOfRange);
        QVERIFY(mentions(huge, "b.bin: ") && mentions(huge, "vector::reserve"));
        auto json = guardReader("c.json", []() -> Expected<int> {
            return nlohmann::json::parse("[1e400]").at(0).get<int>();
        });
        QCOMPARE(json.status().code(), StatusCode::ParseError);
        QVERIFY2(mentions(json.status(), "c.json: ") && mentions(json.status(), "number overflow"),
                 json.status().toString().c_str());
        auto other = guardReader("d", []() -> Status { throw 42; });
        QCOMPARE(other.code(), StatusCode::Internal);
        QVERIFY(mentions(other, "d: "));
        auto fine = guardReader("e", []() -> Expected<int> { return 7; });
        QCOMPARE(*fine, 7);
    }
};

QTEST_GUILESS_MAIN(TstReaderErrors)
#include "tst_reader_errors.moc"
