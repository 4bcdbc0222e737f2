// SHA-256 against the FIPS 180-2 test vectors, fed whole and in uneven pieces.
#include "core/util/sha256.h"

#include <QTest>

using namespace remat::core;

class TestSha256 : public QObject
{
    Q_OBJECT
private slots:
    void vectors_data()
    {
        QTest::addColumn<QByteArray>("input");
        QTest::addColumn<QString>("digest");
        QTest::newRow("empty")
            << QByteArray() << "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        QTest::newRow("abc") << QByteArray("abc")
                             << "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        QTest::newRow("448 bits")
            << QByteArray("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
            << "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";
        QTest::newRow("million a")
            << QByteArray(1000000, 'a')
            << "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
    }
    void vectors()
    {
        QFETCH(QByteArray, input);
        QFETCH(QString, digest);
        QCOMPARE(QString::fromStdString(
                     sha256Hex(std::string_view(input.constData(), size_t(input.size())))),
                 digest);
        Sha256 h; // the same bytes in pieces of 1, 2, 3, ... that straddle block boundaries
        size_t at = 0;
        for (size_t piece = 1; at < size_t(input.size()); ++piece) {
            const size_t n = std::min(piece, size_t(input.size()) - at);
            h.update(input.constData() + at, n);
            at += n;
        }
        QCOMPARE(QString::fromStdString(h.hexDigest()), digest);
    }
};

QTEST_GUILESS_MAIN(TestSha256)
#include "tst_sha256.moc"
