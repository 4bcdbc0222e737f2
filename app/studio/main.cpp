// remat-studio: the desktop application. Composition only.
#include "ui/main_window.h"

#include <QApplication>

int main(int argc, char **argv)
{
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("RematStudio"));
    QApplication::setApplicationName(QStringLiteral("Remat Studio"));
    remat::ui::MainWindow window;
    window.show();
    return QApplication::exec();
}
