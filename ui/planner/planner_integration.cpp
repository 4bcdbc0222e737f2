#include "ui/planner/planner_integration.h"

#include "ui/colour_mode.h"
#include "ui/graph/graph_items.h"
#include "ui/graph/graph_scene.h"
#include "ui/graph/graph_view.h"
#include "ui/import_settings.h"
#include "ui/main_window.h"
#include "ui/model_document.h"
#include "ui/planner/plan_colour_provider.h"
#include "ui/planner/planner.h"
#include "ui/planner/planner_document.h"
#include "ui/planner/set_batch_command.h"
#include "ui/planner/set_training_command.h"
#include "ui/planner/teaching_view.h"

#include <QAction>
#include <QComboBox>
#include <QDockWidget>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QStatusBar>
#include <QTimer>
#include <QToolBar>
#include <QUndoStack>

namespace remat::ui {

PlannerIntegration::PlannerIntegration(MainWindow *window, Planner *planner)
    : QObject(window), m_window(window), m_planner(planner)
{
    planner->setSolvers(Planner::registrySolvers());
    // One open loads once: the planner takes the problem the explorer loaded (and the reverse
    // for a session's model) from the window's cache.
    planner->setProblemCache(window->problemCache());
    planner->createDocks(window);
    QMenu *menu = planner->createMenu(window);
    menu->addSeparator();
    m_colourAction = menu->addAction(tr("Colour graph &by plan"));
    m_colourAction->setCheckable(true);
    m_colourAction->setToolTip(tr("Keep / recompute / offload per node; while stepping through the "
                                  "schedule, only what is resident keeps its colour"));
    connect(m_colourAction, &QAction::toggled, this, &PlannerIntegration::setColourByPlan);
    window->menuBar()->addMenu(menu);
    // A batch the planner picks (the fit dialog's row) is the window's: the explorer re-imports,
    // the toolbar shows it, and the planner follows as after a toolbar change (one undo step).
    planner->setBatchHandler([window](int64_t batch) { window->setBatch(batch); });
    // Training options sit beside the batch and the model inputs: all three rebuild the step.
    if (auto *bar = window->findChild<QToolBar *>(QStringLiteral("explorerToolBar"))) {
        const QList<QAction *> actions = bar->actions();
        auto *inputs = window->findChild<QAction *>(QStringLiteral("inputsAction"));
        const qsizetype at = actions.indexOf(inputs);
        bar->insertAction(at >= 0 && at + 1 < actions.size() ? actions[at + 1] : nullptr,
                          planner->trainingAction());
    }

    // The toolbar's "Colour by" offers the plan too, and shows it while the graph wears it.
    if ((m_combo = window->findChild<QComboBox *>(QStringLiteral("colourModeCombo")))) {
        m_combo->addItem(tr("Plan decision"), kPlanColourData);
        connect(m_combo, &QComboBox::currentIndexChanged, this, [this](int i) {
            if (!m_syncingCombo)
                setColourByPlan(m_combo->itemData(i).toInt() == kPlanColourData);
        });
    }

    ModelDocument *doc = window->document();
    connect(window, &MainWindow::modelShown, this, &PlannerIntegration::followWindowModel);
    connect(planner, &Planner::importSettingsRequested, window, &MainWindow::setImportSettings);
    connect(doc, &ModelDocument::changed, this, [this, doc](const DocumentChange &c) {
        if (c.kind == DocumentChangeKind::SelectionChanged && doc->hasModel() &&
            doc->selectedNode().valid())
            m_planner->selectNode(
                QString::fromStdString(doc->graph().node(doc->selectedNode()).name));
        if (c.kind == DocumentChangeKind::ModelReplaced && m_colourByPlan)
            recolour();
        // A re-import of the file on screen (another batch, or input sizes from the Model
        // Inputs dialog) reaches the planner at once; a new file waits for its first layout
        // (modelShown), as before.
        if (c.kind == DocumentChangeKind::ModelReplaced && doc->hasModel() &&
            doc->model().path == m_window->property("shownPath").toString())
            followWindowModel();
        // The planner's step (its training options) shapes the graph: fused attention drawn as
        // groups. A fresh import drops it; the planner's problem may already be this one's
        // (after the window has taken the new model in: its layouter is set after this signal).
        if (c.kind == DocumentChangeKind::ModelReplaced && !doc->plannerStep())
            QTimer::singleShot(0, this, [this, doc] {
                if (!doc->plannerStep())
                    m_window->showPlannerStep(m_planner->problem());
            });
    });
    connect(planner, &Planner::problemChanged, this,
            [this] { m_window->showPlannerStep(m_planner->problem()); });
    // The training options in force, always on screen (they change every figure): a click
    // opens the Training dialog.
    auto *training = new QLabel(window);
    training->setObjectName(QStringLiteral("trainingStatusLabel"));
    training->setToolTip(tr("Optimizer, precision, sharding, micro-batches and tensor / sequence "
                            "parallelism of the training step every figure is for (click to "
                            "change)"));
    auto showTraining = [training, planner] {
        training->setText(
            tr("<a href=\"training\">Training: %1</a>")
                .arg(trainingSummary(planner->document()->training()).toHtmlEscaped()));
    };
    showTraining();
    connect(training, &QLabel::linkActivated, planner->trainingAction(), &QAction::trigger);
    connect(planner->document(), &PlannerDocument::changed, training,
            [showTraining](PlannerChange c) {
                if (c == PlannerChange::Training)
                    showTraining();
            });
    window->statusBar()->addPermanentWidget(training);
    // Undo / redo of a batch change moves the planner's batch: the explorer (graph shapes,
    // inspector, toolbar, status bar) follows, so every view shows the batch the plans are for.
    // (After each undo, redo or push; a push of the window's own re-import finds them equal.)
    connect(planner->document()->undoStack(), &QUndoStack::indexChanged, this, [this] {
        if (m_syncingToSession)
            return;
        const ModelDocument *d = m_window->document();
        const PlannerDocument *pd = m_planner->document();
        if (!d->hasModel() || pd->modelPath().isEmpty() ||
            QFileInfo(d->model().path).absoluteFilePath() !=
                QFileInfo(pd->modelPath()).absoluteFilePath())
            return;
        if (std::max<int64_t>(1, d->graph().info().batch) != pd->batch())
            m_window->setBatch(pd->batch());
    });
    connect(planner->nodeColors(), &PlanNodeColors::decisionsChanged, this, [this] {
        if (m_colourByPlan)
            recolour();
    });
    // Per-step residency is the Schedule tab's lesson: the graph shows it only while that tab is
    // on screen. Elsewhere it shows the plan's decisions. (Each solve resets the teaching view to
    // step 0, where almost nothing is resident: showing that step always made the graph go
    // white after Solve.)
    if (auto *teach = window->findChild<QDockWidget *>(QStringLiteral("plannerTeachingDock"))) {
        m_showStep = teach->isVisible();
        connect(teach, &QDockWidget::visibilityChanged, this, [this, teach](bool visible) {
            // The first time the tab comes up, give it room: the matrices are square and carry
            // a memory strip, and the bottom docks start short (the graph keeps most height).
            if (visible && !m_scheduleSized && !teach->isFloating() &&
                m_window->dockWidgetArea(teach) == Qt::BottomDockWidgetArea) {
                m_scheduleSized = true;
                const int want = int(m_window->height() * 0.45);
                if (teach->height() < want) {
                    m_window->resizeDocks({teach}, {want}, Qt::Vertical);
                    // Not at the graph's share of the height. Once the docks have their new
                    // heights (resizeDocks lays them out on the next pass: fitted at once, the
                    // graph still had its old height and the Schedule tab left it 38% at
                    // 1366x768).
                    QTimer::singleShot(0, m_window, [w = m_window] { w->fitBottomDocks(); });
                }
            }
            if (visible == m_showStep)
                return;
            m_showStep = visible;
            if (m_colourByPlan)
                recolour();
        });
    }
    // The Run tab too: its two charts sit under the backend, buttons and status lines; in the
    // bottom docks' starting height (at 1366x768) their plots were 20 px tall, their axis labels
    // cut to dots. The first time it comes up it gets the room the graph's share leaves.
    if (auto *run = window->findChild<QDockWidget *>(QStringLiteral("plannerRunDock"))) {
        connect(run, &QDockWidget::visibilityChanged, this, [this, run](bool visible) {
            if (!visible || m_runSized || run->isFloating() ||
                m_window->dockWidgetArea(run) != Qt::BottomDockWidgetArea)
                return;
            m_runSized = true;
            const int want = int(m_window->height() * 0.45);
            if (run->height() < want) {
                m_window->resizeDocks({run}, {want}, Qt::Vertical);
                QTimer::singleShot(0, m_window, [w = m_window] { w->fitBottomDocks(); });
            }
        });
    }
    connect(planner, &Planner::stepStateChanged, this, [this] {
        if (m_colourByPlan && m_showStep)
            recolour();
    });
    connect(planner, &Planner::problemChanged, this, [this] { m_autoColoured = false; });
    // The Schedule tab's memory strips: the current plan's curve, with its own budget.
    connect(planner, &Planner::planUpdated, this, [this] {
        const core::solvers::Plan *plan = m_planner->document()->currentPlan();
        m_planner->teachingView()->setMemory(
            plan ? plan->timeline : core::sim::Timeline{},
            plan && plan->objective == core::solvers::Objective::MinTime ? plan->budgetBytes : 0);
    });
    // While the Schedule tab is up, the graph follows the step: the node it runs scrolls into
    // view (the zoom stays as the user left it).
    connect(planner, &Planner::stepSelected, this, [this](int, const QString &nodeName) {
        if (!m_showStep || nodeName.isEmpty() || !m_window->document()->hasModel())
            return;
        const auto node = m_window->document()->graph().findNode(nodeName.toStdString());
        if (!node)
            return;
        if (const NodeItem *item = m_window->graphScene()->itemShowing(*node))
            m_window->graphView()->ensureVisible(item, 60, 60);
    });
    connect(planner, &Planner::planUpdated, this, [this] {
        // The first plan of a model is shown on the graph; afterwards the user's choice stands.
        if (!m_autoColoured && m_planner->document()->currentPlan()) {
            m_autoColoured = true;
            setColourByPlan(true);
        }
    });
    connect(planner, &Planner::sessionOpened, this, [this](bool ok, const QString &message) {
        if (!ok) {
            m_window->statusBar()->showMessage(tr("Session: %1").arg(message), 8000);
            return;
        }
        syncWindowToSession();
    });
    connect(planner, &Planner::problemFailed, this, [this](const QString &message) {
        m_window->statusBar()->showMessage(tr("Planner: %1").arg(message), 8000);
    });
    // Sessions keep the graph's colour mode and selected node (format version 2, "view").
    planner->setViewStateHooks(
        [this](core::io::SessionView &v) {
            const ModelDocument *d = m_window->document();
            v.colourMode = m_colourByPlan ? "plan" : colourModeId(d->colourMode()).toStdString();
            if (d->hasModel() && d->selectedNode().valid())
                v.selectedNode = d->graph().node(d->selectedNode()).name;
        },
        [this](const core::io::SessionView &v) {
            if (v.colourMode == "plan") {
                m_autoColoured = true;
                setColourByPlan(true);
            } else if (const auto mode = colourModeFromId(QString::fromStdString(v.colourMode))) {
                m_autoColoured = true; // the saved choice stands over "show the first plan"
                setColourByPlan(false);
                m_window->setColourMode(*mode);
            }
            m_pendingSelection = QString::fromStdString(v.selectedNode);
            applyPendingSelection();
        });
    connect(window, &MainWindow::modelShown, this, &PlannerIntegration::applyPendingSelection);
    GraphView *view = window->graphView();
    view->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(view, &QWidget::customContextMenuRequested, this, &PlannerIntegration::showContextMenu);
    auto *keyMenu = new QAction(tr("Pin menu of the selected node"), view);
    keyMenu->setObjectName(QStringLiteral("pinMenuAction"));
    keyMenu->setShortcuts({QKeySequence(Qt::SHIFT | Qt::Key_F10), QKeySequence(Qt::Key_Menu)});
    keyMenu->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    connect(keyMenu, &QAction::triggered, this, &PlannerIntegration::showSelectionMenu);
    view->addAction(keyMenu);
}

void PlannerIntegration::setColourByPlan(bool on)
{
    m_colourByPlan = on;
    if (m_colourAction && m_colourAction->isChecked() != on)
        m_colourAction->setChecked(on);
    if (m_combo) {
        const bool showsPlan = m_combo->currentData().toInt() == kPlanColourData;
        if (showsPlan != on) {
            m_syncingCombo = true;
            m_combo->setCurrentIndex(
                on ? m_combo->findData(kPlanColourData)
                   : m_combo->findData(int(m_window->document()->colourMode())));
            m_syncingCombo = false;
        }
    }
    if (on)
        recolour();
    else
        m_window->document()->setColourOverride(nullptr);
}

void PlannerIntegration::applyPendingSelection()
{
    ModelDocument *doc = m_window->document();
    if (m_pendingSelection.isEmpty() || !doc->hasModel() || m_planner->isLoading() ||
        QFileInfo(doc->model().path).absoluteFilePath() !=
            QFileInfo(m_planner->document()->modelPath()).absoluteFilePath())
        return; // the session's model is not on screen yet: modelShown comes back here
    const auto node = doc->graph().findNode(m_pendingSelection.toStdString());
    m_pendingSelection.clear();
    if (node)
        m_window->revealNode(*node);
}

void PlannerIntegration::recolour()
{
    ModelDocument *doc = m_window->document();
    if (!doc->hasModel())
        return;
    const PlanNodeColors *c = m_planner->nodeColors();
    const StepState *step = m_showStep ? &m_planner->teachingView()->state() : nullptr;
    doc->setColourOverride(std::make_unique<PlanColourProvider>(doc->model().graph, c->decisions(),
                                                                c->pinnedNodes(), step));
}

void PlannerIntegration::followWindowModel()
{
    const ModelDocument *doc = m_window->document();
    if (!doc->hasModel())
        return;
    const QString path = doc->model().path;
    const int64_t batch = std::max<int64_t>(1, doc->graph().info().batch);
    PlannerDocument *pd = m_planner->document();
    if (m_syncingToSession) {
        // The window shows the session's model: bring it to the session's batch, not the reverse.
        m_syncingToSession = false;
        if (batch != pd->batch())
            m_window->setBatch(pd->batch());
        return;
    }
    // A load already under way for these settings and this batch will arrive; one for other
    // settings (the Model Inputs dialog answered while the first, blocked import was still being
    // planned) or another batch (the toolbar's batch changed while the planner still loaded the
    // file's first one: it stayed at the old batch for good) is superseded by a new one.
    const bool otherSettings = !sameImportSettings(doc->model().settings, pd->importSettings());
    if (m_planner->isLoading() && !otherSettings && m_planner->loadingBatch() == batch)
        return;
    if (m_planner->isLoading() && !otherSettings) {
        m_planner->openModel(path, batch, doc->model().settings);
        return;
    }
    // The window started a new session for a new file (Planner::startNewSession: its path is
    // the document's already) with no problem yet: it is loaded now.
    const auto &problem = m_planner->problem();
    const bool noProblem =
        !problem || QFileInfo(QString::fromStdString(problem->modelPath)).absoluteFilePath() !=
                        QFileInfo(path).absoluteFilePath();
    if (otherSettings || noProblem ||
        QFileInfo(path).absoluteFilePath() != QFileInfo(pd->modelPath()).absoluteFilePath() ||
        !sameImportSettings(doc->model().settings, pd->importSettings()))
        m_planner->openModel(path, batch, doc->model().settings);
    else if (batch != pd->batch())
        m_planner->pushBatchChange(batch); // plans set aside, undoable
}

void PlannerIntegration::syncWindowToSession()
{
    const QString model = m_planner->document()->modelPath();
    const ModelDocument *doc = m_window->document();
    const core::onnx::ImportOptions &settings = m_planner->document()->importSettings();
    if (doc->hasModel() &&
        QFileInfo(doc->model().path).absoluteFilePath() == QFileInfo(model).absoluteFilePath() &&
        sameImportSettings(doc->model().settings, settings)) {
        if (std::max<int64_t>(1, doc->graph().info().batch) != m_planner->document()->batch()) {
            m_syncingToSession = true;
            followWindowModel();
        }
        return;
    }
    m_syncingToSession = true;
    core::onnx::ImportOptions withBatch = settings;
    withBatch.batch = m_planner->document()->batch();
    m_window->openModel(model, withBatch);
}

void PlannerIntegration::showContextMenu(const QPoint &pos)
{
    GraphView *view = m_window->graphView();
    const ModelDocument *doc = m_window->document();
    if (!doc->hasModel() || !doc->layout())
        return;
    const NodeItem *item = nullptr;
    for (QGraphicsItem *it : view->items(pos))
        if (it->type() == NodeItem::Type) {
            item = static_cast<const NodeItem *>(it);
            break;
        }
    // Nothing under the pointer (the Menu key, or empty space): the selected node's menu.
    if (!item) {
        showSelectionMenu();
        return;
    }
    if (item->isGroup())
        return;
    const auto &items = doc->layout()->items;
    if (item->layoutIndex() < 0 || size_t(item->layoutIndex()) >= items.size())
        return;
    showPinMenu(items[size_t(item->layoutIndex())].node, pos);
}

void PlannerIntegration::showSelectionMenu()
{
    const ModelDocument *doc = m_window->document();
    if (!doc->hasModel() || !doc->layout() || !doc->selectedNode().valid())
        return;
    GraphView *view = m_window->graphView();
    const NodeItem *item = m_window->graphScene()->itemShowing(doc->selectedNode());
    const QPoint pos = item ? view->mapFromScene(item->sceneBoundingRect().center())
                            : view->viewport()->rect().center();
    showPinMenu(doc->selectedNode(), pos);
}

void PlannerIntegration::showPinMenu(core::NodeId node, const QPoint &pos)
{
    GraphView *view = m_window->graphView();
    const ModelDocument *doc = m_window->document();
    if (!node.valid() || !doc->hasModel())
        return;
    const QString name = QString::fromStdString(doc->graph().node(node).name);
    QMenu menu(view);
    menu.addSection(
        tr("Pin %1").arg(QString::fromStdString(doc->graph().node(node).displayName())));
    const QList<QAction *> actions = m_planner->pinActions(name, &menu);
    if (m_planner->pinTensorOfNode(name).isEmpty()) {
        menu.addAction(tr("Nothing to pin: no activation output"))->setEnabled(false);
    } else {
        menu.addActions(actions);
    }
    const QString overlay = m_planner->nodeOverlay(name);
    if (!overlay.isEmpty()) {
        menu.addSeparator();
        // The whole explanation, a line per menu entry: a cut-off sentence explains nothing.
        for (const QString &line : wrapAtWords(overlay, 90))
            menu.addAction(line)->setEnabled(false);
    }
    menu.exec(view->viewport()->mapToGlobal(pos));
}

} // namespace remat::ui
