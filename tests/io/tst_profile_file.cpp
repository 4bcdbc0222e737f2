// Profile files (docs/profile-format.md): what writeProfile writes, parseProfile reads back
// unchanged; the older {"op": seconds} form reads as ops without sizes; every malformed input is a
// ParseError naming the input and the field:
// - round trip: identity, backend, device, iterations, step and overhead seconds, every op's
//   name/type/phase/family/flops/bytes/seconds/samples and recompute figures; a legacy-sized op
//   (no flops/bytes) stays unsized;
// - legacy flat and wrapped forms (bandwidths kept);
// - errors: not JSON, an array, another format, version 2, "ops" not an array, an op without
//   "seconds", a negative time, 1e400 (overflows), an op timed twice, a bad phase, batch 1.5,
//   and a missing file (NotFound, naming the command that writes one).
#include "core/io/profile_file.h"

#include <QTemporaryDir>
#include <QtTest>

using namespace remat::core;

class TstProfileFile : public QObject
{
    Q_OBJECT

private:
    static cost::Profile sample()
    {
        cost::Profile p;
        p.modelPath = "m.onnx";
        p.modelSha256 = "00ff";
        p.batch = 4;
        p.backend = "cpu";
        p.device = "CPU reference";
        p.schedule = "chen-sqrtn";
        p.iterations = 5;
        p.warmupIterations = 1;
        p.stepSeconds = 0.25;
        p.overheadSeconds = 0.001;
        p.computeSeconds = 0.249;
        cost::ProfiledOp a;
        a.name = "/conv/Conv";
        a.type = "Conv";
        a.phase = "forward";
        a.family = "Convolution";
        a.flops = 1.5e9;
        a.bytes = 123456;
        a.seconds = 0.0123;
        a.samples = 5;
        a.recomputeSeconds = 0.011;
        a.recomputeSamples = 10;
        cost::ProfiledOp b;
        b.name = "/conv/Conv/grad";
        b.type = "ConvGrad";
        b.phase = "backward";
        b.seconds = 0.02;
        b.samples = 5;
        p.ops = {a, b};
        return p;
    }

    void expectError(const std::string &text, const QString &needle)
    {
        auto p = io::parseProfile(text, "bad.json");
        QVERIFY2(!p.hasValue(), text.c_str());
        const QString m = QString::fromStdString(p.status().message());
        QVERIFY2(m.startsWith("bad.json") && m.contains(needle),
                 qPrintable(m + " / expected: " + needle));
    }

private slots:
    void roundTrip()
    {
        const cost::Profile p = sample();
        auto r = io::parseProfile(io::writeProfile(p));
        QVERIFY2(r.hasValue(), r.hasValue() ? "" : r.status().toString().c_str());
        QCOMPARE(r->modelPath, p.modelPath);
        QCOMPARE(r->modelSha256, p.modelSha256);
        QCOMPARE(r->batch, p.batch);
        QCOMPARE(r->backend, p.backend);
        QCOMPARE(r->device, p.device);
        QCOMPARE(r->schedule, p.schedule);
        QCOMPARE(r->iterations, 5);
        QCOMPARE(r->warmupIterations, 1);
        QCOMPARE(r->stepSeconds, 0.25);
        QCOMPARE(r->overheadSeconds, 0.001);
        QCOMPARE(r->computeSeconds, 0.249);
        QCOMPARE(r->ops.size(), size_t(2));
        const cost::ProfiledOp &a = r->ops[0], &b = r->ops[1];
        QCOMPARE(a.name, std::string("/conv/Conv"));
        QCOMPARE(a.type, std::string("Conv"));
        QCOMPARE(a.phase, std::string("forward"));
        QCOMPARE(a.family, std::string("Convolution"));
        QCOMPARE(a.flops, 1.5e9);
        QCOMPARE(a.bytes, 123456.0);
        QCOMPARE(a.seconds, 0.0123);
        QCOMPARE(a.samples, 5);
        QCOMPARE(a.recomputeSeconds, 0.011);
        QCOMPARE(a.recomputeSamples, 10);
        QCOMPARE(b.flops, -1.0); // unsized stays unsized
        QCOMPARE(b.bytes, -1.0);
        QCOMPARE(b.recomputeSamples, 0);
        QVERIFY(!a.hasSecondPoint());
        QCOMPARE(r->secondBatch, int64_t(0));

        // The second point per op (run --profile-out's other batch) and its batch.
        cost::Profile two = p;
        two.secondBatch = 1;
        two.ops[0].secondFlops = 0.75e9;
        two.ops[0].secondBytes = 61728;
        two.ops[0].secondSeconds = 0.007;
        auto r2 = io::parseProfile(io::writeProfile(two));
        QVERIFY(r2.hasValue());
        QCOMPARE(r2->secondBatch, int64_t(1));
        QVERIFY(r2->ops[0].hasSecondPoint());
        QCOMPARE(r2->ops[0].secondFlops, 0.75e9);
        QCOMPARE(r2->ops[0].secondBytes, 61728.0);
        QCOMPARE(r2->ops[0].secondSeconds, 0.007);
        QVERIFY(!r2->ops[1].hasSecondPoint());
        QCOMPARE(io::writeProfile(*r2), io::writeProfile(two));

        QTemporaryDir dir;
        const std::string path = dir.filePath("p.json").toStdString();
        QVERIFY(io::saveProfile(path, p).isOk());
        auto f = io::readProfile(path);
        QVERIFY(f.hasValue());
        QCOMPARE(io::writeProfile(*f), io::writeProfile(p));
    }

    void legacyForms()
    {
        auto flat = io::parseProfile(R"({"f1": 0.5, "f2": 0.25})");
        QVERIFY(flat.hasValue());
        QCOMPARE(flat->ops.size(), size_t(2));
        QCOMPARE(flat->ops[0].flops, -1.0);
        QVERIFY(flat->modelSha256.empty());
        auto wrapped = io::parseProfile(R"({"ops": {"f1": 0.5}, "host_to_device_bandwidth": 1e9})");
        QVERIFY(wrapped.hasValue());
        QCOMPARE(wrapped->ops[0].seconds, 0.5);
        QCOMPARE(wrapped->hostToDeviceBandwidth, 1e9);
    }

    void errors()
    {
        expectError("{", "not valid JSON");
        expectError("[1, 2]", "JSON object");
        expectError(R"({"format": "remat-plan", "version": 1})", "not \"remat-profile\"");
        expectError(R"({"format": "remat-profile", "version": 2, "ops": []})",
                    "version 2 is not supported");
        expectError(R"({"format": "remat-profile", "version": 1, "ops": {}})",
                    "\"ops\" must be an array");
        expectError(R"({"format": "remat-profile", "version": 1, "ops": [{"name": "a"}]})",
                    "missing \"seconds\"");
        expectError(
            R"({"format": "remat-profile", "version": 1, "ops": [{"name": "a", "seconds": -1}]})",
            "\"seconds\" must be a finite number");
        expectError(
            R"({"format": "remat-profile", "version": 1, "ops": [{"name": "a", "seconds": 1e400}]})",
            "");
        expectError(
            R"({"format": "remat-profile", "version": 1, "ops": [{"name": "a", "seconds": 1},
                       {"name": "a", "seconds": 2}]})",
            "op 'a' is timed twice");
        expectError(
            R"({"format": "remat-profile", "version": 1, "ops": [{"name": "a", "seconds": 1, "phase": "x"}]})",
            "\"phase\" must be");
        expectError(
            R"({"format": "remat-profile", "version": 1, "model": {"batch": 1.5}, "ops": []})",
            "\"batch\" must be an integer");
        expectError(
            R"({"format": "remat-profile", "version": 1, "ops": [{"name": "a", "seconds": 1, "second": 5}]})",
            "ops[0].second must be an object");
        expectError(
            R"({"format": "remat-profile", "version": 1, "ops": [{"name": "a", "seconds": 1, "second": {"flops": 1, "bytes": 1}}]})",
            "ops[0].second: missing \"seconds\"");
        expectError(
            R"({"format": "remat-profile", "version": 1, "ops": [{"name": "a", "seconds": 1, "second": {"flops": 1, "bytes": 1, "seconds": 0}}]})",
            "\"seconds\" must be above 0");
        expectError(
            R"({"format": "remat-profile", "version": 1, "ops": [{"name": "a", "seconds": 1, "second": {"flops": -4, "bytes": 1, "seconds": 1}}]})",
            "\"flops\" must be a finite number");
        expectError(R"({"f1": "fast"})", "op 'f1'");
        auto missing = io::readProfile("/nonexistent/p.json");
        QVERIFY(!missing.hasValue());
        QCOMPARE(missing.status().code(), StatusCode::NotFound);
        QVERIFY(QString::fromStdString(missing.status().message()).contains("--profile-out"));
    }
};

QTEST_APPLESS_MAIN(TstProfileFile)
#include "tst_profile_file.moc"
