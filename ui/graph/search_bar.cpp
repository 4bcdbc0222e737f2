#include "ui/graph/search_bar.h"

#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QToolButton>

namespace remat::ui {

SearchBar::SearchBar(QWidget *parent) : QWidget(parent)
{
    auto *layout = new QHBoxLayout(this);
    layout->setContentsMargins(6, 2, 6, 2);
    layout->addWidget(new QLabel(tr("Find:"), this));
    m_edit = new QLineEdit(this);
    m_edit->setObjectName(QStringLiteral("searchEdit"));
    m_edit->setPlaceholderText(tr("name, op type or shape (e.g. conv, MatMul, 768)"));
    m_edit->setClearButtonEnabled(true);
    layout->addWidget(m_edit, 1);
    auto *prev = new QToolButton(this);
    prev->setText(tr("Previous"));
    prev->setToolTip(tr("Previous match (Shift+Enter)"));
    auto *nextButton = new QToolButton(this);
    nextButton->setText(tr("Next"));
    nextButton->setToolTip(tr("Next match (Enter)"));
    layout->addWidget(prev);
    layout->addWidget(nextButton);
    m_result = new QLabel(this);
    m_result->setMinimumWidth(90);
    layout->addWidget(m_result);
    auto *close = new QToolButton(this);
    close->setText(QStringLiteral("\u2715"));
    close->setToolTip(tr("Close (Esc)"));
    layout->addWidget(close);
    connect(m_edit, &QLineEdit::textChanged, this, &SearchBar::queryChanged);
    connect(m_edit, &QLineEdit::returnPressed, this, &SearchBar::next);
    connect(nextButton, &QToolButton::clicked, this, &SearchBar::next);
    connect(prev, &QToolButton::clicked, this, &SearchBar::previous);
    connect(close, &QToolButton::clicked, this, [this] {
        hide();
        emit closed();
    });
}

void SearchBar::activate()
{
    show();
    m_edit->setFocus();
    m_edit->selectAll();
}

QString SearchBar::query() const { return m_edit->text(); }

void SearchBar::setQuery(const QString &text) { m_edit->setText(text); }

void SearchBar::setResultText(const QString &text) { m_result->setText(text); }

void SearchBar::keyPressEvent(QKeyEvent *event)
{
    if (event->key() == Qt::Key_Escape) {
        hide();
        emit closed();
        return;
    }
    if ((event->key() == Qt::Key_Return || event->key() == Qt::Key_Enter) &&
        (event->modifiers() & Qt::ShiftModifier)) {
        emit previous();
        return;
    }
    QWidget::keyPressEvent(event);
}

} // namespace remat::ui
