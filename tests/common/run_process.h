#pragma once
// Runs a program (the built `remat`, REMAT_CLI_BINARY) and keeps what it printed; header-only, for
// the suites that drive the CLI.
//   const ProcessRun r = runProcess(REMAT_CLI_BINARY, {"simulate", model, "--json"});
//   QVERIFY2(r.exitCode == 0, r.err.constData());

#include <QByteArray>
#include <QProcess>
#include <QString>
#include <QStringList>

namespace remat::tests {

struct ProcessRun
{
    int exitCode = -1; ///< -1: crashed or timed out (then `err` says "timed out")
    QByteArray out, err;
};

inline ProcessRun runProcess(const QString &program, const QStringList &args,
                             int timeoutMs = 300000)
{
    QProcess p;
    p.start(program, args);
    ProcessRun r;
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
        r.err = "timed out";
        return r;
    }
    r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    return r;
}

} // namespace remat::tests
