#!/usr/bin/env python3
"""Every corpus model (shared/corpus and shared/onnx-light) opened and solved at its own batch
and at batches 1, 8 and 64: `remat info --batch B` and `remat solve --compare --batch B`.

  python3 scripts/corpus_batches.py [--remat BIN] [--shared DIR] [--time-limit S] [--only SUBSTR]

Each cell is `info/solve` verdicts, then store-all's peak -> the lowest peak any solver reached
(offload left out: it moves bytes to the host), and the solvers that failed, if any. A solver
that ran out of its time with a feasible plan counts as feasible ("time limit" in its note).
--time-limit is the seconds each solver gets (default 5: CBC's MILP stops there with its best
plan, so a batch-64 DenseNet does not hold the 2 shared cores for minutes). Exit 1 when any
model failed to open or solve. Only the standard library; commands run under `nice`.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCHES = [1, 8, 64]


def find_remat(given):
    if given:
        return given
    for c in ("build-dev/app/remat", "build/app/remat", "../main/build/app/remat"):
        p = os.path.join(HERE, c)
        if os.access(p, os.X_OK):
            return p
    sys.exit("no remat binary found: pass --remat")


def run(cmd, timeout):
    try:
        p = subprocess.run(["nice", "-n", "5"] + cmd, capture_output=True, text=True,
                           timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return 124, "", "timeout"


def size(b):
    for unit, k in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if b >= k:
            return f"{b / k:.1f} {unit}"
    return f"{b} B"


def models(shared):
    found = []
    manifest = os.path.join(shared, "corpus", "corpus_manifest.json")
    batches = {}
    if os.path.exists(manifest):
        with open(manifest) as f:
            m = json.load(f)
        for tier in m.values():
            if isinstance(tier, dict):
                for entry in tier.values():
                    if isinstance(entry, dict) and "file" in entry and "batch" in entry:
                        batches[os.path.basename(entry["file"])] = entry["batch"]
    for sub in ("corpus/graph_only", "corpus/with_weights", "onnx-light"):
        d = os.path.join(shared, sub)
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if f.endswith(".onnx"):
                found.append((os.path.join(d, f), batches.get(f)))
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--remat")
    ap.add_argument("--shared", default=os.environ.get("REMAT_SHARED_DIR", "/work/shared"))
    ap.add_argument("--time-limit", type=float, default=5.0)
    ap.add_argument("--timeout", type=int, default=600, help="seconds per command")
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    remat = find_remat(a.remat)

    print("| model | own batch | " + " | ".join(f"batch {b}" for b in ["own"] + BATCHES) +
          " | seconds |")
    print("|---|---|" + "---|" * (len(BATCHES) + 2))
    failed = 0
    for path, own in models(a.shared):
        name = os.path.relpath(path, a.shared)
        if a.only not in name:
            continue
        cells = []
        start = time.time()
        for b in [None] + BATCHES:
            flags = ["--batch", str(b)] if b else []
            ri, _, ei = run([remat, "info", path] + flags, a.timeout)
            if ri:
                failed += 1
                cells.append(f"info FAIL: {ei.strip().splitlines()[-1][:120] if ei.strip() else ri}")
                continue
            rs, out, es = run([remat, "solve", path, "--compare", "--json", "--time-limit",
                               str(a.time_limit)] + flags, a.timeout)
            if rs:
                failed += 1
                msg = es.strip().splitlines()[-1][:120] if es.strip() else str(rs)
                cells.append(f"solve FAIL: {msg}".replace("|", "\\|"))
                continue
            rows = json.loads(out)
            sa = next((r["peak_bytes"] for r in rows if r["solver"] == "store-all"), None)
            ok = [r for r in rows if r["status"] in ("feasible", "optimal")
                  and r["solver"] != "offload"]
            bad = [f"{r['solver']}: {r['status']}" for r in rows
                   if r["status"] not in ("feasible", "optimal")]
            best = min(ok, key=lambda r: r["peak_bytes"]) if ok else None
            cell = "ok " + (size(sa) if sa else "?")
            if best:
                cell += f" → {size(best['peak_bytes'])} ({best['solver']})"
            if bad:
                cell += "; " + ", ".join(bad)
            cells.append(cell)
        print(f"| {name} | {own if own else 'file'} | " + " | ".join(cells) +
              f" | {time.time() - start:.0f} |", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
