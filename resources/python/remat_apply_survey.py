"""Measures remat_apply on torchvision models: export, solve, apply, measure, compare.

    python3 remat_apply_survey.py OUT.jsonl [--remat BIN] [--models a,b,...] [--workdir DIR]

Per model (random init, seed 0, training mode): exports ONNX as the corpus does (opset 17,
training mode, no constant folding, no parameters), solves chen-sqrtn, feng-huang (min-peak) and
rotor (min-time at weights + weight gradients + half the store-all activation peak) with
`remat solve`, applies each plan with remat_apply and writes one JSON line per plan: PyTorch's
saved bytes at the end of forward and saved peak through backward beside the simulator's, the
gradients' max relative error against the plain run, and the application report.

    python3 remat_apply_survey.py OUT.jsonl --table    # the lines as a markdown table
"""

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
import warnings

import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import remat_apply  # noqa: E402

# name: (batch, side). Every torchvision model of ../shared/corpus first, then more that export;
# 64x64 where the model allows it; ViT at its fixed 224, VGG at 224 (its 7x7 adaptive pooling
# exports only from a multiple of 7).
MODELS = {
    "resnet18": (4, 64), "resnet50": (2, 64), "mobilenet_v2": (4, 64), "densenet121": (2, 64),
    "vgg16": (2, 224), "vit_b_16": (2, 224),
    "resnet34": (4, 64), "densenet161": (2, 64), "mobilenet_v3_large": (4, 64), "mobilenet_v3_small": (4, 64),
    "efficientnet_b0": (4, 64), "swin_t": (2, 64), "shufflenet_v2_x1_0": (4, 64), "regnet_y_400mf": (4, 64),
    "convnext_tiny": (2, 64), "squeezenet1_0": (4, 64), "resnext50_32x4d": (2, 64), "mnasnet0_5": (4, 64),
    "alexnet": (4, 64), "wide_resnet50_2": (2, 64),
}


# torch 1.13's exporter has no Bernoulli with an out parameter, which StochasticDepth uses in
# training mode: these export with stochastic depth off (a constructor argument).
KWARGS = {"efficientnet_b0": {"stochastic_depth_prob": 0.0}, "convnext_tiny": {"stochastic_depth_prob": 0.0}}


def make(name):
    torch.manual_seed(0)
    if name == "swin_t":  # swin_t() fixes stochastic_depth_prob=0.2: build its architecture directly
        from torchvision.models.swin_transformer import SwinTransformer
        return SwinTransformer(patch_size=[4, 4], embed_dim=96, depths=[2, 2, 6, 2], num_heads=[3, 6, 12, 24],
                               window_size=[7, 7], stochastic_depth_prob=0.0).train()
    return getattr(torchvision.models, name)(**KWARGS.get(name, {})).train()


def export(name, batch, side, path):
    from torch.onnx import TrainingMode
    model = make(name)
    x = torch.randn(batch, 3, side, side)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, x, path, opset_version=17, training=TrainingMode.TRAINING,
                          do_constant_folding=False, export_params=False, input_names=["input"])
    return model, x


def solve(remat, onnx, solver, out, extra):
    cmd = ["nice", remat, "solve", onnx, "--solver", solver, "--out", out, "--time-limit", "60"] + extra
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0 or not os.path.isfile(out):
        raise RuntimeError(f"{' '.join(cmd)}: {(r.stderr or r.stdout).strip()[-400:]}")


def applied_cell(report):
    """The table's "applied" column: faithful, or NOT faithful with the differences named."""
    return "faithful" if report.get("faithful") else "NOT faithful: " + remat_apply.not_faithful_reason(report)


def print_table(path):
    """One row per plan: PyTorch's saved bytes (end of forward, peak through backward) beside the
    simulator's as PyTorch counts them (and its own figure where that differs), gradients."""
    def pct(m, p):
        return f"{(m - p) / p * 100:+.1f}%" if p else "n/a"

    print("| model (batch, side) | plan | fwd: PyTorch | fwd: simulator | diff | bwd peak: PyTorch | "
          "bwd peak: simulator | diff | simulator's own (fwd / bwd) | grads (max rel err) | applied |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            name = f"{r['model']} ({r.get('batch')}, {r.get('side')})"
            if "error" in r:
                print(f"| {name} | {r.get('solver', '-')} | error: {r['error'][:120]} |||||||||")
                continue
            p = r["plan_applied"]
            me, pe = p["measured_end_of_forward"], p["predicted_end_of_forward_as_pytorch"]
            mb, pb = p["measured_peak_backward"], p["predicted_peak_backward_as_pytorch"]
            own = f"{pct(me, p['predicted_end_of_forward'])} / {pct(mb, p['predicted_peak_backward'])}"
            applied = applied_cell(r.get("report") or {})
            grads = f"{'equal' if r['gradients_max_relative_error'] <= 1e-6 else 'DIFFER'} ({r['gradients_max_relative_error']:.1g})"
            print(f"| {name} | {r['solver']}{' (' + r['note'] + ')' if r.get('note') else ''} | {me:,} | {pe:,} | "
                  f"{pct(me, pe)} | {mb:,} | {pb:,} | {pct(mb, pb)} | {own} | {grads} | {applied} |")
    return 0


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--remat", default=remat_apply._remat_binary())
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--workdir", default="/tmp/remat_survey")
    ap.add_argument("--solvers", default="chen-sqrtn,feng-huang,rotor")
    ap.add_argument("--table", action="store_true", help="print OUT.jsonl as a markdown table and exit")
    a = ap.parse_args(argv[1:])
    if a.table:
        return print_table(a.out)
    os.makedirs(a.workdir, exist_ok=True)
    torch.set_num_threads(1)
    with open(a.out, "a") as log:
        for name in a.models.split(","):
            batch, side = MODELS[name]
            onnx = os.path.join(a.workdir, f"{name}_b{batch}_{side}.onnx")
            t0 = time.time()
            try:
                model, x = export(name, batch, side, onnx)
            except Exception as e:  # noqa: BLE001
                log.write(json.dumps({"model": name, "error": f"export: {type(e).__name__}: {e}"[:500]}) + "\n")
                log.flush()
                continue
            try:
                sim = remat_apply.simulated(onnx, None, a.remat)["figures"]
            except RuntimeError as e:  # remat cannot load the export (reported, not skipped)
                log.write(json.dumps({"model": name, "error": f"remat simulate: {e}"[:600]}) + "\n")
                log.flush()
                continue
            rotor_budget = sim["weight_bytes"] + sim["weight_grad_bytes"] + sim["activation_peak_bytes"] // 2
            for solver, extra in (("chen-sqrtn", []), ("feng-huang", ["--objective", "min-peak"]),
                                  ("rotor", ["--objective", "min-time", "--budget", str(rotor_budget)])):
                if solver not in a.solvers.split(","):
                    continue
                plan = os.path.join(a.workdir, f"{name}_{solver}.json")
                rec = {"model": name, "batch": batch, "side": side, "solver": solver}
                try:
                    try:
                        solve(a.remat, onnx, solver, plan, extra)
                    except RuntimeError as e:
                        if solver != "rotor" or "infeasible" not in str(e):
                            raise
                        # Weights alone exceed half the budget: rotor's smallest peak instead.
                        rec["note"] = "budget infeasible; rotor min-peak"
                        solve(a.remat, onnx, solver, plan, ["--objective", "min-peak"])
                    with open(plan) as f:
                        rec["status"] = json.load(f)["solver"]["status"]
                    r = remat_apply.validate(model, onnx, plan, inputs=[x], remat=a.remat)
                    rep = r.pop("report") or {}
                    rec.update(r)
                    rec["within_5pct"] = remat_apply.within(r, 0.05)
                    rec["report"] = {k: rep.get(k) for k in (
                        "method", "faithful", "not_faithful_because", "segments", "segment_nodes", "recomputed_nodes_planned",
                        "mapped_nodes", "fx_nodes", "onnx_nodes_unmapped", "mapping_unverified",
                        "plan_ops_without_fx_node", "kept_by_plan_but_recomputed", "recomputed_by_plan_but_kept",
                        "kept_by_application_only",
                        "merged_cycles", "groups_partly_recomputed", "expected_saved_bytes_plan",
                        "expected_saved_bytes_applied", "reason")}
                except Exception as e:  # noqa: BLE001
                    rec["error"] = f"{type(e).__name__}: {e}"[:800]
                    rec["trace"] = traceback.format_exc()[-1500:]
                rec["seconds"] = round(time.time() - t0, 1)
                log.write(json.dumps(rec) + "\n")
                log.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
