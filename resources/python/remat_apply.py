"""Apply a Remat Studio plan to the PyTorch model its ONNX file was exported from, and measure it.

    import remat_apply
    model = remat_apply.apply_plan(model, "plan.json", onnx="model.onnx")  # a PlannedModule
    print(model.remat_report)                      # what was applied, and how it differs from the plan
    print(remat_apply.measure(model, [x]))         # saved bytes, end of forward and backward peak

    python3 remat_apply.py validate torchvision:resnet18 model.onnx plan.json   # predicted vs measured

How a plan is applied (plan-faithful, torch >= 1.13):
1. The model is traced with torch.fx. A tracer records, for every fx node, the scope the ONNX
   exporter gives the same call ("/layer1/layer1.0/relu_1": module path parts, a numeric child
   joined to its parent's part, "_N" for the N-th extra call of a module in one scope).
2. fx nodes are mapped to ONNX nodes: a leaf module call (Conv2d, BatchNorm2d, Linear,
   MultiheadAttention, ...) takes every ONNX node under its scope (BatchNorm -> one
   BatchNormalization, Linear -> Gemm or MatMul+Add, GELU -> Div/Erf/Add/Mul/Mul): the mapping is
   at the granularity where both sides agree. A function call (add, flatten, cat, ...) takes the
   ONNX nodes of its enclosing scope in call order, up to the first whose output shape equals the
   fx node's. Every pair is verified by output shape; ONNX nodes left unmapped are reported.
3. The plan's schedule says, per ONNX forward op, whether its outputs are kept until backward,
   freed and recomputed in backward, or offloaded. A node the plan recomputes, plus every node
   whose PyTorch backward saves a recomputed value (found by probing saved_tensors_hooks once),
   goes into a segment; segments are cut at the values the plan keeps (its checkpoints). Each
   segment runs under torch.utils.checkpoint(use_reentrant=False): PyTorch keeps the segment's
   inputs (the plan's checkpoints) and recomputes its inside in backward, and every node outside
   the segments saves what it saves in a plain run: what the plan keeps.
4. Values the plan offloads are moved to host memory (pinned when CUDA) by a saved-tensor hook
   when an op outside the segments saves them, and moved back when backward reads them.

Where the result differs from the plan (a node that saves a recomputed value joins a segment,
a cycle between segments merges them, a value kept only as a segment input), the difference is
listed in `remat_report` with the bytes the plan keeps and the bytes the application keeps, and
printed once as a warning. A model torch.fx cannot trace falls back to wrapping modules in
torch.utils.checkpoint, again with a report of the difference; nothing differs silently.

A plan naming nodes the model does not have is refused (ValueError): it was made for another
model, and applying part of it would silently change what is measured.

Selective activation checkpointing (torch >= 2.4) is detected (HAS_SELECTIVE_CHECKPOINT) but not
needed: op-level decisions are expressed by the fx segments themselves.
"""

import contextlib
import copy
import json
import operator
import os
import re
import subprocess
import sys
import warnings
import weakref

import torch
import torch.fx
import torch.utils.checkpoint

TORCH_VERSION = tuple(int(p) for p in re.findall(r"\d+", torch.__version__)[:2])
HAS_FX = hasattr(torch, "fx") and TORCH_VERSION >= (1, 10)
HAS_SELECTIVE_CHECKPOINT = hasattr(torch.utils.checkpoint, "create_selective_checkpoint_contexts")

last_wrapped_count = 0  # module-wrapping fallback only: how many modules were wrapped

_CALL_SUFFIX = re.compile(r"_\d+$")  # "relu_1": the second call of module "relu" in one scope


# ---------------------------------------------------------------------------------------------
# ONNX reading: a minimal protobuf reader (node names, op types, inputs, outputs, value shapes),
# so the helper needs no onnx package.

def _varint(b, i):
    r = s = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return r, i


def _fields(b):
    i, n = 0, len(b)
    while i < n:
        key, i = _varint(b, i)
        f, w = key >> 3, key & 7
        if w == 0:
            v, i = _varint(b, i)
        elif w == 1:
            v, i = b[i:i + 8], i + 8
        elif w == 2:
            ln, i = _varint(b, i)
            v, i = b[i:i + ln], i + ln
        elif w == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("not an ONNX file (protobuf wire type %d)" % w)
        yield f, v


def _value_info(v):
    name, elem, shape = None, None, None
    for g, w in _fields(v):
        if g == 1:
            name = w.decode()
        elif g == 2:
            for h, t in _fields(w):
                if h != 1:
                    continue
                for k, u in _fields(t):
                    if k == 1:
                        elem = u
                    elif k == 2:
                        shape = []
                        for d, dim in _fields(u):
                            if d == 1:
                                val = None
                                for e, x in _fields(dim):
                                    if e == 1:
                                        val = x
                                shape.append(val)
    return name, elem, shape


class OnnxGraph:
    """Nodes (name, op, inputs, outputs) in file order and value shapes of an ONNX file."""

    def __init__(self, path):
        with open(path, "rb") as f:
            data = f.read()
        graph = next((v for f, v in _fields(data) if f == 7), None)
        if graph is None:
            raise ValueError(f"{path}: no graph in this file")
        self.path = path
        self.nodes, self.shapes, self.inputs, self.initializers = [], {}, [], set()
        for f, v in _fields(graph):
            if f == 1:
                nd = {"inputs": [], "outputs": [], "name": "", "op": ""}
                for g, w in _fields(v):
                    if g == 1:
                        nd["inputs"].append(w.decode())
                    elif g == 2:
                        nd["outputs"].append(w.decode())
                    elif g == 3:
                        nd["name"] = w.decode()
                    elif g == 4:
                        nd["op"] = w.decode()
                self.nodes.append(nd)
            elif f == 5:
                for g, w in _fields(v):
                    if g == 8:
                        self.initializers.add(w.decode())
            elif f in (11, 12, 13):
                name, elem, shape = _value_info(v)
                self.shapes[name] = (elem, shape)
                if f == 11:
                    self.inputs.append(name)
        self.producer = {o: nd for nd in self.nodes for o in nd["outputs"]}

    model_names = frozenset()  # the model's state_dict keys, once known (apply_plan sets them)

    def data_inputs(self):
        """Graph inputs that are neither initializers nor parameters/buffers (the exporter names
        those by state_dict key: "conv1.weight", ViT's "class_token")."""
        return [n for n in self.inputs if n not in self.initializers and n not in self.model_names
                and not (not self.model_names and "." in n)]

    def weight_derived(self):
        """Values forward ops compute from parameters alone (a Transpose of a Linear's weight):
        views of the parameter in PyTorch, which saves none of them; the training builder's
        summary counts them apart (saved_weight_derived_bytes), the simulator among its stored
        activations. Same rule as training::summarize."""
        preloaded = set(self.initializers) | {n for n in self.inputs if n in self.model_names}
        derived = set()
        for nd in self.nodes:
            if nd["op"] == "Constant":
                preloaded.update(nd["outputs"])
                continue
            ins = [v for v in nd["inputs"] if v]
            if ins and all(v in preloaded or v in derived for v in ins) and \
                    any((v in self.model_names) or v in derived for v in ins):
                derived.update(nd["outputs"])
        return derived

    def constant_derived(self):
        """Values computed from constants and static sizes alone (shape arithmetic, Swin's
        attention mask built with ScatterND): no data flows into them."""
        cached = getattr(self, "_constant_derived", None)
        if cached is not None:
            return cached
        const = {v for v in self.initializers if v not in self.model_names}
        for nd in self.nodes:
            ins = [v for v in nd["inputs"] if v]
            if nd["op"] in ("Constant", "Shape", "Size") or all(v in const for v in ins):
                const.update(nd["outputs"])
        self._constant_derived = const
        return const

    def shape(self, value):
        s = self.shapes.get(value)
        return tuple(s[1]) if s and s[1] is not None else None


_ELEM = {"Float": 1, "Byte": 2, "Char": 3, "Short": 5, "Int": 6, "Long": 7, "Bool": 9, "Half": 10,
         "Double": 11, "BFloat16": 16}


def shapes_from_export(model, inputs):
    """Value shapes of the ONNX file torch.onnx.export makes of `model` with the corpus settings
    (training mode, opset 17, no constant folding): the exporter writes no value_info for
    intermediate values, so the helper exports once in memory and reads the typed graph after
    the exporter has named its values. Buffers and the RNG are restored."""
    import io
    from torch.onnx import TrainingMode
    shapes = {}
    passes = torch._C
    original = passes._jit_pass_onnx_assign_scoped_names_for_node_and_value

    def record(graph):
        original(graph)
        for node in graph.nodes():
            for o in node.outputs():
                try:
                    t = o.type()
                    shapes[o.debugName()] = (_ELEM.get(t.scalarType()), list(t.sizes()))
                except Exception:  # noqa: BLE001  -- untyped or non-tensor value
                    pass

    passes._jit_pass_onnx_assign_scoped_names_for_node_and_value = record
    try:
        with _buffers_restored(model), torch.random.fork_rng(devices=[]), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, tuple(inputs), io.BytesIO(), opset_version=17,
                              training=TrainingMode.TRAINING, do_constant_folding=False, export_params=False)
    finally:
        passes._jit_pass_onnx_assign_scoped_names_for_node_and_value = original
    return shapes


def _scope(node_name):
    return node_name.rsplit("/", 1)[0] if "/" in node_name else ""


# ---------------------------------------------------------------------------------------------
# Plans

def load_plan(plan):
    if isinstance(plan, dict):
        return plan
    with open(plan, encoding="utf-8") as f:
        return json.load(f)


class PlanStates:
    """Per ONNX forward op and value: what the plan does with it, read from its schedule."""

    def __init__(self, plan):
        self.recomputed_ops = set()  # forward ops computed again after backward-begin
        self.forward_ops = set()
        self.freed_in_forward = set()
        self.offloaded = set()
        self.checkpoints = list(plan.get("checkpoints", []))
        self.forward_events = []  # ("compute" / "free", name) before backward-begin
        phase = "forward"
        for step in plan.get("schedule", []):
            if not step:
                continue
            kind = step[0]
            if kind == "phase":
                if step[1] == "backward-begin":
                    phase = "backward"
                continue
            name = step[1] if len(step) > 1 else ""
            if kind == "compute":
                # Backward ops ("<op>/grad"), gradient accumulation ("grad:<value>/accumulateN")
                # and the loss are the training graph's own; forward ops are ONNX nodes.
                if name.endswith("/grad") or name.startswith("grad:") or name == "loss":
                    continue
                if phase == "forward":
                    self.forward_ops.add(name)
                    self.forward_events.append(("compute", name))
                elif name in self.forward_ops:
                    self.recomputed_ops.add(name)
            elif kind == "free" and phase == "forward":
                self.freed_in_forward.add(name)
                self.forward_events.append(("free", name))
            elif kind == "offload":
                self.offloaded.add(name)
        # A plan with decisions only (the planner's per-node export without a schedule).
        for d in plan.get("decisions", []) if not plan.get("schedule") else []:
            if d.get("decision") == "recompute":
                self.recomputed_ops.add(d["node"])
            elif d.get("decision") == "offload" and d.get("tensor"):
                self.offloaded.add(d["tensor"])


# ---------------------------------------------------------------------------------------------
# Tracing with ONNX scopes

def _part(rel, parent_part):
    """Exporter-style scope part of a child at relative path `rel` ("features.1" inside root)."""
    cur = parent_part
    for piece in rel.split("."):
        cur = (cur + "." + piece) if (piece.isdigit() and cur) else piece
    return cur


class _ScopeTracer(torch.fx.Tracer if HAS_FX else object):
    """fx tracer that stamps every node with the ONNX exporter's scope of the same call."""

    def __init__(self):
        super().__init__()
        self._stack = [("", "", "")]  # (module path, part, scope)
        self._counts = {}

    def call_module(self, m, forward, args, kwargs):
        path = self.path_of_module(m)
        ppath, ppart, pscope = self._stack[-1]
        rel = path[len(ppath) + 1:] if ppath and path.startswith(ppath + ".") else path
        part = _part(rel, ppart if ppath and path.startswith(ppath + ".") else "")
        key = (pscope, part)
        n = self._counts.get(key, 0)
        self._counts[key] = n + 1
        scope = pscope + "/" + (part if n == 0 else f"{part}_{n}")
        self._stack.append((path, part, scope))
        try:
            if _mha_decomposable(m, args, kwargs):
                # Traced through, op by op as the exporter writes it, so a plan that recomputes
                # part of the attention (its softmax, its projections) maps onto fx nodes.
                return _mha_forward(m, *args, **kwargs)
            return super().call_module(m, forward, args, kwargs)
        finally:
            self._stack.pop()

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, *a, **kw):
        proxy = super().create_proxy(kind, target, args, kwargs, name, type_expr, *a, **kw)
        proxy.node.meta["remat_scope"] = self._stack[-1][2]
        return proxy


def _mha_decomposable(m, args, kwargs):
    """torch.nn.MultiheadAttention called as self-attention (query, key and value one tensor,
    torchvision's ViT), without masks, packed projection weights, no bias_k/v or zero attention."""
    if not isinstance(m, torch.nn.MultiheadAttention) or not m._qkv_same_embed_dim:
        return False
    qkv = _mha_qkv(args, kwargs)
    if qkv is None or not (qkv[0] is qkv[1] is qkv[2]) or m.bias_k is not None or m.add_zero_attn:
        return False
    extra = {k: v for k, v in kwargs.items() if k not in ("query", "key", "value", "need_weights", "average_attn_weights")}
    return all(v is None for v in extra.values())


def _mha_qkv(args, kwargs):
    names = ("query", "key", "value")
    vals = list(args[:3]) + [kwargs.get(k) for k in names[len(args[:3]):]]
    return vals if len(vals) == 3 and all(v is not None for v in vals) else None


def _mha_forward(m, *args, **kwargs):
    x = _mha_qkv(args, kwargs)[0]
    need_weights = kwargs.get("need_weights", args[4] if len(args) > 4 else True)
    average_attn_weights = kwargs.get("average_attn_weights", True)
    return _mha_self_attention(m, x, need_weights, average_attn_weights)


def _mha_self_attention(m, x, need_weights, average_attn_weights):
    """torch.nn.MultiheadAttention's training-mode forward for self-attention, written with the
    ops torch 1.13's F.multi_head_attention_forward runs (and the exporter writes): packed input
    projection and chunk, per-head views, bmm of the scaled query with the key, softmax, dropout,
    bmm with the value, output projection. The same ops save the same tensors for backward."""
    import math
    import torch.nn.functional as F
    if m.batch_first:
        x = x.transpose(1, 0)
    tgt_len, bsz = x.size(0), x.size(1)
    heads, embed = m.num_heads, m.embed_dim
    head_dim = embed // heads
    q, k, v = F.linear(x, m.in_proj_weight, m.in_proj_bias).chunk(3, dim=-1)
    q = q.contiguous().view(tgt_len, bsz * heads, head_dim).transpose(0, 1)
    k = k.contiguous().view(k.size(0), bsz * heads, head_dim).transpose(0, 1)
    v = v.contiguous().view(v.size(0), bsz * heads, head_dim).transpose(0, 1)
    weights = torch.bmm(q / math.sqrt(head_dim), k.transpose(-2, -1))
    weights = F.softmax(weights, dim=-1)
    if m.dropout > 0.0 and m.training:
        weights = F.dropout(weights, p=m.dropout)
    out = torch.bmm(weights, v)
    out = out.transpose(0, 1).contiguous().view(tgt_len * bsz, embed)
    out = F.linear(out, m.out_proj.weight, m.out_proj.bias)
    out = out.view(tgt_len, bsz, out.size(1))
    if m.batch_first:
        out = out.transpose(1, 0)
    if not need_weights:
        return out, None
    weights = weights.view(bsz, heads, tgt_len, weights.size(-1))
    if average_attn_weights:
        weights = weights.sum(dim=1) / heads
    return out, weights


def _proxy_iter(self):
    """Proxy.__iter__ that finds the caller's UNPACK_SEQUENCE by byte offset: torch 1.13 indexes
    the instruction list by f_lasti // 2, which Python 3.11's inline caches break, so `n, c, h, w
    = x.shape` (torchvision's ViT, Swin) failed to trace."""
    import dis
    import inspect
    frame = inspect.currentframe().f_back
    for inst in dis.get_instructions(frame.f_code):
        if inst.offset == frame.f_lasti:
            if inst.opname == "UNPACK_SEQUENCE":
                return (self[i] for i in range(inst.argval))
            break
    return self.tracer.iter(self)


_MISSING = object()


class _ConcreteTracer(_ScopeTracer):
    """A _ScopeTracer that also runs every op on the example inputs (no grad) as it records it,
    so sizes, dims and other non-tensor results are plain Python values: code that branches on
    shapes (torchvision's shifted_window_attention, which torch.fx.wrap keeps whole otherwise)
    traces op by op. The graph is specialised to the example inputs' shapes."""

    def __init__(self, inputs):
        super().__init__()
        self._inputs = list(inputs)
        self._values = {}

    def _value(self, node):
        v = self._values.get(node, _MISSING)
        if v is _MISSING and node.op == "get_attr":
            with _untraced_modules():
                v = self.root
                for a in node.target.split("."):
                    v = getattr(v, a)
        if v is _MISSING:
            raise torch.fx.proxy.TraceError(f"no concrete value for {node.name}")
        return v

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, *a, **kw):
        proxy = super().create_proxy(kind, target, args, kwargs, name, type_expr, *a, **kw)
        node = proxy.node
        if kind == "placeholder":
            value = self._inputs[len([n for n in self._values if n.op == "placeholder"])]
        elif kind == "get_attr":
            value = self._value(node)
        else:
            cargs = torch.fx.node.map_arg(node.args, self._value)
            ckwargs = torch.fx.node.map_arg(node.kwargs, self._value)
            if kind not in ("call_function", "call_method", "call_module"):
                return proxy
            with torch.no_grad(), _untraced_modules():
                if kind == "call_function":
                    value = target(*cargs, **ckwargs)
                elif kind == "call_method":
                    value = getattr(cargs[0], target)(*cargs[1:], **ckwargs)
                else:
                    value = self.root.get_submodule(target)(*cargs, **ckwargs)
        if target is operator.setitem:
            return None  # an in-place write (Swin's attention mask): stays in the graph
        if kind not in ("placeholder", "get_attr") and not _tensors(value):
            # A size, a dim, a dtype: the Python value itself, and no node in the graph.
            self.graph.erase_node(node)
            return value
        self._values[node] = value
        return proxy

    def iter(self, obj):
        v = self._values.get(obj.node, _MISSING)
        if isinstance(v, (tuple, list)):
            return (obj[i] for i in range(len(v)))
        return super().iter(obj)


@contextlib.contextmanager
def _untraced_modules():
    """Module calls and attribute reads as outside tracing (the tracer patches both), so a
    concrete run of a leaf module records nothing."""
    import torch.fx._symbolic_trace as st
    call, getattr_ = torch.nn.Module.__call__, torch.nn.Module.__getattr__
    torch.nn.Module.__call__, torch.nn.Module.__getattr__ = st._orig_module_call, st._orig_module_getattr
    try:
        yield
    finally:
        torch.nn.Module.__call__, torch.nn.Module.__getattr__ = call, getattr_


def _wrapped_calls(graph):
    """fx nodes calling a function registered with torch.fx.wrap (kept whole by tracing)."""
    import torch.fx._symbolic_trace as st
    wrapped = {(g.get("__name__"), name) for g, name in getattr(st, "_wrapped_fns_to_patch", [])}
    return {(getattr(n.target, "__module__", None), getattr(n.target, "__name__", None)) for n in graph.nodes
            if n.op == "call_function" and (getattr(n.target, "__module__", None), getattr(n.target, "__name__", None)) in wrapped}


def trace(model, inputs=None):
    """The model as an fx GraphModule whose nodes carry the exporter's scopes (meta
    "remat_scope"). Traced symbolically; where that fails, or keeps a torch.fx.wrap'ed function
    whole, and example inputs are given, traced again with concrete shapes (gm.remat_trace says
    which: "symbolic" or "concrete-shapes")."""
    original = torch.fx.Proxy.__iter__
    if sys.version_info >= (3, 11) and TORCH_VERSION < (2, 0):
        torch.fx.Proxy.__iter__ = _proxy_iter
    try:
        error, wrapped = None, set()
        try:
            tracer = _ScopeTracer()
            graph = tracer.trace(model)
            wrapped = _wrapped_calls(graph)
            if not wrapped or inputs is None:
                gm = torch.fx.GraphModule(tracer.root, graph)
                gm.remat_trace = "symbolic"
                return gm
        except Exception as e:  # noqa: BLE001  -- shape-dependent Python: try concrete shapes
            if inputs is None:
                raise
            error = e
        try:
            return _concrete_trace(model, inputs, wrapped)
        except Exception:  # noqa: BLE001
            if error is not None:
                raise error
            gm = torch.fx.GraphModule(tracer.root, graph)
            gm.remat_trace = "symbolic"
            return gm
    finally:
        torch.fx.Proxy.__iter__ = original


def _concrete_trace(model, inputs, unwrap):
    import torch.fx._symbolic_trace as st
    tracer = _ConcreteTracer(inputs)
    saved_wraps = list(st._wrapped_fns_to_patch)
    st._wrapped_fns_to_patch[:] = [(g, n) for g, n in saved_wraps if (g.get("__name__"), n) not in unwrap]
    proxy_getattr, proxy_len = torch.fx.Proxy.__getattr__, torch.fx.Proxy.__len__

    def concrete_getattr(self, k):
        # tensor.shape / .dtype / .ndim of a traced value: the concrete attribute.
        if type(self) is torch.fx.Proxy and self.tracer is tracer:
            v = tracer._values.get(self.node, _MISSING)
            a = getattr(v, k, _MISSING) if v is not _MISSING else _MISSING
            if a is not _MISSING and not callable(a) and not _tensors(a):
                return a
        return proxy_getattr(self, k)

    def concrete_len(self):
        v = tracer._values.get(self.node, _MISSING) if self.tracer is tracer else _MISSING
        return len(v) if v is not _MISSING else proxy_len(self)

    def concrete_setitem(self, key, value):
        tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})

    had_setitem = "__setitem__" in torch.fx.Proxy.__dict__
    proxy_setitem = torch.fx.Proxy.__dict__.get("__setitem__")
    torch.fx.Proxy.__getattr__, torch.fx.Proxy.__len__ = concrete_getattr, concrete_len
    torch.fx.Proxy.__setitem__ = concrete_setitem
    try:
        with _buffers_restored(model), torch.random.fork_rng(devices=[]):
            graph = tracer.trace(model)
    finally:
        st._wrapped_fns_to_patch[:] = saved_wraps
        torch.fx.Proxy.__getattr__, torch.fx.Proxy.__len__ = proxy_getattr, proxy_len
        if had_setitem:
            torch.fx.Proxy.__setitem__ = proxy_setitem
        else:
            del torch.fx.Proxy.__setitem__
    gm = torch.fx.GraphModule(tracer.root, graph)
    gm.remat_trace = "concrete-shapes"
    return gm


@contextlib.contextmanager
def _buffers_restored(model):
    """Runs (shape probes, recomputation) must not move BatchNorm running statistics."""
    saved = [(b, b.detach().clone()) for b in model.buffers()]
    try:
        yield
    finally:
        with torch.no_grad():
            for b, c in saved:
                b.copy_(c)


def _storage(t):
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    nbytes = s.nbytes() if hasattr(s, "nbytes") else s.size() * t.element_size()
    return (t.device.type, t.device.index, s.data_ptr()), nbytes


def _run_node(gm, n, env, modules, out_of_place=False):
    args = torch.fx.node.map_arg(n.args, lambda a: env[a])
    kwargs = torch.fx.node.map_arg(n.kwargs, lambda a: env[a])
    if n.op == "call_module":
        mod = modules[n.target]
        if out_of_place and getattr(mod, "inplace", False):
            mod = copy.copy(mod)
            mod.inplace = False
        return mod(*args, **kwargs)
    if n.op == "call_function":
        fn = n.target
        if out_of_place:
            if kwargs.get("inplace"):
                kwargs = dict(kwargs, inplace=False)
            fn = _OUT_OF_PLACE.get(fn, fn)
        return fn(*args, **kwargs)
    if n.op == "call_method":
        name = n.target
        if out_of_place and name.endswith("_") and not name.endswith("__") and hasattr(args[0], name[:-1]):
            name = name[:-1]
        return getattr(args[0], name)(*args[1:], **kwargs)
    if n.op == "get_attr":
        obj = gm
        for a in n.target.split("."):
            obj = getattr(obj, a)
        return obj
    raise RuntimeError(f"cannot run fx node {n.op}")


_OUT_OF_PLACE = {operator.iadd: operator.add, operator.imul: operator.mul, operator.isub: operator.sub,
                 operator.itruediv: operator.truediv, torch.relu_: torch.relu}


def _tensors(v):
    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, (list, tuple)):
        return [t for x in v for t in _tensors(x)]
    if isinstance(v, dict):
        return [t for x in v.values() for t in _tensors(x)]
    return []


def _probe(gm, inputs):
    """Runs the traced model once: each node's output shape and storage, and which node outputs
    each node's backward saves (saved_tensors_hooks), by storage. Buffers are restored."""
    modules = dict(gm.named_modules())
    weights = {_storage(p)[0] for p in list(gm.parameters()) + list(gm.buffers())}
    env, info = {}, {}
    owner = {}  # storage key -> fx node that produced it first
    placeholders = iter(inputs)
    with _buffers_restored(gm), torch.random.fork_rng(devices=[]):
        for n in gm.graph.nodes:
            if n.op == "placeholder":
                env[n] = next(placeholders)
            elif n.op == "output":
                continue
            else:
                saved = []

                def pack(x):
                    saved.append(_storage(x))
                    return x

                with torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
                    env[n] = _run_node(gm, n, env, modules)
            outs = _tensors(env[n])
            keys = []
            for t in outs:
                k, nb = _storage(t)
                keys.append((k, nb))
                owner.setdefault(k, n)
            info[n] = {
                # A module returning a tuple (MultiheadAttention: output, weights) is mapped by
                # its first tensor, the one the exporter's last node produces.
                "shape": tuple(outs[0].shape) if outs and (isinstance(env[n], torch.Tensor) or n.op == "call_module") else None,
                "tensor": isinstance(env[n], torch.Tensor),
                "storages": keys,
                "bytes": sum(t.numel() * t.element_size() for t in outs),
                "saves": [] if n.op == "placeholder" else [k for k, _ in saved if k not in weights],
                "saves_raw": [] if n.op == "placeholder" else [(k, nb) for k, nb in saved if k not in weights],
            }
        for n, i in info.items():
            i["saves_nodes"] = sorted({owner[k] for k in i["saves"] if k in owner}, key=lambda m: _order(gm)[m])
            i["owner"] = [owner.get(k) for k, _ in i["storages"]]
            # Tensors the node's backward saves that no node produced: copies made inside the op
            # (matmul's folded copy of a non-contiguous input), MaxPool indices, BN statistics.
            i["saves_anonymous"] = [nb for k, nb in i.pop("saves_raw") if k not in owner]
    return info


def _order(gm):
    cached = getattr(gm, "_remat_order", None)
    if cached is None:
        cached = {n: i for i, n in enumerate(gm.graph.nodes)}
        gm._remat_order = cached
    return cached


# ---------------------------------------------------------------------------------------------
# fx <-> ONNX mapping

_SKIP_OPS = {"Constant"}


def _same_shape(onnx_shape, fx_shape, file_batch, batch):
    """Shapes equal, with the file's batch read as the run's (a plan made at another batch)."""
    if onnx_shape is None or fx_shape is None or len(onnx_shape) != len(fx_shape):
        return False
    if file_batch == batch:
        return tuple(onnx_shape) == tuple(fx_shape)
    return all(a == b or (a == file_batch and b == batch) for a, b in zip(onnx_shape, fx_shape))


def map_to_onnx(gm, info, onnx):
    """fx node -> {"onnx": [ONNX node names], "value": main ONNX output}; plus a list of problems."""
    ins = [n for n in gm.graph.nodes if n.op == "placeholder"]
    data = onnx.data_inputs()
    fs = onnx.shape(data[0]) if data else None
    file_batch = fs[0] if fs else None
    batch = info[ins[0]]["shape"][0] if ins and info[ins[0]]["shape"] else file_batch

    def same(value, want):
        return want is not None and _same_shape(onnx.shape(value), want, file_batch, batch)

    by_scope = {}
    for nd in onnx.nodes:
        if nd["op"] in _SKIP_OPS:
            continue
        by_scope.setdefault(_scope(nd["name"]), []).append(nd)
    scopes = list(by_scope)
    mapping, used = {}, set()
    cursor = {}
    outputs_of = {nd["name"]: nd["outputs"] for nd in onnx.nodes}
    memo = {}
    op_owner = {}  # ONNX node -> the fx call it was mapped to

    def values_of(a):
        """The ONNX values an fx node's output may stand for: its group's outputs, or through
        a node with no ONNX counterpart (a view, contiguous) its inputs' values."""
        if a not in memo:
            memo[a] = set()
            if a in mapping:
                memo[a] = {o for name in mapping[a]["onnx"] for o in outputs_of[name]}
            elif a.op not in ("placeholder", "get_attr"):
                memo[a] = set().union(*(values_of(b) for b in a.all_input_nodes)) if a.all_input_nodes else set()
        # An in-place write (x[i] = v: ScatterND in ONNX) gives x's later readers its value.
        writes = [u for u in a.users if u.op == "call_function" and u.target is operator.setitem
                  and u.args[0] is a and u in mapping]
        return memo[a] | {o for u in writes for name in mapping[u]["onnx"] for o in outputs_of[name]}
    for n in gm.graph.nodes:
        if n.op not in ("call_module", "call_function", "call_method"):
            continue
        scope = n.meta.get("remat_scope", "")
        want = info[n]["shape"]
        if n.op == "call_function" and n.target is operator.setitem and isinstance(n.args[0], torch.fx.Node):
            want = info[n.args[0]]["shape"]  # x[i] = v: ONNX's ScatterND makes x's new value
        if n.op == "call_module":
            group = [nd for s in scopes if s == scope or s.startswith(scope + "/") for nd in by_scope[s]]
            group = [nd for nd in group if nd["name"] not in used]
            if not group:
                continue
            value = None
            for nd in reversed(group):
                value = next((o for o in nd["outputs"] if same(o, want)), None)
                if value:
                    break
            if value is None:
                value = group[-1]["outputs"][0]
            for nd in group:
                used.add(nd["name"])
            mapping[n] = {"onnx": [nd["name"] for nd in group], "value": value, "verified": same(value, want)}
        else:
            if want is None:
                continue
            src = n.args[0] if n.args and isinstance(n.args[0], torch.fx.Node) else None
            if n.target is operator.getitem and src is not None and src.op == "call_module" \
                    and not info[src].get("tensor", False):
                continue  # an element of a module's tuple output: no ONNX node of its own
            if n.op == "call_method" and n.target in _NO_ONNX_METHODS:
                continue  # the exporter writes no node for it (a copy in PyTorch only)
            lst = by_scope.get(scope, [])
            start = cursor.get(scope, 0)
            while start < len(lst) and lst[start]["name"] in used:
                start += 1
            cursor[scope] = start
            allowed = set()
            for a in n.all_input_nodes:
                allowed |= values_of(a)
            finals = _final_ops(n)
            hit = None
            for j in range(start, len(lst)):
                if lst[j]["name"] in used or (finals and lst[j]["op"] not in finals):
                    continue
                o = next((o for o in lst[j]["outputs"] if same(o, want)), None)
                if o is None and lst[j]["outputs"] and onnx.shape(lst[j]["outputs"][0]) is None:
                    # No shape known (the exporter's types stop at Swin's computed Pad): the data
                    # flow check below decides, and the pair stays unverified.
                    o = lst[j]["outputs"][0]
                if o is None:
                    continue
                members = _feeding(lst, start, j, used, allowed, onnx,
                                   reads_input=bool(allowed) and onnx.shape(lst[j]["outputs"][0]) is None,
                                   shared=lambda p, _n=n: _shared_with(p, _n, op_owner, mapping))
                if members is None:
                    continue
                if hit is None:
                    hit = (j, o, members)
                    if not finals:
                        break
                elif hit[2] <= members:
                    hit = (j, o, members)  # the same chain, one op on (GELU's second Mul)
            if hit is None:
                continue  # a view or no-op the exporter folded away: no ONNX node
            j, o, members = hit
            group = [nd for nd in lst[start:j + 1] if nd["name"] in members]
            for nd in group:
                used.add(nd["name"])
                op_owner[nd["name"]] = n
            mapping[n] = {"onnx": [nd["name"] for nd in group], "value": o, "verified": same(o, want)}
    constants = onnx.constant_derived()
    unmapped = [nd["name"] for nd in onnx.nodes
                if nd["op"] not in _SKIP_OPS and nd["name"] not in used and not _is_shape_arith(nd, onnx)
                and not all(o in constants for o in nd["outputs"])]
    return mapping, unmapped


# Methods the exporter writes no node for (contiguous: a copy in PyTorch, nothing in ONNX).
_NO_ONNX_METHODS = {"contiguous"}


def _shared_with(p, n, op_owner, mapping):
    """ONNX node p, mapped to another call, is an intermediate of that call (not its value), and
    that call reads nothing the call n does not."""
    u = op_owner.get(p["name"])
    if u is None or u is n or mapping[u]["value"] in p["outputs"]:
        return False
    return set(u.all_input_nodes) <= set(n.all_input_nodes)


def _final_ops(n):
    """ONNX op types that end the export of a function the exporter writes as several nodes:
    the fx node maps to the last of them, not to the first of its shape (F.linear's MatMul)."""
    import torch.nn.functional as F
    t = n.target
    if n.op != "call_function":
        return None
    if t in (F.linear, getattr(torch._C._nn, "linear", None)):
        bias = n.args[2] if len(n.args) > 2 else n.kwargs.get("bias")
        return {"Gemm", "Add"} if bias is not None else {"Gemm", "MatMul"}
    if t in (F.gelu, getattr(torch._C._nn, "gelu", None)):
        return {"Mul", "Gelu"}
    if t is torch.roll:  # Slice, Slice, Concat per rolled dim
        return {"Concat"}
    if t is operator.getitem and isinstance(n.args[1], tuple) and sum(isinstance(i, slice) for i in n.args[1]) > 1:
        return {"Slice"}  # one Slice per sliced dim: the last
    return None


def _feeding(lst, start, j, used, allowed, onnx, reads_input=False, shared=None):
    """The ONNX nodes of one scope, between `start` and the candidate `j`, that compute lst[j] from
    the fx node's inputs (`allowed`: the ONNX values of its fx inputs), or None when lst[j] reads
    a value the fx node does not (another call's node of the same shape)."""
    in_range = {nd["name"] for nd in lst[start:j + 1] if nd["name"] not in used}
    constants = onnx.constant_derived()
    members = {lst[j]["name"]}
    stack = [lst[j]]
    read = False
    seen = set()
    while stack:
        nd = stack.pop()
        if nd["op"] in ("Shape", "Size"):
            continue  # reads only the size of its input
        for v in nd["inputs"]:
            p = onnx.producer.get(v) if v else None
            read = read or v in allowed
            if p is None or p["op"] in _SKIP_OPS or v in allowed or p["name"] in members or v in constants:
                continue  # a graph input, parameter or constant; the fx node's input; inside
            if p["name"] in in_range:
                members.add(p["name"])
                stack.append(p)
            elif shared is not None and p["name"] not in seen and shared(p):
                # An intermediate node the exporter shares with a sibling call on the same
                # inputs (x[..., 0::2, 0::2] and x[..., 0::2, 1::2] slice dim -3 once): followed.
                seen.add(p["name"])
                stack.append(p)
            elif not _is_shape_arith(p, onnx):
                return None
    if reads_input and not read:
        return None  # computed from constants alone (Swin's mask): not this call's result
    return members


def _is_shape_arith(nd, onnx):
    """Shape arithmetic (int64 values, Shape/Gather/Concat of sizes): no activation, no fx node."""
    elems = [onnx.shapes.get(o, (None, None))[0] for o in nd["outputs"]]
    if nd["op"] in ("Shape", "ConstantOfShape", "Size"):
        return True
    known = [e for e in elems if e is not None]
    if known:
        return all(e == 7 for e in known)  # int64 values only: sizes, pads, shifts (Swin's Mod)
    return nd["op"] in ("Gather", "Unsqueeze", "Squeeze", "Concat", "Slice", "Cast", "Range", "Equal", "Where",
                        "Expand", "Mul", "Add", "Div", "Sub", "Mod")


# ---------------------------------------------------------------------------------------------
# The applied model

class _Recorder:
    """Which checkpoint call is running: lets measure() see torch.utils.checkpoint's inside."""
    pending_inputs = None


class PlannedModule(torch.nn.Module):
    """Runs a traced model with the plan's segments under torch.utils.checkpoint (non-reentrant)
    and the plan's offloaded values saved in host memory. Shares parameters with the model, under
    the model's own names: its children, parameters and buffers are registered here as they are on
    the model (no `model.` prefix), so a state_dict saved from either loads into the other, as
    with the plain model. The model and the traced graph are held unregistered (`model`)."""

    def __init__(self, model, gm, segments, order, offload_nodes, report):
        super().__init__()
        # Unregistered: registering them would prefix every name with `model.` / `_gm.`.
        object.__setattr__(self, "_model", model)
        object.__setattr__(self, "_gm", gm)
        for name, child in model.named_children():
            self.add_module(name, child)
        self._adopt_tensors()
        self.training = model.training
        self._modules_by_name = dict(gm.named_modules())
        self._segments = segments          # list of {"nodes": [...], "inputs": [...], "outputs": [...]}
        self._order = order                # list of ("node", n) / ("segment", i)
        self._offload_nodes = offload_nodes
        self.remat_report = report

    @property
    def model(self):
        """The model the plan was applied to (its modules and tensors are this module's)."""
        return self._model

    def _adopt_tensors(self):
        """The model's own (top-level) parameters and buffers, registered under their names."""
        m = self._model
        non_persistent = getattr(m, "_non_persistent_buffers_set", set())
        for name, p in m.named_parameters(recurse=False):
            self._parameters[name] = p
        for name, b in m.named_buffers(recurse=False):
            self._buffers[name] = b
            if name in non_persistent:
                self._non_persistent_buffers_set.add(name)
            else:
                self._non_persistent_buffers_set.discard(name)

    def _apply(self, fn, *args, **kwargs):
        # .to() / .cuda() / .half(): the model (whose top-level buffers are replaced, not changed
        # in place) and the traced graph (its own attribute copies), then the names again.
        self._model._apply(fn, *args, **kwargs)
        self._gm._apply(fn, *args, **kwargs)
        self._adopt_tensors()
        return self

    def train(self, mode=True):
        super().train(mode)
        self._model.train(mode)
        self._gm.train(mode)
        return self

    def _run_segment(self, seg, *vals):
        env = dict(zip(seg["inputs"], vals))
        for n in seg.get("prelude", ()):
            env[n] = _run_node(self._gm, n, env, self._modules_by_name, out_of_place=True)
        for n in seg["nodes"]:
            env[n] = _run_node(self._gm, n, env, self._modules_by_name, out_of_place=True)
        out = tuple(env[n] for n in seg["outputs"])
        return out

    def forward(self, *inputs):
        env = {}
        placeholders = [n for n in self._gm.graph.nodes if n.op == "placeholder"]
        for n, v in zip(placeholders, inputs):
            env[n] = v
        offload_keys = set()
        recompute_keys = {}   # storage key -> (segment call, output index), during this forward
        calls = []
        try:
            with _saved_hooks(offload_keys, recompute_keys):
                for kind, item in self._order:
                    if kind == "node":
                        n = item
                        if n.op == "output":
                            return torch.fx.node.map_arg(n.args[0], lambda a: env[a])
                        env[n] = _run_node(self._gm, n, env, self._modules_by_name,
                                           out_of_place=n in self._out_of_place)
                        if n in self._offload_nodes:
                            offload_keys.update(_storage(t)[0] for t in _tensors(env[n]))
                        continue
                    seg = self._segments[item]
                    vals = [env[n] for n in seg["inputs"]]
                    call = _SegmentCall(self, seg, vals)
                    _Recorder.pending_inputs = vals
                    try:
                        outs = torch.utils.checkpoint.checkpoint(
                            lambda *v, _s=seg: self._run_segment(_s, *v), *vals, use_reentrant=False)
                    finally:
                        _Recorder.pending_inputs = None
                    for n, v in zip(seg["outputs"], outs):
                        env[n] = v
                    if seg["recomputed_outputs"]:
                        calls.append(call)
                        for i in seg["recomputed_outputs"]:
                            for t in _tensors(outs[i]):
                                # The version tells the output from what an in-place op
                                # outside makes of it in the same storage (ReLU(inplace=True)).
                                recompute_keys[_storage(t)[0]] = (call, i, t._version)
        finally:
            recompute_keys.clear()
            calls.clear()
        raise RuntimeError("traced graph has no output")


class _SegmentCall:
    """One run of a segment, for ops outside it that save one of its outputs the plan recomputes:
    they save a _Token; the first unpack re-runs the segment (no grad, the forward's RNG state,
    buffers restored) and each recomputed output lives until its last token is released."""

    def __init__(self, owner, seg, vals):
        self.owner, self.seg, self.vals = owner, seg, vals
        self.rng = torch.get_rng_state()
        self.cuda_rng = None
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            self.cuda_rng = (torch.cuda.current_device(), torch.cuda.get_rng_state())
        self.outputs = {}   # index -> _Packed while a token for it lives
        self.tokens = {}    # index -> live token count
        if _TRACKER is not None:
            for t in _tensors(vals):
                _TRACKER.acquire_tensor(self, t)

    def get(self, i):
        p = self.outputs.get(i)
        if p is None:
            devices = [self.cuda_rng[0]] if self.cuda_rng else []
            with torch.no_grad(), torch.random.fork_rng(devices=devices), _buffers_restored(self.owner.model):
                torch.set_rng_state(self.rng)
                if self.cuda_rng:
                    torch.cuda.set_rng_state(self.cuda_rng[1])
                outs = self.owner._run_segment(self.seg, *self.vals)
            for j in self.seg["recomputed_outputs"]:
                if self.tokens.get(j, 0) > 0 and j not in self.outputs:
                    self.outputs[j] = _Packed(outs[j])
                    if _TRACKER is not None:
                        _TRACKER.acquire_tensor(self.outputs[j], outs[j])
            p = self.outputs[i]
        return p.tensor

    def token_dead(self, i):
        self.tokens[i] -= 1
        if self.tokens[i] == 0:
            self.outputs.pop(i, None)


class _Token:
    __slots__ = ("call", "index", "view", "__weakref__")

    def __init__(self, call, index, view):
        self.call, self.index, self.view = call, index, view
        call.tokens[index] = call.tokens.get(index, 0) + 1
        weakref.finalize(self, call.token_dead, index)


# Saved-tensor hooks outside the segments: offload, and measurement when measure() is running.

class _Offloaded:
    __slots__ = ("tensor", "device", "__weakref__")

    def __init__(self, tensor, device):
        self.tensor, self.device = tensor, device


class _Packed:
    __slots__ = ("tensor", "__weakref__")

    def __init__(self, tensor):
        self.tensor = tensor


_TRACKER = None


@contextlib.contextmanager
def _saved_hooks(offload_keys=frozenset(), recompute_keys=None):
    def pack(x):
        key, nbytes = _storage(x)
        if recompute_keys and key in recompute_keys:
            call, i, version = recompute_keys[key]
            if x._version == version:
                # A view of the output is saved as the same view of the recomputed output.
                return _Token(call, i, (tuple(x.size()), tuple(x.stride()), x.storage_offset()))
        if key in offload_keys:
            host = torch.empty(x.size(), dtype=x.dtype, layout=x.layout, pin_memory=x.is_cuda)
            host.copy_(x, non_blocking=x.is_cuda)
            p = _Offloaded(host, x.device)
            if _TRACKER is not None:
                _TRACKER.acquire(p, ("host",) + key, host.numel() * host.element_size(), host=True)
            return p
        p = _Packed(x)
        if _TRACKER is not None:
            _TRACKER.acquire(p, key, nbytes)
        return p

    def unpack(p):
        if isinstance(p, _Token):
            t = p.call.get(p.index)
            size, stride, offset = p.view
            if tuple(t.size()) == size and tuple(t.stride()) == stride and t.storage_offset() == offset:
                return t
            return t.as_strided(size, stride, offset)
        if isinstance(p, _Offloaded):
            return p.tensor.to(p.device, non_blocking=p.tensor.is_pinned())
        return p.tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        yield


# ---------------------------------------------------------------------------------------------
# Building the segments

def _consumers(gm):
    users = {n: [] for n in gm.graph.nodes}
    for n in gm.graph.nodes:
        for a in n.all_input_nodes:
            users[a].append(n)
    return users


# False hands weight-derived values to the segments as inputs, as torch.utils.checkpoint around
# hand-picked modules does (for comparison; the report then lists them as kept by the
# application only).
RECOMPUTE_WEIGHT_DERIVED_IN_SEGMENTS = True


def build(model, plan, onnx, inputs, gm=None):
    """Traces the model, maps it to the ONNX file and builds the PlannedModule for the plan."""
    gm = gm if gm is not None else trace(model)
    info = _probe(gm, inputs)
    mapping, unmapped = map_to_onnx(gm, info, onnx)
    states = PlanStates(plan)
    known_ops = {nd["name"] for nd in onnx.nodes}
    missing = sorted(o for o in states.recomputed_ops | states.forward_ops if o not in known_ops)
    if missing:
        raise ValueError(f"plan node {missing[0]!r} is not a node of {os.path.basename(onnx.path)} "
                         f"({len(missing)} such): the plan was made for another model")
    unverified = [n.name for n, m in mapping.items() if not m["verified"]]
    # Values whose shape the file and the exporter leave open take the fx node's (for the byte
    # counts of the comparison with the simulator).
    for n, m in mapping.items():
        if onnx.shape(m["value"]) is None and info[n]["shape"] is not None and info[n]["tensor"]:
            onnx.shapes[m["value"]] = (1, list(info[n]["shape"]))
    op_to_fx = {}
    for n, m in mapping.items():
        for o in m["onnx"]:
            op_to_fx[o] = n
    value_to_fx = {m["value"]: n for n, m in mapping.items()}
    # Plan ops no fx node carries: their decisions cannot be applied.
    unmapped_plan_ops = sorted(o for o in states.recomputed_ops if o not in op_to_fx)

    nodes = [n for n in gm.graph.nodes if n.op in ("call_module", "call_function", "call_method")]
    # A node whose op the plan computes again in backward runs in a segment. Its value is
    # recomputed (ops outside that save it get a recompute token, and segments join across it)
    # only when the plan also frees it in forward: rotor re-runs MaxPool for its indices while
    # keeping its output, which then stays stored.
    # Ops on parameters alone (a weight's Transpose) are views in PyTorch: the plan recomputing
    # one asks nothing of the module that reads it.
    derived = onnx.weight_derived()
    weight_ops = {nd["name"] for nd in onnx.nodes if nd["outputs"] and all(o in derived for o in nd["outputs"])}
    recompute = {n for n in nodes if n in mapping
                 and any(o in states.recomputed_ops and o not in weight_ops for o in mapping[n]["onnx"])}
    kept_values = {n for n in recompute if mapping[n]["value"] not in states.freed_in_forward}
    # A node the plan keeps whose backward saves its own copy of an input the plan recomputes
    # (F.linear on a transposed input saves a contiguous copy): outside a segment PyTorch would
    # keep that copy, which the plan does not. It runs in the input's segment, output stored.
    freed = {n for n in recompute if n not in kept_values}
    for n in nodes:
        if n in mapping and n not in recompute and info[n]["saves_anonymous"]:
            srcs = [a for a in n.all_input_nodes if a in freed or (a not in mapping and any(b in freed for b in a.all_input_nodes))]
            if any(nb == info[a]["bytes"] for a in srcs for nb in info[n]["saves_anonymous"]):
                recompute.add(n)
                kept_values.add(n)
    offload = {n for n in nodes if n in mapping and mapping[n]["value"] in states.offloaded}
    users = _consumers(gm)
    # fx nodes the plan has no op for: no ONNX node, or only ops the training step drops
    # (zero-ratio Dropout, Identity). They follow their input, like views.
    planned = {n for n in mapping if not states.forward_ops
               or any(o in states.forward_ops or o in states.recomputed_ops for o in mapping[n]["onnx"])}
    # Nodes with no ONNX counterpart (views, getattr) follow their input into a segment. A node
    # outside the segments whose backward saves a recomputed value saves a recompute token
    # instead (PlannedModule: _SegmentCall), so it stays outside, as in the plan.
    seg_nodes = set(recompute)
    added_savers = set()
    changed = True
    while changed:
        changed = False
        for n in nodes:
            if n not in seg_nodes and n not in planned and any(a in seg_nodes for a in n.all_input_nodes):
                seg_nodes.add(n)
                changed = True
    # Union-find: an edge whose value the plan recomputes joins its two ends.
    parent = {n: n for n in seg_nodes}

    def find(x):
        while parent[x] is not x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a, b):
        ra, rb = find(a), find(b)
        if ra is not rb:
            parent[rb] = ra

    # Sizes and other non-tensor values (x.size(0), bsz * heads) join the segment of what they
    # are computed from, never the segment that reads them: a segment may hand a size to another,
    # and sizes read across the attention would otherwise tie its segments into one.
    scalar = {n for n in nodes if not info[n]["storages"]}
    for n in seg_nodes:
        for a in n.all_input_nodes:
            if a in seg_nodes and ((a in recompute and a not in kept_values) or a not in planned) \
                    and (a not in scalar or n in scalar):
                union(a, n)
    order_idx = _order(gm)
    merged_cycles = 0
    while True:
        groups = {}
        for n in seg_nodes:
            groups.setdefault(find(n), []).append(n)
        # Condensed graph: segments and outside nodes; merge cycles into one segment.
        unit = {}
        for r, ns in groups.items():
            for n in ns:
                unit[n] = ("s", r)
        for n in gm.graph.nodes:
            unit.setdefault(n, ("n", n))
        succ = {}
        for n in gm.graph.nodes:
            for a in n.all_input_nodes:
                if unit[a] != unit[n]:
                    succ.setdefault(unit[a], set()).add(unit[n])
        cyc = _find_cycle(set(unit.values()), succ)
        if not cyc:
            break
        merged_cycles += 1
        seg_in_cycle = [u for u in cyc if u[0] == "s"]
        anchor = seg_in_cycle[0][1] if seg_in_cycle else None
        for u in cyc:
            if u[0] == "n":
                if u[1].op in ("placeholder", "output", "get_attr"):
                    raise RuntimeError("cannot order the plan's segments")
                seg_nodes.add(u[1])
                parent[u[1]] = u[1]
                added_savers.add(u[1])
        for u in cyc:
            if anchor is None:
                anchor = u[1]
            union(anchor, u[1] if u[0] == "n" else u[1])
    # Topological order of the condensed graph (stable by first fx position).
    units = sorted(set(unit.values()), key=lambda u: min(order_idx[m] for m in (groups[u[1]] if u[0] == "s" else [u[1]])))
    indeg = {u: 0 for u in units}
    for u, ss in succ.items():
        for s in ss:
            indeg[s] += 1
    ready = [u for u in units if indeg[u] == 0]
    topo = []
    pos = {u: i for i, u in enumerate(units)}
    import heapq
    heap = [(pos[u], i, u) for i, u in enumerate(ready)]
    heapq.heapify(heap)
    cnt = len(heap)
    while heap:
        _, _, u = heapq.heappop(heap)
        topo.append(u)
        for s in succ.get(u, ()):
            indeg[s] -= 1
            if indeg[s] == 0:
                cnt += 1
                heapq.heappush(heap, (pos[s], cnt, s))
    segments, order = [], []
    for u in topo:
        if u[0] == "n":
            if u[1].op != "placeholder":
                order.append(("node", u[1]))
            continue
        ns = sorted(groups[u[1]], key=lambda m: order_idx[m])
        nset = set(ns)
        ins, outs = [], []
        for m in ns:
            for a in m.all_input_nodes:
                if a not in nset and a not in ins:
                    ins.append(a)
            if any(x not in nset for x in users[m]):
                outs.append(m)
        order.append(("segment", len(segments)))
        segments.append({"nodes": ns, "inputs": ins, "outputs": outs})
    # Values computed from parameters, buffers and constants alone (Swin's relative position bias:
    # a table indexed, reshaped and permuted) cost the simulator nothing to keep: they count as
    # weight-derived, not as stored activations. Handed to a segment as an input,
    # torch.utils.checkpoint would save each one for the segment's backward (1.3 MB of Swin-T's
    # 1.8 MB at batch 2, 64x64, under chen-sqrtn). So a segment computes them itself, in a prelude
    # from the parameters, and the outside run computes them only where outside nodes read them.
    weight_only = set()
    for n in (gm.graph.nodes if RECOMPUTE_WEIGHT_DERIVED_IN_SEGMENTS else ()):
        if n.op in ("call_function", "call_method", "call_module") and n not in seg_nodes \
                and all(a.op == "get_attr" or a in weight_only for a in n.all_input_nodes):
            weight_only.add(n)
    for seg in segments:
        prelude, in_prelude = [], set()

        def pull(a):
            if a in in_prelude:
                return
            for b in a.all_input_nodes:
                if b in weight_only:
                    pull(b)
            prelude.append(a)
            in_prelude.add(a)

        ins = []
        for a in seg["inputs"]:
            if a in weight_only and info[a]["storages"]:
                pull(a)
            else:
                ins.append(a)
        for p_ in prelude:
            for b in p_.all_input_nodes:
                if b not in in_prelude and b not in ins:
                    ins.append(b)
        seg["prelude"] = sorted(prelude, key=lambda m: order_idx[m])
        seg["inputs"] = ins
    # Weight-only nodes that nothing outside the segments reads any more are not run outside.
    needed = set()
    for kind, item in reversed(order):
        if kind == "segment":
            needed.update(segments[item]["inputs"])
        elif item not in weight_only or item in needed:
            needed.update(item.all_input_nodes)
    order = [(k, i) for k, i in order if k == "segment" or i not in weight_only or i in needed]
    # Outside in-place ops on a value a segment reads would corrupt its recomputation.
    # An in-place op on a segment's output would also change the storage a recompute token
    # stands for, so it runs out of place too (its input then stays a token, as in the plan).
    seg_inputs = {a for s in segments for a in s["inputs"]}
    seg_outputs = {o for s in segments for o in s["outputs"]}
    out_of_place = {n for kind, n in order if kind == "node" and n.op != "output"
                    and any(a in seg_inputs or a in seg_outputs for a in n.all_input_nodes)}
    # What the plan recomputes, by fx node: its recomputed ops' nodes, and the nodes with no op of
    # their own that follow one of them (a view or contiguous copy of a recomputed value).
    plan_recomputed = {n for n in recompute if n not in kept_values}
    for n in gm.graph.nodes:
        if n not in planned and n.op not in ("placeholder", "get_attr", "output") \
                and any(a in plan_recomputed for a in n.all_input_nodes):
            plan_recomputed.add(n)
    report = _report(gm, info, mapping, unmapped, unverified, unmapped_plan_ops, states, recompute,
                     added_savers, segments, offload, merged_cycles, value_to_fx, onnx, kept_values,
                     plan_recomputed, weight_ops)
    pm = PlannedModule(model, gm, segments, order, offload, report)
    pm._out_of_place = out_of_place
    # In-place ops (torchvision's ReLU(inplace=True)): their input and output share one storage
    # in PyTorch, two tensors in the simulator. validate() uses the pairs to say how much of a
    # difference that makes.
    pm.inplace_pairs = []
    for n in nodes:
        inplace = getattr(dict(gm.named_modules()).get(n.target), "inplace", False) if n.op == "call_module" \
            else bool(n.kwargs.get("inplace")) if n.op == "call_function" else str(n.target).endswith("_")
        src = n.all_input_nodes[0] if n.all_input_nodes else None
        if inplace and n in mapping and src in mapping:
            pm.inplace_pairs.append((mapping[src]["value"], mapping[n]["value"]))
    for seg in segments:
        seg["recomputed_outputs"] = [i for i, o in enumerate(seg["outputs"])
                                     if (o in recompute and o not in kept_values) or o not in planned]
    return pm


def _resident(states, onnx):
    """ONNX values the plan holds at backward-begin."""
    outputs = {nd["name"]: nd["outputs"] for nd in onnx.nodes}
    live = set()
    for kind, name in states.forward_events:
        if kind == "compute":
            live.update(outputs.get(name, ()))
        else:
            live.discard(name)
    return live


def _find_cycle(units, succ):
    """One cycle (as a list of units) of the directed graph, or None."""
    color, stack_parent = {}, {}
    for start in units:
        if start in color:
            continue
        stack = [(start, iter(succ.get(start, ())))]
        color[start] = 1
        while stack:
            u, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                color[u] = 2
                stack.pop()
                continue
            c = color.get(nxt)
            if c is None:
                color[nxt] = 1
                stack_parent[nxt] = u
                stack.append((nxt, iter(succ.get(nxt, ()))))
            elif c == 1:
                cyc, x = [nxt], u
                while x != nxt:
                    cyc.append(x)
                    x = stack_parent[x]
                return cyc
    return None


def _stored_bytes(info, nodes_saved):
    """Bytes of the distinct storages the given nodes' outputs own."""
    seen, total = set(), 0
    for n in nodes_saved:
        for k, nb in info[n]["storages"]:
            if k not in seen:
                seen.add(k)
                total += nb
    return total


def _report(gm, info, mapping, unmapped, unverified, unmapped_plan_ops, states, recompute, added_savers,
            segments, offload, merged_cycles, value_to_fx, onnx, kept_values, plan_recomputed, weight_ops):
    seg_nodes = {n for s in segments for n in s["nodes"]}
    seg_inputs = {a for s in segments for a in s["inputs"]}
    # What PyTorch keeps under the applied plan: what outside nodes save, plus segment inputs
    # (by the node owning each storage: a Dropout(p=0) or a view hands on its input's).
    def no_op_of_its_own(a):  # a view, or an op the training step drops (Dropout(p=0))
        return a not in mapping or (states.forward_ops and not any(
            o in states.forward_ops or o in states.recomputed_ops for o in mapping[a]["onnx"]))
    applied_kept = set(seg_inputs) | {o for a in seg_inputs if no_op_of_its_own(a)
                                      for o in info[a].get("owner", []) if o is not None}
    for n, i in info.items():
        if n not in seg_nodes:
            # What an outside node saves is kept, except a value a segment recomputes (a token).
            applied_kept.update(m for m in i["saves_nodes"] if m not in seg_nodes or m in kept_values)
    plain_kept = set()
    for n, i in info.items():
        plain_kept.update(i["saves_nodes"])
    plain_kept = {n for n in plain_kept if info[n]["storages"]}  # sizes hold no bytes
    applied_kept = {n for n in applied_kept if info[n]["storages"]}
    plan_kept = {n for n in plain_kept if n not in plan_recomputed}
    # Nodes whose values the plan keeps but the application recomputes, and the reverse.
    recomputed_not_planned = sorted((n for n in plan_kept if n not in applied_kept), key=lambda m: _order(gm)[m])
    # Values the application keeps that neither the plain run saves nor the plan holds as a
    # checkpoint: a segment input no one else needs kept (the simulator does not count it).
    plan_resident = {value_to_fx[v] for v in _resident(states, onnx) if v in value_to_fx}
    # And a value the plan holds at backward-begin that runs in a segment and is not kept there:
    # shufflenet's rotor plan keeps a chunk (ONNX: a Slice output of its own) of a channel shuffle
    # it recomputes; in PyTorch the chunk is a view whose base the segment recomputes, so the op
    # reading it saves a recompute token instead.
    recomputed_not_planned = sorted(set(recomputed_not_planned) | {
        n for n in plan_resident if n in seg_nodes and n not in applied_kept and n in info and info[n]["storages"]},
        key=lambda m: _order(gm)[m])
    # (A node with no op of its own, a view or Dropout(p=0), stands for the node owning its storage.)
    def accounted(n):
        if n in plain_kept or n in plan_resident or n.op in ("placeholder", "get_attr"):
            return True
        owners = [o for o in info[n].get("owner", []) if o is not None and o is not n]
        return no_op_of_its_own(n) and bool(owners) and all(accounted(o) for o in owners)

    kept_by_application_only = sorted((n for n in applied_kept if not accounted(n)), key=lambda m: _order(gm)[m])
    kept_not_planned = sorted((n for n in applied_kept if n in plan_recomputed), key=lambda m: _order(gm)[m])

    def names(ns):
        return [mapping[n]["value"] if n in mapping else n.name for n in ns]

    rep = {
        "method": "fx-segments",
        "torch": torch.__version__,
        "fx_nodes": sum(1 for n in gm.graph.nodes if n.op not in ("placeholder", "output")),
        "mapped_nodes": len(mapping),
        "onnx_nodes_unmapped": unmapped,
        "mapping_unverified": unverified,
        "plan_ops_without_fx_node": unmapped_plan_ops,
        "plan_checkpoints": states.checkpoints,
        "segments": len(segments),
        "segment_nodes": len(seg_nodes),
        "applied_checkpoints": names(sorted(seg_inputs, key=lambda m: _order(gm)[m])),
        "recomputed_nodes_planned": len(recompute),
        "nodes_added_to_segments": names(sorted(added_savers, key=lambda m: _order(gm)[m])),
        "kept_by_plan_but_recomputed": names(recomputed_not_planned),
        "recomputed_by_plan_but_kept": names(kept_not_planned),
        "kept_by_application_only": names(kept_by_application_only),
        "merged_cycles": merged_cycles,
        "offloaded": names(sorted(offload, key=lambda m: _order(gm)[m])),
        # The plan's own view: ONNX values resident at backward-begin, by the fx node carrying
        # them (values of no fx node, e.g. MaxPool indices, are not in this figure).
        "expected_saved_bytes_plan": _stored_bytes(info, {value_to_fx[v] for v in _resident(states, onnx)
                                                          if v in value_to_fx} - {n for n in info if n.op == "placeholder"}),
        "expected_saved_bytes_applied": _stored_bytes(info, {n for n in applied_kept if n.op != "placeholder"}),
    }
    # fx leaves coarser than the plan: a module (MultiheadAttention: dozens of ONNX nodes) whose
    # ONNX ops the plan recomputes in part while keeping its output stays outside the segments,
    # so PyTorch keeps everything it saves inside.
    # Either way the plan is not followed: kept whole (outside), PyTorch keeps what the module
    # saves inside; recomputed whole (in a segment), it recomputes what the plan keeps inside.
    def partly(m):
        ops = [o for o in m["onnx"] if o not in weight_ops and (o in states.forward_ops or o in states.recomputed_ops)]
        return len({o in states.recomputed_ops for o in ops}) > 1
    rep["groups_partly_recomputed"] = names(sorted(
        (n for n, m in mapping.items() if len(m["onnx"]) > 1 and partly(m)), key=lambda m: _order(gm)[m]))
    # The exact differences that change what is kept, by the report's key naming them (the
    # expected bytes are a static estimate from one probed run, shown beside each other, not part
    # of this verdict). "Not faithful" always comes with at least one of them.
    rep["not_faithful_because"] = [k for k in FAITHFULNESS_KEYS if rep[k]]
    rep["faithful"] = not rep["not_faithful_because"]
    return rep


# The report's lists of differences from the plan; any non-empty one makes it "not faithful".
FAITHFULNESS_KEYS = ("plan_ops_without_fx_node", "kept_by_plan_but_recomputed", "recomputed_by_plan_but_kept",
                     "kept_by_application_only", "merged_cycles", "groups_partly_recomputed")


def not_faithful_reason(report):
    """Why an application is not faithful, in one line naming each difference and its first
    values (the module-wrapping fallback: its reason); "" when it is faithful."""
    if report.get("faithful"):
        return ""
    if report.get("method") != "fx-segments":
        return report.get("reason") or "not applied with torch.fx segments"
    keys = report.get("not_faithful_because") or [k for k in FAITHFULNESS_KEYS if report.get(k)]
    parts = []
    for k in keys:
        v = report[k]
        if isinstance(v, list):
            more = f" (+{len(v) - 2} more)" if len(v) > 2 else ""
            parts.append(f"{k}: {', '.join(str(x) for x in v[:2])}{more}")
        else:
            parts.append(f"{k}: {v}")
    return "; ".join(parts) or "unknown (a report without its differences)"


# ---------------------------------------------------------------------------------------------
# Public entry points

def _example_inputs(onnx, batch=None):
    out = []
    for name in onnx.data_inputs():
        shape = onnx.shape(name)
        if shape and batch:
            shape = (batch,) + tuple(shape[1:])
        if shape is None or any(d is None for d in shape):
            raise ValueError(f"{onnx.path}: input {name!r} has no static shape; pass inputs=")
        out.append(torch.randn(*shape))
    return out


def _fill_shapes(graph, model, inputs):
    """Intermediate value shapes, for verifying the mapping: the file's value_info (the corpus
    files have it), else an in-memory re-export of the model."""
    values = [o for nd in graph.nodes for o in nd["outputs"]]
    if sum(1 for v in values if graph.shape(v) is not None) >= 0.9 * len(values):
        return
    try:
        for k, v in shapes_from_export(model, list(inputs)).items():
            graph.shapes.setdefault(k, v)
    except Exception as e:  # noqa: BLE001  -- mapping then goes unverified, and the report says so
        graph.export_error = f"{type(e).__name__}: {e}"


def _find_onnx(plan, plan_path):
    p = (plan.get("model") or {}).get("path")
    if not p:
        return None
    for cand in (p, os.path.join(os.path.dirname(os.path.abspath(plan_path or ".")), p)):
        if os.path.isfile(cand):
            return cand
    return None


def apply_plan(model, plan, onnx=None, inputs=None, quiet=False):
    """Applies a plan (path or dict) to `model`; returns the model to train (a PlannedModule with
    `remat_report`, or the model itself with wrapped modules where tracing fails).

    onnx: the ONNX file the plan was made for (default: the plan's model.path).
    inputs: example inputs (default: random ones shaped as the ONNX file's inputs)."""
    global last_wrapped_count
    plan_path = plan if isinstance(plan, str) else None
    plan = load_plan(plan)
    onnx_path = onnx or _find_onnx(plan, plan_path)
    if onnx_path is None or not HAS_FX:
        why = "no ONNX file for the plan (pass onnx=)" if HAS_FX else f"torch {torch.__version__} has no torch.fx"
        return _fallback(model, plan, why, quiet)
    graph = OnnxGraph(onnx_path)
    graph.model_names = frozenset(model.state_dict())
    if inputs is None:
        inputs = _example_inputs(graph, (plan.get("model") or {}).get("batch"))
    _fill_shapes(graph, model, inputs)
    try:
        gm = trace(model, list(inputs))
    except Exception as e:  # noqa: BLE001  -- fx cannot trace it (TraceError): say so, then wrap modules
        return _fallback(model, plan, f"torch.fx cannot trace the model ({type(e).__name__}: {e})", quiet)
    pm = build(model, plan, graph, list(inputs), gm)  # ValueError: a plan for another model
    pm.onnx_graph = graph
    last_wrapped_count = 0
    if not pm.remat_report["faithful"] and not quiet:
        warnings.warn("remat_apply: the applied plan differs from the plan: " + summary(pm.remat_report))
    return pm


def summary(report):
    r = report
    if r["method"] != "fx-segments":
        return (f"{r['method']}: {r['reason']}; plan checkpoints {len(r['plan_checkpoints'])}, "
                f"wrapped modules {r['wrapped_modules']}")
    parts = [f"{r['segments']} segments ({r['segment_nodes']} fx nodes recomputed, plan: {r['recomputed_nodes_planned']})",
             f"expected saved bytes {r['expected_saved_bytes_applied']:,} (plan {r['expected_saved_bytes_plan']:,})"]
    if r["kept_by_plan_but_recomputed"]:
        parts.append(f"kept by the plan, recomputed here: {r['kept_by_plan_but_recomputed'][:5]}")
    if r["recomputed_by_plan_but_kept"]:
        parts.append(f"recomputed by the plan, kept here: {r['recomputed_by_plan_but_kept'][:5]}")
    if r["plan_ops_without_fx_node"]:
        parts.append(f"plan ops with no fx node: {r['plan_ops_without_fx_node'][:5]}")
    if r["merged_cycles"]:
        parts.append(f"{r['merged_cycles']} cycles between segments merged")
    if r.get("groups_partly_recomputed"):
        parts.append(f"modules the plan recomputes only in part, kept whole: {r['groups_partly_recomputed'][:3]}")
    if r.get("kept_by_application_only"):
        parts.append(f"kept here, neither saved by the plain run nor held by the plan: {r['kept_by_application_only'][:5]}")
    return "; ".join(parts)


# Fallback: wrap modules (when torch.fx cannot trace the model) ---------------------------------

def _recomputed_nodes(plan):
    return sorted(PlanStates(plan).recomputed_ops)


def _module_path(node_name, modules):
    """Dotted module names along a node's path, outermost first, or (missing part, None)."""
    parts = [p for p in node_name.split("/") if p][:-1]
    names, prefix = [], ""
    for part in parts:
        full = None
        for c in (part, _CALL_SUFFIX.sub("", part)):
            # A part is the attribute name, or a numeric child joined to its parent's part
            # ("conv.0.0" inside "features.1.conv.0"): try the suffixes of every extension.
            for guess in ([prefix + "." + c] if prefix else []) + [c] + \
                    ([prefix + "." + c.split(".")[-1]] if prefix and "." in c else []):
                if guess in modules:
                    full = guess
                    break
            if full is None and prefix:
                pre = prefix.split(".")
                for k in range(len(pre), -1, -1):
                    guess = ".".join(pre[:k] + [c]) if k else c
                    if guess in modules and guess.startswith(prefix):
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
    modules = dict(model.named_modules())
    chosen = []
    for node in _recomputed_nodes(load_plan(plan)):
        missing, path = _module_path(node, modules)
        if path is None:
            raise ValueError(f"plan node {node!r} names module {missing!r}, which the model does not have")
        blocks = [name for name in path if any(True for _ in modules[name].children())]
        if blocks:
            chosen.append(blocks[-1])
    result = []
    for name in sorted(set(chosen), key=lambda n: (n.count("."), n)):
        if not any(name.startswith(outer + ".") for outer in result):
            result.append(name)
    return result


def _checkpointed(forward):
    def run(*args, **kwargs):
        return torch.utils.checkpoint.checkpoint(forward, *args, use_reentrant=False, **kwargs)
    return run


def _fallback(model, plan, reason, quiet):
    global last_wrapped_count
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
    model.remat_report = {
        "method": "module-wrapping", "reason": reason, "faithful": False,
        "plan_checkpoints": PlanStates(plan).checkpoints,
        "recomputed_ops_planned": len(_recomputed_nodes(plan)),
        "wrapped_modules": names,
        "note": "every op inside a wrapped module is recomputed and only the module's inputs are kept; "
                "ops the plan recomputes outside these modules are kept",
    }
    if not quiet:
        warnings.warn("remat_apply: plan applied by module wrapping, not faithfully: " + summary(model.remat_report))
    return model


# ---------------------------------------------------------------------------------------------
# Measuring: saved-tensor bytes at the end of forward and their peak through backward

class Tracker:
    """Live bytes of saved tensors, de-duplicated by storage, with release when autograd drops
    them (weakref finalizers on the packed objects). Parameters and buffers are not counted."""

    def __init__(self, exclude):
        self.exclude = exclude
        self.refs = {}      # storage key -> [count, bytes, host]
        self.live = 0
        self.host_live = 0
        self.peak = 0
        self.host_peak = 0

    def acquire(self, obj, key, nbytes, host=False):
        if key in self.exclude:
            return
        r = self.refs.get(key)
        if r is None:
            self.refs[key] = [1, nbytes, host]
            if host:
                self.host_live += nbytes
                self.host_peak = max(self.host_peak, self.host_live)
            else:
                self.live += nbytes
                self.peak = max(self.peak, self.live)
        else:
            r[0] += 1
        weakref.finalize(obj, self._release, key)

    def acquire_tensor(self, obj, t):
        key, nbytes = _storage(t)
        self.acquire(obj, key, nbytes)

    def _release(self, key):
        r = self.refs.get(key)
        if r is None:
            return
        r[0] -= 1
        if r[0] == 0:
            del self.refs[key]
            if r[2]:
                self.host_live -= r[1]
            else:
                self.live -= r[1]


class _CheckpointContext:
    """One torch.utils.checkpoint call: its holders, inputs and recomputed tensors."""

    def __init__(self, inputs):
        self.inputs = inputs
        self.holders = []
        self.alive = 0
        self.token = None


def _patched_saved_tensors_hooks(tracker, original):
    """Wraps torch.autograd.graph.saved_tensors_hooks while measure() runs, so the holders of a
    non-reentrant checkpoint (torch 1.13's algorithm: one Holder per saved tensor, filled in
    order when backward recomputes) are counted: the checkpoint's inputs while any holder lives,
    each recomputed tensor from its recomputation until its holder is dropped."""
    recomputing = []

    class Hooks(original):
        def __init__(self, pack, unpack):
            pending = _Recorder.pending_inputs
            if pending is not None and not recomputing:
                ctx = _CheckpointContext(pending)
                _Recorder.pending_inputs = None

                class _Token:
                    pass
                ctx.token = _Token()
                for t in _tensors(pending):
                    tracker.acquire_tensor(ctx.token, t)

                def p(x, _ctx=ctx):
                    h = pack(x)
                    _ctx.holders.append(weakref.ref(h))
                    _ctx.alive += 1
                    weakref.finalize(h, _ctx_holder_dead, _ctx)
                    return h

                def u(h, _ctx=ctx):
                    recomputing.append([_ctx, 0])
                    try:
                        return unpack(h)
                    finally:
                        recomputing.pop()
                super().__init__(p, u)
                return
            if recomputing:
                frame = recomputing[-1]

                def p(x, _frame=frame):
                    idx = _frame[1]
                    _frame[1] += 1
                    ctx = _frame[0]
                    h = ctx.holders[idx]() if idx < len(ctx.holders) else None
                    if h is not None:
                        tracker.acquire_tensor(h, x)
                    return pack(x)
                super().__init__(p, unpack)
                return
            super().__init__(pack, unpack)

    def _ctx_holder_dead(ctx):
        ctx.alive -= 1
        if ctx.alive == 0:
            ctx.token = None  # releases the checkpoint's inputs

    return Hooks


def _param_keys(model):
    keys = set()
    for t in list(model.parameters()) + list(model.buffers()):
        keys.add(_storage(t)[0])
    return keys


def measure(model, inputs, grad_output=None, seed=1):
    """Runs forward and backward once and returns
    {"saved_end_of_forward": bytes, "saved_peak_backward": bytes, "host_end_of_forward": ...,
     "host_peak": ..., "gradients": {name: tensor}, "output": tensor}.
    Saved tensors are what autograd keeps for backward (saved_tensors_hooks), de-duplicated by
    storage at full storage size; parameters, buffers and the network inputs are not counted (the
    simulator's stored activations do not count them either); for a PlannedModule the checkpoint
    calls' inputs and recomputed tensors are counted too."""
    global _TRACKER
    if not isinstance(inputs, (list, tuple)):
        inputs = [inputs]
    tracker = Tracker(_param_keys(model) | {_storage(t)[0] for t in _tensors(list(inputs))})
    original = torch.autograd.graph.saved_tensors_hooks
    model.zero_grad(set_to_none=True)
    if seed is not None:
        torch.manual_seed(seed)  # the same dropout masks in every measured run
    _TRACKER = tracker
    torch.autograd.graph.saved_tensors_hooks = _patched_saved_tensors_hooks(tracker, original)
    try:
        with (_saved_hooks() if not isinstance(model, PlannedModule) else contextlib.nullcontext()):
            out = model(*inputs)
        end_fwd, host_end = tracker.live, tracker.host_live
        tracker.peak, tracker.host_peak = tracker.live, tracker.host_live
        if grad_output is None:
            g = torch.Generator(device="cpu").manual_seed(seed if seed is not None else 1)
            grad_output = torch.randn(out.shape, generator=g, dtype=out.dtype).to(out.device)
        out.backward(grad_output)
        peak, host_peak = tracker.peak, tracker.host_peak
    finally:
        torch.autograd.graph.saved_tensors_hooks = original
        _TRACKER = None
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    return {"saved_end_of_forward": end_fwd, "saved_peak_backward": peak,
            "host_end_of_forward": host_end, "host_peak": host_peak,
            "gradients": grads, "output": out.detach()}


def max_relative_error(g0, g1):
    worst, name = 0.0, ""
    for k, a in g0.items():
        b = g1.get(k)
        if b is None:
            return float("inf"), k
        err = ((a - b).abs().max() / a.abs().max().clamp_min(1e-12)).item()
        if err > worst:
            worst, name = err, k
    return worst, name


# ---------------------------------------------------------------------------------------------
# Predicted figures: the simulator's, from `remat simulate MODEL --plan plan.json`

def _remat_binary():
    for cand in (os.environ.get("REMAT_CLI"), os.path.join(os.path.dirname(__file__), "..", "..", "build", "app", "remat"),
                 "/work/main/build/app/remat", "remat"):
        if cand and (os.path.isfile(cand) or cand == "remat"):
            return cand
    return "remat"


def _value_bytes(graph, v):
    sh = graph.shape(v)
    if sh is None or any(d is None for d in sh):
        return 0
    n = 1
    for d in sh:
        n *= d
    return n * {1: 4, 2: 1, 3: 1, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 16: 2}.get(graph.shapes[v][0], 4)


def _training_graph(remat, onnx_path):
    """`remat train-graph --json`: the training graph's ops in order (name, phase, inputs,
    outputs: tensor names) and each tensor's bytes."""
    cmd = [remat, "train-graph", onnx_path, "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip() or r.stdout.strip()}")
    j = json.loads(r.stdout)
    if "ops" not in j:
        raise RuntimeError(f"{remat}: `train-graph --json` lists no ops (a remat older than this helper)")
    return j


def _checkpoint_holding(rows, begin, plan, tg, skip=frozenset()):
    """The plan's recomputed values held as torch.utils.checkpoint (non-reentrant) and the
    helper's recompute tokens hold them: {value: [(first row, end row), ...]}, the bytes per CSV
    row and each value's bytes. `tg`: the training graph (_training_graph); `skip`: values with
    rules of their own (weight copies, CPU dropout masks).

    The simulator (the lowering: core/solvers/lowering.h) recomputes a segment once, at the first
    backward op that reads any of its values, and holds each until its last backward read. PyTorch
    holds two groups per segment apart: the values the backward of ops inside the segment reads
    (checkpoint holders: all recomputed when the first of the segment's backward nodes unpacks
    one) and the segment's outputs that the backward of ops outside it reads (recompute tokens:
    a separate no-grad run of the segment when the first such op's backward unpacks one). Each
    group appears at its own first unpack and each value goes at the last backward read within
    its group, so a segment's output read by the next op's backward is not held beside the
    segment's inside (vgg16's first MaxPool output beside the two 224x224 ReLU outputs of its
    block), and a value both groups read is held twice. A segment's inputs (values the plan
    keeps) stay while any of its holders or tokens lives (torch.utils.checkpoint's recomputation
    closure and the token's call hold them), where the simulator frees them once the segment is
    recomputed. Segments: the plan's recomputed forward ops joined through the values it does not
    hold at backward-begin. A backward op "<op>/grad" is <op>'s autograd node."""
    ops = tg["ops"]
    nbytes = tg["tensor_bytes"]
    forward = [o for o in ops if o["phase"] == "forward"]
    producer = {t: o["name"] for o in forward for t in o["outputs"]}
    by_name = {o["name"]: o for o in forward}
    # The plan's forward and recomputed ops, and what it holds at backward-begin.
    recomputed, resident, phase = set(), set(), "forward"
    for step in plan.get("schedule", []):
        if not step or step[0] == "phase":
            phase = "backward" if step and step[1] == "backward-begin" else phase
            continue
        name = step[1] if len(step) > 1 else ""
        if step[0] == "compute" and name in by_name:
            if phase == "forward":
                resident.update(by_name[name]["outputs"])
            else:
                recomputed.add(name)
        elif step[0] == "free" and phase == "forward":
            resident.discard(name)
    parent = {o: o for o in recomputed}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    for name in recomputed:
        for x in by_name[name]["inputs"]:
            p = producer.get(x)
            if p in recomputed and x not in resident:
                parent[find(p)] = find(name)
    rows_of = {}
    free_rows = {}
    for i, r in enumerate(rows):
        if i > begin and r["kind"] == "compute":
            rows_of.setdefault(r["name"], []).append(i)
        elif i > begin and r["kind"] == "free":
            free_rows.setdefault(r["name"], []).append(i)
    # Per (segment, inside?) the first and last backward row of its nodes and, per value, its
    # last read there.
    groups = {}
    for b in ops:
        if b["phase"] != "backward" or not b["name"].endswith("/grad") or b["name"] not in rows_of:
            continue
        node = b["name"][:-len("/grad")]
        first, last = rows_of[b["name"]][0], rows_of[b["name"]][-1]
        reads = [v for v in b["inputs"] if v in producer]
        if node in recomputed and reads:  # every holder the node unpacks: the first recomputes
            g = groups.setdefault((find(node), True), {"first": first, "last": last, "values": {}})
            g["first"], g["last"] = min(g["first"], first), max(g["last"], last)
        for v in reads:
            p = producer[v]
            if p not in recomputed or v in resident or v in skip:
                continue
            g = groups.setdefault((find(p), node in recomputed), {"first": first, "last": last, "values": {}})
            g["first"], g["last"] = min(g["first"], first), max(g["last"], last)
            g["values"][v] = max(g["values"].get(v, -1), last)
    last_read = {}
    for g in groups.values():
        for v, last in g["values"].items():
            last_read[v] = max(last_read.get(v, -1), last)
    held = {}
    per_row = [0] * len(rows)
    for g in groups.values():
        for v, last in g["values"].items():
            end = last + 1
            if last == last_read[v]:  # the overall last read: held until the simulator frees it
                end = next((f for f in free_rows.get(v, ()) if f > last), end)
            held.setdefault(v, []).append((g["first"], end))
            for k in range(g["first"], end):
                per_row[k] += nbytes[v]
    # The segments' inputs: held until the last holder or token of the segment goes.
    until = {}
    for (root, _inside), g in groups.items():
        until[root] = max(until.get(root, -1), g["last"] + 1)
    inputs = {}
    for name in recomputed:
        if find(name) in until:
            for x in by_name[name]["inputs"]:
                if x in producer and x in resident and x not in skip:
                    inputs[x] = max(inputs.get(x, -1), until[find(name)])
    for x, end in inputs.items():
        freed = next(iter(free_rows.get(x, ())), None)
        if freed is None or freed >= end:
            continue
        for k in range(freed, end):
            per_row[k] += nbytes[x]
    return held, per_row, {v: nbytes[v] for v in held}


def _view_storage(rows, begin, tg, skip=frozenset()):
    """Per CSV row from backward-begin on, what PyTorch's storages add to the simulator's stored
    activations: a value PyTorch makes as a view (a chunk, a reshape: train-graph's storage_base)
    keeps its base's whole storage, once however many views of it are kept, and a view of a
    parameter or the input keeps nothing counted; the simulator (and its executors) hold each
    view materialised, at its own size. shufflenet_v2: each stride-1 block's branch saves a
    chunk of the channel-shuffled input, keeping both halves (+430,592 B under store-all at batch
    4, 64x64). Values computed again in backward are left as they are; `skip`: values with rules
    of their own (weight copies, CPU dropout masks)."""
    out = [0] * len(rows)
    base_of = tg.get("storage_base", {})
    if not base_of:
        return out
    nbytes = tg["tensor_bytes"]
    produced = {t for o in tg["ops"] if o["phase"] == "forward" for t in o["outputs"]}
    forward = {o["name"]: o["outputs"] for o in tg["ops"] if o["phase"] == "forward"}
    involved = (set(base_of) | set(base_of.values())) - set(skip)
    live = set()
    for i, r in enumerate(rows):
        if r["kind"] == "compute" and i < begin:
            live.update(t for t in forward.get(r["name"], ()) if t in involved)
        elif r["kind"] == "free":
            live.discard(r["name"])
        if i < begin or not live:
            continue
        groups = {}
        for v in live:
            groups.setdefault(base_of.get(v, v), []).append(v)
        for b, members in groups.items():
            if len(members) == 1 and members[0] == b:
                continue
            kept = nbytes[b] if b in produced and b not in skip else 0
            out[i] += kept - sum(nbytes[v] for v in members)
    return out


def simulated(onnx_path, plan_path=None, remat=None, graph=None, cpu_dropout=False):
    """The simulator's saved figures: stored activations at backward-begin and the peak of
    stored + recomputed activations through backward (from the per-step CSV), plus --json.
    With the plan and its ONNX graph also that peak without the recomputation's transients
    ("saved_peak_backward_no_transients"): values recomputed in backward that only forward ops
    read (a BatchNormalization output on its way into an in-place ReLU or an Add), which the
    simulator counts among its recomputed activations and PyTorch never saves; and both figures
    as PyTorch counts them ("saved_*_as_pytorch"): without the copies of weights (values computed
    from parameters alone: views in PyTorch), each recomputed value held as torch.utils.checkpoint
    and the helper's recompute tokens hold it (_checkpoint_holding: a segment's inside and its
    outputs that outside ops save are recomputed apart, each when first unpacked), and with
    cpu_dropout, where PyTorch on the CPU saves Dropout's mask as float32 noise (CUDA's fused
    dropout, which the simulator models, a bool mask), each mask at 4 bytes an element."""
    import csv
    import tempfile
    remat = remat or _remat_binary()
    with tempfile.TemporaryDirectory() as d:
        csv_path = os.path.join(d, "t.csv")
        cmd = [remat, "simulate", onnx_path, "--json", "--csv", csv_path]
        if plan_path:
            cmd += ["--plan", plan_path]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip() or r.stdout.strip()}")
        figures = json.loads(r.stdout)
        with open(csv_path, newline="") as f:
            rows = list(csv.DictReader(f))
    # Per step, from the CSV's own step names (compute: the op; free: the value):
    # - transient: values computed in backward whose last reader (the compute just before their
    #   free: the simulator frees at last use) is a forward op. PyTorch's saved tensors never
    #   include such a value; the simulator's recomputed activations do.
    # - weight copies: values computed from parameters alone (a Linear weight's Transpose), views
    #   in PyTorch; the simulator counts them among stored (or recomputed) activations.
    # - recomputed values held otherwise by PyTorch's checkpoint (_checkpoint_holding): the
    #   simulator's backward instances of those values give way to PyTorch's.
    # - views (_view_storage): stored values PyTorch makes as views count as their base's storage.
    n = len(rows)
    transient, weights, sim_held, torch_held, views = [0] * n, [0] * n, [0] * n, [0] * n, [0] * n
    begin = next((i for i, r in enumerate(rows) if r["kind"] == "phase" and r["name"] == "backward-begin"), n)
    if graph is not None:
        outputs = {nd["name"]: nd["outputs"] for nd in graph.nodes}
        derived = graph.weight_derived()
        # Dropout masks (bool): 3 more bytes an element where PyTorch saves float32 noise.
        masks = {nd["outputs"][1] for nd in graph.nodes if cpu_dropout and nd["op"] == "Dropout" and len(nd["outputs"]) > 1}
        held, held_bytes = {}, {}
        tg = _training_graph(remat, onnx_path)
        views = _view_storage(rows, begin, tg, derived | masks)
        if plan_path:  # (weight copies and masks: their own rules above)
            held, torch_held, held_bytes = _checkpoint_holding(rows, begin, load_plan(plan_path), tg, derived | masks)
        # The training graph's ops: also the outputs ONNX does not name (MaxPool's indices).
        outputs.update((o["name"], o["outputs"]) for o in tg["ops"])
        born, weight_born, last_compute = {}, {}, ""
        for i, r in enumerate(rows):
            kind, name = r["kind"], r["name"]
            if kind == "compute":
                for o in outputs.get(name, ()):
                    if o in derived or o in masks:
                        weight_born[o] = i
                    elif i > begin:
                        born[o] = i
                last_compute = name
            elif kind == "free":
                if name in weight_born:
                    nb = _value_bytes(graph, name) * (-3 if name in masks else 1)
                    for k in range(weight_born.pop(name), i):
                        weights[k] += nb
                elif name in born:
                    start = born.pop(name)
                    nb = held_bytes.get(name) or _value_bytes(graph, name)
                    if name in held:  # PyTorch holds it as _checkpoint_holding says
                        for k in range(start, i):
                            sim_held[k] += nb
                    elif not (last_compute.endswith("/grad") or last_compute.startswith("grad:") or last_compute == "loss"):
                        for k in range(start, i):
                            transient[k] += nb
        for name, i0 in weight_born.items():  # never freed: held to the end
            nb = _value_bytes(graph, name) * (-3 if name in masks else 1)
            for k in range(i0, n):
                weights[k] += nb
    end_fwd, end_fwd_pt, peak, peak_saved, peak_pt, phase = None, None, 0, 0, 0, "forward"
    for i, row in enumerate(rows):
        if row["kind"] == "phase" and row["name"] == "backward-begin":
            phase = "backward"
            end_fwd = int(row["stored_activations"])
            end_fwd_pt = end_fwd - weights[i] + views[i]
        if phase == "backward":
            v = int(row["stored_activations"]) + int(row["recomputed_activations"])
            peak = max(peak, v)
            peak_saved = max(peak_saved, v - transient[i] - sim_held[i] + torch_held[i])
            peak_pt = max(peak_pt, v - transient[i] - weights[i] - sim_held[i] + torch_held[i] + views[i])
    return {"saved_end_of_forward": end_fwd, "saved_peak_backward": peak,
            "saved_peak_backward_no_transients": peak_saved,
            # As PyTorch counts: without the weight copies (and, through backward, the transients).
            "saved_end_of_forward_as_pytorch": end_fwd_pt, "saved_peak_backward_as_pytorch": peak_pt,
            "figures": figures}


# ---------------------------------------------------------------------------------------------
# Command line

def _load_model(spec):
    """torchvision:resnet18 (random init, seed 0), or path/to/file.py:factory."""
    torch.manual_seed(0)
    if spec.startswith("torchvision:") or ":" not in spec:
        import torchvision
        name = spec.split(":", 1)[-1]
        return getattr(torchvision.models, name)().train()
    path, fn = spec.rsplit(":", 1)
    import importlib.util
    s = importlib.util.spec_from_file_location("remat_user_model", path)
    mod = importlib.util.module_from_spec(s)
    s.loader.exec_module(mod)
    return getattr(mod, fn)().train()


def validate(model, onnx_path, plan_path, inputs=None, remat=None):
    """Predicted (simulator) beside measured (PyTorch) for store-all and the plan; gradients."""
    graph = OnnxGraph(onnx_path)
    graph.model_names = frozenset(model.state_dict())
    if inputs is None:
        torch.manual_seed(0)
        inputs = _example_inputs(graph)
    plain = copy.deepcopy(model)
    base = measure(plain, inputs)
    planned = apply_plan(copy.deepcopy(model), plan_path, onnx=onnx_path, inputs=inputs, quiet=True)
    got = measure(planned, inputs)
    err, worst = max_relative_error(base["gradients"], got["gradients"])
    shaped = getattr(planned, "onnx_graph", None)
    if shaped is None:
        _fill_shapes(graph, model, inputs)
        shaped = graph
    cpu = all(t.device.type == "cpu" for t in _tensors(list(inputs)))
    sim_all = simulated(onnx_path, None, remat, shaped, cpu_dropout=cpu)
    sim_plan = simulated(onnx_path, plan_path, remat, shaped, cpu_dropout=cpu)

    def dev(m, p):
        return (m - p) / p if p else 0.0

    def figures(m, sim):
        f = {"measured_end_of_forward": m["saved_end_of_forward"],
             "predicted_end_of_forward": sim["saved_end_of_forward"],
             "predicted_end_of_forward_as_pytorch": sim["saved_end_of_forward_as_pytorch"],
             "measured_peak_backward": m["saved_peak_backward"],
             "predicted_peak_backward": sim["saved_peak_backward"],
             "predicted_peak_backward_no_transients": sim["saved_peak_backward_no_transients"],
             "predicted_peak_backward_as_pytorch": sim["saved_peak_backward_as_pytorch"]}
        f["deviation_end_of_forward"] = dev(f["measured_end_of_forward"], f["predicted_end_of_forward"])
        f["deviation_peak_backward"] = dev(f["measured_peak_backward"], f["predicted_peak_backward"])
        f["deviation_peak_backward_no_transients"] = dev(f["measured_peak_backward"],
                                                         f["predicted_peak_backward_no_transients"])
        f["deviation_end_of_forward_as_pytorch"] = dev(f["measured_end_of_forward"],
                                                       f["predicted_end_of_forward_as_pytorch"])
        f["deviation_peak_backward_as_pytorch"] = dev(f["measured_peak_backward"],
                                                      f["predicted_peak_backward_as_pytorch"])
        return f

    applied = figures(got, sim_plan)
    applied["measured_host_peak"] = got["host_peak"]
    applied["predicted_host_peak"] = sim_plan["figures"].get("host_peak_bytes", 0)
    return {
        "onnx": onnx_path, "plan": plan_path,
        "store_all": figures(base, sim_all),
        "plan_applied": applied,
        "gradients_max_relative_error": err, "gradients_worst": worst,
        "report": getattr(planned, "remat_report", None),
        "summary": summary(planned.remat_report) if getattr(planned, "remat_report", None) else "",
    }


def within(r, tolerance=0.05):
    """The plan's measured saved bytes (end of forward, peak through backward) within
    `tolerance` of the simulator's as PyTorch counts them (without weight copies and
    recomputation transients), and the gradients equal to the plain run's (1e-6)."""
    p = r["plan_applied"]
    return (abs(p["deviation_end_of_forward_as_pytorch"]) <= tolerance
            and abs(p["deviation_peak_backward_as_pytorch"]) <= tolerance
            and r["gradients_max_relative_error"] <= 1e-6)


def _print_validation(r):
    def row(label, m, p):
        d = (m - p) / p * 100 if p else 0.0
        print(f"  {label:<44} {m:>14,} {p:>14,} {d:>+8.2f}%")
    print(f"{r['onnx']} with {r['plan']}")
    print(f"  {'saved tensors (bytes)':<44} {'PyTorch':>14} {'simulator':>14} {'diff':>9}")
    for label, f in (("store-all", r["store_all"]), ("plan", r["plan_applied"])):
        row(f"{label}: at the end of forward", f["measured_end_of_forward"], f["predicted_end_of_forward_as_pytorch"])
        row(f"{label}: peak through backward", f["measured_peak_backward"], f["predicted_peak_backward_as_pytorch"])
        if f["predicted_end_of_forward"] != f["predicted_end_of_forward_as_pytorch"] or \
                f["predicted_peak_backward"] != f["predicted_peak_backward_as_pytorch"]:
            row("  (simulator's own: end of forward)", f["measured_end_of_forward"], f["predicted_end_of_forward"])
            row("  (simulator's own: peak through backward)", f["measured_peak_backward"], f["predicted_peak_backward"])
    p = r["plan_applied"]
    if p["predicted_host_peak"] or p["measured_host_peak"]:
        row("plan: host (offloaded) peak", p["measured_host_peak"], p["predicted_host_peak"])
    print(f"  gradients: max relative error {r['gradients_max_relative_error']:.3g} ({r['gradients_worst']})")
    if r["report"]:
        print("  applied: " + summary(r["report"]) + ("" if r["report"]["faithful"] else
                                                      f"  [NOT FAITHFUL: {not_faithful_reason(r['report'])}]"))


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="remat_apply.py", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("validate", help="predicted (simulator) beside measured (PyTorch)")
    v.add_argument("model", help="torchvision:NAME or FILE.py:FACTORY")
    v.add_argument("onnx", help="the ONNX file the plan was made for")
    v.add_argument("plan")
    v.add_argument("--remat", help="remat CLI binary")
    v.add_argument("--json", action="store_true")
    v.add_argument("--tolerance", type=float, default=0.05)
    a = sub.add_parser("apply", help="apply a plan and print the report")
    a.add_argument("model")
    a.add_argument("onnx")
    a.add_argument("plan")
    args = ap.parse_args(argv[1:])
    try:
        model = _load_model(args.model)
        if args.cmd == "apply":
            pm = apply_plan(model, args.plan, onnx=args.onnx, quiet=True)
            print(json.dumps(pm.remat_report, indent=1))
            return 0 if pm.remat_report["faithful"] else 2
        r = validate(model, args.onnx, args.plan, remat=args.remat)
    except (ValueError, RuntimeError, OSError, AttributeError, ImportError) as e:
        # A plan for another model, a model spec that names nothing, `remat simulate` failing.
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(r))
    else:
        _print_validation(r)
    # Compared with the simulator's figures as PyTorch counts them; validate() returns both.
    return 0 if within(r, args.tolerance) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
