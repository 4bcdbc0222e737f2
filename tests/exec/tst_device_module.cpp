// core::exec::loadCudaModule(): the CUDA backend is a library opened on first use, so a process
// that never asks for a device maps no CUDA library (read from /proc/self/maps).
// - before any call: no libcudart / libcublas* / libcudnn* / libremat_cuda in the maps, and
//   cudaModuleLoaded() is false (this suite links what the CLI links: core, no gpu/);
// - the first call, with the built module named by REMAT_CUDA_MODULE (tests/CMakeLists.txt sets
//   it where CUDA is built): the module and libcudart are mapped now, devices list without error,
//   and without a device makeBackend() says "no CUDA device" (Unsupported); with a device the
//   backend is made; a second call returns the same module;
// - a build without CUDA (no REMAT_CUDA_MODULE): Unsupported, naming libremat_cuda.so and the way
//   out, and still nothing mapped.
#include "core/exec/device_module.h"

#include <QFile>
#include <QTest>

#include <cstdlib>

using namespace remat::core;

namespace {

/// The mapped files of this process whose names contain one of `needles`.
QStringList mappedMatching(const QStringList &needles)
{
    QFile maps(QStringLiteral("/proc/self/maps"));
    if (!maps.open(QIODevice::ReadOnly))
        return {QStringLiteral("(cannot read /proc/self/maps)")};
    QStringList out;
    for (const QByteArray &line : maps.readAll().split('\n')) {
        const QString path = QString::fromLocal8Bit(line.mid(line.indexOf('/')));
        for (const QString &n : needles)
            if (line.indexOf('/') >= 0 && path.contains(n) && !out.contains(path))
                out << path;
    }
    return out;
}

const QStringList kCudaLibraries{QStringLiteral("libcudart"), QStringLiteral("libcublas"),
                                 QStringLiteral("libcudnn"), QStringLiteral("libremat_cuda")};

} // namespace

class TstDeviceModule : public QObject
{
    Q_OBJECT

private slots:
    void nothingMappedBeforeTheFirstCall()
    {
        // The maps are read, not empty: libstdc++ (or libc) is always there.
        QVERIFY(!mappedMatching({QStringLiteral("libc.so"), QStringLiteral("libc-")}).isEmpty());
        QVERIFY(!exec::cudaModuleLoaded());
        const QStringList cuda = mappedMatching(kCudaLibraries);
        QVERIFY2(cuda.isEmpty(), qPrintable(cuda.join(QStringLiteral(", "))));
    }

    void theFirstCallOpensTheModule()
    {
        const bool built = !qgetenv("REMAT_CUDA_MODULE").isEmpty();
        Expected<const exec::DeviceModule *> module = exec::loadCudaModule();
        if (!built) {
            QVERIFY(!module);
            QCOMPARE(module.status().code(), StatusCode::Unsupported);
            QVERIFY2(module.status().message().find("libremat_cuda.so") != std::string::npos,
                     module.status().message().c_str());
            QVERIFY2(module.status().message().find("REMAT_CUDA_MODULE") != std::string::npos,
                     module.status().message().c_str());
            QVERIFY(!exec::cudaModuleLoaded());
            QVERIFY(mappedMatching(kCudaLibraries).isEmpty());
            return;
        }
        QVERIFY2(module, module.status().toString().c_str());
        QVERIFY(exec::cudaModuleLoaded());
        QVERIFY(!mappedMatching({QStringLiteral("libremat_cuda")}).isEmpty());
        QVERIFY(!mappedMatching({QStringLiteral("libcudart")}).isEmpty());
        QVERIFY((*module)->description().find("CUDA") != std::string::npos);
        QVERIFY(!(*module)->kernelTypes().empty());
        const std::vector<exec::DeviceInfo> devices = (*module)->listDevices();
        Expected<std::unique_ptr<exec::Backend>> backend = (*module)->makeBackend({});
        if (devices.empty()) {
            QVERIFY(!backend);
            QCOMPARE(backend.status().code(), StatusCode::Unsupported);
            QVERIFY2(backend.status().message().find("no CUDA device") != std::string::npos,
                     backend.status().message().c_str());
        } else {
            QVERIFY2(backend, backend.status().toString().c_str());
            QVERIFY(*backend);
        }
        Expected<const exec::DeviceModule *> again = exec::loadCudaModule();
        QVERIFY(again && *again == *module);
    }
};

QTEST_GUILESS_MAIN(TstDeviceModule)
#include "tst_device_module.moc"
