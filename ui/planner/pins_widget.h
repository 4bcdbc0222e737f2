#pragma once
// The user's pins as a list: tensor, pin kind; clear one or all (each an undo step). Double-click
// asks the graph to show the node.
//   PinsWidget w(&document);  connect(&w, &PinsWidget::nodeActivated, graphView, &...::centerOn);

#include <QWidget>

#include <functional>

class QPushButton;
class QTreeWidget;

namespace remat::ui {

class PlannerDocument;
enum class PlannerChange : unsigned char;

class PinsWidget : public QWidget
{
    Q_OBJECT
public:
    explicit PinsWidget(PlannerDocument *document, QWidget *parent = nullptr);
    /// Maps a pinned tensor to the graph node that produces it (for nodeActivated); optional.
    void setNodeOfTensor(std::function<QString(const QString &)> nodeOfTensor);
    int pinCount() const;

signals:
    void nodeActivated(const QString &nodeName);

private:
    void rebuild();
    void clearSelected();

    PlannerDocument *m_document;
    QTreeWidget *m_list;
    QPushButton *m_clear;
    QPushButton *m_clearAll;
    std::function<QString(const QString &)> m_nodeOfTensor;
};

} // namespace remat::ui
