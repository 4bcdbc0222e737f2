#include "ui/main_window.h"

#include "ui/model_pane.h"

#include "ui/gui_wording.h"
#include "ui/help_dialogs.h"
#include "ui/import_settings.h"
#include "ui/input_settings_dialog.h"

#include "core/layout/collapse_policy.h"
#include "core/layout/shape_folding.h"
#include "core/util/bytes.h"
#include "ui/background_jobs.h"
#include "ui/fused_attention.h"
#include "ui/graph/graph_scene.h"
#include "ui/graph/graph_view.h"
#include "ui/graph/legend_widget.h"
#include "ui/graph/search_bar.h"
#include "ui/inspector_panel.h"
#include "ui/planner/planner.h"
#include "ui/planner/planner_document.h"
#include "ui/planner/planner_integration.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QImage>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPainter>
#include <QProgressBar>
#include <QScreen>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QStatusBar>
#include <QSvgGenerator>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QUndoStack>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

// The resources live in the static ui library: register them once (outside any namespace).
static void initUiResources() { Q_INIT_RESOURCE(resources); }

namespace remat::ui {

using namespace core;

namespace {
constexpr int kMaxRecent = 10;
} // namespace

MainWindow::MainWindow(QWidget *parent) : QMainWindow(parent)
{
    initUiResources();
    qRegisterMetaType<remat::ui::LoadedModel>();
    qRegisterMetaType<remat::ui::DocumentChange>();
    setWindowTitle(tr("Remat Studio"));
    setWindowIcon(QIcon(QStringLiteral(":/icons/remat.svg")));
    setAcceptDrops(true);

    m_document = new ModelDocument(this);
    m_problems = std::make_shared<ProblemCache>();
    m_loader = new ModelLoader(m_problems, this);
    m_layoutRunner = new LayoutRunner(this);
    m_scene = new GraphScene(m_document, this);
    m_view = new GraphView(m_scene, this);
    m_view->setObjectName(QStringLiteral("graphView"));

    m_searchBar = new SearchBar(this);
    m_searchBar->hide();
    m_legend = new LegendWidget(this);
    auto *graphArea = new QWidget(this);
    auto *graphLayout = new QVBoxLayout(graphArea);
    graphLayout->setContentsMargins(0, 0, 0, 0);
    graphLayout->setSpacing(0);
    graphLayout->addWidget(m_searchBar);
    m_split = new QSplitter(Qt::Horizontal, this);
    m_split->setObjectName(QStringLiteral("graphSplit"));
    m_split->addWidget(m_view);
    graphLayout->addWidget(m_split, 1);
    graphLayout->addWidget(m_legend);
    auto *placeholder =
        new QLabel(tr("<h2>Remat Studio</h2><p>Open an ONNX model (File &gt; Open, Ctrl+O) "
                      "or drop one here.</p>"),
                   this);
    placeholder->setAlignment(Qt::AlignCenter);
    m_stack = new QStackedWidget(this);
    m_stack->addWidget(placeholder);
    m_stack->addWidget(graphArea);
    setCentralWidget(m_stack);

    createActions();
    createToolBar();
    createDocks();
    m_planner = new Planner(this);
    new PlannerIntegration(this, m_planner);
    // Undo and Redo where every editor has them (the Planner menu keeps them too).
    if (auto *edit = menuBar()->findChild<QMenu *>(QStringLiteral("editMenu"))) {
        QAction *first = edit->actions().value(0);
        edit->insertAction(first, m_planner->undoAction());
        edit->insertAction(first, m_planner->redoAction());
        edit->insertSeparator(first);
    }
    createPlannerExports();
    createDockMenuAndHelp();
    connect(m_planner->document(), &PlannerDocument::changed, this, &MainWindow::updateTitle);
    connect(m_planner->document()->undoStack(), &QUndoStack::indexChanged, this,
            &MainWindow::updateTitle);
    connect(m_planner, &Planner::sessionOpened, this, &MainWindow::updateTitle);
    // The beside pane's training-step figures follow the planner's options and step.
    connect(m_planner, &Planner::problemChanged, this, [this] {
        if (!m_beside)
            return;
        m_beside->setTraining(m_planner->document()->training());
        m_beside->setReference(besideReference());
    });
    // A session opened (or saved) is a recent file too, above the model it loaded.
    connect(m_planner, &Planner::sessionOpened, this, [this](bool ok) {
        if (ok && !m_planner->sessionPath().isEmpty())
            addRecentFile(m_planner->sessionPath());
    });
    // The right column holds four docks once the planner's are in: it runs down to the status
    // bar (the bottom docks stop beside it) and the inspector gets the most of it (split evenly
    // above the bottom docks, it showed three lines of the model's facts).
    setCorner(Qt::BottomRightCorner, Qt::RightDockWidgetArea);
    QList<QDockWidget *> right;
    for (const char *name :
         {"inspectorDock", "overviewDock", "plannerSolverDock", "plannerPinsDock"})
        if (auto *dock = findChild<QDockWidget *>(QLatin1String(name));
            dock && dockWidgetArea(dock) == Qt::RightDockWidgetArea)
            right << dock;
    if (right.size() == 4)
        resizeDocks(right, {380, 150, 170, 130}, Qt::Vertical);
    if (auto *plans = findChild<QDockWidget *>(QStringLiteral("plannerPlansDock"))) {
        resizeDocks({plans}, {250}, Qt::Vertical);   // the graph keeps most of the height
        resizeDocks({plans}, {460}, Qt::Horizontal); // the plan table's columns up to Recompute
    }

    m_summary = new QLabel(tr("No model loaded"), this);
    m_phase = new QLabel(this);
    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 100);
    m_progress->setMaximumWidth(160);
    m_cancel = new QToolButton(this);
    m_cancel->setText(tr("Cancel"));
    statusBar()->addWidget(m_summary, 1);
    m_layoutInfo = new QLabel(this);
    statusBar()->addPermanentWidget(m_layoutInfo);
    statusBar()->addPermanentWidget(m_phase);
    statusBar()->addPermanentWidget(m_progress);
    statusBar()->addPermanentWidget(m_cancel);
    setBusy(false, {});
    connect(m_cancel, &QToolButton::clicked, this, [this] {
        m_loader->cancel();
        m_layoutRunner->cancel();
        setBusy(false, {});
        statusBar()->showMessage(tr("Cancelled"), 3000);
    });

    m_batchTimer = new QTimer(this);
    m_batchTimer->setSingleShot(true);
    m_batchTimer->setInterval(350);
    connect(m_batchTimer, &QTimer::timeout, this, [this] { setBatch(m_batch->value()); });

    connect(m_loader, &ModelLoader::progress, this, [this](double f, const QString &phase) {
        m_progress->setValue(int(f * 100));
        m_phase->setText(phase);
    });
    connect(m_loader, &ModelLoader::loaded, this, &MainWindow::onLoaded);
    connect(m_loader, &ModelLoader::failed, this, &MainWindow::onLoadFailed);
    connect(m_loader, &ModelLoader::inputsNeeded, this, &MainWindow::onInputsNeeded);
    connect(m_layoutRunner, &LayoutRunner::finished, this, &MainWindow::onLayoutFinished);
    connect(m_layoutRunner, &LayoutRunner::failed, this, [this](const QString &message) {
        setBusy(false, {});
        reportError(tr("Layout failed: %1").arg(message));
    });
    connect(m_document, &ModelDocument::changed, this, &MainWindow::onDocumentChanged);
    connect(m_scene, &GraphScene::groupToggled, this, &MainWindow::toggleGroup);
    connect(m_scene, &GraphScene::valueClicked, m_inspector, &InspectorPanel::showValue);
    connect(m_searchBar, &SearchBar::queryChanged, this, &MainWindow::runSearch);
    connect(m_searchBar, &SearchBar::next, this, &MainWindow::findNext);
    connect(m_searchBar, &SearchBar::previous, this, &MainWindow::findPrevious);
    connect(m_searchBar, &SearchBar::closed, this, [this] {
        runSearch({});
        // Hiding the bar passes focus down the chain, which reaches the toolbar's spin boxes:
        // the next arrow key would change the batch. The graph is where the user was looking.
        m_view->setFocus(Qt::OtherFocusReason);
    });

    QSettings settings;
    // First run: 1400x900, or what the screen holds (a 1366x768 laptop got a window taller and
    // wider than its screen, the Solver dock's buttons off the right edge). The title bar and
    // a panel take some of the available height.
    QSize initial(1400, 900);
    if (const QScreen *screen = QGuiApplication::primaryScreen())
        initial = initial.boundedTo(screen->availableGeometry().size() - QSize(16, 48));
    resize(initial);
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    m_colourMode->setCurrentIndex(settings.value(QStringLiteral("view/colourMode"), 0).toInt());
    rebuildRecentMenu();
}

MainWindow::~MainWindow()
{
    // The planner (a child) outlives this class's part of the object: its undo stack signals as
    // it is torn down, and updateTitle must not run on a half-destroyed window.
    // So must the planner's integration (a child too, made after the planner, so deleted after
    // it): its undo-stack handler read this window's document while the planner's stack cleared
    // itself (heap corruption when a window closed with training options on the stack).
    qDeleteAll(findChildren<PlannerIntegration *>(Qt::FindDirectChildrenOnly));
    if (m_planner) {
        m_planner->document()->undoStack()->disconnect(this);
        m_planner->document()->disconnect(this);
        m_planner->disconnect(this);
    }
}

void MainWindow::createActions()
{
    QMenu *file = menuBar()->addMenu(tr("&File"));
    QAction *open = file->addAction(tr("&Open Model..."), this, &MainWindow::openDialog);
    open->setShortcut(QKeySequence::Open);
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    m_recentMenu->setObjectName(QStringLiteral("recentMenu"));
    QAction *beside = file->addAction(tr("Open &Beside..."), this, [this] {
        QSettings settings;
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Open a Model Beside"), settings.value(QStringLiteral("lastDir")).toString(),
            tr("ONNX models (*.onnx);;All files (*)"));
        if (!path.isEmpty())
            openBeside(path);
    });
    beside->setObjectName(QStringLiteral("openBesideAction"));
    beside->setShortcut(QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key_O)); // Ctrl+Shift+O: session
    beside->setToolTip(tr("A second model beside this one: both graphs side by side and a table "
                          "of their figures"));
    QAction *reloadAction = file->addAction(tr("Re&load"), this, &MainWindow::reload);
    reloadAction->setShortcut(QKeySequence(Qt::Key_F5));
    file->addSeparator();
    // The planner session (.rematproj: model, batch, budget, pins, plans) is the user's document.
    QAction *openSession = file->addAction(tr("Open Sess&ion..."), this, [this] {
        if (!m_planner->maybeSave(this))
            return;
        const QString path = QFileDialog::getOpenFileName(this, tr("Open Session"), lastFolder(),
                                                          tr("Remat sessions (*.rematproj)"));
        if (!path.isEmpty())
            openSessionFile(path, false);
    });
    openSession->setObjectName(QStringLiteral("openSessionAction"));
    openSession->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
    m_saveAction = file->addAction(tr("&Save Session"), this, [this] { saveSession(); });
    m_saveAction->setObjectName(QStringLiteral("saveSessionAction"));
    m_saveAction->setShortcut(QKeySequence::Save);
    QAction *saveAs = file->addAction(tr("Save Session &As..."), this, [this] { saveSessionAs(); });
    saveAs->setObjectName(QStringLiteral("saveSessionAsAction"));
    saveAs->setShortcut(QKeySequence::SaveAs);
    file->addSeparator();
    QMenu *exportMenu = file->addMenu(tr("&Export"));
    exportMenu->setObjectName(QStringLiteral("exportMenu"));
    QAction *png = exportMenu->addAction(tr("Graph as &PNG..."), this,
                                         [this] { exportDialog(QStringLiteral("png")); });
    png->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
    QAction *svg = exportMenu->addAction(tr("Graph as &SVG..."), this,
                                         [this] { exportDialog(QStringLiteral("svg")); });
    svg->setShortcut(QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key_E));
    m_exportMenu = exportMenu; // the planner's exports join once the planner exists
    file->addSeparator();
    QAction *quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);

    QMenu *edit = menuBar()->addMenu(tr("&Edit"));
    edit->setObjectName(QStringLiteral("editMenu"));
    QAction *findAction = edit->addAction(tr("&Find..."), this, &MainWindow::find);
    findAction->setShortcut(QKeySequence::Find);
    QAction *nextAction = edit->addAction(tr("Find &Next"), this, &MainWindow::findNext);
    nextAction->setShortcut(QKeySequence::FindNext);
    QAction *prevAction = edit->addAction(tr("Find &Previous"), this, &MainWindow::findPrevious);
    prevAction->setShortcut(QKeySequence::FindPrevious);

    QMenu *view = menuBar()->addMenu(tr("&View"));
    view->setObjectName(QStringLiteral("viewMenu"));
    QAction *fit = view->addAction(tr("&Fit to Window"), this, [this] { m_view->fitAll(); });
    fit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_0));
    QAction *zoomIn = view->addAction(tr("Zoom &In"), this, [this] { m_view->zoomBy(1.25); });
    zoomIn->setShortcuts(
        {QKeySequence(Qt::Key_Plus), QKeySequence(Qt::Key_Equal), QKeySequence::ZoomIn});
    QAction *zoomOut = view->addAction(tr("Zoom &Out"), this, [this] { m_view->zoomBy(0.8); });
    zoomOut->setShortcuts({QKeySequence(Qt::Key_Minus), QKeySequence::ZoomOut});
    QAction *actual = view->addAction(tr("&Actual Size"), this, [this] { m_view->resetZoom(); });
    actual->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_1));
    view->addSeparator();
    view->addAction(tr("&Expand All Groups"), this, [this] { collapseToDepth(0); });
    view->addAction(tr("&Collapse Top-Level Groups"), this, [this] { collapseToDepth(1); });
    view->addSeparator();
    m_foldShapes = QSettings().value(QStringLiteral("view/foldShapeArithmetic"), true).toBool();
    m_foldAction = view->addAction(tr("Fold S&hape Arithmetic"));
    m_foldAction->setObjectName(QStringLiteral("foldShapeArithmeticAction"));
    m_foldAction->setCheckable(true);
    m_foldAction->setChecked(m_foldShapes);
    m_foldAction->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_K));
    m_foldAction->setToolTip(
        tr("Show constants computed from static shapes (Constant, Shape, Gather, Unsqueeze, "
           "Concat... feeding Reshape and Expand) inside the node that uses them, as values "
           "in the inspector, instead of as boxes"));
    connect(m_foldAction, &QAction::toggled, this, [this](bool on) {
        if (m_updatingControls)
            return;
        QSettings().setValue(QStringLiteral("view/foldShapeArithmetic"),
                             on); // the user's choice only
        setFoldShapeArithmetic(on);
    });
    for (QAction *a : {fit, zoomIn, zoomOut, actual})
        addAction(a); // shortcuts work while the view has focus
}

void MainWindow::createToolBar()
{
    QToolBar *bar = addToolBar(tr("Explorer"));
    bar->setObjectName(QStringLiteral("explorerToolBar"));
    bar->addAction(tr("Open"), this, &MainWindow::openDialog);
    bar->addAction(tr("Fit"), this, [this] { m_view->fitAll(); });
    bar->addSeparator();
    bar->addWidget(new QLabel(tr(" Batch "), this));
    m_batch = new QSpinBox(this);
    m_batch->setObjectName(QStringLiteral("batchSpin"));
    m_batch->setRange(1, 65536);
    // Keys reach it only after a click: focus passed along the chain (a closed find bar, a
    // closed dialog) must not turn the next arrow key into a re-import.
    m_batch->setFocusPolicy(Qt::ClickFocus);
    // A typed batch is one edit, applied when editing finishes (Enter, focus leaves): typing
    // "-3" or "9999" re-imported at every intermediate value, each its own undo step.
    m_batch->setKeyboardTracking(false);
    m_batch->setToolTip(
        tr("Batch size: the model is re-imported and every shape, byte and FLOP figure updates"));
    bar->addWidget(m_batch);
    connect(m_batch, &QSpinBox::valueChanged, this, [this] {
        if (!m_updatingControls)
            m_batchTimer->start();
    });
    m_inputsAction = bar->addAction(tr("Inputs..."), this, &MainWindow::editInputs);
    m_inputsAction->setObjectName(QStringLiteral("inputsAction"));
    m_inputsAction->setToolTip(
        tr("Free dims, input shapes, scalar input values and semantics the model is "
           "imported with"));
    m_inputsAction->setEnabled(false);
    m_inputsLabel = new QLabel(this);
    m_inputsLabel->setObjectName(QStringLiteral("inputsLabel"));
    bar->addWidget(m_inputsLabel);
    bar->addSeparator();
    bar->addWidget(new QLabel(tr(" Collapse to depth "), this));
    m_depth = new QSpinBox(this);
    m_depth->setObjectName(QStringLiteral("depthSpin"));
    m_depth->setRange(0, 32);
    m_depth->setFocusPolicy(Qt::ClickFocus);
    m_depth->setSpecialValueText(tr("none"));
    m_depth->setToolTip(tr("Collapse every namespace group at this depth (none: expand all)"));
    bar->addWidget(m_depth);
    connect(m_depth, &QSpinBox::valueChanged, this, [this](int d) {
        if (!m_updatingControls)
            collapseToDepth(d);
    });
    bar->addAction(m_foldAction);
    bar->addSeparator();
    bar->addWidget(new QLabel(tr(" Colour by "), this));
    m_colourMode = new QComboBox(this);
    m_colourMode->setObjectName(QStringLiteral("colourModeCombo"));
    for (ColourMode m : kColourModes)
        m_colourMode->addItem(colourModeName(m), int(m));
    bar->addWidget(m_colourMode);
    connect(m_colourMode, &QComboBox::currentIndexChanged, this, [this](int i) {
        if (m_colourMode->itemData(i).toInt() < 0)
            return; // a mode added by the planner ("Plan decision"): it handles its own
        setColourMode(ColourMode(m_colourMode->itemData(i).toInt()));
        QSettings().setValue(QStringLiteral("view/colourMode"), i);
    });
}

void MainWindow::createDocks()
{
    m_inspector = new InspectorPanel(m_document, this);
    // Trainable / frozen / buffer, as the user decides it in the inspector: a --classify
    // override of the import settings (remembered per file and kept in sessions), re-imported.
    connect(m_inspector, &InspectorPanel::kindChangeRequested, this,
            [this](const QString &name, core::ir::ValueKind kind) {
                core::onnx::ImportOptions s = importSettings();
                s.kindOverrides[name.toStdString()] = kind;
                setImportSettings(s);
            });
    auto *inspectorDock = new QDockWidget(tr("Inspector"), this);
    inspectorDock->setObjectName(QStringLiteral("inspectorDock"));
    inspectorDock->setWidget(m_inspector);
    addDockWidget(Qt::RightDockWidgetArea, inspectorDock);
    m_minimap = new Minimap(m_view, this);
    auto *mapDock = new QDockWidget(tr("Overview"), this);
    mapDock->setObjectName(QStringLiteral("overviewDock"));
    mapDock->setWidget(m_minimap);
    addDockWidget(Qt::RightDockWidgetArea, mapDock);
    resizeDocks({inspectorDock, mapDock}, {520, 280}, Qt::Vertical);
    resizeDocks({inspectorDock}, {380}, Qt::Horizontal);
}

bool MainWindow::isBusy() const { return m_loader->busy() || m_layoutRunner->busy(); }

void MainWindow::setBusy(bool busy, const QString &what)
{
    m_progress->setVisible(busy);
    m_cancel->setVisible(busy);
    m_phase->setVisible(busy);
    m_phase->setText(what);
    if (busy)
        m_progress->setValue(0);
    if (!busy)
        QApplication::restoreOverrideCursor();
}

ModelPane *MainWindow::openBeside(const QString &path)
{
    if (!m_beside) {
        m_beside = new ModelPane(m_problems, this);
        m_split->addWidget(m_beside);
        m_split->setSizes({1, 1});
        connect(m_beside, &ModelPane::closeRequested, this, &MainWindow::closeBeside);
        connect(m_beside, &ModelPane::loadFailed, this, &MainWindow::reportError);
        m_beside->setFoldShapeArithmetic(m_foldShapes);
        m_beside->setColourMode(m_document->colourMode());
    }
    // The planner's training options on both sides: the left's figures are the planner's step.
    m_beside->setTraining(m_planner->document()->training());
    m_beside->setReference(besideReference());
    // The same batch as the model on the left, so the figures compare like for like.
    const int64_t batch = m_document->hasModel() ? m_document->model().graph->info().batch : 0;
    m_beside->openModel(path, std::max<int64_t>(0, batch),
                        rememberedImportSettings(QFileInfo(path).absoluteFilePath()));
    m_stack->setCurrentIndex(1);
    return m_beside;
}

std::optional<LoadedModel> MainWindow::besideReference() const
{
    if (!m_document->hasModel())
        return std::nullopt;
    LoadedModel reference = m_document->model();
    // The explorer builds its step with the default options; the planner's problem (same file,
    // batch and inputs) has the user's optimizer and precision. Without it, no step figures.
    const std::shared_ptr<const PlannerProblem> &p = m_planner->problem();
    if (p && reference.problem && p->forward == reference.problem->forward)
        reference.problem = p;
    else if (p && reference.problem &&
             QFileInfo(QString::fromStdString(p->modelPath)).absoluteFilePath() ==
                 QFileInfo(reference.path).absoluteFilePath() &&
             p->forward && reference.graph &&
             p->forward->info().batch == reference.graph->info().batch)
        reference.problem = p;
    else if (m_planner->document()->training() != core::training::TrainingOptions{})
        reference.problem.reset();
    return reference;
}

void MainWindow::closeBeside()
{
    if (!m_beside)
        return;
    m_beside->hide();
    m_beside->deleteLater();
    m_beside = nullptr;
}

void MainWindow::openDialog()
{
    QSettings settings;
    // Where the model on screen is (opened from the command line or Open Recent, it never set
    // lastDir: the dialog started in the working directory), else where the last dialog was.
    const QString dir = m_currentPath.isEmpty()
                            ? settings.value(QStringLiteral("lastDir")).toString()
                            : QFileInfo(m_currentPath).absolutePath();
    const QString path = QFileDialog::getOpenFileName(this, tr("Open ONNX Model"), dir,
                                                      tr("ONNX models (*.onnx);;All files (*)"));
    if (!path.isEmpty()) {
        settings.setValue(QStringLiteral("lastDir"), QFileInfo(path).absolutePath());
        openModel(path);
    }
}

void MainWindow::openModel(const QString &path)
{
    openModel(path, rememberedImportSettings(QFileInfo(path).absoluteFilePath()));
}

void MainWindow::openModel(const QString &path, const core::onnx::ImportOptions &settings)
{
    const QString abs = QFileInfo(path).absoluteFilePath();
    if (!QFileInfo::exists(abs)) {
        reportError(tr("%1: no such file").arg(path));
        return;
    }
    // A file that is not a model is refused before the unsaved-session question: answering it
    // for nothing (and perhaps saving) was the wrong order. Only parsed here when the question
    // would come; otherwise the load says what is wrong.
    if (m_planner && m_planner->wouldAskBeforeOpening(abs))
        if (auto sig = core::onnx::readModelSignature(abs.toStdString()); !sig) {
            reportError(tr("%1 cannot be opened: %2 (nothing was changed)")
                            .arg(QFileInfo(abs).fileName(),
                                 QString::fromStdString(sig.status().message())));
            return;
        }
    // Another model replaces the planner session: its unsaved plans are not dropped unasked.
    if (m_planner && !m_planner->maybeSaveBeforeOpening(this, abs))
        return;
    m_currentPath = abs;
    m_firstLayoutOfModel = true;
    const int64_t batch = settings.batch > 0
                              ? settings.batch
                              : QSettings().value(QStringLiteral("batch/") + abs, 0).toLongLong();
    setBusy(true, tr("loading"));
    m_loader->load(abs, batch, settings);
}

core::onnx::ImportOptions MainWindow::importSettings() const
{
    return m_document->hasModel() ? m_document->model().settings : core::onnx::ImportOptions{};
}

void MainWindow::setImportSettings(const core::onnx::ImportOptions &settings)
{
    if (m_currentPath.isEmpty())
        return;
    rememberImportSettings(m_currentPath, settings);
    setBusy(true, tr("re-importing"));
    m_loader->load(m_currentPath, m_document->hasModel() ? m_document->model().requestedBatch : 0,
                   settings);
}

void MainWindow::editInputs()
{
    if (m_currentPath.isEmpty())
        return;
    auto sig = core::onnx::readModelSignature(m_currentPath.toStdString());
    if (!sig) {
        reportError(QString::fromStdString(sig.status().message()));
        return;
    }
    showInputsDialog(m_currentPath, *sig, importSettings(), {});
}

void MainWindow::onInputsNeeded(const QString &path, const QString &message,
                                const core::onnx::ModelSignature &signature,
                                const core::onnx::ImportOptions &settings)
{
    // The model is already shown (browsable); its training step waits for these values.
    statusBar()->showMessage(
        tr("%1: give the input sizes to derive the training step").arg(QFileInfo(path).fileName()),
        8000);
    if (!m_interactive)
        return;
    showInputsDialog(path, signature, settings, message);
}

void MainWindow::showInputsDialog(const QString &path, const core::onnx::ModelSignature &signature,
                                  const core::onnx::ImportOptions &settings, const QString &problem)
{
    // Non-modal for the event loop (like the error box): tests and scripted runs can fill it in.
    auto *dialog = new InputSettingsDialog(signature, settings, problem, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    const int64_t batch = m_document->hasModel() && m_document->model().path == path
                              ? m_document->model().requestedBatch
                              : QSettings().value(QStringLiteral("batch/") + path, 0).toLongLong();
    connect(dialog, &QDialog::finished, this, [this, dialog, path, batch](int result) {
        if (result != QDialog::Accepted) {
            if (!m_document->hasModel())
                m_currentPath.clear();
            else
                m_currentPath = m_document->model().path;
            return;
        }
        const core::onnx::ImportOptions chosen = dialog->settings();
        rememberImportSettings(path, chosen);
        m_currentPath = path;
        setBusy(true, tr("loading"));
        m_loader->load(path, batch, chosen);
    });
    dialog->open();
}

void MainWindow::reload()
{
    if (m_currentPath.isEmpty())
        return;
    setBusy(true, tr("reloading"));
    m_loader->load(m_currentPath, m_document->hasModel() ? m_document->model().requestedBatch : 0,
                   importSettings());
}

void MainWindow::setBatch(int64_t batch)
{
    if (!m_document->hasModel() || batch <= 0)
        return;
    if (batch == m_document->graph().info().batch && m_document->model().requestedBatch == batch)
        return;
    QSettings().setValue(QStringLiteral("batch/") + m_currentPath, qlonglong(batch));
    setBusy(true, tr("re-importing at batch %1").arg(batch));
    m_loader->load(m_currentPath, batch, importSettings());
}

std::shared_ptr<layout::GraphLayouter>
MainWindow::makeLayouter(std::shared_ptr<const ir::Graph> graph) const
{
    return makeExplorerLayouter(std::move(graph), m_foldShapes);
}

layout::CollapsePolicy MainWindow::collapsePolicy() const
{
    // What a window holds at a legible zoom, as Model Explorer opens: a graph area of 1000x600
    // pixels shows about 8 rows of boxes at 0.8 scale, so a model of up to ~150 drawn nodes
    // (a few screens to scroll through) opens expanded; a larger one at the deepest depth with
    // at most ~120 boxes. A bigger window takes more before collapsing, a smaller one fewer.
    const QSize area = m_view->isVisible() ? m_view->viewport()->size() : QSize(1000, 600);
    const double ratio =
        std::clamp(area.width() * double(area.height()) / (1000.0 * 600.0), 0.5, 3.0);
    layout::CollapsePolicy policy;
    policy.expandedNodeLimit = int(150 * ratio);
    policy.boxLimit = int(120 * ratio);
    return policy;
}

void MainWindow::setFoldShapeArithmetic(bool on)
{
    if (m_foldAction->isChecked() != on) {
        m_updatingControls = true;
        m_foldAction->setChecked(on);
        m_updatingControls = false;
    }
    if (on == m_foldShapes)
        return;
    m_foldShapes = on;
    if (m_beside)
        m_beside->setFoldShapeArithmetic(on);
    if (!m_document->hasModel())
        return;
    // A new layouter: which nodes exist changes the groups and every interior. Building it is a
    // linear pass (the layout itself runs on the worker); the collapse state carries over by
    // namespace.
    auto layouter = makeLayouter(m_document->model().graph);
    const int folded = layouter->hiddenCount();
    m_document->setLayouter(std::move(layouter));
    statusBar()->showMessage(
        on ? tr("%1 shape-arithmetic nodes folded into their consumers").arg(folded)
           : tr("Shape arithmetic shown as nodes"),
        4000);
    // Boxes move sideways a lot (groups lose or regain their shape rows): keep the selection in view.
    m_pendingReveal = m_document->selectedNode();
    startLayout();
}

void MainWindow::onLoaded(const LoadedModel &model)
{
    auto layouter = makeLayouter(model.graph);
    const int depth = m_initialDepth >= 0 ? m_initialDepth
                                          : layout::autoCollapseDepth(*layouter, collapsePolicy());
    const bool sameFile = m_document->hasModel() && m_document->model().path == model.path;
    // Another file is a new, untitled planner session from the moment it is on screen: the old
    // model's plans, pins and session file must not stay live beside it (the user agreed to
    // discard them when asked), nor colour its graph, whether or not its training step builds.
    if (m_planner)
        m_planner->startNewSession(model.path);
    m_fusedGroups.clear(); // a fresh import is ungrouped until the planner's step says otherwise
    m_document->setModel(model, layout::collapseAtDepth(*layouter, depth));
    m_document->setLayouter(layouter);
    m_updatingControls = true;
    if (!sameFile)
        m_depth->setValue(depth);
    m_batch->setValue(int(std::max<int64_t>(1, model.graph->info().batch)));
    m_updatingControls = false;
    m_inputsAction->setEnabled(true);
    const QString summary = importSettingsSummary(model.settings);
    // At most 22 average characters on the toolbar, the whole summary in the tooltip: a file's
    // three free dims ("p2o.DynamicDimension.0=1 p2o.DynamicDimension.1=224 ...", 460 px) pushed
    // the depth box and "Colour by" into the toolbar's overflow menu at 1366 and 1080 px.
    const int room = 22 * m_inputsLabel->fontMetrics().averageCharWidth();
    m_inputsLabel->setText(summary.isEmpty() ? QString()
                                             : QStringLiteral(" ") +
                                                   m_inputsLabel->fontMetrics().elidedText(
                                                       summary, Qt::ElideRight, room) +
                                                   QStringLiteral(" "));
    m_inputsLabel->setToolTip(
        summary.isEmpty() ? QString() : tr("Imported with %1 (Inputs... to change)").arg(summary));
    m_stack->setCurrentIndex(1);
    if (m_beside)
        m_beside->setReference(besideReference());
    addRecentFile(model.path);
    // A session's model (re)loading keeps the session above it in File > Open Recent.
    if (m_planner && !m_planner->sessionPath().isEmpty() &&
        QFileInfo(m_planner->document()->modelPath()).absoluteFilePath() ==
            QFileInfo(model.path).absoluteFilePath())
        addRecentFile(m_planner->sessionPath());
    updateTitle();
    updateSummary();
    startLayout();
}

void MainWindow::showPlannerStep(std::shared_ptr<const core::pipeline::Problem> step)
{
    if (!m_document->hasModel())
        return;
    const LoadedModel &m = m_document->model();
    const std::shared_ptr<const ir::Graph> imported =
        m.problem && m.problem->forward ? m.problem->forward : m.graph;
    // Node ids must mean the same nodes: the same file imported at the same batch and inputs.
    const bool matches = step && step->isValid() && step->forward &&
                         QFileInfo(QString::fromStdString(step->modelPath)).absoluteFilePath() ==
                             QFileInfo(m.path).absoluteFilePath() &&
                         step->forward->nodeCount() == imported->nodeCount() &&
                         step->forward->info().batch == imported->info().batch &&
                         sameImportSettings(step->options.import, m.settings);
    if (!matches)
        step.reset();
    std::vector<ir::NodeGroup> groups;
    if (step)
        groups = fusedAttentionGroups(*step->training);
    std::vector<std::vector<NodeId>> members;
    for (const ir::NodeGroup &g : groups)
        members.push_back(g.nodes);
    m_document->setPlannerStep(step);
    if (members == m_fusedGroups)
        return;
    m_fusedGroups = std::move(members);
    LoadedModel regrouped = m;
    regrouped.graph = groups.empty()
                          ? imported
                          : std::make_shared<const ir::Graph>(imported->withNodeGroups(groups));
    // Groups of the file keep their state; each fused pattern starts collapsed: one box, as
    // the training step runs it.
    layout::CollapseSet collapsed;
    const size_t fileGroups = imported->namespaces().size();
    for (NamespaceId ns : m_document->collapsed())
        if (ns.index() < fileGroups)
            collapsed.insert(ns);
    for (size_t i = fileGroups; i < regrouped.graph->namespaces().size(); ++i)
        collapsed.insert(NamespaceId(int32_t(i)));
    auto layouter = makeLayouter(regrouped.graph);
    m_document->setRegroupedModel(std::move(regrouped), std::move(collapsed));
    m_document->setLayouter(std::move(layouter));
    m_pendingReveal = m_document->selectedNode();
    startLayout();
    statusBar()->showMessage(
        m_fusedGroups.empty()
            ? tr("Attention shown as the file writes it")
            : tr("%n fused attention pattern(s) shown as groups (double-click one to open it)",
                 nullptr, int(m_fusedGroups.size())),
        6000);
}

void MainWindow::onLoadFailed(const QString &path, const QString &message)
{
    setBusy(false, {});
    statusBar()->clearMessage();
    reportError(message.contains(QFileInfo(path).fileName())
                    ? message
                    : tr("%1: %2").arg(QFileInfo(path).fileName(), message));
    if (!m_document->hasModel())
        m_currentPath.clear();
    else
        m_currentPath = m_document->model().path;
}

void MainWindow::startLayout()
{
    if (!m_document->layouter())
        return;
    setBusy(true, tr("layout"));
    m_layoutRunner->run(m_document->layouter(), m_document->collapsed());
}

void MainWindow::onLayoutFinished(std::shared_ptr<const layout::GraphLayout> l, double ms)
{
    setBusy(false, {});
    m_lastLayoutMs = ms;
    const QPointF centre = m_view->mapToScene(m_view->viewport()->rect().center());
    m_document->setLayout(std::move(l));
    if (m_firstLayoutOfModel) {
        frameReadable();
        m_firstLayoutOfModel = false;
    } else if (m_pendingReveal.valid()) {
        m_view->reveal(m_scene->itemShowing(m_pendingReveal));
        m_pendingReveal = NodeId();
    } else if (m_refitAfterLayout) {
        refitAfterCollapse(m_pendingToggle);
    } else {
        m_view->centerOn(centre);
    }
    m_refitAfterLayout = false;
    m_pendingToggle = NamespaceId();
    // The scene's items were all replaced: far-zoom painting follows the new box count, and the
    // whole viewport is painted again (a collapse could leave the old picture until the next
    // zoom, with tooltips of the new boxes over it).
    m_view->updateOverview();
    m_view->viewport()->update();
    m_minimap->refit();
    // A closed find bar keeps its text for the next Ctrl+F, but its hits stay cleared.
    if (!m_searchBar->isHidden() && !m_searchBar->query().isEmpty()) {
        // New boxes: mark the hits again, keeping the one being shown.
        const NodeId current = m_hitIndex >= 0 ? m_hits[size_t(m_hitIndex)] : NodeId();
        runSearch(m_searchBar->query());
        const auto it = std::find(m_hits.begin(), m_hits.end(), current);
        if (current.valid() && it != m_hits.end()) {
            m_hitIndex = int(it - m_hits.begin());
            m_scene->setCurrentSearchHit(current);
            m_searchBar->setResultText(tr("%1 of %2").arg(m_hitIndex + 1).arg(m_hits.size()));
        }
    }
    updateSummary();
    const int folded = m_document->layouter() ? m_document->layouter()->hiddenCount() : 0;
    m_layoutInfo->setText(
        folded > 0 ? tr("%1 boxes, %2 folded, layout %3 ms")
                         .arg(m_scene->boxCount())
                         .arg(folded)
                         .arg(ms, 0, 'f', 1)
                   : tr("%1 boxes, layout %2 ms").arg(m_scene->boxCount()).arg(ms, 0, 'f', 1));
    emit layoutFinished();
    if (!property("shown").toBool() ||
        m_document->model().path != property("shownPath").toString()) {
        setProperty("shown", true);
        setProperty("shownPath", m_document->model().path);
        emit modelShown();
    }
}

void MainWindow::onDocumentChanged(const DocumentChange &change)
{
    if (change.kind == DocumentChangeKind::ColourModeChanged ||
        change.kind == DocumentChangeKind::ModelReplaced)
        if (m_document->hasModel())
            m_legend->setLegend(m_document->colours().legend());
}

void MainWindow::collapseToDepth(int depth)
{
    m_updatingControls = true;
    m_depth->setValue(depth);
    m_updatingControls = false;
    if (!m_document->layouter())
        return;
    m_document->setCollapsed(layout::collapseAtDepth(*m_document->layouter(), depth));
    m_refitAfterLayout = true;
    startLayout();
}

void MainWindow::toggleGroup(NamespaceId ns)
{
    if (!m_document->hasModel())
        return;
    const layout::GraphLayouter *lay = m_document->layouter().get();
    if (!lay)
        return;
    layout::CollapseSet set =
        toggledCollapse(*lay, m_document->graph(), m_document->collapsed(), ns);
    m_document->setCollapsed(std::move(set));
    m_pendingToggle = ns;
    m_refitAfterLayout = true;
    startLayout();
}

void MainWindow::setColourMode(ColourMode mode)
{
    const int index = m_colourMode->findData(int(mode));
    if (index >= 0 && index != m_colourMode->currentIndex())
        m_colourMode->setCurrentIndex(index);
    m_document->setColourMode(mode);
    if (m_beside)
        m_beside->setColourMode(mode);
}

QString MainWindow::statusSummary() const { return m_summary->text(); }

void MainWindow::updateSummary()
{
    if (!m_document->hasModel()) {
        m_summary->setText(tr("No model loaded"));
        return;
    }
    const ModelSummary &s = m_document->model().metrics->summary;
    QString text = tr("%1 nodes  |  %2 params (%3)  |  activations %4  |  %5  |  batch %6")
                       .arg(s.nodes)
                       .arg(s.parameters)
                       .arg(QString::fromStdString(formatBytes(s.parameterBytes)))
                       .arg(QString::fromStdString(formatBytes(s.activationBytes)))
                       .arg(QString::fromStdString(formatFlops(s.forwardFlops)))
                       .arg(s.batch > 0 ? QString::number(s.batch) : tr("as in file"));
    if (s.unknownShapes > 0)
        text += tr("  |  %1 outputs of unknown size").arg(s.unknownShapes);
    m_summary->setText(text);
}

void MainWindow::reportError(const QString &text)
{
    // Core's advice names CLI flags; here it names the dialog field instead.
    const QString message = guiWording(text);
    emit errorOccurred(message);
    // Non-modal for the event loop (open(), not exec()): tests and scripted runs can observe and
    // close it, and the window stays usable behind it.
    auto *box =
        new QMessageBox(QMessageBox::Warning, tr("Remat Studio"), message, QMessageBox::Ok, this);
    box->setObjectName(QStringLiteral("errorBox"));
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
}

void MainWindow::addRecentFile(const QString &path)
{
    QSettings settings;
    QStringList list = settings.value(QStringLiteral("recentFiles")).toStringList();
    list.removeAll(path);
    list.prepend(path);
    while (list.size() > kMaxRecent)
        list.removeLast();
    settings.setValue(QStringLiteral("recentFiles"), list);
    rebuildRecentMenu();
}

QStringList MainWindow::recentFiles() const
{
    return QSettings().value(QStringLiteral("recentFiles")).toStringList();
}

bool MainWindow::isSessionFile(const QString &path)
{
    return QFileInfo(path).suffix().compare(QStringLiteral("rematproj"), Qt::CaseInsensitive) == 0;
}

void MainWindow::openSessionFile(const QString &path, bool askToSave)
{
    if (askToSave && !m_planner->maybeSave(this))
        return;
    rememberFolder(path);
    if (core::Status st = m_planner->openSession(path); !st.isOk())
        reportError(QString::fromStdString(st.message()));
    updateTitle();
}

void MainWindow::rebuildRecentMenu()
{
    m_recentMenu->clear();
    const QStringList list = recentFiles();
    // Models and sessions (.rematproj) alike: a session reopens its model, pins and plans.
    for (const QString &path : list) {
        const bool session = isSessionFile(path);
        QAction *a =
            m_recentMenu->addAction(QFileInfo(path).fileName() + QStringLiteral("  (") +
                                        QFileInfo(path).absolutePath() + QStringLiteral(")"),
                                    this, [this, path, session] {
                                        if (session)
                                            openSessionFile(path, true);
                                        else
                                            openModel(path);
                                    });
        a->setToolTip(session ? tr("Planner session: its model, batch, pins and plans")
                              : tr("Model"));
    }
    m_recentMenu->setEnabled(!list.isEmpty());
}

void MainWindow::resizeEvent(QResizeEvent *event)
{
    QMainWindow::resizeEvent(event);
    // The docks are laid out for the new size after this event: fit them on the next pass.
    if (!m_dockFitPending) {
        m_dockFitPending = true;
        QTimer::singleShot(0, this, [this] {
            m_dockFitPending = false;
            fitBottomDocks();
        });
    }
}

void MainWindow::fitBottomDocks()
{
    QList<QDockWidget *> bottom;
    int dockHeight = 0;
    for (QDockWidget *d : findChildren<QDockWidget *>())
        if (d->isVisible() && !d->isFloating() && dockWidgetArea(d) == Qt::BottomDockWidgetArea) {
            bottom << d;
            dockHeight = std::max(dockHeight, d->height());
        }
    QWidget *graph = graphView();
    if (bottom.isEmpty() || !graph || !graph->isVisible())
        return;
    const int want = int(std::ceil(kGraphHeightShare * height()));
    const int missing = want - graph->height();
    if (missing <= 0)
        return;
    const int target = std::max(1, dockHeight - missing);
    resizeDocks(bottom, QList<int>(bottom.size(), target), Qt::Vertical);
}

void MainWindow::closeEvent(QCloseEvent *event)
{
    if (m_planner && !m_planner->maybeSave(this)) {
        event->ignore(); // the user chose Cancel on the unsaved-session prompt
        return;
    }
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    m_loader->cancel();
    m_layoutRunner->cancel();
    QMainWindow::closeEvent(event);
}

void MainWindow::dragEnterEvent(QDragEnterEvent *event)
{
    if (event->mimeData()->hasUrls() && !event->mimeData()->urls().isEmpty() &&
        event->mimeData()->urls().front().isLocalFile())
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent *event)
{
    const QList<QUrl> urls = event->mimeData()->urls();
    if (!urls.isEmpty() && urls.front().isLocalFile()) {
        openModel(urls.front().toLocalFile());
        event->acceptProposedAction();
    }
}

void MainWindow::find()
{
    m_searchBar->activate();
    // Closing the bar cleared the marks; its text comes back selected, so do its hits.
    if (!m_searchBar->query().isEmpty())
        runSearch(m_searchBar->query());
}

void MainWindow::runSearch(const QString &text)
{
    m_hits = m_scene->search(text);
    m_hitIndex = -1;
    if (text.trimmed().isEmpty())
        m_searchBar->setResultText({});
    else
        m_searchBar->setResultText(m_hits.empty() ? tr("no match")
                                                  : tr("%1 matches").arg(m_hits.size()));
}

void MainWindow::findNext()
{
    if (m_hits.empty())
        return;
    m_hitIndex = (m_hitIndex + 1) % int(m_hits.size());
    showSearchHit();
}

void MainWindow::findPrevious()
{
    if (m_hits.empty())
        return;
    m_hitIndex = m_hitIndex <= 0 ? int(m_hits.size()) - 1 : m_hitIndex - 1;
    showSearchHit();
}

void MainWindow::showSearchHit()
{
    const NodeId node = m_hits[size_t(m_hitIndex)];
    m_searchBar->setResultText(tr("%1 of %2").arg(m_hitIndex + 1).arg(m_hits.size()));
    m_scene->setCurrentSearchHit(node);
    revealNode(node);
}

void MainWindow::revealNode(NodeId node)
{
    if (!m_document->hasModel() || !node.valid() || node.index() >= m_document->graph().nodeCount())
        return;
    // A folded node: the inspector shows the node itself, the view the box it is folded into.
    const ir::Graph &g = m_document->graph();
    NodeId shown = node;
    if (const auto lay = m_document->layouter(); lay && lay->isHidden(node)) {
        shown = lay->hostOf(node);
        const ir::Node &n = g.node(node);
        const QString what = QStringLiteral("%1 %2").arg(QString::fromStdString(n.opType),
                                                         QString::fromStdString(n.displayName()));
        statusBar()->showMessage(
            shown.valid() ? tr("%1 is folded shape arithmetic, shown inside %2 (View > Fold Shape "
                               "Arithmetic)")
                                .arg(what, QString::fromStdString(g.node(shown).displayName()))
                          : tr("%1 is folded shape arithmetic that nothing uses (View > Fold Shape "
                               "Arithmetic)")
                                .arg(what),
            6000);
    }
    m_document->setSelectedNode(node);
    NodeItem *item = m_scene->itemShowing(node);
    if (item && item->isGroup() && shown.valid()) {
        // Open the groups hiding the hit, then show it once laid out.
        layout::CollapseSet set = m_document->collapsed();
        for (NamespaceId ns = g.node(shown).ns; ns.valid(); ns = g.ns(ns).parent)
            set.erase(ns);
        m_pendingReveal = node;
        m_document->setCollapsed(std::move(set));
        startLayout();
        return;
    }
    m_view->reveal(item);
}

void MainWindow::exportDialog(const QString &format)
{
    if (!m_document->hasModel())
        return;
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export Graph"), suggestedPath(QString(), format),
        format == QLatin1String("svg") ? tr("SVG (*.svg)") : tr("PNG (*.png)"));
    if (path.isEmpty())
        return;
    rememberFolder(path);
    if (exportImage(path))
        statusBar()->showMessage(tr("Exported %1").arg(path), 4000);
}

QString MainWindow::lastFolder() const
{
    const QString saved = QSettings().value(QStringLiteral("lastSaveDir")).toString();
    if (!saved.isEmpty() && QFileInfo(saved).isDir())
        return saved;
    if (!m_planner->sessionPath().isEmpty())
        return QFileInfo(m_planner->sessionPath()).absolutePath();
    return m_currentPath.isEmpty() ? QDir::homePath() : QFileInfo(m_currentPath).absolutePath();
}

void MainWindow::rememberFolder(const QString &file)
{
    QSettings().setValue(QStringLiteral("lastSaveDir"), QFileInfo(file).absolutePath());
}

QString MainWindow::suggestedPath(const QString &what, const QString &suffix) const
{
    QString base = m_currentPath.isEmpty() ? QStringLiteral("untitled")
                                           : QFileInfo(m_currentPath).completeBaseName();
    if (!what.isEmpty())
        base += QStringLiteral("_") + what;
    return QDir(lastFolder()).filePath(base + QStringLiteral(".") + suffix);
}

bool MainWindow::saveSession()
{
    if (m_planner->sessionPath().isEmpty())
        return saveSessionAs();
    return saveSessionTo(m_planner->sessionPath());
}

bool MainWindow::saveSessionAs()
{
    const QString start = m_planner->sessionPath().isEmpty()
                              ? suggestedPath(QString(), QStringLiteral("rematproj"))
                              : m_planner->sessionPath();
    QString path = QFileDialog::getSaveFileName(this, tr("Save Session"), start,
                                                tr("Remat sessions (*.rematproj)"));
    if (path.isEmpty())
        return false;
    if (QFileInfo(path).suffix().isEmpty())
        path += QStringLiteral(".rematproj");
    return saveSessionTo(path);
}

bool MainWindow::saveSessionTo(const QString &path)
{
    if (m_planner->document()->modelPath().isEmpty()) {
        reportError(tr("Nothing to save: open a model first"));
        return false;
    }
    if (core::Status st = m_planner->saveSession(path); !st.isOk()) {
        reportError(tr("Saving %1 failed: %2").arg(path, QString::fromStdString(st.message())));
        return false;
    }
    rememberFolder(path);
    addRecentFile(path);
    updateTitle();
    statusBar()->showMessage(tr("Saved %1").arg(QDir::toNativeSeparators(path)), 5000);
    return true;
}

void MainWindow::updateTitle()
{
    // "session.rematproj (model.onnx)[*]" once saved, "model.onnx[*]" before; [*] shows as "*"
    // while the session has unsaved plans or pins (what File > Save would write).
    const PlannerDocument *pd = m_planner ? m_planner->document() : nullptr;
    QString name;
    if (m_planner && !m_planner->sessionPath().isEmpty())
        name = QFileInfo(m_planner->sessionPath()).fileName() +
               (m_currentPath.isEmpty()
                    ? QString()
                    : QStringLiteral(" (%1)").arg(QFileInfo(m_currentPath).fileName()));
    else if (m_document->hasModel())
        name = QFileInfo(m_document->model().path).fileName();
    const bool modified = pd && pd->isModified() && (!pd->plans().empty() || !pd->pins().isEmpty());
    setWindowTitle(name.isEmpty() ? tr("Remat Studio") : tr("%1[*] - Remat Studio").arg(name));
    setWindowModified(modified);
    if (m_saveAction)
        m_saveAction->setEnabled(pd && !pd->modelPath().isEmpty());
}

void MainWindow::createPlannerExports()
{
    // The planner's exports under File > Export too, each suggesting a file name in the folder
    // last saved to.
    auto add = [this](const QString &text, const QString &what, const QString &suffix,
                      const QString &filter, std::function<core::Status(const QString &)> write) {
        // The dialog's title is the menu text without its mnemonic '&' and its "...":
        // "Export Plan JSON", not "Plan &JSON...".
        QString title = text;
        title.remove(QLatin1Char('&'));
        if (title.endsWith(QStringLiteral("...")))
            title.chop(3);
        title = tr("Export %1").arg(title);
        QAction *a = m_exportMenu->addAction(text, this, [=, this] {
            const QString path =
                QFileDialog::getSaveFileName(this, title, suggestedPath(what, suffix), filter);
            if (path.isEmpty())
                return;
            rememberFolder(path);
            if (core::Status st = write(path); !st.isOk())
                reportError(tr("%1: %2").arg(path, QString::fromStdString(st.message())));
            else
                statusBar()->showMessage(tr("Exported %1").arg(path), 4000);
        });
        return a;
    };
    m_exportMenu->addSeparator();
    add(tr("Plan &JSON..."), QStringLiteral("plan"), QStringLiteral("json"),
        tr("Plan JSON (*.json)"),
        [this](const QString &p) { return m_planner->exportPlanJson(p); });
    add(tr("Memory &timeline CSV..."), QStringLiteral("timeline"), QStringLiteral("csv"),
        tr("CSV (*.csv)"), [this](const QString &p) { return m_planner->exportTimelineCsv(p); });
    add(tr("&Memory chart..."), QStringLiteral("memory"), QStringLiteral("png"),
        tr("Images (*.png *.svg)"),
        [this](const QString &p) { return m_planner->exportChart(m_planner->memoryChart(), p); });
    add(tr("P&areto chart..."), QStringLiteral("pareto"), QStringLiteral("png"),
        tr("Images (*.png *.svg)"),
        [this](const QString &p) { return m_planner->exportChart(m_planner->paretoChart(), p); });
    m_exportMenu->addSeparator();
    QAction *pytorch = m_exportMenu->addAction(tr("Apply in P&yTorch..."), this, [this] {
        const QString path = QFileDialog::getSaveFileName(
            this, tr("Apply in PyTorch"),
            suggestedPath(QStringLiteral("plan"), QStringLiteral("json")),
            tr("Plan JSON (*.json)"));
        if (path.isEmpty())
            return;
        rememberFolder(path);
        QString snippet;
        if (core::Status st = m_planner->exportForPyTorch(path, &snippet); !st.isOk()) {
            reportError(QString::fromStdString(st.message()));
            return;
        }
        auto *box = new QMessageBox(
            QMessageBox::Information, tr("Apply in PyTorch"),
            tr("Wrote %1, %2 and remat_apply.py. In Python, with `model` your "
               "torch.nn.Module:\n\n%3")
                .arg(path, snippet,
                     Planner::pytorchSnippet(path, m_planner->document()->modelPath())),
            QMessageBox::Ok, this);
        box->setTextInteractionFlags(Qt::TextSelectableByMouse);
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->open();
    });
    pytorch->setObjectName(QStringLiteral("fileApplyInPyTorch"));
    pytorch->setToolTip(tr("Export the plan with remat_apply.py and a 3-line snippet that applies "
                           "it to the PyTorch model"));
}

void MainWindow::createDockMenuAndHelp()
{
    // View > Panels brings back any dock the user closed (Qt's own toggle actions).
    QMenu *view = nullptr;
    for (QAction *a : menuBar()->actions())
        if (a->menu() && a->menu()->objectName() == QLatin1String("viewMenu"))
            view = a->menu();
    if (view) {
        view->addSeparator();
        QMenu *panels = view->addMenu(tr("&Panels"));
        panels->setObjectName(QStringLiteral("panelsMenu"));
        for (QDockWidget *dock : findChildren<QDockWidget *>(Qt::FindDirectChildrenOnly))
            panels->addAction(dock->toggleViewAction());
        panels->addSeparator();
        for (QToolBar *bar : findChildren<QToolBar *>(Qt::FindDirectChildrenOnly))
            panels->addAction(bar->toggleViewAction());
    }
    QMenu *help = menuBar()->addMenu(tr("&Help"));
    help->setObjectName(QStringLiteral("helpMenu"));
    QAction *guide = help->addAction(tr("&User Guide"), this, [this] {
        auto *dialog = new UserGuideDialog(this);
        dialog->setAttribute(Qt::WA_DeleteOnClose);
        dialog->show(); // beside the window: read while trying the steps
    });
    guide->setObjectName(QStringLiteral("userGuideAction"));
    guide->setShortcut(QKeySequence::HelpContents);
    QAction *keys = help->addAction(tr("&Keyboard Shortcuts"), this, [this] {
        auto *dialog = new ShortcutsDialog(menuBar(), this);
        dialog->setAttribute(Qt::WA_DeleteOnClose);
        dialog->open();
    });
    keys->setObjectName(QStringLiteral("shortcutsAction"));
    keys->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Slash));
    help->addSeparator();
    QAction *about = help->addAction(tr("&About Remat Studio"), this, [this] {
        QStringList extras = m_aboutExtras;
        if (m_aboutExtrasProvider)
            extras << m_aboutExtrasProvider();
        showAboutBox(this, extras);
    });
    about->setObjectName(QStringLiteral("aboutAction"));
    help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);
}

bool MainWindow::exportImage(const QString &path)
{
    if (!m_document->layout()) {
        reportError(tr("Nothing to export: no model is shown"));
        return false;
    }
    const QRectF source = m_scene->sceneRect();
    m_scene->clearSelection();
    if (path.endsWith(QLatin1String(".svg"), Qt::CaseInsensitive)) {
        QSvgGenerator svg;
        svg.setFileName(path);
        svg.setSize(source.size().toSize());
        svg.setViewBox(QRectF(QPointF(0, 0), source.size()));
        svg.setTitle(QFileInfo(m_currentPath).fileName());
        svg.setDescription(tr("Forward graph exported by Remat Studio"));
        QPainter painter;
        if (!painter.begin(&svg)) {
            reportError(tr("%1: cannot write the SVG file").arg(path));
            return false;
        }
        m_scene->render(&painter, QRectF(QPointF(0, 0), source.size()), source);
        painter.end();
        return true;
    }
    // PNG at up to 2x, capped so neither side passes 16k pixels (a QImage limit in practice).
    const double scale = std::min(2.0, 16000.0 / std::max(source.width(), source.height()));
    QImage image((source.size() * scale).toSize(), QImage::Format_ARGB32_Premultiplied);
    if (image.isNull()) {
        reportError(tr("%1: the graph is too large for one image").arg(path));
        return false;
    }
    image.fill(Qt::white);
    QPainter painter(&image);
    painter.setRenderHint(QPainter::Antialiasing);
    painter.setRenderHint(QPainter::TextAntialiasing);
    m_scene->render(&painter, QRectF(QPointF(0, 0), image.size()), source);
    painter.end();
    if (!image.save(path)) {
        reportError(tr("%1: cannot write the PNG file").arg(path));
        return false;
    }
    return true;
}

void MainWindow::refitAfterCollapse(NamespaceId toggled)
{
    // The whole graph when it reads at that scale; else the same zoom, on the group just opened
    // or closed (its top, when taller than the view), so the user's place is kept.
    const QTransform before = m_view->transform();
    m_view->fitAll();
    if (m_view->scale() >= kReadableScale || !m_document->layout())
        return;
    m_view->setTransform(before.m11() >= kReadableScale ? before : QTransform::fromScale(0.8, 0.8));
    m_view->updateOverview();
    const QRectF visible = m_view->mapToScene(m_view->viewport()->rect()).boundingRect();
    QRectF target;
    for (const layout::LayoutItem &it : m_document->layout()->items)
        if (toggled.valid() && it.ns == toggled && it.kind != layout::ItemKind::Node)
            target = QRectF(it.rect.x, it.rect.y, it.rect.width, it.rect.height);
    if (target.isNull()) {
        frameReadable();
        return;
    }
    const double y = target.height() > visible.height() * 0.9
                         ? target.top() - 20 + visible.height() / 2
                         : target.center().y();
    m_view->centerOn(QPointF(target.center().x(), y));
    emit m_view->viewportChanged();
}

void MainWindow::frameForScreenshot() { frameReadable(); }

void MainWindow::frameReadable() { frameGraphReadable(*m_view, *m_scene, *m_document); }

} // namespace remat::ui
