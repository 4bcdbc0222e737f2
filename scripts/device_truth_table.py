#!/usr/bin/env python3
"""Tables from the truth and torch steps of scripts/device_check.sh (their JSON files are in the
log archive it leaves): CUDA step time predicted from a profile against measured, and our memory
figures against PyTorch's torch.cuda.max_memory_allocated for the same network.
  python3 scripts/device_truth_table.py LOGDIR|logs.tgz [models...]"""
import json

import sys
import tarfile
import tempfile

MIB = 1 << 20


def load(path):
    """The last JSON object in a file (the logs may hold a warning line before it), or None."""
    try:
        text = open(path).read()
    except OSError:
        return None
    start = text.find("{")
    while start >= 0:
        try:
            return json.loads(text[start:])
        except json.JSONDecodeError:
            start = text.find("\n{", start + 1)
            start = start + 1 if start >= 0 else -1
    return None


def pct(a, b):
    return f"{(a - b) / b * 100:+.1f}%" if a is not None and b else "-"


def ms(s):
    return f"{s * 1e3:.1f}" if s is not None else "-"


def mib(b):
    return f"{b / MIB:.0f}" if b is not None else "-"


def time_table(d, m):
    rows = []
    store = load(f"{d}/truth-{m}.storeall.json")
    sim = load(f"{d}/truth-{m}.sim-none-fp32.json")
    from32 = load(f"{d}/truth-{m}.from32.json")
    if store and from32:  # the profiling run predicts with the roofline; its own profile's figure
        store = dict(store, predicted_step_seconds=from32.get("total_seconds"))
    for name, f in [("store-all", store)] + [(s, load(f"{d}/truth-{m}.{s}.json"))
                                             for s in ("chen-sqrtn", "feng-huang", "rotor")]:
        if not f:
            rows.append(f"| {m} | {name} | not run | | | | |")
            continue
        rows.append(f"| {m} | {name} | {ms(f.get('predicted_step_seconds'))} | "
                    f"{ms(f.get('median_step_seconds'))} | "
                    f"{pct(f.get('predicted_step_seconds'), f.get('median_step_seconds'))} | "
                    f"{mib(f.get('measured_peak_bytes'))} / {mib(f.get('predicted_peak_bytes'))} | "
                    f"{f.get('recompute_steps', '-')} |")
    from16 = load(f"{d}/truth-{m}.from16.json")
    if from16 and store:
        rows.append(f"| {m} | store-all from the batch-16 profile | {ms(from16.get('total_seconds'))} | "
                    f"{ms(store.get('median_step_seconds'))} | "
                    f"{pct(from16.get('total_seconds'), store.get('median_step_seconds'))} | | |")
    if sim and store:
        rows.append(f"| {m} | store-all, roofline estimate | {ms(sim.get('total_seconds'))} | "
                    f"{ms(store.get('median_step_seconds'))} | "
                    f"{pct(sim.get('total_seconds'), store.get('median_step_seconds'))} | | |")
    return rows


def torch_table(d, m):
    rows = []
    store = load(f"{d}/truth-{m}.storeall.json")
    adam = load(f"{d}/truth-{m}.adam.json")
    configs = [("none", "fp32", "none-fp32", store), ("adam", "fp32", "adam-fp32", adam),
               ("adam", "bf16-mixed", "adam-bf16-master", None),
               ("adam", "autocast-bf16", "adam-bf16-mixed", None)]
    for opt, prec, ours_key, measured in configs:
        t = load(f"{d}/torch-{m}-{opt}-{prec}.json")
        sim = load(f"{d}/truth-{m}.sim-{ours_key}.json")
        label = f"{opt} {prec}" + {"autocast-bf16": " (ours: bf16-mixed)",
                                   "bf16-mixed": " (ours: bf16-master)"}.get(prec, "")
        tp = t.get("max_memory_allocated_bytes") if t else None
        sp = sim.get("peak_bytes") if sim else None
        mp = measured.get("measured_peak_bytes") if measured else None
        dp = measured.get("device_peak_bytes") if measured else None
        rows.append(f"| {m} | {label} | {mib(sp)} | {mib(mp)} | {mib(dp)} | {mib(tp)} | {pct(sp, tp)} | "
                    f"{ms(measured.get('median_step_seconds') if measured else None)} | "
                    f"{ms(t.get('median_step_seconds') if t else None)} |")
    for opt, prec, ours_key in [("none", "fp32", "none-fp32"), ("adam", "fp32", "adam-fp32"),
                                ("adam", "bf16-mixed", "adam-bf16-master")]:
        t = load(f"{d}/torch-{m}-{opt}-{prec}-math.json")
        sim = load(f"{d}/truth-{m}.sim-{ours_key}.json")
        if not t or "max_memory_allocated_bytes" not in t:
            continue
        sp = sim.get("peak_bytes") if sim else None
        tp = t["max_memory_allocated_bytes"]
        rows.append(f"| {m} | {opt} {prec}, torch attention on its math path | {mib(sp)} | | | "
                    f"{mib(tp)} | {pct(sp, tp)} | | {ms(t.get('median_step_seconds'))} |")
    tf = load(f"{d}/torch-{m}-none-fp32-tf32.json")
    if tf:
        rows.append(f"| {m} | none fp32, PyTorch with TF32 | | | | {mib(tf.get('max_memory_allocated_bytes'))} | | "
                    f"| {ms(tf.get('median_step_seconds'))} |")
    return rows


def main():
    src = sys.argv[1]
    models = sys.argv[2:] or ["resnet50", "vit_b_16"]
    d = src
    if src.endswith(".tgz"):
        d = tempfile.mkdtemp()
        with tarfile.open(src) as tar:
            tar.extractall(d, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(d)
    device = next((t["device"] for m in models
                   for t in [load(f"{d}/torch-{m}-none-fp32.json")] if t), "unknown device")
    print(f"CUDA backend, batch 32, 224x224; predicted from a profile of the store-all run ({device})\n")
    print("| model | schedule | predicted ms | measured median ms | predicted - measured | "
          "peak measured / predicted MiB | recompute steps |")
    print("|---|---|---|---|---|---|---|")
    for m in models:
        for r in time_table(d, m):
            print(r)
    print("\nMemory and step time beside PyTorch eager (same network, batch 32, TF32 off)\n")
    print("| model | optimizer, precision | ours predicted MiB | ours measured on CUDA MiB | "
          "device pool MiB | torch max_memory_allocated MiB | ours - torch | ours ms | torch ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for m in models:
        for r in torch_table(d, m):
            print(r)


if __name__ == "__main__":
    main()
