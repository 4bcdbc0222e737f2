#pragma once
// The Remat Studio main window: menus, toolbar, docks and the central graph view.
//   MainWindow w;  w.openModel("model.onnx");  w.show();

#include <QMainWindow>

namespace remat::ui {

class MainWindow : public QMainWindow
{
    Q_OBJECT
public:
    explicit MainWindow(QWidget *parent = nullptr);
    ~MainWindow() override;

private:
    void createActions();
};

} // namespace remat::ui
