// TrainingGraph::assemble: derives producers and consumers, finds tensors by name, and refuses
// malformed graphs with a message naming the culprit.
#include "core/training/training_graph.h"
#include "sim/hand_graphs.h"

#include <QtTest>

using namespace remat::core;
using training::TrainingGraph;

class TstTrainingGraph : public QObject
{
    Q_OBJECT

private slots:
    void assemblesHandGraph()
    {
        const TrainingGraph g = remat::tests::twoLayerGraph();
        QCOMPARE(g.forwardOpCount(), size_t(2));
        QCOMPARE(g.backwardOpCount(), size_t(2));
        QCOMPARE(g.backwardOf(OpId(int32_t(0))).value, 4);
        QCOMPARE(g.backwardOf(OpId(int32_t(1))).value, 3);
        const TensorId *a = g.findTensor("a");
        QVERIFY(a);
        QCOMPARE(a->value, 2);
        QVERIFY(!g.findTensor("nope"));
        QCOMPARE(g.tensor(*a).producer.value, 0);
        QCOMPARE(g.tensor(*a).consumers.size(), size_t(2)); // f2 and f2/grad
        QCOMPARE(g.op(OpId(int32_t(3))).inputRoles.size(), size_t(2));
        QCOMPARE(QString(training::tensorRoleName(training::TensorRole::SavedState)),
                 QString("saved-state"));
    }

    void refusesReadBeforeProduce()
    {
        const TrainingGraph g = remat::tests::twoLayerGraph();
        std::vector<training::Op> ops = g.ops();
        std::vector<training::Tensor> tensors = g.tensors();
        std::swap(ops[0].inputs[0], ops[1].inputs[0]); // f1 reads a, f2 reads x
        auto r = TrainingGraph::assemble({}, ops, tensors);
        QVERIFY(!r.hasValue());
        QCOMPARE(QString::fromStdString(r.status().message()),
                 QString("op 'f1' reads 'a' before it is produced"));
    }

    void refusesPhaseOrder()
    {
        const TrainingGraph g = remat::tests::twoLayerGraph();
        std::vector<training::Op> ops = g.ops();
        ops[1].phase = training::Phase::Backward;
        auto r = TrainingGraph::assemble({}, ops, g.tensors());
        QVERIFY(!r.hasValue());
        QVERIFY(r.status().message().find("after a later phase") != std::string::npos);
    }

    void refusesDuplicateNamesAndOrphans()
    {
        const TrainingGraph g = remat::tests::twoLayerGraph();
        std::vector<training::Tensor> tensors = g.tensors();
        tensors[3].name = "a";
        auto r = TrainingGraph::assemble({}, g.ops(), tensors);
        QVERIFY(!r.hasValue());
        QCOMPARE(QString::fromStdString(r.status().message()),
                 QString("two tensors are named 'a'"));
        tensors = g.tensors();
        training::Tensor orphan;
        orphan.id = TensorId(int32_t(tensors.size()));
        orphan.name = "orphan";
        tensors.push_back(orphan);
        r = TrainingGraph::assemble({}, g.ops(), tensors);
        QVERIFY(!r.hasValue());
        QVERIFY(r.status().message().find("'orphan' is neither preloaded nor produced") !=
                std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TstTrainingGraph)
#include "tst_training_graph.moc"
