// remat-studio: the desktop application. Composition only.
//   remat-studio [MODEL] [--batch N] [--input-shape NAME=DxD..] [--dim NAME=V] [--input-value NAME=V]
//                [--branch NODE=then|else] [--classify NAME=KIND] [--freeze REGEX] [--trainable REGEX]
//                [--semantics training|as-exported] [--collapse-depth N] [--fold on|off]
//   remat-studio MODEL --screenshot out.png [--size 1600x1000] [--solve SOLVER]   (offscreen works)
//   remat-studio --session run.rematproj [--screenshot out.png --planner-view schedule --planner-step mid-backward]
#include "core/exec/device_module.h"
#include "core/onnx/input_spec.h"
#include "core/util/bytes.h"
#include "ui/graph/graph_view.h"
#include "ui/graph/search_bar.h"
#include "ui/main_window.h"
#include "ui/planner/planner.h"
#include "ui/planner/planner_document.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QEvent>
#include <QImage>
#include <QTimer>

#include <cstdio>
#include <ctime>
#include <optional>
#include <vector>

namespace {

/// Microseconds on the wall clock (CLOCK_REALTIME), comparable with a launcher's own clock.
long long wallMicros()
{
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/// REMAT_TIME_FIRST_FRAME=1 (or =exit): when the graph of the first model opened is first painted,
/// prints "first frame: <ms since main> ms, at <wall-clock us>" (tests/bench/startup.sh subtracts
/// its launch time for open-to-first-frame); "exit" then quits.
class FirstFrameTimer : public QObject
{
public:
    FirstFrameTimer(long long mainMicros, bool quit, QObject *parent)
        : QObject(parent), m_mainMicros(mainMicros), m_quit(quit)
    {
    }
    bool eventFilter(QObject *watched, QEvent *event) override
    {
        if (event->type() == QEvent::Paint && !m_done) {
            m_done = true;
            watched->removeEventFilter(this);
            // After this paint is done: the frame is what the user sees.
            QTimer::singleShot(0, this, [this] {
                const long long now = wallMicros();
                std::printf("first frame: %.1f ms since main, at %lld us\n",
                            double(now - m_mainMicros) / 1000.0, now);
                std::fflush(stdout);
                if (m_quit)
                    QApplication::exit(0);
            });
        }
        return false;
    }

private:
    long long m_mainMicros;
    bool m_quit;
    bool m_done = false;
};

} // namespace

int main(int argc, char **argv)
{
    const long long mainMicros = wallMicros();
    // QGuiApplication claims "-session" (X11 session management) and drops it from argv: take our
    // --session FILE out before it sees the arguments.
    QString sessionArg;
    for (int i = 1; i < argc; ++i) {
        const QByteArray a(argv[i]);
        int used = 0;
        if (a == "--session" && i + 1 < argc) {
            sessionArg = QString::fromLocal8Bit(argv[i + 1]);
            used = 2;
        } else if (a.startsWith("--session=")) {
            sessionArg = QString::fromLocal8Bit(a.mid(10));
            used = 1;
        }
        if (used) {
            for (int j = i; j + used < argc; ++j)
                argv[j] = argv[j + used];
            argc -= used;
            break;
        }
    }
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("RematStudio"));
    QApplication::setApplicationName(QStringLiteral("Remat Studio"));
    QApplication::setApplicationVersion(QStringLiteral("0.1"));

    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("Explore GPU training memory under gradient checkpointing."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("model"), QStringLiteral("ONNX model to open."));
    QCommandLineOption screenshot(
        QStringLiteral("screenshot"),
        QStringLiteral("Render the window to FILE (PNG) after loading and layout, then exit."),
        QStringLiteral("file"));
    QCommandLineOption size(QStringLiteral("size"),
                            QStringLiteral("Window size for --screenshot (default 1600x1000)."),
                            QStringLiteral("WxH"), QStringLiteral("1600x1000"));
    QCommandLineOption depth(
        QStringLiteral("collapse-depth"),
        QStringLiteral("Collapse namespace groups at depth N (0: expand all; default: automatic)."),
        QStringLiteral("N"));
    QCommandLineOption colour(QStringLiteral("colour"),
                              QStringLiteral("Colour mode: op, bytes or flops."),
                              QStringLiteral("mode"), QStringLiteral("op"));
    QCommandLineOption select(QStringLiteral("select"),
                              QStringLiteral("Select the first node matching TEXT."),
                              QStringLiteral("text"));
    QCommandLineOption fit(
        QStringLiteral("fit"),
        QStringLiteral("With --screenshot: show the whole graph, however small."));
    QCommandLineOption fold(
        QStringLiteral("fold"),
        QStringLiteral("Fold shape arithmetic into its consumers: on or off (default: as last set "
                       "in View > Fold Shape Arithmetic, on at first)."),
        QStringLiteral("on|off"));
    QCommandLineOption solve(
        QStringLiteral("solve"),
        QStringLiteral("With MODEL --screenshot: solve with SOLVER (lowest peak) first, so the "
                       "picture shows the plan's colours and memory chart."),
        QStringLiteral("solver"));
    parser.addOptions({screenshot, size, depth, colour, select, fit, fold, solve});
    QCommandLineOption session(
        QStringLiteral("session"),
        QStringLiteral("Open a planner session (.rematproj): its model, pins and plans."),
        QStringLiteral("file"));
    QCommandLineOption plannerView(
        QStringLiteral("planner-view"),
        QStringLiteral("With --session --screenshot: the planner dock to show (memory, "
                       "schedule, pareto, plans, run)."),
        QStringLiteral("name"), QStringLiteral("memory"));
    QCommandLineOption plannerStep(
        QStringLiteral("planner-step"),
        QStringLiteral("With --session: the schedule step to show (a number, or mid-backward)."),
        QStringLiteral("step"));
    parser.addOptions({session, plannerView, plannerStep});
    // The model's import settings, spelled as on the remat CLI (core/onnx/input_spec.h).
    QCommandLineOption batchOpt(QStringLiteral("batch"),
                                QStringLiteral("Batch to import the model at."),
                                QStringLiteral("N"));
    QCommandLineOption inputShape(
        QStringLiteral("input-shape"),
        QStringLiteral("Whole shape of a graph input: NAME=D0xD1x... (repeatable)."),
        QStringLiteral("spec"));
    QCommandLineOption dim(QStringLiteral("dim"),
                           QStringLiteral("Value of a named free dim: NAME=VALUE (repeatable)."),
                           QStringLiteral("spec"));
    QCommandLineOption inputValue(
        QStringLiteral("input-value"),
        QStringLiteral("Fix a scalar input to a number: NAME=V (repeatable)."),
        QStringLiteral("spec"));
    QCommandLineOption branch(
        QStringLiteral("branch"),
        QStringLiteral("Take one branch of an If computed from data: NODE=then|else (repeatable)."),
        QStringLiteral("spec"));
    QCommandLineOption classify(
        QStringLiteral("classify"),
        QStringLiteral(
            "Override a value's kind: NAME=parameter|frozen|buffer|input|constant (repeatable)."),
        QStringLiteral("spec"));
    QCommandLineOption freeze(QStringLiteral("freeze"),
                              QStringLiteral("Freeze the parameters whose name matches REGEX "
                                             "(ECMAScript; repeatable)."),
                              QStringLiteral("regex"));
    QCommandLineOption trainable(QStringLiteral("trainable"),
                                 QStringLiteral("Train only the parameters whose name matches "
                                                "REGEX, freezing the others (repeatable)."),
                                 QStringLiteral("regex"));
    QCommandLineOption semantics(QStringLiteral("semantics"),
                                 QStringLiteral("training (default) or as-exported."),
                                 QStringLiteral("mode"));
    parser.addOptions(
        {batchOpt, inputShape, dim, inputValue, branch, classify, freeze, trainable, semantics});
    parser.process(app);

    remat::core::onnx::ImportOptions importSettings;
    bool importSettingsGiven = false;
    {
        remat::core::Status st;
        auto each = [&](const QCommandLineOption &o, auto add) {
            for (const QString &v : parser.values(o)) {
                importSettingsGiven = true;
                if (st.isOk())
                    st = add(importSettings, v.toStdString());
            }
        };
        each(inputShape, remat::core::onnx::addInputShape);
        each(dim, remat::core::onnx::addDimValue);
        each(inputValue, remat::core::onnx::addInputValue);
        each(branch, remat::core::onnx::addBranch);
        each(classify, remat::core::onnx::addClassification);
        each(freeze, remat::core::onnx::addFreezePattern);
        each(trainable, remat::core::onnx::addTrainablePattern);
        if (st.isOk() && parser.isSet(semantics)) {
            importSettingsGiven = true;
            auto sem = remat::core::onnx::parseSemantics(parser.value(semantics).toStdString());
            if (sem)
                importSettings.semantics = *sem;
            else
                st = sem.status();
        }
        if (st.isOk() && parser.isSet(batchOpt)) {
            bool ok = false;
            importSettings.batch = parser.value(batchOpt).toLongLong(&ok);
            if (!ok || importSettings.batch < 1)
                st = remat::core::makeError(remat::core::StatusCode::InvalidArgument,
                                            "--batch must be a whole number >= 1");
        }
        if (!st.isOk()) {
            std::fprintf(stderr, "remat-studio: %s\n", st.message().c_str());
            return 2;
        }
    }
    auto openFromCommandLine = [&](remat::ui::MainWindow &w, const QString &path) {
        if (importSettingsGiven || importSettings.batch > 0)
            w.openModel(path, importSettings);
        else
            w.openModel(path);
    };

    remat::ui::MainWindow window;
    if (const QByteArray timing = qgetenv("REMAT_TIME_FIRST_FRAME"); !timing.isEmpty()) {
        auto *timer = new FirstFrameTimer(mainMicros, timing == "exit", &app);
        QObject::connect(
            &window, &remat::ui::MainWindow::modelShown, timer,
            [timer, viewport = window.graphView()->viewport()] {
                viewport->installEventFilter(timer);
                viewport->update();
            },
            Qt::SingleShotConnection);
    }
    // The app composes: each CUDA device becomes a run backend, and the first one's free memory
    // fills the planner's "This GPU" budget (the ui library never links CUDA). Devices are listed
    // when first asked for (the Run panel shows, a session names a device, the About box opens):
    // that opens the CUDA module, which a session that never asks does not map.
    window.setAboutExtrasProvider([] {
        namespace exec = remat::core::exec;
        const remat::core::Expected<const exec::DeviceModule *> cuda = exec::loadCudaModule();
        if (!cuda)
            return QStringList{QString::fromStdString(cuda.status().message())};
        QStringList lines{QString::fromStdString((*cuda)->description())};
        for (const exec::DeviceInfo &d : (*cuda)->listDevices())
            lines << QStringLiteral("cuda:%1 %2 (sm_%3%4, %5)")
                         .arg(d.index)
                         .arg(QString::fromStdString(d.name))
                         .arg(d.computeMajor)
                         .arg(d.computeMinor)
                         .arg(QString::fromStdString(remat::core::formatBytes(d.totalBytes)));
        if (lines.size() == 1)
            lines << QStringLiteral("no CUDA device found: runs use the CPU backend");
        return lines;
    });
    window.planner()->runController()->setBackendDiscovery([planner = window.planner()] {
        namespace exec = remat::core::exec;
        std::vector<remat::ui::BackendChoice> backends;
        const remat::core::Expected<const exec::DeviceModule *> cuda = exec::loadCudaModule();
        if (!cuda)
            return backends;
        const exec::DeviceModule *module = *cuda;
        const std::vector<exec::DeviceInfo> devices = module->listDevices();
        for (const exec::DeviceInfo &d : devices)
            backends.push_back(
                {QStringLiteral("cuda:%1").arg(d.index),
                 QStringLiteral("%1 (cuda:%2, %3 free)")
                     .arg(QString::fromStdString(d.name))
                     .arg(d.index)
                     .arg(QString::fromStdString(remat::core::formatBytes(d.freeBytes))),
                 [module, index = d.index] {
                     exec::DeviceBackendOptions o;
                     o.device = index;
                     return module->makeBackend(o);
                 }});
        if (!devices.empty())
            planner->setFreeMemoryProvider([module]() -> std::optional<int64_t> {
                const std::vector<exec::DeviceInfo> now = module->listDevices();
                if (now.empty())
                    return std::nullopt;
                return now.front().freeBytes;
            });
        return backends;
    });
    if (parser.isSet(depth))
        window.setInitialCollapseDepth(parser.value(depth).toInt());
    if (parser.isSet(fold)) {
        const QString f = parser.value(fold);
        if (f != QLatin1String("on") && f != QLatin1String("off")) {
            std::fprintf(stderr, "remat-studio: --fold must be on or off\n");
            return 2;
        }
        window.setFoldShapeArithmetic(f == QLatin1String("on"));
    }
    const QString mode = parser.value(colour);
    if (mode == QLatin1String("bytes"))
        window.setColourMode(remat::ui::ColourMode::ActivationBytes);
    else if (mode == QLatin1String("flops"))
        window.setColourMode(remat::ui::ColourMode::Flops);
    else
        window.setColourMode(remat::ui::ColourMode::OpType);
    const QStringList args = parser.positionalArguments();

    const QString sessionFile = sessionArg.isEmpty() ? parser.value(session) : sessionArg;
    if (!sessionFile.isEmpty()) {
        // The session's model in the explorer, its plans, pins and charts in the planner docks.
        remat::ui::Planner *planner = window.planner();
        QObject::connect(planner, &remat::ui::Planner::sessionOpened, &app,
                         [&](bool ok, const QString &message) {
                             if (ok && parser.isSet(plannerStep)) {
                                 const QString step = parser.value(plannerStep);
                                 if (step == QLatin1String("mid-backward"))
                                     planner->showMidBackward();
                                 else
                                     planner->teachingView()->setStep(step.toInt());
                             }
                             if (!ok) {
                                 std::fprintf(stderr, "remat-studio: %s\n", qPrintable(message));
                                 if (parser.isSet(screenshot))
                                     QApplication::exit(1);
                             }
                         });
        if (parser.isSet(screenshot)) {
            const QStringList wh = parser.value(size).split(QLatin1Char('x'));
            window.resize(wh.size() == 2 ? std::max(200, wh[0].toInt()) : 1600,
                          wh.size() == 2 ? std::max(200, wh[1].toInt()) : 1000);
            // Ready when the graph is laid out at the session's batch and the plans are restored.
            auto *poll = new QTimer(&app);
            QObject::connect(poll, &QTimer::timeout, &app, [&, poll] {
                const auto *doc = window.document();
                const auto *pd = planner->document();
                if (window.isBusy() || planner->isLoading() || !doc->hasModel() ||
                    pd->plans().empty() ||
                    std::max<int64_t>(1, doc->graph().info().batch) != pd->batch())
                    return;
                poll->stop();
                planner->raiseView(parser.value(plannerView));
                window.frameForScreenshot();
                QTimer::singleShot(400, &app, [&] {
                    const QImage image = window.grab().toImage();
                    if (!image.save(parser.value(screenshot))) {
                        std::fprintf(stderr, "remat-studio: cannot write %s\n",
                                     qPrintable(parser.value(screenshot)));
                        QApplication::exit(1);
                        return;
                    }
                    std::printf("%s: %dx%d\n", qPrintable(parser.value(screenshot)), image.width(),
                                image.height());
                    QApplication::exit(0);
                });
            });
            poll->start(200);
            QTimer::singleShot(300000, &app, [] {
                std::fprintf(stderr, "remat-studio: timed out waiting for the session\n");
                QApplication::exit(3);
            });
        }
        window.show();
        QTimer::singleShot(0, &window, [&] {
            if (remat::core::Status s = planner->openSession(sessionFile); !s.isOk()) {
                std::fprintf(stderr, "remat-studio: %s\n", s.message().c_str());
                QApplication::exit(1);
            }
        });
        return QApplication::exec();
    }

    if (parser.isSet(screenshot)) {
        if (args.isEmpty()) {
            std::fprintf(stderr, "remat-studio: --screenshot needs a MODEL\n");
            return 2;
        }
        const QStringList wh = parser.value(size).split(QLatin1Char('x'));
        const int w = wh.size() == 2 ? wh[0].toInt() : 0, h = wh.size() == 2 ? wh[1].toInt() : 0;
        if (w < 200 || h < 200) {
            std::fprintf(stderr, "remat-studio: --size must be WxH, at least 200x200\n");
            return 2;
        }
        window.resize(w, h);
        const QString out = parser.value(screenshot);
        QObject::connect(&window, &remat::ui::MainWindow::errorOccurred, &app,
                         [](const QString &message) {
                             std::fprintf(stderr, "remat-studio: %s\n", qPrintable(message));
                             QApplication::exit(1);
                         });
        // Takes the screenshot once everything asked for is on screen.
        auto shoot = [&] {
            if (parser.isSet(select)) {
                window.find();
                window.searchBar()->setQuery(parser.value(select));
                window.findNext();
            }
            // Let pending layouts (a search may expand a group) and paints settle first.
            QTimer::singleShot(300, &app, [&] {
                if (parser.isSet(fit))
                    window.graphView()->fitAll();
                else if (!parser.isSet(select))
                    window.frameForScreenshot();
                QTimer::singleShot(100, &app, [&] {
                    const QImage image = window.grab().toImage();
                    if (!image.save(out)) {
                        std::fprintf(stderr, "remat-studio: cannot write %s\n", qPrintable(out));
                        QApplication::exit(1);
                        return;
                    }
                    std::printf("%s: %dx%d\n", qPrintable(out), image.width(), image.height());
                    QApplication::exit(0);
                });
            });
        };
        QObject::connect(&window, &remat::ui::MainWindow::modelShown, &app, [&] {
            if (!parser.isSet(solve)) {
                shoot();
                return;
            }
            // The planner loads the problem the explorer shows; solve once it is there, then
            // show the plan (the graph colours itself by the first plan) beside its memory chart.
            remat::ui::Planner *planner = window.planner();
            auto *poll = new QTimer(&app);
            QObject::connect(poll, &QTimer::timeout, &app, [&, planner, poll] {
                if (!planner->problem() || planner->isLoading() || window.isBusy())
                    return;
                poll->stop();
                const QString id = parser.value(solve);
                if (!planner->usableSolverIds().contains(id)) {
                    std::fprintf(stderr, "remat-studio: --solve: %s is not usable here (%s)\n",
                                 qPrintable(id),
                                 qPrintable(planner->usableSolverIds().join(QStringLiteral(", "))));
                    QApplication::exit(2);
                    return;
                }
                planner->document()->setObjective(remat::core::solvers::Objective::MinPeak);
                planner->solve(id);
                planner->waitForIdle();
                if (!planner->document()->currentPlan()) {
                    std::fprintf(stderr, "remat-studio: --solve %s gave no plan\n", qPrintable(id));
                    QApplication::exit(1);
                    return;
                }
                planner->raiseView(QStringLiteral("memory"));
                shoot();
            });
            poll->start(100);
        });
        QTimer::singleShot(300000, &app, [] {
            std::fprintf(stderr, "remat-studio: timed out waiting for the model\n");
            QApplication::exit(3);
        });
        window.setInteractive(false); // no dialog waits for a user: free dims are an error
        window.show();
        // Open from inside the event loop, so an immediate error can end it with exit(1).
        QTimer::singleShot(0, &window, [&] { openFromCommandLine(window, args.front()); });
        return QApplication::exec();
    }

    window.show();
    if (!args.isEmpty())
        openFromCommandLine(window, args.front());
    return QApplication::exec();
}
