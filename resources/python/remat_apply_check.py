"""Checks remat_apply on a torchvision model: gradients with the plan applied equal the plain run's.

    python3 remat_apply_check.py resnet18 plan.json      # prints one JSON line, exit 0 when equal
    python3 remat_apply_check.py --refuse resnet18 plan.json   # exit 0 when the plan is refused
"""

import copy
import json
import os
import sys

import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import remat_apply  # noqa: E402


def gradients(model, x):
    model.zero_grad(set_to_none=True)
    out = model(x)
    torch.manual_seed(1)
    r = torch.randn_like(out)
    (out * r).sum().backward()
    return {n: p.grad.detach().clone() for n, p in model.named_parameters()}


def main(argv):
    refuse = argv[1:2] == ["--refuse"]
    args = argv[2:] if refuse else argv[1:]
    arch, plan_path = args[0], args[1]
    torch.manual_seed(0)
    model = getattr(torchvision.models, arch)().train()
    if refuse:
        try:
            remat_apply.apply_plan(model, plan_path)
        except ValueError as e:
            print(json.dumps({"refused": True, "message": str(e)}))
            return 0
        print(json.dumps({"refused": False}))
        return 1
    x = torch.randn(2, 3, 64, 64)
    plain = copy.deepcopy(model)
    planned = remat_apply.apply_plan(copy.deepcopy(model), plan_path)
    # Proof that checkpointing took effect: a wrapped block's leaves run again during backward.
    calls = {"plain": 0, "planned": 0}
    names = remat_apply.modules_to_wrap(model, json.load(open(plan_path)))
    probe = next(n for n, m in dict(planned.named_modules()).items()
                 if n.startswith(names[0] + ".") and not any(True for _ in m.children()))
    dict(plain.named_modules())[probe].register_forward_hook(lambda *a: calls.__setitem__("plain", calls["plain"] + 1))
    dict(planned.named_modules())[probe].register_forward_hook(lambda *a: calls.__setitem__("planned", calls["planned"] + 1))
    g0 = gradients(plain, x)
    g1 = gradients(planned, x)
    worst, worst_name = 0.0, ""
    for name, a in g0.items():
        b = g1[name]
        err = ((a - b).abs().max() / a.abs().max().clamp_min(1e-12)).item()
        if err > worst:
            worst, worst_name = err, name
    ok = worst <= 1e-5 and remat_apply.last_wrapped_count > 0 and calls["planned"] == 2 * calls["plain"]
    print(json.dumps({"wrapped": remat_apply.last_wrapped_count,
                      "modules": remat_apply.modules_to_wrap(model, json.load(open(plan_path))),
                      "probe": probe, "probe_calls": calls, "max_relative_error": worst, "worst": worst_name, "ok": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
