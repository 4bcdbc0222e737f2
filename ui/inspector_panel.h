#pragma once
// The inspector: everything about the selected node, collapsed group or tensor, at the current
// batch: op type, attributes, inputs and outputs with shapes, dtypes and bytes, FLOPs, what its
// backward pass needs (from the training graph), and its namespace path. With shape arithmetic
// folded, a node's folded inputs are listed by name with their values ("shape = [2, 16, 4, 16]").
//   InspectorPanel panel(&document);   // follows the document's selection
//   panel.showValue(valueId);          // an edge was clicked
// A weight (graph input or initializer) shows whether it trains: trainable / frozen / buffer,
// with the reason of any guess, and links that ask for another kind (kindChangeRequested; the
// main window re-imports with that --classify override).

#include "ui/model_document.h"

#include <QWidget>

class QTextBrowser;

namespace remat::ui {

class InspectorPanel : public QWidget
{
    Q_OBJECT
public:
    explicit InspectorPanel(ModelDocument *document, QWidget *parent = nullptr);

    void showNode(core::NodeId node);
    void showGroup(core::NamespaceId ns);
    void showValue(core::ValueId value);
    void showModel();
    /// The HTML shown now (for tests).
    QString html() const;

    /// "trainable", "frozen", "buffer", ... as the inspector names a value's kind.
    static QString kindLabel(core::ir::ValueKind kind);

signals:
    /// The user asked for `valueName` to be of `kind` (Parameter, Frozen or Buffer).
    void kindChangeRequested(const QString &valueName, core::ir::ValueKind kind);

private:
    void onLinkClicked(const QUrl &url);
    void onDocumentChanged(const DocumentChange &change);
    QString valueRow(core::ValueId v) const;

    ModelDocument *m_document;
    QTextBrowser *m_text;
};

} // namespace remat::ui
