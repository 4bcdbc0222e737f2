#pragma once
// The Remat Studio main window: menus, toolbar, docks and the central graph explorer.
//   MainWindow w;  w.openModel("model.onnx");  w.show();
//   connect(&w, &MainWindow::layoutFinished, ...);  w.exportImage("graph.svg");

#include "core/layout/collapse_policy.h"
#include "core/layout/graph_layout.h"
#include "ui/colour_mode.h"
#include "ui/model_document.h"

#include <QMainWindow>
#include <QStringList>

#include <functional>
#include <memory>

class QAction;
class QComboBox;
class QLabel;
class QMenu;
class QProgressBar;
class QSpinBox;
class QSplitter;
class QStackedWidget;
class QTimer;
class QToolButton;

namespace remat::ui {

class GraphScene;
class GraphView;
class InspectorPanel;
class LayoutRunner;
class LegendWidget;
class Minimap;
class ModelLoader;
class ModelPane;
class Planner;
class ProblemCache;
class SearchBar;

class MainWindow : public QMainWindow
{
    Q_OBJECT
public:
    explicit MainWindow(QWidget *parent = nullptr);
    ~MainWindow() override;

    /// Loads a model off the GUI thread (at the batch and input settings remembered for that
    /// file), then lays it out. Any valid file opens: values whose shape cannot be inferred are
    /// shown as unknown and the inspector says what blocks the training step. When that is
    /// input sizes or scalar values, the Model Inputs dialog asks for them (prefilled; not in
    /// non-interactive runs).
    void openModel(const QString &path);
    /// Opens with these import settings (free dims, input shapes and values, classification,
    /// semantics; a batch > 0 in them is used too) instead of the remembered ones.
    void openModel(const QString &path, const core::onnx::ImportOptions &settings);
    /// The settings the shown model was imported with (defaults without a model).
    core::onnx::ImportOptions importSettings() const;
    /// Re-imports the current file with other settings (the batch box keeps its batch).
    void setImportSettings(const core::onnx::ImportOptions &settings);
    /// Opens the Model Inputs dialog for the current file.
    void editInputs();
    /// False for scripted runs (--screenshot): no dialog waits for a user.
    void setInteractive(bool on) { m_interactive = on; }
    /// File > Open Beside...: `path` in a second graph pane beside the first (ui/model_pane.h),
    /// at the shown model's batch, with a table of the two models' figures. Replaces the model
    /// beside, if any.
    ModelPane *openBeside(const QString &path);
    /// The pane beside (null when closed).
    ModelPane *besidePane() const { return m_beside; }
    void closeBeside();
    /// The shown model as the beside pane's table compares it: with the planner's training step
    /// (its optimizer, precision, ...) when the planner has this model's problem.
    std::optional<LoadedModel> besideReference() const;
    /// The planner's training step (its problem) for the model shown, or null: when it is for
    /// this file, batch and inputs, the document keeps it (the inspector lists what it fused) and
    /// each attention pattern it fused (--attention sdpa) is drawn as a collapsed group that
    /// opens to the original nodes; another step (or none) takes the groups away. Re-lays out
    /// only when the groups change.
    void showPlannerStep(std::shared_ptr<const core::pipeline::Problem> step);

    /// Re-imports the current file (F5) keeping batch and collapse state.
    void reload();
    /// Re-imports at another batch; every figure updates when it arrives.
    void setBatch(int64_t batch);
    /// Collapse state used for the next model opened: -1 picks a depth that keeps the view
    /// readable, 0 expands everything, N collapses every group at depth N.
    void setInitialCollapseDepth(int depth) { m_initialDepth = depth; }
    void collapseToDepth(int depth);
    /// Expands a collapsed group or collapses an expanded one, then lays out again.
    void toggleGroup(core::NamespaceId ns);
    void setColourMode(ColourMode mode);
    /// Selects `node` (the inspector shows it) and scrolls it into view, opening the groups that
    /// hide it (as a search hit is shown).
    void revealNode(core::NodeId node);
    /// Folds shape arithmetic (nodes computing constants: Constant, Shape, and ops on them) into
    /// their consumers: no boxes, no edges; the inspector lists the values. Re-lays out off the
    /// GUI thread. Default on; the View menu's choice is remembered.
    void setFoldShapeArithmetic(bool on);
    bool foldShapeArithmetic() const { return m_foldShapes; }
    /// Writes the whole graph as PNG or SVG (by extension). False (and an error) on failure.
    bool exportImage(const QString &path);
    /// Frames the graph as a model opens (Netron's start): the whole graph when its labels stay
    /// legible at that scale, else a legible zoom at the graph's top (the minimap shows the rest).
    void frameReadable();
    /// The same framing, for scripted screenshots.
    void frameForScreenshot();

    ModelDocument *document() const { return m_document; }
    GraphScene *graphScene() const { return m_scene; }
    GraphView *graphView() const { return m_view; }
    /// The graph's share of the window's height that the bottom docks leave it when the window
    /// shrinks (QMainWindow alone takes the whole loss from the graph: at 1080x700 it kept
    /// 186 px). fitBottomDocks() shortens the bottom docks, as far as their minimums allow, until
    /// the graph has it; run on every resize and when a bottom dock asks for room.
    static constexpr double kGraphHeightShare = 0.45;
    void fitBottomDocks();
    InspectorPanel *inspector() const { return m_inspector; }
    /// Rematerialization planning: docks, Planner menu, plan colours (ui/planner/).
    Planner *planner() const { return m_planner; }
    /// The problems loaded in this window, shared by the explorer and the planner (one import
    /// per open).
    const std::shared_ptr<ProblemCache> &problemCache() const { return m_problems; }
    SearchBar *searchBar() const { return m_searchBar; }
    /// File > Save Session (Ctrl+S): to the session's file, or asks for one (Save As). False
    /// when nothing was written (cancelled, or an error, which is reported).
    bool saveSession();
    bool saveSessionAs();
    /// Writes the planner session to `path` without a dialog; the title drops its unsaved
    /// marker and the status bar says "Saved".
    bool saveSessionTo(const QString &path);
    /// The name a save or export dialog suggests: "<model>_<what>.<suffix>" in the folder last
    /// saved to (else the session's or the model's folder).
    QString suggestedPath(const QString &what, const QString &suffix) const;
    /// Lines the About box adds after the libraries (the app's CUDA runtime and devices).
    void setAboutExtras(const QStringList &lines) { m_aboutExtras = lines; }
    /// More lines, computed each time the About box opens (listing CUDA devices opens the CUDA
    /// module, which a session that never asks should not load).
    void setAboutExtrasProvider(std::function<QStringList()> provider)
    {
        m_aboutExtrasProvider = std::move(provider);
    }
    /// Loading or laying out in the background.
    bool isBusy() const;
    QString statusSummary() const;
    /// Models and sessions, the newest first (File > Open Recent).
    QStringList recentFiles() const;
    /// Opens a planner session (.rematproj), asking first to save the current one when
    /// askToSave; an unreadable session is reported, not thrown.
    void openSessionFile(const QString &path, bool askToSave);
    static bool isSessionFile(const QString &path);

public slots:
    void find();
    void findNext();
    void findPrevious();

signals:
    /// A model is loaded and its first layout is on screen.
    void modelShown();
    /// Any layout (first, or after collapse / expand / batch) is on screen.
    void layoutFinished();
    /// Something failed; the message names the file and the problem. Also shown in a dialog.
    void errorOccurred(const QString &message);

protected:
    void closeEvent(QCloseEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;
    void dragEnterEvent(QDragEnterEvent *event) override;
    void dropEvent(QDropEvent *event) override;

private:
    void createActions();
    void createToolBar();
    void createDocks();
    void createPlannerExports();
    void createDockMenuAndHelp();
    void updateTitle();
    QString lastFolder() const;
    static void rememberFolder(const QString &file);
    void onLoaded(const LoadedModel &model);
    void onLoadFailed(const QString &path, const QString &message);
    void onInputsNeeded(const QString &path, const QString &message,
                        const core::onnx::ModelSignature &signature,
                        const core::onnx::ImportOptions &settings);
    void showInputsDialog(const QString &path, const core::onnx::ModelSignature &signature,
                          const core::onnx::ImportOptions &settings, const QString &problem);
    void onLayoutFinished(std::shared_ptr<const core::layout::GraphLayout> layout, double ms);
    void onDocumentChanged(const DocumentChange &change);
    void startLayout();
    /// After collapse / expand: fit the whole graph if it reads, else keep the zoom and show
    /// the toggled group (invalid: the graph's top).
    void refitAfterCollapse(core::NamespaceId toggled);
    void reportError(const QString &message);
    void setBusy(bool busy, const QString &what);
    void addRecentFile(const QString &path);
    void rebuildRecentMenu();
    void updateSummary();
    void runSearch(const QString &text);
    void showSearchHit();
    void openDialog();
    void exportDialog(const QString &format);
    /// How far a model opens collapsed: the core's policy scaled to the graph area's size.
    core::layout::CollapsePolicy collapsePolicy() const;
    std::shared_ptr<core::layout::GraphLayouter>
    makeLayouter(std::shared_ptr<const core::ir::Graph> graph) const;

    ModelDocument *m_document;
    std::shared_ptr<ProblemCache> m_problems;
    ModelLoader *m_loader;
    LayoutRunner *m_layoutRunner;
    GraphScene *m_scene;
    GraphView *m_view;
    Minimap *m_minimap;
    InspectorPanel *m_inspector;
    LegendWidget *m_legend;
    SearchBar *m_searchBar;
    QStackedWidget *m_stack;
    QSplitter *m_split = nullptr;
    ModelPane *m_beside = nullptr;
    QLabel *m_summary;
    QLabel *m_phase;
    QLabel *m_layoutInfo;
    QProgressBar *m_progress;
    QToolButton *m_cancel;
    QSpinBox *m_batch;
    QAction *m_inputsAction = nullptr;
    QLabel *m_inputsLabel = nullptr;
    bool m_interactive = true;
    QSpinBox *m_depth;
    QComboBox *m_colourMode;
    QAction *m_foldAction = nullptr;
    QMenu *m_recentMenu;
    QMenu *m_exportMenu = nullptr;
    QAction *m_saveAction = nullptr;
    QStringList m_aboutExtras;
    std::function<QStringList()> m_aboutExtrasProvider;
    Planner *m_planner = nullptr;
    QTimer *m_batchTimer;
    QString m_currentPath;
    int m_initialDepth = -1;
    bool m_firstLayoutOfModel = false;
    bool m_updatingControls = false;
    bool m_foldShapes = true;
    double m_lastLayoutMs = 0;
    std::vector<core::NodeId> m_hits;
    int m_hitIndex = -1;
    core::NodeId m_pendingReveal;
    /// The fused attention patterns the shown graph groups (showPlannerStep), per group its nodes.
    std::vector<std::vector<core::NodeId>> m_fusedGroups;
    core::NamespaceId m_pendingToggle; ///< the group expanded or collapsed by the running layout
    bool m_refitAfterLayout = false;
    bool m_dockFitPending = false;
};

} // namespace remat::ui
