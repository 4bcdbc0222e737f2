// resources/python/remat_apply.py against PyTorch: a plan solved here for the corpus resnet18 is
// applied to torchvision's resnet18; its gradients must equal the plain run's, the wrapped blocks
// must really recompute, and a plan for another model must be refused. Skips without python3-torch.
#include "common/test_support.h"

#include "ui/planner/planner.h"

#include <QAction>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMenu>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace remat;
using namespace remat::ui;

class TestRematApply : public QObject
{
    Q_OBJECT

private:
    QString m_script;

    static QJsonObject runPython(const QStringList &args, int *exitCode)
    {
        QProcess p;
        p.setProcessChannelMode(QProcess::SeparateChannels);
        p.start(QStringLiteral("/usr/bin/python3"), args);
        if (!p.waitForFinished(600000)) {
            p.kill();
            *exitCode = -1;
            return {};
        }
        *exitCode = p.exitCode();
        const QByteArray out = p.readAllStandardOutput().trimmed();
        if (*exitCode != 0 && out.isEmpty())
            qWarning("%s", p.readAllStandardError().constData());
        const QList<QByteArray> lines = out.split('\n');
        return QJsonDocument::fromJson(lines.isEmpty() ? QByteArray() : lines.back()).object();
    }

private slots:
    void initTestCase()
    {
        QProcess probe;
        probe.start(QStringLiteral("/usr/bin/python3"),
                    {QStringLiteral("-c"), QStringLiteral("import torch, torchvision")});
        if (!probe.waitForFinished(300000) || probe.exitStatus() != QProcess::NormalExit ||
            probe.exitCode() != 0)
            QSKIP("python3-torch / python3-torchvision are not installed");
        m_script = tests::sourceDir() + QStringLiteral("/resources/python/remat_apply_check.py");
        QVERIFY(QFileInfo::exists(m_script));
    }

    void planFromPlannerKeepsGradients()
    {
        const QString model = tests::sharedPath("corpus/graph_only/resnet18.onnx");
        if (!QFileInfo::exists(model))
            QSKIP("shared corpus not found");
        Planner planner;
        planner.setSolvers(Planner::registrySolvers());
        QSignalSpy loaded(&planner, &Planner::problemChanged);
        planner.openModel(model, 2);
        QVERIFY(loaded.wait(120000));
        planner.document()->setObjective(core::solvers::Objective::MinPeak);
        planner.solve(QStringLiteral("chen-sqrtn"));
        planner.waitForIdle();
        QVERIFY(planner.document()->currentPlan());
        QTemporaryDir dir;
        const QString plan = dir.filePath(QStringLiteral("plan.json"));
        QVERIFY(planner.exportPlanJson(plan).isOk());

        int rc = 0;
        const QJsonObject r = runPython({m_script, QStringLiteral("resnet18"), plan}, &rc);
        QVERIFY2(rc == 0, qPrintable(QString::fromUtf8(QJsonDocument(r).toJson())));
        QVERIFY(r.value(QStringLiteral("ok")).toBool());
        QVERIFY(r.value(QStringLiteral("segments")).toInt() >= 1);
        QVERIFY(r.value(QStringLiteral("faithful")).toBool());
        // Gradients with checkpointing equal the plain run's (CPU kernels are deterministic).
        QVERIFY(r.value(QStringLiteral("max_relative_error")).toDouble() <= 1e-5);
    }

    void applyInPyTorchWritesPlanAndSnippet()
    {
        const QString model = tests::sharedPath("corpus/with_weights/mlp.onnx");
        if (!QFileInfo::exists(model))
            QSKIP("shared corpus not found");
        Planner planner;
        planner.setSolvers(Planner::registrySolvers());
        QSignalSpy loaded(&planner, &Planner::problemChanged);
        planner.openModel(model, 0);
        QVERIFY(loaded.wait(120000));
        planner.solve(QStringLiteral("chen-sqrtn"));
        planner.waitForIdle();
        QVERIFY(planner.document()->currentPlan());
        QWidget window;
        QMenu *menu = planner.createMenu(&window);
        auto *action = menu->findChild<QAction *>(QStringLiteral("applyInPyTorch"));
        QVERIFY(action);
        QVERIFY(
            action->text().remove(QLatin1Char('&')).contains(QStringLiteral("Apply in PyTorch")));
        QTemporaryDir dir;
        const QString plan = dir.filePath(QStringLiteral("mlp_plan.json"));
        action->setData(plan); // no dialog: the action writes here
        action->trigger();
        QFile planFile(plan);
        QVERIFY(planFile.open(QIODevice::ReadOnly));
        const QJsonObject root = QJsonDocument::fromJson(planFile.readAll()).object();
        QCOMPARE(root.value(QStringLiteral("format")).toString(), QStringLiteral("remat-plan"));
        QVERIFY(!root.value(QStringLiteral("schedule")).toArray().isEmpty());
        QFile snippet(dir.filePath(QStringLiteral("mlp_plan_apply.py")));
        QVERIFY(snippet.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(snippet.readAll());
        QVERIFY(text.contains(QStringLiteral("import remat_apply")));
        QVERIFY(text.contains(QStringLiteral("remat_apply.apply_plan(model, \"%1\"")
                                  .arg(QFileInfo(plan).absoluteFilePath())));
        QVERIFY(text.contains(QFileInfo(model).fileName()));
        // The helper is written beside the plan, byte for byte the one in the resources.
        QFile helper(dir.filePath(QStringLiteral("remat_apply.py")));
        QVERIFY(helper.open(QIODevice::ReadOnly));
        QFile source(tests::sourceDir() + QStringLiteral("/resources/python/remat_apply.py"));
        QVERIFY(source.open(QIODevice::ReadOnly));
        QCOMPARE(helper.readAll(), source.readAll());
    }

    void foreignPlanIsRefused()
    {
        QTemporaryDir dir;
        QFile f(dir.filePath(QStringLiteral("vit_plan.json")));
        QVERIFY(f.open(QIODevice::WriteOnly));
        // A node of vit_b_16: resnet18 has no "encoder" module.
        f.write(
            R"({"decisions": [{"node": "/encoder/layers/encoder_layer_0/mlp/mlp.0/MatMul", "decision": "recompute"}]})");
        f.close();
        int rc = 0;
        const QJsonObject r = runPython(
            {m_script, QStringLiteral("--refuse"), QStringLiteral("resnet18"), f.fileName()}, &rc);
        QCOMPARE(rc, 0);
        QVERIFY(r.value(QStringLiteral("refused")).toBool());
        QVERIFY(r.value(QStringLiteral("message")).toString().contains(QStringLiteral("encoder")));
    }
};

QTEST_MAIN(TestRematApply)
#include "tst_planner_remat_apply.moc"
