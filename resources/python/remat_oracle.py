"""What PyTorch's autograd saves for backward, beside what Remat Studio's memory model says.

    python3 remat_oracle.py check MODEL [--input SPEC ...] [--kwargs JSON] [--out DIR] [--remat BIN]
                                  [--freeze REGEX ...] [--trainable REGEX ...] [--metadata]
    python3 remat_oracle.py measure MODEL [--input SPEC ...] --onnx model.onnx --oracle oracle.json
    python3 remat_oracle.py compare model.onnx oracle.json [--remat BIN] [--all]

MODEL is a torchvision model name (`resnet18`, `torchvision:deeplabv3_resnet50`, `r3d_18`) or
`path/to/file.py:Class` (constructed with no arguments, or with --kwargs '{"d": 64}'). SPEC is an
input shape with an optional dtype and value bound: `2x3x64x64` (float32, normal), `2x16:int64:1000`
(token ids in [0, 1000)), `2x16:bool`; give one --input per forward() argument. torchvision models
default to 2x3x64x64 (video: 2x3x8x64x64).

`measure` runs the model once in training mode (seed 0) and records every tensor autograd saves
(torch.autograd.graph.saved_tensors_hooks), per autograd node and in total, de-duplicated by
storage at full storage size and split into parameters / buffers / inputs / activations (not what
nodes freed when forward returned had saved: `freed_before_backward_bytes`), plus the parameter and
buffer bytes; then it exports training-mode ONNX as ../shared/corpus does (opset 17,
TrainingMode.TRAINING, no constant folding, parameters as graph inputs named by their state_dict
keys). `compare` runs `remat train-graph MODEL --json` and lines the two up per module (the ONNX
node names carry the module path; each PyTorch node is attributed to the innermost module running
when it saved) and prints the modules whose saved bytes differ, with both sides' ops. `check` does
both. Exit status: 0 when saved activation bytes agree within --tolerance percent (default 1) and
parameter bytes are equal, 1 when they do not, 2 on errors.

Fine-tuning: `--freeze REGEX` sets requires_grad_(False) on every parameter whose name (as
named_parameters() gives it, which is the ONNX input's name) contains a match (re.search), and
`--trainable REGEX` on every parameter matching none of the --trainable patterns, before measuring;
the same flags go to `remat train-graph` (kept in oracle.json, so `compare` passes them too). Use
patterns that mean the same in Python's `re` and ECMAScript (plain text, ^, $, ., \., [], |).
`--metadata` exports with remat_export.py instead (metadata_props say which inputs are buffers and
which parameters are frozen), so the importer need not guess.
"""

import argparse
import contextlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
import weakref

try:  # compare needs no torch; measure and check do
    import torch
except ImportError:  # pragma: no cover
    torch = None

DTYPES = ["float32", "float", "float16", "float64", "int64", "long", "int32", "bool"]


# ---------------------------------------------------------------------------------------------
# Models and inputs

class _FirstOutput(torch.nn.Module if torch else object):
    """torchvision's segmentation models return {"out": ..., "aux": ...}: the ONNX outputs are
    the dict's tensors, in order."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, *args):
        out = self.model(*args)
        if isinstance(out, dict):
            return tuple(out.values())
        return out


@contextlib.contextmanager
def _skipped_init():
    """torchvision's random initialisation, skipped: what autograd saves depends on shapes only, and
    filling 100M+ parameters dominates the time of a measurement on a CPU. The weights keep
    whatever torch.empty gave (denormals flushed, so they do not slow the forward pass)."""
    init = torch.nn.init
    names = [n for n in dir(init) if n.endswith("_") and not n.startswith("_") and callable(getattr(init, n))]
    saved = {n: getattr(init, n) for n in names}
    try:
        for n in names:
            setattr(init, n, lambda tensor, *args, **kwargs: tensor)
        torch.set_flush_denormal(True)
        yield
    finally:
        for n, f in saved.items():
            setattr(init, n, f)


def _torchvision_builder(name):
    import torchvision.models as tvm
    for mod in (tvm, tvm.segmentation, tvm.video):
        fn = getattr(mod, name, None)
        if callable(fn) and not isinstance(fn, type):
            return fn, mod
    return None, None


def load_model(spec, kwargs=None):
    """(model in training mode, default input specs, label)."""
    kwargs = dict(kwargs or {})
    torch.manual_seed(0)
    if ":" in spec and not spec.startswith("torchvision:"):
        path, cls = spec.rsplit(":", 1)
        if not os.path.isfile(path):
            raise SystemExit(f"error: {path}: no such file (MODEL is a torchvision name or file.py:Class)")
        mspec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
        module = importlib.util.module_from_spec(mspec)
        sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
        mspec.loader.exec_module(module)
        if not hasattr(module, cls):
            raise SystemExit(f"error: {path} defines no '{cls}'")
        model = getattr(module, cls)(**kwargs)
        return model.train(), getattr(model, "example_input_specs", None), cls
    name = spec.split(":", 1)[1] if spec.startswith("torchvision:") else spec
    fn, mod = _torchvision_builder(name)
    if fn is None:
        raise SystemExit(f"error: '{name}' is not a torchvision 0.14 classification, segmentation or video model "
                         "(or give file.py:Class)")
    import torchvision.models as tvm
    if mod is tvm.segmentation:
        kwargs.setdefault("weights_backbone", None)  # no download: random weights measure the same
    with _skipped_init():
        model = fn(weights=None, **kwargs)
    import torchvision.ops
    for m in model.modules():
        # torch 1.13's exporter has no Bernoulli with an out parameter, which StochasticDepth
        # runs in training mode; several builders fix its probability, so it is switched off here.
        if isinstance(m, torchvision.ops.StochasticDepth):
            m.p = 0.0
    if mod is tvm.segmentation:
        model = _FirstOutput(model)
    default = ["2x3x8x64x64"] if mod is tvm.video else ["2x3x64x64"]
    return model.train(), default, name


def make_input(spec, gen):
    parts = spec.split(":")
    try:
        shape = [int(d) for d in parts[0].replace(",", "x").split("x")]
    except ValueError:
        raise SystemExit(f"error: input '{spec}': the shape must be dims joined by 'x' (2x3x64x64)")
    name = parts[1] if len(parts) > 1 else "float32"
    if name not in DTYPES:
        raise SystemExit(f"error: input '{spec}': unknown dtype '{name}' (one of {', '.join(DTYPES)})")
    dtype = {"float": torch.float32, "long": torch.int64}.get(name) or getattr(torch, name)
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) > 0.5
    if not dtype.is_floating_point:
        high = int(parts[2]) if len(parts) > 2 else 2
        return torch.randint(0, high, shape, generator=gen, dtype=dtype)
    return torch.randn(shape, generator=gen).to(dtype)


# ---------------------------------------------------------------------------------------------
# Measuring what autograd saves

def _storage_key(t):
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    nbytes = s.nbytes() if hasattr(s, "nbytes") else s.size() * t.element_size()
    return (t.device.type, s.data_ptr()), nbytes


class _Packed:
    """What the pack hook returns: the saved tensor and its record number."""
    __slots__ = ("tensor", "record", "__weakref__")

    def __init__(self, tensor, record):
        self.tensor, self.record = tensor, record


def _saved_attributes(node):
    for attr in dir(node):
        if attr.startswith("_saved_") and not attr.endswith(("_sym_sizes", "_sym_strides")):
            yield attr


def _fused_dropout(input, p=0.5, training=True, inplace=False):
    """Dropout as PyTorch runs it on CUDA (native_dropout: a bool mask saved), for a CPU measurement:
    the CPU path multiplies by a float noise tensor and saves that (4 bytes per element)."""
    if not training or p == 0.0 or not input.requires_grad:
        return _PLAIN_DROPOUT(input, p, training, inplace)
    return torch.native_dropout(input, p, True)[0]


_PLAIN_DROPOUT = torch.nn.functional.dropout if torch else None
_PLAIN_LOGSIGMOID = torch.nn.functional.logsigmoid if torch else None


class _LogSigmoidCUDA(torch.autograd.Function if torch else object):
    """log_sigmoid as PyTorch runs it on CUDA: log_sigmoid_forward's buffer is empty there and the
    backward recomputes from the input, so autograd keeps the input alone; the CPU path also keeps
    a buffer the size of the input."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _PLAIN_LOGSIGMOID(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.sigmoid(-x)


def _cuda_logsigmoid(input):
    return _LogSigmoidCUDA.apply(input) if input.requires_grad else _PLAIN_LOGSIGMOID(input)


AUTOCAST_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}
PRECISION_OF = {"bf16": "bf16-mixed", "fp16": "16-mixed"}  # the remat --precision of each


def measure(model, inputs, cuda_dropout=True, autocast=None, device="cpu"):
    """PyTorch's saved tensors for one training step of `model(*inputs)` (see the module doc).
    cuda_dropout: measure Dropout (a bool mask) and log_sigmoid (no buffer) as CUDA runs them
    rather than as the CPU does. autocast: None (float32), "bf16" or "fp16": the forward runs
    under torch.autocast(device, dtype), the backward outside it, as the autocast docs say."""
    params = {}
    for p in model.parameters():
        key, nbytes = _storage_key(p)
        params[key] = nbytes
    buffers = {}
    for b in model.buffers():
        key, nbytes = _storage_key(b)
        buffers.setdefault(key, nbytes)
    input_keys = {_storage_key(t)[0] for t in inputs}

    records = []   # per pack: storage key, bytes, dtype, shape, module
    module_stack = []
    names = {m: n for n, m in model.named_modules()}

    def pre(mod, _args):
        module_stack.append(names.get(mod, ""))

    def post(mod, _args, _out):
        if module_stack:
            module_stack.pop()

    handles = []
    for mod in names:
        if isinstance(mod, torch.jit.ScriptModule):
            continue  # a scripted copy kept for the export (hooks are refused there)
        handles.append(mod.register_forward_pre_hook(pre))
        handles.append(mod.register_forward_hook(post))

    packed = []    # per record: a weak reference to what the pack hook returned

    def pack(t):
        key, nbytes = _storage_key(t)
        records.append({"key": key, "bytes": nbytes, "dtype": str(t.dtype).replace("torch.", ""),
                        "shape": list(t.shape), "module": module_stack[-1] if module_stack else ""})
        # detached: a tensor holding its grad_fn would keep the node that saved it alive (node ->
        # saved -> tensor -> node), which autograd itself avoids for a node's own outputs
        p = _Packed(t.detach(), len(records) - 1)
        packed.append(weakref.ref(p))
        return p

    unpacked = []

    def unpack(p):
        unpacked.append(p.record)
        return p.tensor

    torch.manual_seed(0)
    plain_dropout = torch.nn.functional.dropout
    if cuda_dropout:
        torch.nn.functional.dropout = _fused_dropout
        torch.nn.functional.logsigmoid = _cuda_logsigmoid
    try:
        amp = (torch.autocast(device, dtype=getattr(torch, AUTOCAST_DTYPES[autocast])) if autocast
               else contextlib.nullcontext())
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            with amp:
                out = model(*inputs)
            # A record whose autograd node is gone once forward has returned (the last step of an
            # unrolled recurrence updating a state nothing reads: RWKV's aa, bb, pp) was freed
            # with that node before backward, and the export drops the dead ops: not kept.
            alive = [ref() is not None for ref in packed]
            outs = [o for o in (out if isinstance(out, (tuple, list)) else [out])
                    if torch.is_tensor(o) and o.requires_grad]
            # Every autograd node reachable from the outputs, and which records it saved
            # (reading node._saved_<name> runs the unpack hook on its packed records).
            nodes, seen, stack = [], set(), [o.grad_fn for o in outs if o.grad_fn is not None]
            while stack:
                node = stack.pop()
                if node is None or node in seen:
                    continue
                seen.add(node)
                unpacked.clear()
                for attr in _saved_attributes(node):
                    with contextlib.suppress(Exception):
                        getattr(node, attr)
                if hasattr(node, "saved_tensors"):  # custom autograd.Function
                    with contextlib.suppress(Exception):
                        node.saved_tensors
                if unpacked:
                    nodes.append((min(unpacked), node.name(), sorted(set(unpacked))))
                stack.extend(fn for fn, _ in node.next_functions)
        grads = [torch.randn(o.shape, generator=torch.Generator().manual_seed(1), dtype=o.dtype).to(o.device)
                 for o in outs]
        torch.autograd.backward(outs, grads)
    finally:
        torch.nn.functional.dropout = plain_dropout
        torch.nn.functional.logsigmoid = _PLAIN_LOGSIGMOID
        for h in handles:
            h.remove()

    def kind(key, rec=None):
        if (rec is not None and rec["shape"] == [] and key[0] == "cpu" and
                rec["dtype"] in ("float64", "int64", "bool")):
            # a Python number autograd wrapped in a tensor (x * 0.5 float64, 2 * x int64, x * True
            # bool): host memory, never on the device
            return "scalar"
        if key in params:
            return "parameter"
        if key in buffers:
            return "buffer"
        if key in input_keys:
            return "input"
        return "activation"

    totals = {"parameter": 0, "buffer": 0, "input": 0, "activation": 0, "scalar": 0}
    by_dtype, counted = {}, set()
    out_nodes = []
    for first, name, recs in sorted(nodes):   # forward order: by the first record each node saved
        saved, new_bytes = [], 0
        for r in recs:
            rec = records[r]
            k = kind(rec["key"], rec)
            is_new = rec["key"] not in counted
            if is_new:
                counted.add(rec["key"])
                totals[k] += rec["bytes"]
                if k == "activation":
                    new_bytes += rec["bytes"]
                    by_dtype[rec["dtype"]] = by_dtype.get(rec["dtype"], 0) + rec["bytes"]
            saved.append({"bytes": rec["bytes"], "dtype": rec["dtype"], "shape": rec["shape"], "kind": k,
                          "storage": hex(rec["key"][1]), "counted": is_new})
        out_nodes.append({"node": name, "module": records[first]["module"], "saved": saved,
                          "activation_bytes": new_bytes})
    # Storages saved by nodes the walk above did not read but that were alive after forward still
    # count; those freed with their node when forward returned do not (see `alive`).
    freed = 0
    for i, rec in enumerate(records):
        if rec["key"] not in counted:
            if not alive[i]:
                freed += rec["bytes"]
                continue
            counted.add(rec["key"])
            totals[kind(rec["key"], rec)] += rec["bytes"]
    trainable = {}
    for p in model.parameters():
        if p.requires_grad:
            key, nbytes = _storage_key(p)
            trainable[key] = nbytes
    return {
        "param_bytes": sum(params.values()),
        "trainable_param_bytes": sum(trainable.values()),
        "frozen_param_bytes": sum(params.values()) - sum(trainable.values()),
        "param_count": sum(p.numel() for p in {id(p): p for p in model.parameters()}.values()),
        "buffer_bytes": sum(buffers.values()),
        "saved_param_bytes": totals["parameter"],
        "saved_buffer_bytes": totals["buffer"],
        "saved_input_bytes": totals["input"],
        "saved_activation_bytes": totals["activation"],
        "saved_activation_bytes_by_dtype": by_dtype,
        "freed_before_backward_bytes": freed,
        "autograd_nodes": out_nodes,
    }


def apply_trainability(model, freeze=None, trainable=None):
    """requires_grad_(False) on the parameters --freeze / --trainable name; returns the frozen names."""
    frozen = []
    for name, p in model.named_parameters():
        off = any(re.search(r, name) for r in (freeze or []))
        if trainable:
            off = off or not any(re.search(r, name) for r in trainable)
        if off:
            p.requires_grad_(False)
            frozen.append(name)
    for option, patterns in (("--freeze", freeze), ("--trainable", trainable)):
        for r in patterns or []:
            if not any(re.search(r, n) for n, _ in model.named_parameters()):
                raise SystemExit(f"error: {option} '{r}' matches no parameter")
    return frozen


def export(model, inputs, path, input_names, output_names=None):
    from torch.onnx import TrainingMode
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, tuple(inputs), path, opset_version=17, training=TrainingMode.TRAINING,
                          do_constant_folding=False, export_params=False, input_names=input_names,
                          output_names=output_names)


def measure_and_export(spec, input_specs, onnx_path, kwargs=None, freeze=None, trainable=None, metadata=False,
                       autocast=None, device="cpu"):
    model, default, label = load_model(spec, kwargs)
    frozen = apply_trainability(model, freeze, trainable)
    input_specs = input_specs or default
    if not input_specs:
        raise SystemExit(f"error: {spec}: give the input shape (--input 2x3x64x64; one per forward() argument)")
    gen = torch.Generator().manual_seed(0)
    inputs = [make_input(s, gen) for s in input_specs]
    if device == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("error: --device cuda: this PyTorch sees no CUDA device (measure with --device cpu)")
        model_dev, inputs_dev = model.cuda(), [t.cuda() for t in inputs]
        oracle = measure(model_dev, inputs_dev, autocast=autocast, device=device)
        model, inputs = model.cpu(), [t.cpu() for t in inputs]
    else:
        oracle = measure(model, inputs, autocast=autocast, device=device)
    names = ["input"] if len(inputs) == 1 else [f"input{i}" for i in range(len(inputs))]
    oracle.update({"model": label, "spec": spec, "inputs": input_specs, "input_names": names,
                   "torch": torch.__version__, "freeze": list(freeze or []), "trainable": list(trainable or []),
                   "frozen_params": len(frozen), "metadata": bool(metadata),
                   "autocast": autocast, "device": device})
    # A model may name its outputs (an MAE's "loss") and say which remat options its file needs
    # (the branch of a data-dependent If that PyTorch took: --branch NODE=then).
    output_names = getattr(model, "example_output_names", None)
    if getattr(model, "example_remat_args", None):
        oracle["remat_args"] = list(model.example_remat_args)
    if metadata:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import remat_export
        remat_export.export(model, tuple(inputs), onnx_path, input_names=names)
    else:
        # A data-dependent branch survives the export only when the model is scripted, not traced.
        exported = torch.jit.script(model) if getattr(model, "example_export_scripted", False) else model
        export(exported, inputs, onnx_path, names, output_names)
    oracle["onnx_file"] = os.path.basename(onnx_path)
    return oracle


# ---------------------------------------------------------------------------------------------
# Comparing with Remat Studio

def remat_binary(explicit=None):
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (explicit, os.environ.get("REMAT_CLI"), os.path.join(here, "..", "..", "build", "app", "remat"),
                 os.path.join(here, "..", "..", "build-dev", "app", "remat")):
        if cand and os.path.isfile(cand):
            return cand
    return shutil.which("remat") or "remat"


def train_graph(onnx_path, remat=None, oracle=None):
    cmd = [remat_binary(remat), "train-graph", onnx_path, "--json"] + list((oracle or {}).get("remat_args") or [])
    for option in ("freeze", "trainable"):
        for r in (oracle or {}).get(option) or []:
            cmd += [f"--{option}", r]
    autocast = (oracle or {}).get("autocast")
    if autocast:
        cmd += ["--precision", PRECISION_OF[autocast], "--autocast-device", (oracle or {}).get("device", "cpu")]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, (r.stderr.strip() or r.stdout.strip()).splitlines()[-1] if (r.stderr or r.stdout) else "failed"
    return json.loads(r.stdout), None


def module_of_onnx_name(name):
    """'/layer1/layer1.0/conv1/Conv' -> 'layer1.0.conv1', '/features/features.1/block/block.0/Conv'
    -> 'features.1.block.0' (torch's exporter writes a container's child as '<parent>.<child>')."""
    parts = [p for p in name.split("/")[:-1] if p]
    path, previous = "", None
    for p in parts:
        # "features.1" under "features" is child "1" of it: the level repeats its parent's name.
        own = p.rsplit(".", 1)[1] if previous is not None and p.startswith(previous + ".") else p
        path = own if not path else path + "." + own
        previous = p
    return path


def compare(oracle, ours, tolerance=1.0, show_all=False, out=sys.stdout):
    """Prints the totals and the modules whose saved bytes differ; returns (diff %, params equal)."""
    theirs_bytes = oracle["saved_activation_bytes"]
    ours_bytes = ours["saved_for_backward_bytes"]
    diff = 100.0 * (ours_bytes - theirs_bytes) / theirs_bytes if theirs_bytes else 0.0
    # param_bytes: every parameter; ours splits them into trainable and frozen
    our_params = ours["param_bytes"] + ours.get("frozen_param_bytes", 0)
    params_equal = our_params == oracle["param_bytes"]
    if "trainable_param_bytes" in oracle:
        params_equal = params_equal and ours["param_bytes"] == oracle["trainable_param_bytes"]
    frozen = ""
    if oracle.get("frozen_param_bytes"):
        frozen = (f" (frozen: PyTorch {oracle['frozen_param_bytes']} B, ours "
                  f"{ours.get('frozen_param_bytes', 0)} B)")
    print(f"{oracle.get('model', '')}: saved activations PyTorch {theirs_bytes} B, ours {ours_bytes} B "
          f"({diff:+.2f}%); parameters PyTorch {oracle['param_bytes']} B, ours {our_params} B{frozen}"
          f"{'' if params_equal else ' (DIFFER)'}", file=out)
    per_module = {}
    for n in oracle["autograd_nodes"]:
        m = per_module.setdefault(n["module"], {"torch": 0, "ours": 0, "torch_ops": [], "our_ops": []})
        m["torch"] += n["activation_bytes"]
        m["torch_ops"].append(f"{n['node']} {n['activation_bytes']}")
    torch_modules = set(per_module)
    for op in ours.get("saved_by_op", []):
        module = module_of_onnx_name(op["name"])
        # A module called twice (torchvision's shared ReLU) gets scopes 'relu', 'relu_1', ...
        base = re.sub(r"_\d+$", "", module)
        if module not in torch_modules and base in torch_modules:
            module = base
        m = per_module.setdefault(module, {"torch": 0, "ours": 0, "torch_ops": [], "our_ops": []})
        m["ours"] += op["saved_bytes"]
        m["our_ops"].append(f"{op['type']} {op['saved_bytes']}")
    rows = [(k, v) for k, v in per_module.items() if show_all or v["torch"] != v["ours"]]
    if rows:
        print(f"  {'module':40} {'PyTorch B':>12} {'ours B':>12}  ops (PyTorch | ours)", file=out)
    for k, v in rows[:60]:
        print(f"  {k or '(top)':40.40} {v['torch']:12d} {v['ours']:12d}  {', '.join(v['torch_ops'])} | "
              f"{', '.join(v['our_ops'])}", file=out)
    if len(rows) > 60:
        print(f"  ... {len(rows) - 60} more modules differ", file=out)
    return diff, params_equal


def write_summary(path, oracle=None, ours=None, diff=None, params_equal=None, model=None, error=None):
    if not path:
        return
    row = {"model": model or (oracle or {}).get("model"), "error": error}
    if oracle:
        row.update({"inputs": oracle.get("inputs"), "torch_saved_activation_bytes": oracle["saved_activation_bytes"],
                    "torch_param_bytes": oracle["param_bytes"]})
    if ours:
        row.update({"ours_saved_bytes": ours["saved_for_backward_bytes"],
                    "ours_param_bytes": ours["param_bytes"] + ours.get("frozen_param_bytes", 0),
                    "ours_frozen_param_bytes": ours.get("frozen_param_bytes", 0),
                    "diff_percent": diff, "params_equal": params_equal})
    with open(path, "w") as f:
        json.dump(row, f)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("check", "measure"):
        p = sub.add_parser(name)
        p.add_argument("model")
        p.add_argument("--input", action="append", default=None, help="input spec, one per forward() argument")
        p.add_argument("--kwargs", default=None, help="JSON keyword arguments for the model's constructor")
        p.add_argument("--freeze", action="append", default=None,
                       help="requires_grad_(False) on parameters whose name matches REGEX (repeatable)")
        p.add_argument("--trainable", action="append", default=None,
                       help="train only parameters whose name matches REGEX (repeatable)")
        p.add_argument("--metadata", action="store_true",
                       help="export with remat_export.py (metadata: buffers, frozen parameters)")
        p.add_argument("--autocast", choices=sorted(AUTOCAST_DTYPES), default=None,
                       help="measure the forward under torch.autocast with this dtype (compared with "
                            "remat --precision bf16-mixed / 16-mixed)")
        p.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                       help="where PyTorch runs the measurement, and remat's --autocast-device")
        if name == "check":
            p.add_argument("--out", default=None, help="keep model.onnx and oracle.json in this folder")
        else:
            p.add_argument("--onnx", required=True)
            p.add_argument("--oracle", required=True)
    c = sub.add_parser("compare")
    c.add_argument("onnx")
    c.add_argument("oracle")
    for p in (sub.choices["check"], c):
        p.add_argument("--remat", default=None, help="the remat CLI (default: REMAT_CLI, build/, PATH)")
        p.add_argument("--tolerance", type=float, default=1.0, help="percent (default 1)")
        p.add_argument("--all", action="store_true", help="print every module, not only those that differ")
        p.add_argument("--summary", default=None, help="also write the figures as one JSON object here")
    a = ap.parse_args(argv)
    if a.cmd != "compare":
        if torch is None:
            print("error: measuring needs PyTorch (Debian: python3-torch python3-torchvision; /usr/bin/python3)",
                  file=sys.stderr)
            return 2
        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    kwargs = json.loads(a.kwargs) if getattr(a, "kwargs", None) else None

    if a.cmd == "measure":
        oracle = measure_and_export(a.model, a.input, a.onnx, kwargs, a.freeze, a.trainable, a.metadata,
                                    a.autocast, a.device)
        with open(a.oracle, "w") as f:
            json.dump(oracle, f, indent=1)
        print(f"{oracle['model']}: saved activations {oracle['saved_activation_bytes']} B, "
              f"parameters {oracle['param_bytes']} B -> {a.onnx}, {a.oracle}")
        return 0
    with contextlib.ExitStack() as stack:
        if a.cmd == "check":
            folder = a.out or stack.enter_context(tempfile.TemporaryDirectory())
            os.makedirs(folder, exist_ok=True)
            onnx_path = os.path.join(folder, "model.onnx")
            try:
                oracle = measure_and_export(a.model, a.input, onnx_path, kwargs, a.freeze, a.trainable,
                                            a.metadata, a.autocast, a.device)
            except Exception as e:  # an export torch cannot do: said, with the model's name
                msg = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
                print(f"error: {a.model}: PyTorch could not run or export it: {msg}", file=sys.stderr)
                write_summary(a.summary, model=a.model, error=f"export: {msg}")
                return 2
            with open(os.path.join(folder, "oracle.json"), "w") as f:
                json.dump(oracle, f, indent=1)
        else:
            onnx_path = a.onnx
            with open(a.oracle) as f:
                oracle = json.load(f)
        ours, err = train_graph(onnx_path, a.remat, oracle)
        if ours is None:
            print(f"error: remat train-graph {onnx_path}: {err}", file=sys.stderr)
            write_summary(a.summary, oracle=oracle, error=f"remat: {err}")
            return 2
        diff, params_equal = compare(oracle, ours, a.tolerance, a.all)
        write_summary(a.summary, oracle=oracle, ours=ours, diff=diff, params_equal=params_equal)
        return 0 if abs(diff) <= a.tolerance and params_equal else 1


if __name__ == "__main__":
    sys.exit(main())
