// The boundary rule for readers (docs/readers.md), checked on the sources: every function a reader
// header declares that takes someone else's bytes — named parse*, read*, import*, load*, restore*
// and returning Status / Expected — runs its body through guardReader (core/util/reader_guard.h),
// so no third-party exception (nlohmann, protobuf, std) crosses its API. A reader added to one of
// these headers without the guard fails here, naming the function.
// Expected: at least the 17 entry points listed in kKnown are found, and each is guarded.
#include "common/test_support.h"

#include <QDir>
#include <QFile>
#include <QRegularExpression>
#include <QTest>

using namespace remat::tests;

namespace {

/// Reader headers: every header in core/io, and the readers that live elsewhere.
QStringList readerHeaders()
{
    QStringList headers;
    const QDir io(sourceDir() + "/core/io");
    for (const QString &h : io.entryList({"*.h"}, QDir::Files))
        headers << "core/io/" + h;
    headers << "core/exec/npz.h"
            << "core/onnx/importer.h"
            << "core/util/bytes.h"
            << "ui/planner/session_file.h";
    return headers;
}

/// Entry points the rule must find (a rename that hides one from the scan fails here too).
const QStringList kKnown = {"parsePlan",
                            "readPlan",
                            "parseNodeLinkGraph",
                            "readNodeLinkGraph",
                            "parseNpz",
                            "readNpz",
                            "parseNpy",
                            "importModel",
                            "importModelFromBytes",
                            "parseBytes",
                            "readSessionFile",
                            "parseSessionFile",
                            "restorePlans",
                            "parseSession",
                            "readSession",
                            "restoreSessionPlans",
                            "importSettingsFromJson"};

QString readText(const QString &relative)
{
    QFile f(sourceDir() + "/" + relative);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QString::fromUtf8(f.readAll());
}

/// The bodies of every namespace-scope definition of `name` in `source` (house style: the
/// signature starts at column 0, the braces of a function body stand alone at column 0).
QStringList definitionBodies(const QString &source, const QString &name)
{
    QStringList bodies;
    const QStringList lines = source.split('\n');
    const QRegularExpression signature("^[A-Za-z].*[\\s:*&>]" + QRegularExpression::escape(name) +
                                       "\\(");
    for (int i = 0; i < lines.size(); ++i) {
        if (!signature.match(lines[i]).hasMatch() || lines[i].trimmed().endsWith(';'))
            continue;
        int open = i;
        while (open < lines.size() && lines[open] != "{") {
            if (open > i && (lines[open].endsWith(';') || lines[open].isEmpty()))
                break; // a declaration, not a definition
            ++open;
        }
        if (open >= lines.size() || lines[open] != "{")
            continue;
        int close = open + 1;
        while (close < lines.size() && lines[close] != "}")
            ++close;
        bodies << lines.mid(open, close - open + 1).join('\n');
        i = close;
    }
    return bodies;
}

} // namespace

class TstReaderBoundary : public QObject
{
    Q_OBJECT
private slots:
    void everyReaderEntryPointIsGuarded()
    {
        const QRegularExpression decl(
            "^(?:core::)?(?:Expected<.*>|Status)\\s+((?:parse|read|import|load|restore)\\w*)\\(",
            QRegularExpression::MultilineOption);
        QStringList found;
        for (const QString &header : readerHeaders()) {
            const QString text = readText(header);
            QVERIFY2(!text.isEmpty(), qPrintable("cannot read " + header));
            QString source = header;
            source.replace(QRegularExpression("\\.h$"), ".cpp");
            const QString impl = readText(source);
            QVERIFY2(!impl.isEmpty(), qPrintable("cannot read " + source));
            auto it = decl.globalMatch(text);
            while (it.hasNext()) {
                const QString name = it.next().captured(1);
                const QStringList bodies = definitionBodies(impl, name);
                QVERIFY2(
                    !bodies.isEmpty(),
                    qPrintable(QString("%1 declares %2, but %3 has no definition of it at column 0")
                                   .arg(header, name, source)));
                for (const QString &body : bodies)
                    QVERIFY2(
                        body.contains("guardReader("),
                        qPrintable(QString("%1 (%2) reads outside input without guardReader: an "
                                           "exception could cross its API (docs/readers.md)")
                                       .arg(name, source)));
                found << name;
            }
        }
        for (const QString &name : kKnown)
            QVERIFY2(found.contains(name), qPrintable(name + " was not found by the scan"));
    }

    void theScanSeesAnUnguardedReader()
    {
        // The scan itself: an unguarded definition is found and reported as such.
        const QString source =
            "Expected<int> parseThing(const std::string &text)\n{\n"
            "    return std::stoi(text);\n}\n\n"
            "Expected<int> readThing(const std::string &path)\n{\n"
            "    return guardReader(path, [&] { return parseThing(path); });\n}\n";
        const QStringList parse = definitionBodies(source, "parseThing");
        QCOMPARE(parse.size(), 1);
        QVERIFY(!parse.front().contains("guardReader("));
        const QStringList read = definitionBodies(source, "readThing");
        QCOMPARE(read.size(), 1);
        QVERIFY(read.front().contains("guardReader("));
    }
};

QTEST_GUILESS_MAIN(TstReaderBoundary)
#include "tst_reader_boundary.moc"
