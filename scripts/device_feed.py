"""Writes a smaller copy of a corpus feed archive for the GPU machine (scripts/device_bundle.sh).

Keeps the input, the output cotangent and the other small entries, and of PyTorch's float32
gradients only those more than 1e-4 off the float64 reference (the GPU checks read no others).
Standard library only: the set-up installs no numpy.
Usage: python3 device_feed.py FEED.npz REFERENCE.f64.npz OUT.npz
"""
import ast
import math
import struct
import sys
import zipfile


def values(archive, name):
    raw = archive.read(name)
    header_len = struct.unpack("<H", raw[8:10])[0]
    descr = ast.literal_eval(raw[10:10 + header_len].decode())["descr"]
    fmt = {"<f4": "f", "<f8": "d"}[descr]
    data = raw[10 + header_len:]
    return struct.unpack("<%d%s" % (len(data) // struct.calcsize(fmt), fmt), data)


def far_from_reference(feed, ref, name):
    a, b = values(feed, name), values(ref, name)
    top = max(map(abs, b)) or 1.0
    rel = max(abs(x - y) for x, y in zip(a, b)) / top
    norm = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b))) / (math.sqrt(sum(y * y for y in b)) or 1.0)
    return rel >= 1e-4 or norm >= 1e-4


def main(feed_path, ref_path, out_path):
    with zipfile.ZipFile(feed_path) as feed, zipfile.ZipFile(ref_path) as ref, \
            zipfile.ZipFile(out_path, "w") as out:
        in_ref = set(ref.namelist())
        for info in feed.infolist():
            if info.filename.startswith("grad") and info.filename in in_ref and \
                    not far_from_reference(feed, ref, info.filename):
                continue
            out.writestr(info, feed.read(info))


if __name__ == "__main__":
    main(*sys.argv[1:4])
