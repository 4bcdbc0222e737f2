#pragma once
// Find in the graph (Ctrl+F): a line edit, previous / next, and the hit count.
//   SearchBar bar;  connect(&bar, &SearchBar::queryChanged, ...);  bar.setResultText("3 of 12");

#include <QWidget>

class QLabel;
class QLineEdit;

namespace remat::ui {

class SearchBar : public QWidget
{
    Q_OBJECT
public:
    explicit SearchBar(QWidget *parent = nullptr);
    void activate(); ///< show, focus and select the text
    QString query() const;
    void setQuery(const QString &text);
    void setResultText(const QString &text);

signals:
    void queryChanged(const QString &text);
    void next();
    void previous();
    void closed();

protected:
    void keyPressEvent(QKeyEvent *event) override;

private:
    QLineEdit *m_edit;
    QLabel *m_result;
};

} // namespace remat::ui
