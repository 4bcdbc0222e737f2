#pragma once
// Hosts the planner in the explorer's main window: docks and the Planner menu, the plan as a
// graph colouring (and the teaching step lighting the graph up), pin actions in the graph's
// context menu, the selected node explained, and the planner following the model the window shows.
//   auto *planner = new Planner(window);
//   new PlannerIntegration(window, planner);   // parented to the window

#ifndef Q_MOC_RUN // moc cannot parse <concepts>; it needs no core type here
#include "core/util/ids.h"
#endif

#include <QObject>
#include <QPointer>
#include <QString>

class QAction;
class QComboBox;

namespace remat::ui {

class MainWindow;
class Planner;

class PlannerIntegration : public QObject
{
    Q_OBJECT
public:
    PlannerIntegration(MainWindow *window, Planner *planner);

    /// Colours the graph by the current plan (and the teaching step) instead of the colour mode.
    void setColourByPlan(bool on);
    bool colourByPlan() const { return m_colourByPlan; }
    /// True while the Schedule tab is on screen: the graph then shows what is resident at the
    /// teaching step instead of the plan's decisions.
    bool showsStep() const { return m_showStep; }

private:
    void recolour();
    void followWindowModel();
    void syncWindowToSession();
    void showContextMenu(const QPoint &pos);
    /// The pin menu of the selected node, at its box (Shift+F10, the Menu key): pinning from
    /// the keyboard.
    void showSelectionMenu();
    void showPinMenu(core::NodeId node, const QPoint &viewportPos);
    /// Selects the node a reopened session had selected, once its model is on screen.
    void applyPendingSelection();

    MainWindow *m_window;
    Planner *m_planner;
    QAction *m_colourAction = nullptr;
    QComboBox *m_combo = nullptr; ///< the window's "Colour by" box, with a "Plan decision" entry
    bool m_syncingCombo = false;
    static constexpr int kPlanColourData = -1; ///< that entry's data (colour modes are >= 0)
    bool m_colourByPlan = false;
    bool m_showStep = false;
    bool m_syncingToSession = false;
    bool m_autoColoured = false;
    bool m_scheduleSized = false; ///< the Schedule dock was given room once
    bool m_runSized = false;      ///< the Run dock was given room once
    QString m_pendingSelection;   ///< a session's selected node, until its model is shown
};

} // namespace remat::ui
