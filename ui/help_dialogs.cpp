#include "ui/help_dialogs.h"

#include "ui/planner/teaching_view.h"

#include <QAction>
#include <QApplication>
#include <QDialogButtonBox>
#include <QHeaderView>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QTableWidget>
#include <QTextBrowser>
#include <QUrl>
#include <QVBoxLayout>

// The library versions come from the build (ui/CMakeLists.txt); "unknown" when CMake did not say.
#ifndef REMAT_PROTOBUF_VERSION
#define REMAT_PROTOBUF_VERSION ""
#endif
#ifndef REMAT_ONNX_VERSION
#define REMAT_ONNX_VERSION ""
#endif
#ifndef REMAT_CBC_VERSION
#define REMAT_CBC_VERSION ""
#endif

namespace remat::ui {

namespace {

QString orUnknown(const char *version)
{
    return *version ? QString::fromLatin1(version) : QObject::tr("(version unknown)");
}

void collect(const QMenu *menu, const QString &path, QList<QStringList> &rows)
{
    for (QAction *a : menu->actions()) {
        if (a->isSeparator())
            continue;
        if (a->menu()) {
            collect(a->menu(), path + QStringLiteral(" > ") + a->menu()->title().remove('&'), rows);
            continue;
        }
        QStringList keys;
        for (const QKeySequence &k : a->shortcuts())
            keys << k.toString(QKeySequence::NativeText);
        if (!keys.isEmpty())
            rows.append({path, a->text().remove('&'), keys.join(QStringLiteral(", "))});
    }
}

} // namespace

ShortcutsDialog::ShortcutsDialog(const QMenuBar *menus, QWidget *parent) : QDialog(parent)
{
    setWindowTitle(tr("Keyboard Shortcuts"));
    setObjectName(QStringLiteral("shortcutsDialog"));
    QList<QStringList> rows;
    for (QAction *a : menus->actions())
        if (a->menu())
            collect(a->menu(), a->menu()->title().remove('&'), rows);
    // Not in a menu, but always there: the graph's own mouse and key handling.
    rows.append({tr("Graph"), tr("Zoom"), tr("Wheel")});
    rows.append({tr("Graph"), tr("Scroll"), tr("Shift+Wheel, drag")});
    rows.append({tr("Graph"), tr("Expand / collapse a group"), tr("Double-click")});
    rows.append({tr("Graph"), tr("Pin menu of the selected node"), tr("Shift+F10, Menu")});
    rows.append({tr("Find bar"), tr("Previous match"), tr("Shift+Enter")});
    // The Schedule tab's stepper (it has the keys once its tab, slider or a matrix is clicked).
    rows.append({tr("Schedule"), tr("Previous / next step"), tr("Left / Right")});
    rows.append({tr("Schedule"), tr("Ten steps back / on"), tr("Page Up / Page Down")});
    rows.append({tr("Schedule"), tr("First / last step"), tr("Home / End")});
    rows.append({tr("Find bar"), tr("Close"), tr("Esc")});
    for (const QStringList &key : TeachingView::stepperKeys())
        rows.append({tr("Schedule tab"), key[1], key[0]});
    m_table = new QTableWidget(int(rows.size()), 3, this);
    m_table->setHorizontalHeaderLabels({tr("Menu"), tr("Action"), tr("Keys")});
    m_table->verticalHeader()->hide();
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    for (int r = 0; r < rows.size(); ++r)
        for (int c = 0; c < 3; ++c)
            m_table->setItem(r, c, new QTableWidgetItem(rows[r][c]));
    m_table->resizeColumnsToContents();
    m_table->horizontalHeader()->setStretchLastSection(true);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(m_table);
    layout->addWidget(buttons);
    resize(560, 520);
}

UserGuideDialog::UserGuideDialog(QWidget *parent) : QDialog(parent)
{
    setWindowTitle(tr("Remat Studio User Guide"));
    setObjectName(QStringLiteral("userGuideDialog"));
    m_browser = new QTextBrowser(this);
    m_browser->setObjectName(QStringLiteral("userGuideBrowser"));
    m_browser->setOpenExternalLinks(true);
    // Relative image paths (browse.png) resolve against qrc:/guide/.
    m_browser->setSource(QUrl(source()), QTextDocument::MarkdownResource);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(m_browser);
    layout->addWidget(buttons);
    resize(900, 760);
}

QString aboutText(const QStringList &extra)
{
    QStringList lines;
    lines << QObject::tr("Qt %1 (built with %2)")
                 .arg(QString::fromLatin1(qVersion()), QStringLiteral(QT_VERSION_STR));
    lines << QObject::tr("protobuf %1").arg(orUnknown(REMAT_PROTOBUF_VERSION));
    lines << QObject::tr("ONNX %1").arg(orUnknown(REMAT_ONNX_VERSION));
#ifdef REMAT_HAVE_CBC
    lines << QObject::tr("COIN-OR CBC %1 (MILP solvers)").arg(orUnknown(REMAT_CBC_VERSION));
#else
    lines << QObject::tr("COIN-OR CBC: not in this build (the MILP solvers are off)");
#endif
    lines << extra;
    QString html = QObject::tr("<h3>Remat Studio %1</h3>"
                               "<p>GPU training memory under gradient checkpointing: open an ONNX "
                               "model, plan what to keep, recompute or offload, and run the "
                               "plan.</p><p><b>Built with</b><br>")
                       .arg(QApplication::applicationVersion().toHtmlEscaped());
    for (const QString &l : lines)
        html += l.toHtmlEscaped() + QStringLiteral("<br>");
    return html + QStringLiteral("</p>");
}

void showAboutBox(QWidget *parent, const QStringList &extra)
{
    auto *box = new QMessageBox(QMessageBox::NoIcon, QObject::tr("About Remat Studio"),
                                aboutText(extra), QMessageBox::Ok, parent);
    box->setObjectName(QStringLiteral("aboutBox"));
    box->setTextFormat(Qt::RichText);
    box->setIconPixmap(QIcon(QStringLiteral(":/icons/remat.svg")).pixmap(64, 64));
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
}

} // namespace remat::ui
