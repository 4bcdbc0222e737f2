"""Apply a Remat Studio plan to the PyTorch model an ONNX file was exported from.

    import remat_apply
    model = remat_apply.apply_plan(model, "plan.json")   # wraps modules in torch.utils.checkpoint
    remat_apply.last_wrapped_count                        # how many modules were wrapped

ONNX node names carry the PyTorch module path of the op ("/layer1/layer1.0/conv1/Conv" is op Conv
of module layer1.0.conv1). Every forward node the plan recomputes names the block around it: the
innermost module on its path that has children (layer1.0 above; the leaf conv1 alone would save
nothing, since its output is needed anyway). Each such block, outermost first, runs under
torch.utils.checkpoint: PyTorch then stores only the block's inputs and recomputes its inside
during backward, which is what the plan does to those nodes.

A plan naming a module the model does not have is refused (ValueError): it was made for another
model, and applying part of it would silently change what is measured.
"""

import json
import re

import torch
import torch.utils.checkpoint

last_wrapped_count = 0

_CALL_SUFFIX = re.compile(r"_\d+$")  # "relu_1": the second call of module "relu"


def _recomputed_nodes(plan):
    """ONNX node names of the forward ops the plan recomputes."""
    if "decisions" in plan:
        return [d["node"] for d in plan["decisions"] if d.get("decision") == "recompute"]
    # A plan in core's format only (remat solve --out): a forward op computed more than once is
    # recomputed. Steps are ["compute", op name, op id]; backward ops end in "/grad".
    counts = {}
    for step in plan.get("schedule", []):
        if len(step) >= 2 and step[0] == "compute" and not step[1].endswith("/grad"):
            counts[step[1]] = counts.get(step[1], 0) + 1
    return [name for name, n in counts.items() if n > 1]


def _module_path(node_name, modules):
    """Dotted module names along a node's path, outermost first; None for a name not in `modules`."""
    parts = [p for p in node_name.split("/") if p][:-1]  # the last part is the op
    names, prefix = [], ""
    for part in parts:
        candidates = [part, _CALL_SUFFIX.sub("", part)]
        full = None
        for c in candidates:
            # torch names a child by its attribute ("conv1" inside "layer1.0"), and a Sequential's
            # child by the Sequential's attribute plus its index ("layer1.0", "downsample.0"), so
            # a part is relative to its parent or to its grandparent.
            parent = prefix.rpartition(".")[0] if "." in prefix else ""
            guesses = [prefix + "." + c if prefix else c, parent + "." + c if parent else c, c]
            for guess in guesses:
                if guess in modules:
                    full = guess
                    break
            if full:
                break
        if full is None:
            return part, None
        names.append(full)
        prefix = full
    return None, names


def modules_to_wrap(model, plan):
    """The module names apply_plan would wrap, outermost first. Raises ValueError as apply_plan."""
    modules = dict(model.named_modules())
    chosen = []
    for node in _recomputed_nodes(plan):
        missing, path = _module_path(node, modules)
        if path is None:
            raise ValueError(f"plan node {node!r} names module {missing!r}, which the model does not have")
        blocks = [name for name in path if any(True for _ in modules[name].children())]
        if blocks:
            chosen.append(blocks[-1])
    # Outermost first; a block inside a chosen one is already recomputed with it.
    result = []
    for name in sorted(set(chosen), key=lambda n: (n.count("."), n)):
        if not any(name.startswith(outer + ".") for outer in result):
            result.append(name)
    return result


def _checkpointed(forward):
    def run(*args, **kwargs):
        return torch.utils.checkpoint.checkpoint(forward, *args, use_reentrant=False, **kwargs)
    return run


def apply_plan(model, plan_path):
    """Wraps the modules the plan recomputes in torch.utils.checkpoint; returns the model."""
    global last_wrapped_count
    with open(plan_path, encoding="utf-8") as f:
        plan = json.load(f)
    names = modules_to_wrap(model, plan)
    modules = dict(model.named_modules())
    wrapped = 0
    for name in names:
        module = modules[name]
        if getattr(module, "_remat_checkpointed", False):
            continue
        module.forward = _checkpointed(module.forward)
        module._remat_checkpointed = True
        wrapped += 1
    last_wrapped_count = wrapped
    model.last_wrapped_count = wrapped
    return model
