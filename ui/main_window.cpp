#include "ui/main_window.h"

#include <QApplication>
#include <QLabel>
#include <QMenuBar>
#include <QStatusBar>

namespace remat::ui {

MainWindow::MainWindow(QWidget *parent) : QMainWindow(parent)
{
    setWindowTitle(tr("Remat Studio"));
    setWindowIcon(QIcon(QStringLiteral(":/icons/remat.svg")));
    auto *placeholder = new QLabel(tr("Open an ONNX model (File > Open) to begin."), this);
    placeholder->setAlignment(Qt::AlignCenter);
    setCentralWidget(placeholder);
    createActions();
    statusBar()->showMessage(tr("No model loaded"));
    resize(1280, 800);
}

MainWindow::~MainWindow() = default;

void MainWindow::createActions()
{
    QMenu *file = menuBar()->addMenu(tr("&File"));
    QAction *quit = file->addAction(tr("&Quit"), qApp, &QApplication::quit);
    quit->setShortcut(QKeySequence::Quit);
}

} // namespace remat::ui
