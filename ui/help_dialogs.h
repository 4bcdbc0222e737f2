#pragma once
// Help > Keyboard Shortcuts and Help > About: the shortcut list is read from the menus themselves
// (so it never goes stale), the About box names the libraries this build was made with.
//   ShortcutsDialog d(window->menuBar(), window);  d.exec();
//   showAboutBox(window, {QStringLiteral("CUDA 12.4, 1 device: NVIDIA H100")});

#include <QDialog>
#include <QStringList>

class QMenuBar;
class QTableWidget;

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

/// The About text (rich text): the app, and the versions of Qt (built with and running), protobuf,
/// ONNX, CBC when built with it, and `extra` lines the app adds (the CUDA runtime and devices).
QString aboutText(const QStringList &extra);
void showAboutBox(QWidget *parent, const QStringList &extra);

} // namespace remat::ui
