"""Export a PyTorch model to ONNX for Remat Studio, saying what torch.onnx drops.

    import remat_export
    remat_export.export(model, (x,), "model.onnx")                 # like torch.onnx.export
    remat_export.export(model, (x,), "model.onnx", input_names=["input"], opset_version=17)

    python3 remat_export.py FILE.py:Class --input 2x3x64x64 --out model.onnx [--freeze REGEX]

The graph is exported as Remat Studio's corpus is (opset 17, TrainingMode.TRAINING, no constant
folding, parameters and buffers as graph inputs named by their state_dict keys); any keyword
argument of torch.onnx.export overrides those defaults. Then the file's metadata_props say, from
the module itself, what a weightless ONNX graph cannot:

    remat.format      "1"
    remat.parameters  JSON array: the graph inputs / initializers that are parameters with
                      requires_grad True (trainable)
    remat.frozen      JSON array: parameters with requires_grad False (frozen)
    remat.buffers     JSON array: buffers (register_buffer), e.g. a PixelCNN's conv mask, a mel
                      front end's DFT and filter bank, a sin-cos position table
    remat.exporter    "remat_export.py, torch <version>"

Only names the exported graph really has are listed (a buffer that torch.onnx folds into a
Constant node, as it does for non-persistent buffers, is not a graph input and is left out).
Remat Studio's importer reads these keys when present and otherwise guesses (`remat info` says
which guesses it made). Not recorded (torch.onnx gives no honest way to tell): which values
PyTorch makes contiguous copies of, which Constant nodes are created in forward, and which values
the exporter's common-subexpression pass merged.
"""

import argparse
import json
import os
import sys
import warnings

FORMAT = "1"


def _state_kinds(model):
    """{state_dict key: "parameters" | "frozen" | "buffers"}, every key (tied weights too)."""
    import torch
    kinds = {}
    for name, t in model.state_dict(keep_vars=True).items():
        if isinstance(t, torch.nn.Parameter):
            kinds[name] = "parameters" if t.requires_grad else "frozen"
        else:
            kinds[name] = "buffers"
    return kinds


def metadata_for(model, graph_names):
    """The remat.* metadata_props for `model` whose graph has the value names `graph_names`."""
    import torch
    lists = {"parameters": [], "frozen": [], "buffers": []}
    for name, kind in _state_kinds(model).items():
        if name in graph_names:
            lists[kind].append(name)
    props = {"remat.format": FORMAT, "remat.exporter": f"remat_export.py, torch {torch.__version__}"}
    for kind, names in lists.items():
        props["remat." + kind] = json.dumps(names)
    return props


def add_metadata(path, model):
    """Writes the remat.* metadata_props of `model` into the ONNX file at `path` (in place)."""
    import onnx
    proto = onnx.load(path, load_external_data=False)
    g = proto.graph
    graph_names = {i.name for i in g.input} | {t.name for t in g.initializer}
    props = metadata_for(model, graph_names)
    keep = [p for p in proto.metadata_props if not p.key.startswith("remat.")]
    del proto.metadata_props[:]
    proto.metadata_props.extend(keep)
    for k, v in props.items():
        entry = proto.metadata_props.add()
        entry.key, entry.value = k, v
    onnx.save(proto, path)
    return props


def export(model, args, path, **torch_onnx_kwargs):
    """torch.onnx.export(model, args, path, ...) with the corpus defaults, then the metadata.
    Returns the metadata written (a dict of strings)."""
    import torch
    from torch.onnx import TrainingMode
    options = {"opset_version": 17, "training": TrainingMode.TRAINING, "do_constant_folding": False,
               "export_params": False}
    options.update(torch_onnx_kwargs)
    if not isinstance(args, tuple):
        args = (args,)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, path, **options)
    return add_metadata(path, model)


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    import remat_oracle  # model loading and input specs are the oracle's
    import torch
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="torchvision name or FILE.py:Class")
    ap.add_argument("--input", action="append", default=None, help="input spec, one per forward() argument")
    ap.add_argument("--kwargs", default=None, help="JSON keyword arguments for the model's constructor")
    ap.add_argument("--freeze", action="append", default=None, help="requires_grad_(False) where REGEX matches")
    ap.add_argument("--trainable", action="append", default=None, help="train only where REGEX matches")
    ap.add_argument("--out", required=True, help="the ONNX file to write")
    a = ap.parse_args(argv)
    model, default, _ = remat_oracle.load_model(a.model, json.loads(a.kwargs) if a.kwargs else None)
    remat_oracle.apply_trainability(model, a.freeze, a.trainable)
    specs = a.input or default
    if not specs:
        raise SystemExit("error: give the input shape (--input 2x3x64x64; one per forward() argument)")
    gen = torch.Generator().manual_seed(0)
    inputs = tuple(remat_oracle.make_input(s, gen) for s in specs)
    names = ["input"] if len(inputs) == 1 else [f"input{i}" for i in range(len(inputs))]
    props = export(model, inputs, a.out, input_names=names)
    counts = {k: len(json.loads(v)) for k, v in props.items() if v.startswith("[")}
    print(f"{a.out}: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
