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
    remat.merged      JSON array of {"node": NAME, "readers": [[NAME, ...], ...]}: a node of this
                      file that PyTorch ran 1 + len(readers) times (the same expression written
                      twice, as a hand-written LayerNorm computes x - mean) and torch.onnx's
                      common-subexpression pass merged into one; reader group i are the nodes
                      that read copy i + 2 (copy k of node N is named "N#k", its outputs "OUT#k",
                      so a later entry can name it as a reader). Entries are in the order to
                      apply them (readers first).
    remat.contiguous  JSON array of {"value": NAME, "readers": [NAME, ...]}: PyTorch made a
                      contiguous copy of this value (.contiguous() on a non-contiguous tensor,
                      which torch.onnx exports as nothing) and these nodes read the copy.
    remat.unread      JSON array of {"name", "kind" (parameters / frozen / buffers), "dtype",
                      "shape"}: the module's tensors the graph never reads, which torch.onnx
                      leaves out (a layer built and not called) and the module still holds.
    remat.forward_constants  JSON array: Constant node outputs that are tensors created in
                      forward() each step (torch.zeros(...), torch.arange(...)).
    remat.buffer_constants   JSON array: Constant node outputs that are non-persistent buffers
                      torch.onnx folded (resident, not made per step).

Only names the exported graph really has are listed in the first three lists (a buffer that
torch.onnx folds into a Constant node, as it does for non-persistent buffers, is not a graph
input: remat.buffer_constants names its Constant's output). The merges are found by exporting
twice, once as torch.onnx does and once with its common-subexpression pass
(torch._C._jit_pass_cse) switched off, and matching the two graphs' nodes by structure; the
contiguous copies by a symbolic for aten::contiguous that reads the traced strides (a node of
domain "remat", removed again). The file itself is torch.onnx's ordinary export. Remat Studio's
importer reads these keys when present (a malformed or unfitting entry is a note in `remat info`
and is ignored) and otherwise guesses (`remat info` says which guesses it made).
"""

import argparse
import contextlib
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


# ---------------------------------------------------------------------------------------------
# What torch.onnx drops: contiguous copies, merged subexpressions, constants made in forward

_RANDOM_OPS = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Bernoulli",
               "Dropout", "Multinomial"}


def _contiguous_symbolic(g, input, memory_format):
    """aten::contiguous as torch.onnx exports it (nothing), except that a traced non-contiguous
    input becomes a node of domain "remat", removed after the export and listed."""
    try:
        t = input.type()
        sizes, strides = t.sizes(), t.strides()
    except Exception:  # no complete type: nothing known, exported as torch does
        return input
    if sizes is None or strides is None:
        return input
    expected, copy = 1, False
    for size, stride in reversed(list(zip(sizes, strides))):
        if size != 1 and stride != expected:
            copy = True
        expected *= size
    if not copy:
        return input
    return g.op("remat::Contiguous", input)


@contextlib.contextmanager
def _export_hooks(cse):
    """The contiguous symbolic registered, and torch's common-subexpression pass on or off."""
    import torch
    torch.onnx.register_custom_op_symbolic("aten::contiguous", _contiguous_symbolic, 9)
    saved = torch._C._jit_pass_cse
    if not cse:
        torch._C._jit_pass_cse = lambda graph: False
    try:
        yield
    finally:
        torch._C._jit_pass_cse = saved
        with contextlib.suppress(Exception):
            torch.onnx.unregister_custom_op_symbolic("aten::contiguous", 9)


def _structure_keys(graph, intern):
    """A key per node: its op type, attributes and the keys of what it reads, so that two
    exports of one trace give equal nodes equal keys. Random ops are never equal to each other
    (the k-th random op of one export is the k-th of the other)."""
    import onnx
    producer = {}
    for k, n in enumerate(graph.node):
        for i, o in enumerate(n.output):
            producer[o] = (k, i)
    # Keys are interned to integers (shared between the two exports through `intern`), so a
    # key's size does not grow with the depth of the graph behind it.
    keys, randoms = [], 0

    def value_key(name):
        if name == "":
            return ("none",)
        if name not in producer:
            return ("leaf", name)
        k, i = producer[name]
        return (keys[k], i)

    for n in graph.node:  # ONNX nodes are in topological order
        attrs = []
        for a in n.attribute:
            if a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                attrs.append((a.name, id(a)))  # subgraphs: never equal
            else:
                attrs.append((a.name, a.SerializeToString()))
        key = (n.domain, n.op_type, tuple(sorted(attrs)), tuple(value_key(i) for i in n.input))
        if n.op_type in _RANDOM_OPS:
            key = key + (("random", randoms),)
            randoms += 1
        keys.append(intern.setdefault(key, len(intern)))
    return keys


def _consumers(graph):
    """{value name: [index of each node reading it]}."""
    readers = {}
    for k, n in enumerate(graph.node):
        for i in n.input:
            readers.setdefault(i, []).append(k)
    return readers


def merged_nodes(merged_graph, unmerged_graph):
    """remat.merged's entries: the nodes of `merged_graph` (torch.onnx's export) that
    `unmerged_graph` (the same trace exported without common-subexpression elimination) holds
    more than once, with the readers of each extra copy named as in `merged_graph`."""
    intern = {}
    mkeys, ukeys = _structure_keys(merged_graph, intern), _structure_keys(unmerged_graph, intern)
    mnodes, unodes = list(merged_graph.node), list(unmerged_graph.node)
    by_key, count = {}, {}
    for k, key in enumerate(mkeys):
        by_key.setdefault(key, k)
        count[key] = count.get(key, 0) + 1
    # (a key the merged graph also holds more than once was not merged: left alone)
    by_key = {key: k for key, k in by_key.items() if count[key] == 1}
    groups = {}
    for k, key in enumerate(ukeys):
        groups.setdefault(key, []).append(k)
    readers = _consumers(unmerged_graph)
    # The name each unmerged node has in the merged file once the merges are undone: copy 1 of a
    # group is the merged node itself, copy k the importer's clone "N#k".
    name_of = {}
    for key, members in groups.items():
        if key not in by_key:
            continue
        target = mnodes[by_key[key]].name
        for c, k in enumerate(members):
            name_of[k] = target if c == 0 else f"{target}#{c + 1}"
    entries = []
    for k in reversed(range(len(unodes))):  # readers first: a clone exists before it is read
        key = ukeys[k]
        members = groups.get(key, [])
        if len(members) < 2 or members[0] != k or key not in by_key or unodes[k].op_type == "Constant":
            continue
        target = mnodes[by_key[key]].name
        if not target:
            continue
        reader_groups = []
        for c in members[1:]:
            names = []
            for o in unodes[c].output:
                for r in readers.get(o, []):
                    name = name_of.get(r)
                    if name and name not in names:
                        names.append(name)
            reader_groups.append(names)
        if any(reader_groups):
            entries.append({"node": target, "readers": reader_groups})
    return entries


def _take_contiguous_marks(graph):
    """Removes the marked Identity nodes (torch.onnx exports .contiguous() as nothing) and
    returns remat.contiguous's entries: the copied value and the nodes that read the copy."""
    entries, renames, keep = [], {}, []
    nodes = list(graph.node)
    readers = _consumers(graph)
    outputs = {o.name for o in graph.output}
    for n in nodes:
        marked = n.domain == "remat" and n.op_type == "Contiguous"
        if not marked:
            keep.append(n)
            continue
        for i, name in enumerate(n.input):
            if name in renames:
                n.input[i] = renames[name]
        if n.output[0] in outputs:  # a graph output keeps its name: an Identity
            n.domain, n.op_type = "", "Identity"
            keep.append(n)
            continue
        renames[n.output[0]] = n.input[0]
        entries.append({"value": n.input[0],
                        "readers": [nodes[r].name for r in readers.get(n.output[0], [])]})
    for n in keep:
        for i, name in enumerate(n.input):
            if name in renames:
                n.input[i] = renames[name]
    copies = [n.__deepcopy__() for n in keep]
    del graph.node[:]
    graph.node.extend(copies)
    return [e for e in entries if e["readers"]]


def _constant_kinds(graph, model):
    """(forward_constants, buffer_constants): Constant outputs made in forward() and those that
    are a non-persistent buffer's value."""
    from onnx import numpy_helper
    persistent = set(model.state_dict().keys())
    buffers = [b.detach().cpu().numpy() for name, b in model.named_buffers() if name not in persistent]
    made, resident = [], []
    for n in graph.node:
        if n.op_type != "Constant" or not n.output:
            continue
        value = next((a for a in n.attribute if a.name == "value"), None)
        if value is None:
            continue
        arr = numpy_helper.to_array(value.t)
        if arr.size <= 1:
            continue  # a scalar of an expression (x * 0.5): no tensor either side keeps
        same = any(b.shape == arr.shape and b.dtype == arr.dtype and (b == arr).all() for b in buffers)
        (resident if same else made).append(n.output[0])
    return made, resident


def unread_state(model, graph_names):
    """remat.unread's entries: parameters and buffers the graph never reads (torch.onnx leaves
    them out: a layer built but not called), each once by storage, as the module still holds
    them."""
    seen, state = set(), model.state_dict(keep_vars=True)
    kinds = _state_kinds(model)
    for name, t in state.items():
        if name in graph_names:
            seen.add(t.data_ptr())
    out = []
    for name, t in state.items():
        if name in graph_names or t.data_ptr() in seen or t.numel() == 0:
            continue
        seen.add(t.data_ptr())
        out.append({"name": name, "kind": kinds[name], "dtype": str(t.dtype).replace("torch.", ""),
                    "shape": list(t.shape)})
    return out


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


def add_metadata(path, model, unmerged_path=None):
    """Writes the remat.* metadata_props of `model` into the ONNX file at `path` (in place). With
    `unmerged_path` (the same model exported without common-subexpression elimination) also the
    merges. The contiguous copies and the constants made in forward are always written."""
    import onnx
    proto = onnx.load(path, load_external_data=False)
    g = proto.graph
    contiguous = _take_contiguous_marks(g)
    opsets = [o for o in proto.opset_import if o.domain != "remat"]
    del proto.opset_import[:]
    proto.opset_import.extend(opsets)
    graph_names = {i.name for i in g.input} | {t.name for t in g.initializer}
    props = metadata_for(model, graph_names)
    props["remat.contiguous"] = json.dumps(contiguous)
    if unmerged_path:
        unmerged = onnx.load(unmerged_path, load_external_data=False)
        _take_contiguous_marks(unmerged.graph)
        props["remat.merged"] = json.dumps(merged_nodes(g, unmerged.graph))
    props["remat.unread"] = json.dumps(unread_state(model, graph_names))
    made, resident = _constant_kinds(g, model)
    props["remat.forward_constants"] = json.dumps(made)
    props["remat.buffer_constants"] = json.dumps(resident)
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
    import tempfile
    import torch
    from torch.onnx import TrainingMode
    options = {"opset_version": 17, "training": TrainingMode.TRAINING, "do_constant_folding": False,
               "export_params": False}
    options.update(torch_onnx_kwargs)
    if not isinstance(args, tuple):
        args = (args,)
    with warnings.catch_warnings(), tempfile.TemporaryDirectory() as tmp:
        warnings.simplefilter("ignore")
        with _export_hooks(cse=True):
            torch.onnx.export(model, args, path, **options)
        unmerged = os.path.join(tmp, "unmerged.onnx")
        try:
            with _export_hooks(cse=False):
                torch.onnx.export(model, args, unmerged, **options)
        except Exception:  # the file stands; the merges are then not recorded
            unmerged = None
        return add_metadata(path, model, unmerged)


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
