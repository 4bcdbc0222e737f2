// The built `remat validate-plan` (REMAT_CLI_BINARY) with resources/python/remat_apply.py on a
// small ResNet-style net written here as a Python factory (conv, BN, in-place ReLU, residual
// blocks, Linear), exported to ONNX by PyTorch as the corpus files were. Skipped when no
// /usr/bin/python3 (or $REMAT_PYTHON) imports torch. Expected:
// - chen-sqrtn's plan: exit 0; the JSON has store-all and the plan's measured and predicted saved
//   bytes (end of forward, peak through backward; the simulator's own and as PyTorch counts them:
//   no weight copies, no recomputation transients), PyTorch's at most 5% from the simulator's, the
//   plan's far below store-all's, gradients equal (max relative error <= 1e-6), the application
//   faithful (fx segments); the text output prints the same rows and "as planned";
// - --python naming an interpreter without torch: exit 1, and the message names torch and the
//   ways out (python3-torch, --python);
// - a plan edited to name a node the ONNX file lacks: exit 1, the helper's refusal quoted;
// - no --torch-model: a CLI11 usage error naming the option.
#include "common/test_support.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QProcessEnvironment>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>

using namespace remat::tests;

namespace {

#ifndef REMAT_CLI_BINARY
#error "REMAT_CLI_BINARY (the remat executable) must be defined by tests/CMakeLists.txt"
#endif

struct Run
{
    int exitCode = -1;
    QByteArray out, err;
};

Run runProgram(const QString &program, const QStringList &args, int timeoutMs = 240000)
{
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("OMP_NUM_THREADS", "1");
    p.setProcessEnvironment(env);
    p.start(program, args);
    Run r;
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
        r.err = "timed out";
        return r;
    }
    r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    return r;
}

Run runRemat(const QStringList &args) { return runProgram(QString(REMAT_CLI_BINARY), args); }

// The net and its export, as a user of the helper writes them (FILE.py:FACTORY).
const char kNet[] = R"PY(
import sys, warnings
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu = nn.ReLU(inplace=True)
        self.layers = nn.Sequential(*[Block(16) for _ in range(4)])
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.layers(self.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(self.pool(x), 1))


def make():
    return Net()


if __name__ == "__main__":
    from torch.onnx import TrainingMode
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(make().train(), torch.randn(2, 3, 16, 16), sys.argv[1], opset_version=17,
                          training=TrainingMode.TRAINING, do_constant_folding=False, export_params=False,
                          input_names=["input"])
)PY";

} // namespace

class TstValidatePlanCli : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_python, m_onnx, m_plan, m_factory;

private slots:
    void initTestCase()
    {
        QVERIFY2(QFileInfo::exists(REMAT_CLI_BINARY), REMAT_CLI_BINARY);
        m_python = qEnvironmentVariable("REMAT_PYTHON", "/usr/bin/python3");
        const Run probe = runProgram(m_python, {"-c", "import torch, torch.fx"}, 60000);
        if (probe.exitCode != 0)
            QSKIP(qPrintable(m_python + " cannot import torch: skipped"));
        QVERIFY(m_dir.isValid());
        m_factory = m_dir.filePath("net.py");
        QFile f(m_factory);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(kNet);
        f.close();
        m_onnx = m_dir.filePath("net.onnx");
        const Run exported = runProgram(m_python, {m_factory, m_onnx});
        QVERIFY2(exported.exitCode == 0, exported.err.constData());
        m_plan = m_dir.filePath("plan.json");
        const Run solved = runRemat({"solve", m_onnx, "--solver", "chen-sqrtn", "--out", m_plan});
        QVERIFY2(solved.exitCode == 0, solved.err.constData());
    }

    void chenSqrtnAsPlanned()
    {
        const Run r = runRemat({"validate-plan", m_onnx, m_plan, "--torch-model",
                                m_factory + ":make", "--python", m_python, "--json"});
        QVERIFY2(r.exitCode == 0, (r.err + r.out.left(2000)).constData());
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        QVERIFY2(!o.isEmpty(), r.out.left(400).constData());
        const QJsonObject all = o.value("store_all").toObject(),
                          plan = o.value("plan_applied").toObject();
        for (const char *key :
             {"measured_end_of_forward", "predicted_end_of_forward", "measured_peak_backward",
              "predicted_peak_backward", "predicted_end_of_forward_as_pytorch",
              "predicted_peak_backward_as_pytorch"}) {
            QVERIFY2(all.value(key).toDouble() > 0, key);
            QVERIFY2(plan.value(key).toDouble() > 0, key);
        }
        const auto within = [](double measured, double predicted) {
            return std::abs(measured - predicted) <= 0.05 * predicted;
        };
        // This net has no weight copies and no dropout: the end-of-forward figures agree as the
        // simulator states them; through backward, without its recomputation transients.
        QVERIFY(within(plan.value("measured_end_of_forward").toDouble(),
                       plan.value("predicted_end_of_forward").toDouble()));
        QVERIFY(within(plan.value("measured_end_of_forward").toDouble(),
                       plan.value("predicted_end_of_forward_as_pytorch").toDouble()));
        QVERIFY(within(plan.value("measured_peak_backward").toDouble(),
                       plan.value("predicted_peak_backward_as_pytorch").toDouble()));
        QVERIFY(plan.value("measured_end_of_forward").toDouble() <
                all.value("measured_end_of_forward").toDouble() / 2);
        QVERIFY(o.value("gradients_max_relative_error").toDouble() <= 1e-6);
        QVERIFY(o.value("gradients_equal").toBool());
        QVERIFY(o.value("within_tolerance").toBool());
        QVERIFY(o.value("faithful").toBool());
        QCOMPARE(o.value("report").toObject().value("method").toString(), QString("fx-segments"));

        const Run text = runRemat({"validate-plan", m_onnx, m_plan, "--torch-model",
                                   m_factory + ":make", "--python", m_python});
        QVERIFY2(text.exitCode == 0, text.err.constData());
        for (const char *row :
             {"store-all: at the end of forward", "plan: at the end of forward",
              "plan: peak through backward", "gradients: equal to", "verdict: as planned"})
            QVERIFY2(text.out.contains(row),
                     (QByteArray(row) + " not in\n" + text.out).constData());
    }

    void pythonWithoutTorchNamesTheWayOut()
    {
        // An interpreter that cannot import torch, as python3 without python3-torch answers.
        const QString noTorch = m_dir.filePath("python-without-torch");
        QFile f(noTorch);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'torch'\" >&2\nexit 1\n");
        f.close();
        QVERIFY(f.setPermissions(f.permissions() | QFileDevice::ExeOwner));
        const Run r = runRemat({"validate-plan", m_onnx, m_plan, "--torch-model",
                                m_factory + ":make", "--python", noTorch});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("torch") && r.err.contains("python3-torch") &&
                     r.err.contains("--python"),
                 r.err.constData());
        QVERIFY2(r.err.contains("No module named 'torch'"), r.err.constData());
    }

    void planForAnotherModelIsRefused()
    {
        QFile in(m_plan);
        QVERIFY(in.open(QIODevice::ReadOnly));
        QJsonObject plan = QJsonDocument::fromJson(in.readAll()).object();
        QJsonArray schedule = plan.value("schedule").toArray();
        bool renamed = false;
        for (int i = 0; i < schedule.size() && !renamed; ++i) {
            QJsonArray step = schedule.at(i).toArray();
            if (step.size() > 1 && step.at(0).toString() == "compute" &&
                step.at(1).toString() == "/conv1/Conv") {
                step[1] = "/encoder/layers/encoder_layer_0/mlp/mlp.0/MatMul";
                schedule[i] = step;
                renamed = true;
            }
        }
        QVERIFY(renamed);
        plan["schedule"] = schedule;
        const QString other = m_dir.filePath("other.json");
        QFile out(other);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(QJsonDocument(plan).toJson());
        out.close();
        const Run r = runRemat({"validate-plan", m_onnx, other, "--torch-model",
                                m_factory + ":make", "--python", m_python});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("encoder_layer_0") && r.err.contains("another model"),
                 r.err.constData());
    }

    void torchModelIsRequired()
    {
        const Run r = runRemat({"validate-plan", m_onnx, m_plan});
        QVERIFY(r.exitCode != 0);
        QVERIFY2((r.err + r.out).contains("--torch-model"), (r.err + r.out).constData());
    }
};

QTEST_GUILESS_MAIN(TstValidatePlanCli)
#include "tst_validate_plan_cli.moc"
