// Fused attention in the explorer (issue #34), offscreen. tests/data/attention/gpt2_style.onnx
// (tests/python/attention_nets.py Gpt2Style: 2 layers, each attention MatMul(q, k^T) -> Div ->
// Where(causal) -> Softmax -> MatMul(., v)) with the planner's training options at
// --attention sdpa. Expected:
// - each layer's pattern is one collapsed group "fused attention" holding its original nodes
//   (the Softmax among them), the file's own groups unchanged; double-clicking it (toggleGroup)
//   opens it to the nodes; eager again takes the groups away;
// - the inspector of a node in the pattern, and of the group, lists the fused nodes, the fused op
//   and what it keeps for backward with the bytes core's training graph gives (Q, K, V, output
//   and the float32 log-sum-exp [B, H, S]), never the [B, H, S, S] probabilities;
// - tests/data/attention/attention_probs_output.onnx (tests/python/attention_near_miss.py: the
//   probabilities are also a graph output) is a near miss: its Softmax stays a node and the
//   inspector says why it was not fused.
#include "common/test_support.h"
#include "ui_test_util.h"

#include "core/pipeline/problem.h"
#include "core/training/training_graph.h"
#include "core/util/bytes.h"
#include "ui/fused_attention.h"
#include "ui/graph/graph_items.h"
#include "ui/graph/graph_scene.h"
#include "ui/inspector_panel.h"
#include "ui/planner/planner.h"
#include "ui/planner/planner_document.h"

#include <QTextDocument>
#include <QtTest>

using namespace remat;
using namespace remat::ui;
using core::training::Attention;
using core::training::TrainingOptions;

namespace {

QString dataPath(const char *file)
{
    return tests::sourceDir() + QStringLiteral("/tests/data/attention/") + QLatin1String(file);
}

/// The planner follows the window's model: wait until it has its problem.
bool waitPlanner(MainWindow &w)
{
    return QTest::qWaitFor(
        [&] { return w.planner()->problem() && !w.planner()->isLoading() && !w.isBusy(); }, 60000);
}

void setAttention(MainWindow &w, Attention a)
{
    TrainingOptions t = w.planner()->document()->training();
    t.attention = a;
    w.planner()->setTraining(t);
}

/// The graph's groups the view added (beyond the file's namespaces).
std::vector<core::NamespaceId> addedGroups(const ModelDocument &doc)
{
    std::vector<core::NamespaceId> out;
    for (size_t i = doc.importedNamespaceCount(); i < doc.graph().namespaces().size(); ++i)
        out.push_back(core::NamespaceId(int32_t(i)));
    return out;
}

QString plain(const InspectorPanel *p)
{
    QTextDocument d;
    d.setHtml(p->html());
    return d.toPlainText();
}

std::vector<core::NodeId> nodesOfType(const core::ir::Graph &g, const char *type)
{
    std::vector<core::NodeId> out;
    for (const core::ir::Node &n : g.nodes())
        if (n.opType == type)
            out.push_back(n.id);
    return out;
}

} // namespace

class TestFusedAttentionView : public QObject
{
    Q_OBJECT

private slots:
    void initTestCase() { tests::isolateSettings(); }

    void fusedPatternIsAGroupThatOpens()
    {
        MainWindow w;
        w.setInteractive(false);
        w.setInitialCollapseDepth(0); // the file's groups expanded: boxes are nodes
        QVERIFY(tests::openAndWait(w, dataPath("gpt2_style.onnx")));
        QVERIFY(waitPlanner(w));
        ModelDocument *doc = w.document();
        // eager (the default): attention as the file writes it, no group added
        QVERIFY(addedGroups(*doc).empty());
        const std::vector<core::NodeId> softmaxes = nodesOfType(doc->graph(), "Softmax");
        QCOMPARE(softmaxes.size(), size_t(2));
        const size_t fileNamespaces = doc->graph().namespaces().size();
        QVERIFY(!w.graphScene()->itemShowing(softmaxes[0])->isGroup());

        setAttention(w, Attention::Sdpa);
        QVERIFY(QTest::qWaitFor(
            [&] { return addedGroups(*doc).size() == 2 && doc->layout() && !w.isBusy(); }, 60000));
        QCOMPARE(doc->importedNamespaceCount(), fileNamespaces);
        const auto step = doc->plannerStep();
        QVERIFY(step && step->training);
        QCOMPARE(step->training->info().training.attention, Attention::Sdpa);
        const auto &sites = step->training->info().fusedSites;
        QCOMPARE(sites.size(), size_t(2));
        for (size_t k = 0; k < 2; ++k) {
            const core::NamespaceId ns = addedGroups(*doc)[k];
            const core::ir::Namespace &group = doc->graph().ns(ns);
            QCOMPARE(QString::fromStdString(group.name), QString::fromLatin1(kFusedAttentionGroup));
            // its nodes: the pattern's, the fused op's own node among them
            std::vector<core::NodeId> want = sites[k].absorbed;
            want.push_back(sites[k].node);
            std::sort(want.begin(), want.end());
            std::vector<core::NodeId> have = group.nodes;
            std::sort(have.begin(), have.end());
            QCOMPARE(have, want);
            QVERIFY(std::find(have.begin(), have.end(), softmaxes[k]) != have.end());
            QVERIFY(doc->collapsed().count(ns));
            // drawn as one box standing for its nodes
            const NodeItem *box = w.graphScene()->itemShowing(softmaxes[k]);
            QVERIFY(box && box->isGroup());
            // (with the folded scale constant drawn inside its Div)
            QVERIFY(box->memberCount() >= int(want.size()));
            QCOMPARE(doc->layout()->items[size_t(box->layoutIndex())].ns, ns);
        }

        // The inspector of the Softmax: what was fused, and what the fused op keeps.
        doc->setSelectedNode(softmaxes[0]);
        w.inspector()->showNode(softmaxes[0]);
        const QString text = plain(w.inspector());
        QVERIFY2(text.contains(QStringLiteral("Fused attention (--attention sdpa)")),
                 qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("ScaledDotProductAttention")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("(this node)")), qPrintable(text));
        const core::training::TrainingGraph &tg = *step->training;
        const core::OpId fused = step->forwardOpOfNode[sites[0].node.index()];
        QVERIFY(fused.valid());
        const core::training::Op &grad = tg.op(tg.backwardOf(fused));
        int64_t saved = 0;
        bool lse = false;
        for (size_t i = 0; i < grad.inputs.size(); ++i) {
            const auto kind = grad.inputRoles[i].kind;
            if (kind != core::training::Operand::Kind::FwdInput &&
                kind != core::training::Operand::Kind::FwdOutput)
                continue;
            const core::training::Tensor &t = tg.tensor(grad.inputs[i]);
            if (t.role == core::training::TensorRole::Activation ||
                t.role == core::training::TensorRole::SavedState)
                saved += t.bytes;
            // B 2, H 4, S 16: no [2, 4, 16, 16] tensor; the log-sum-exp is float32 [2, 4, 16]
            QVERIFY(t.shape.sizes() != (std::vector<int64_t>{2, 4, 16, 16}));
            lse = lse || (t.shape.sizes() == std::vector<int64_t>{2, 4, 16} && t.bytes == 512);
        }
        QVERIFY(lse);
        const QString needs = QStringLiteral("needs %1 of activations")
                                  .arg(QString::fromStdString(core::formatBytes(saved)));
        QVERIFY2(text.contains(needs), qPrintable(text + QStringLiteral("\nwant: ") + needs));
        // every node of the pattern is listed by its op type and name
        for (core::NodeId n : sites[0].absorbed)
            QVERIFY2(text.contains(QString::fromStdString(doc->graph().node(n).displayName())),
                     qPrintable(text));

        // The group itself says the same.
        w.inspector()->showGroup(addedGroups(*doc)[0]);
        QVERIFY(plain(w.inspector()).contains(needs));

        // Double-click opens it: the Softmax is its own box again.
        const core::NamespaceId first = addedGroups(*doc)[0];
        QSignalSpy laidOut(&w, &MainWindow::layoutFinished);
        w.toggleGroup(first);
        QVERIFY(laidOut.wait(30000));
        QVERIFY(!doc->collapsed().count(first));
        const NodeItem *open = w.graphScene()->itemShowing(softmaxes[0]);
        QVERIFY(open && !open->isGroup());
        QVERIFY(w.graphScene()->frameOf(first)); // framed as an expanded group
        QVERIFY(w.graphScene()->itemShowing(softmaxes[1])->isGroup());

        // Eager again: the file's graph as it is.
        setAttention(w, Attention::Eager);
        QVERIFY(QTest::qWaitFor(
            [&] {
                return addedGroups(*doc).empty() && doc->layout() && !w.isBusy() &&
                       doc->plannerStep() &&
                       doc->plannerStep()->training->info().fusedSites.empty();
            },
            60000));
        QVERIFY(!w.graphScene()->itemShowing(softmaxes[1])->isGroup());
        w.inspector()->showNode(softmaxes[0]);
        QVERIFY(!plain(w.inspector()).contains(QStringLiteral("Fused attention")));
    }

    void nearMissSaysWhy()
    {
        MainWindow w;
        w.setInteractive(false);
        w.setInitialCollapseDepth(0);
        QVERIFY(tests::openAndWait(w, dataPath("attention_probs_output.onnx")));
        QVERIFY(waitPlanner(w));
        ModelDocument *doc = w.document();
        setAttention(w, Attention::Sdpa);
        QVERIFY(QTest::qWaitFor(
            [&] {
                return doc->plannerStep() &&
                       doc->plannerStep()->training->info().training.attention == Attention::Sdpa &&
                       !w.isBusy();
            },
            60000));
        QVERIFY(addedGroups(*doc).empty());
        const std::vector<core::NodeId> softmax = nodesOfType(doc->graph(), "Softmax");
        QCOMPARE(softmax.size(), size_t(1));
        QVERIFY(!w.graphScene()->itemShowing(softmax[0])->isGroup());
        w.inspector()->showNode(softmax[0]);
        const QString text = plain(w.inspector());
        QVERIFY2(text.contains(QStringLiteral("Attention not fused")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("probabilities")), qPrintable(text));
        QVERIFY(!text.contains(QStringLiteral("Fused attention")));
    }
};

QTEST_MAIN(TestFusedAttentionView)
#include "tst_fused_attention_view.moc"
