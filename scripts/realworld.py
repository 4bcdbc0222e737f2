#!/usr/bin/env python3
"""Acceptance table on the real-world ONNX files of tests/data/realworld (other exporters).

For every file, with the import flags its shipping package implies (ARGS below):
  info, train-graph                       exit 0?
  solve --compare --json                  store-all peak, the lowest peak any solver reached
                                          (offload left out: it moves bytes to the host)
  solve --solver BEST --out plan.json     that plan, written
  run --plan plan.json --check --json     measured peak = predicted, gradients = store-all's
  remat-studio FILE --screenshot PNG      offscreen screenshot of the explorer (with the flags)
and prints one markdown table (docs/realworld.md holds the last one).

  python3 scripts/realworld.py [--remat BIN] [--studio BIN] [--shots DIR] [--only SUBSTR]
                               [--time-limit SECONDS] [--timeout SECONDS]

Only the standard library; runs every command under `nice`.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(HERE, "tests", "data", "realworld")

# Per-file import settings: the sizes (and sample rate) the shipping package feeds the model.
ARGS = {
    "blazeface_back_tf2onnx172": "",  # static 1x256x256x3 (NHWC)
    "gru_classifier_torch113": "--batch 2 --dim frames=50",
    "hello_deepa": "",  # fully static 1x25x96
    "mlsd_tiny_tf2onnx185": "",  # static 1x320x320x4 (NHWC)
    "swin_t_torch113": "",  # static 2x3x224x224 (graph only: weights are graph inputs)
    "oww_embedding_tf2onnx": "--dim unk__314=1",  # NHWC 1x76x32x1
    "oww_melspectrogram": "--batch 1 --dim samples=1280",  # 80 ms at 16 kHz
    "ppocr_mobile_v2_cls": "--input-shape x=1x3x48x192",  # PaddleOCR cls_image_shape
    "ppocrv4_det": "--input-shape x=1x3x640x640",  # sides multiple of 32
    "silero_vad_16k_op15": "--batch 1 --dim sequence=576 --input-value sr=16000",
    "silero_vad_half": "--batch 1 --dim sequence=576",  # 16 kHz only, no sr input
    "silero_vad_legacy_ort": "--batch 1 --dim sequence=512 --input-value sr=16000",
    "silero_vad_op18_ifless": "--batch 1 --dim sequence=576 --input-value sr=16000",
    "silero_vad_v5_spox": "--input-shape input=1x576 --input-shape state=2x1x128 --input-value sr=16000",
    "silero_vad_v6_spox": "--input-shape input=1x576 --input-shape state=2x1x128 --input-value sr=16000",
}

# The exporter of each file (tests/data/realworld/README.md says where each comes from).
EXPORTER = {
    "blazeface_back_tf2onnx172": "tf2onnx 1.7.2",
    "gru_classifier_torch113": "torch 1.13",
    "hello_deepa": "torch 2.8.0",
    "mlsd_tiny_tf2onnx185": "tf2onnx 1.8.5",
    "swin_t_torch113": "torch 1.13",
    "oww_embedding_tf2onnx": "tf2onnx 1.12.1",
    "oww_melspectrogram": "torch 1.11.0",
    "ppocr_mobile_v2_cls": "paddle2onnx (op 9)",
    "ppocrv4_det": "paddle2onnx (op 11)",
    "silero_vad_16k_op15": "torch 2.3.1",
    "silero_vad_half": "torch 2.3.1",
    "silero_vad_legacy_ort": "torch 1.12 + ORT re-save",
    "silero_vad_op18_ifless": "torch 2.9.0 dynamo",
    "silero_vad_v5_spox": "spox",
    "silero_vad_v6_spox": "spox",
}


def find_binary(name, given):
    if given:
        return given
    for c in ("build-dev/app", "build/app", "../main/build/app"):
        p = os.path.join(HERE, c, name)
        if os.access(p, os.X_OK):
            return p
    return None


def run(cmd, timeout, env=None):
    """(rc, stdout, stderr); rc 124 on timeout."""
    try:
        p = subprocess.run(["nice", "-n", "5"] + cmd, capture_output=True, text=True,
                           timeout=timeout, env=env)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return 124, "", "timeout"


def verdict(rc):
    return "ok" if rc == 0 else ("timeout" if rc == 124 else
                                 (f"crash ({rc})" if rc < 0 or rc >= 128 else f"FAIL ({rc})"))


def first_error(text):
    for line in text.splitlines():
        if any(w in line.lower() for w in ("error", "fail", "unsupported", "cannot", "missing")):
            return line.replace(DATA + "/", "").replace("|", "\\|")[:200]
    lines = text.strip().splitlines()
    return lines[-1][:200] if lines else ""


def mib(b):
    return f"{b / 2**20:.2f} MiB"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--remat")
    ap.add_argument("--studio")
    ap.add_argument("--shots", help="folder for the screenshots (default: a temporary one)")
    ap.add_argument("--only", default="")
    ap.add_argument("--time-limit", type=float, default=5.0, help="solve seconds per solver")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per command")
    a = ap.parse_args()
    remat = find_binary("remat", a.remat)
    studio = find_binary("remat-studio", a.studio)
    if not remat:
        sys.exit("no remat binary found: pass --remat")
    shots = a.shots or tempfile.mkdtemp(prefix="remat-realworld-")
    os.makedirs(shots, exist_ok=True)
    work = tempfile.mkdtemp(prefix="remat-realworld-plans-")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")

    print("| file | exporter | flags | info | train-graph | solve --compare | store-all peak | "
          "lowest peak (solver) | saved | run --check (plan) | measured = predicted | "
          "gradients | screenshot | first error |")
    print("|" + "---|" * 14)
    failures = 0
    for f in sorted(os.listdir(DATA)):
        if not f.endswith(".onnx") or a.only not in f:
            continue
        name = f[:-5]
        path = os.path.join(DATA, f)
        flags = shlex.split(ARGS.get(name, ""))
        err = ""
        ri, _, ei = run([remat, "info", path] + flags, a.timeout)
        rt, _, et = run([remat, "train-graph", path] + flags, a.timeout)
        rs, out, es = run([remat, "solve", path, "--compare", "--json", "--time-limit",
                           str(a.time_limit)] + flags, a.timeout)
        if ri:
            err = "info: " + first_error(ei)
        elif rt:
            err = "train-graph: " + first_error(et)
        elif rs:
            err = "solve: " + first_error(es)
        sa = best = None
        best_solver = ""
        if rs == 0:
            rows = json.loads(out)
            for r in rows:
                if r["solver"] == "store-all":
                    sa = r["peak_bytes"]
                if r["status"] not in ("feasible", "optimal") or r["solver"] == "offload":
                    continue
                if best is None or r["peak_bytes"] < best:
                    best, best_solver = r["peak_bytes"], r["solver"]
        rr, measured, grads = None, "", ""
        if best_solver:
            plan = os.path.join(work, name + ".plan.json")
            rp, _, ep = run([remat, "solve", path, "--solver", best_solver, "--time-limit",
                             str(a.time_limit), "--out", plan] + flags, a.timeout)
            if rp:
                rr = rp
                err = err or "solve --out: " + first_error(ep)
            else:
                rr, rout, er = run([remat, "run", path, "--plan", plan, "--check", "--json"] +
                                   flags, a.timeout)
                if rr:
                    err = err or "run: " + first_error(er)
                else:
                    j = json.loads(rout)
                    eq = "yes" if j["peak_matches_prediction"] else "NO"
                    measured = (f"{eq}: {mib(j['measured_peak_bytes'])} / "
                                f"{mib(j['predicted_peak_bytes'])}")
                    if j.get("gradients_bitwise_equal"):
                        grads = "bitwise"
                    elif j.get("gradients_match"):
                        grads = f"match (rel {j['gradients_max_rel_error']:.1e})"
                    else:
                        grads = "DIFFER"
                        err = err or "run: gradients differ from store-all's"
                    if not j["peak_matches_prediction"]:
                        err = err or "run: measured peak differs from the prediction"
                    measured += f" ({j['recompute_steps']} recomputes)"
        shot = "-"
        if studio:
            png = os.path.join(shots, name + ".png")
            rg, _, eg = run([studio, path, "--screenshot", png] + flags, a.timeout, env)
            shot = f"{name}.png" if rg == 0 and os.path.exists(png) else verdict(rg)
            if rg:
                err = err or "studio: " + first_error(eg)
        cells = [name, EXPORTER.get(name, "?"), "`" + " ".join(flags) + "`" if flags else "",
                 verdict(ri), verdict(rt), verdict(rs), mib(sa) if sa else "-",
                 f"{mib(best)} ({best_solver})" if best else "-",
                 mib(sa - best) if sa and best is not None else "-",
                 verdict(rr) if rr is not None else "-", measured or "-", grads or "-", shot,
                 err or "-"]
        failures += 1 if err else 0
        print("| " + " | ".join(cells) + " |", flush=True)
    print(f"\nscreenshots: {shots}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
