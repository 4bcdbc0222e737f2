// The Run panel's backends beyond the CPU are discovered when first asked for, not at start (the
// app lists CUDA devices there, which opens the CUDA module: core/exec/device_module.h).
// - a planner in a shown window with the Run dock raised: discovery has not run, the panel lists
//   one backend (the CPU reference);
// - the first click on the backend list runs the discovery, before its popup opens: its backend is
//   listed second; a second click does not run it again;
// - selecting a backend by an id not listed yet (RunPanel::setBackend) runs the discovery first
//   and selects it; an id already listed does not run it.
#include "ui/planner/planner.h"
#include "ui/planner/run_panel.h"

#include "core/exec/cpu/cpu_backend.h"

#include <QComboBox>
#include <QMainWindow>
#include <QTest>

using namespace remat;
using namespace remat::ui;

namespace {

/// A second CPU backend under another id, standing for a device the app would find.
std::vector<BackendChoice> discovered(int *calls)
{
    ++*calls;
    return {{QStringLiteral("cpu-copy"), QStringLiteral("CPU reference, again"), [] {
                 return core::Expected<std::unique_ptr<core::exec::Backend>>(
                     core::exec::makeCpuBackend());
             }}};
}

QComboBox *backendCombo(RunPanel *panel) { return panel->findChild<QComboBox *>(); }

} // namespace

class TstBackendDiscovery : public QObject
{
    Q_OBJECT
private slots:
    void discoveredWhenTheBackendListIsFirstUsed()
    {
        Planner planner;
        int calls = 0;
        planner.runController()->setBackendDiscovery([&calls] { return discovered(&calls); });
        QMainWindow window;
        planner.createDocks(&window);
        window.resize(1200, 800);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(planner.raiseView(QStringLiteral("run")));
        QTest::qWait(50);
        // on screen, not used yet: nothing listed beyond the CPU
        QCOMPARE(calls, 0);
        QComboBox *combo = backendCombo(planner.runPanel());
        QVERIFY(combo);
        QCOMPARE(combo->count(), 1);

        QTest::mouseClick(combo, Qt::LeftButton);
        combo->hidePopup();
        QCOMPARE(calls, 1);
        QCOMPARE(combo->count(), 2);
        QCOMPARE(combo->itemData(1).toString(), QStringLiteral("cpu-copy"));
        QTest::mouseClick(combo, Qt::LeftButton);
        combo->hidePopup();
        QCOMPARE(calls, 1);
    }

    void anUnlistedIdIsDiscoveredWhenSelected()
    {
        Planner planner;
        int calls = 0;
        planner.runController()->setBackendDiscovery([&calls] { return discovered(&calls); });
        planner.runPanel()->setBackend(QStringLiteral("cpu"));
        QCOMPARE(calls, 0); // listed already: nothing to discover
        planner.runPanel()->setBackend(QStringLiteral("cpu-copy"));
        QCOMPARE(calls, 1);
        QCOMPARE(backendCombo(planner.runPanel())->currentData().toString(),
                 QStringLiteral("cpu-copy"));
    }
};

QTEST_MAIN(TstBackendDiscovery)
#include "tst_backend_discovery.moc"
