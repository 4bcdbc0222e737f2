"""Checks remat_apply on a torchvision model: gradients with the plan applied equal the plain run's,
and the plan really changes what PyTorch keeps.

    python3 remat_apply_check.py resnet18 plan.json [model.onnx]   # one JSON line, exit 0 when ok
    python3 remat_apply_check.py --refuse resnet18 plan.json       # exit 0 when the plan is refused

The ONNX file defaults to the plan's model.path; inputs are random, shaped as its input at the
plan's batch.
"""

import copy
import json
import os
import sys

import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import remat_apply  # noqa: E402


def main(argv):
    refuse = argv[1:2] == ["--refuse"]
    args = argv[2:] if refuse else argv[1:]
    arch, plan_path = args[0], args[1]
    torch.manual_seed(0)
    model = getattr(torchvision.models, arch)().train()
    plan = remat_apply.load_plan(plan_path)
    onnx = args[2] if len(args) > 2 else remat_apply._find_onnx(plan, plan_path)
    if refuse:
        try:
            remat_apply.apply_plan(model, plan_path, onnx=onnx, quiet=True)
        except ValueError as e:
            print(json.dumps({"refused": True, "message": str(e)}))
            return 0
        print(json.dumps({"refused": False}))
        return 1
    graph = remat_apply.OnnxGraph(onnx)
    shape = list(graph.shape(graph.data_inputs()[0]))
    shape[0] = int(plan.get("model", {}).get("batch") or shape[0])
    x = torch.randn(*shape)
    base = remat_apply.measure(copy.deepcopy(model), [x])
    planned = remat_apply.apply_plan(copy.deepcopy(model), plan_path, onnx=onnx, inputs=[x], quiet=True)
    got = remat_apply.measure(planned, [x])
    err, worst = remat_apply.max_relative_error(
        base["gradients"], got["gradients"])
    rep = planned.remat_report
    ok = err <= 1e-5 and got["saved_end_of_forward"] < base["saved_end_of_forward"] and \
        (rep.get("segments", 0) > 0 or getattr(planned, "last_wrapped_count", 0) > 0)
    print(json.dumps({"method": rep["method"], "faithful": rep["faithful"], "segments": rep.get("segments", 0),
                      "wrapped": getattr(planned, "last_wrapped_count", 0),
                      "saved_plain": base["saved_end_of_forward"], "saved_planned": got["saved_end_of_forward"],
                      "max_relative_error": err, "worst": worst, "ok": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
