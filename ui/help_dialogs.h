#pragma once
// Help > User Guide, Help > Keyboard Shortcuts and Help > About: the guide is docs/guide/guide.md
// (with its screenshots) built into the resources, the shortcut list is read from the menus
// themselves (so it never goes stale), the About box names the libraries this build was made with.
//   ShortcutsDialog d(window->menuBar(), window);  d.exec();
//   showAboutBox(window, {QStringLiteral("CUDA 12.4, 1 device: NVIDIA H100")});

#include <QDialog>
#include <QStringList>

class QMenuBar;
class QTableWidget;
class QTextBrowser;

namespace remat::ui {

/// Every menu action with a shortcut, as "Menu", "Action", "Keys" rows (menus in menu-bar order,
/// submenus as "File > Export").
class ShortcutsDialog : public QDialog
{
    Q_OBJECT
public:
    explicit ShortcutsDialog(const QMenuBar *menus, QWidget *parent = nullptr);
    QTableWidget *table() const { return m_table; }

private:
    QTableWidget *m_table;
};

/// The user guide (qrc:/guide/guide.md, from docs/guide/): the four uses step by step, with
/// screenshots of the app. Links to other guide pages stay inside; web links open outside.
class UserGuideDialog : public QDialog
{
    Q_OBJECT
public:
    explicit UserGuideDialog(QWidget *parent = nullptr);
    QTextBrowser *browser() const { return m_browser; }
    /// Where the guide is read from.
    static QString source() { return QStringLiteral("qrc:/guide/guide.md"); }

private:
    QTextBrowser *m_browser;
};

/// The About text (rich text): the app, and the versions of Qt (built with and running), protobuf,
/// ONNX, CBC when built with it, and `extra` lines the app adds (the CUDA runtime and devices).
QString aboutText(const QStringList &extra);
void showAboutBox(QWidget *parent, const QStringList &extra);

} // namespace remat::ui
