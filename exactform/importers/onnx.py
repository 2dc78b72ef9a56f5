"""ONNX networks → exact ``MaxoutNet``, and onnxruntime as the reference for the self-check.

Model-local functions are inlined first. The graph is walked in its (topological) node order;
``onnx_ops.OPERATORS`` converts each node exactly (see ``graph`` for the lowering). Initializers
that are also listed as graph inputs (older exporters) are constants. The one remaining input is the network input; a symbolic first
dimension is the batch, taken as 1. Input and output tensors are flattened row-major, the order of
``tensor.flatten()``. An unsupported operator is an ``InputError`` naming the node, the operator
and the supported set. Every float becomes its exact rational; NaN or infinity is refused.
"""
from __future__ import annotations

from dataclasses import replace
from math import prod

from ..formats import InputError
from ..models import Box, MaxoutNet
from .graph import MAX_CONSTANT, Lowering, NodeError, Tensor, check_entries
from .onnx_ops import OPERATORS, exact_array


MAX_BYTES = 256 * 2**20
"""Largest ONNX file read, external data included: ``compile`` accepts at most
``layout.MAX_NONZEROS`` (10⁷) non-zero Transformer parameters, two per non-zero weight, so the
weights of a net it accepts take at most 20 MB as float32 (40 MB as float64)."""


def read_model(path: str):
    """The model, its size and its external data checked before they are read: external data
    must lie inside the model's folder (a tensor's ``location`` is relative to it)."""
    import os

    import onnx
    from onnx.external_data_helper import ExternalDataInfo, load_external_data_for_model, uses_external_data
    size = os.path.getsize(path)
    if size > MAX_BYTES:
        raise InputError(path, "", f"{size:,} bytes; the documented limit for an ONNX file is {MAX_BYTES:,}")
    try:
        model = onnx.load(path, load_external_data=False)
    except Exception as e:  # protobuf raises several unrelated types on malformed files
        raise InputError(path, "", f"not a readable ONNX model ({type(e).__name__})") from None
    external = [t for t in _tensors(model) if uses_external_data(t)]
    if external:
        folder = os.path.realpath(os.path.dirname(os.path.abspath(path)))
        total = size
        for t in external:
            info = ExternalDataInfo(t)
            where = f"initializer {t.name!r}: external data {info.location!r}"
            target = os.path.realpath(os.path.join(folder, info.location))
            if os.path.isabs(info.location) or os.path.commonpath([folder, target]) != folder:
                raise InputError(path, where, "lies outside the model's folder; only files inside it are read")
            if not os.path.isfile(target):
                raise InputError(path, where, "no such file in the model's folder")
            length = info.length if info.length else os.path.getsize(target) - (info.offset or 0)
            total += max(0, length)
            if total > MAX_BYTES:
                raise InputError(path, where, f"the model and its external data exceed {MAX_BYTES:,} bytes, "
                                 "the documented limit")
        try:
            load_external_data_for_model(model, folder)
        except Exception as e:
            raise InputError(path, "", f"cannot read the external data ({type(e).__name__}: "
                             f"{str(e).strip()[:120]})") from None
    return model


def _tensors(model):
    """The initializers and the tensors of ``Constant`` nodes (where external data may be used)."""
    yield from model.graph.initializer
    for node in model.graph.node:
        for a in node.attribute:
            if a.HasField("t"):
                yield a.t


def input_shape(model, path: str) -> tuple[str, tuple[int, ...]]:
    """Name and static shape of the one non-constant graph input (a symbolic batch dimension is 1)."""
    constants = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in constants]
    if len(inputs) != 1:
        raise InputError(path, "graph.input", f"expected one non-constant input, got {len(inputs)}")
    dims = inputs[0].type.tensor_type.shape.dim
    shape = []
    for k, d in enumerate(dims):
        if d.HasField("dim_value") and d.dim_value > 0:
            shape.append(d.dim_value)
        elif k == 0 and len(dims) > 1:
            shape.append(1)
        else:
            raise InputError(path, f"input {inputs[0].name!r}", f"dimension {k} has no static size")
    if not shape or prod(shape) < 1:
        raise InputError(path, f"input {inputs[0].name!r}", "cannot read a static input shape")
    return inputs[0].name, tuple(shape)


def element_types(model) -> dict[str, int]:
    """ONNX element types of the graph's named values: declared, or inferred by ONNX's shape
    inference where it succeeds (it is only consulted for ``CastLike``, and only run for it)."""
    import onnx
    if any(node.op_type == "CastLike" for node in model.graph.node):
        try:
            model = onnx.shape_inference.infer_shapes(model)
        except Exception:  # inference is an aid: a model it cannot type is still lowered
            pass
    graph = model.graph
    types = {v.name: v.type.tensor_type.elem_type for v in (*graph.input, *graph.value_info, *graph.output)
             if v.type.HasField("tensor_type") and v.type.tensor_type.elem_type}
    types.update((i.name, i.data_type) for i in graph.initializer)
    return types


SOFTMAX = ("Softmax", "LogSoftmax")
"""Final operators ``strip_softmax`` drops: strictly increasing along their axis, so the argmax
(every comparison of two outputs along that axis) is that of their input."""


def load_onnx(path: str, domain, notes: list[str] | None = None, model=None, strip_softmax: bool = False,
              source: str | None = None) -> MaxoutNet:
    """``domain(input_dim) -> Box`` builds the user's box once the input width is known;
    ``notes`` collects what was rounded (BatchNormalization square roots), if anything;
    ``strip_softmax`` drops a final ``Softmax``/``LogSoftmax`` (recorded in the net's provenance).
    Initializers become exact only when a node reads them, after their size is checked."""
    model = read_model(path) if model is None else model
    if model.functions:                      # model-local functions (modules exported as functions)
        from onnx import inliner
        try:
            model = inliner.inline_local_functions(model)
        except Exception as e:  # the inliner's C++ errors surface as several types
            raise InputError(path, "functions", f"cannot inline the model-local functions ({type(e).__name__}: "
                             f"{str(e).strip()[:120]})") from None
    graph = model.graph
    if not graph.node:
        raise InputError(path, "graph", "the graph has no nodes")
    if len(graph.output) != 1:
        raise InputError(path, "graph.output", f"expected one output, got {len(graph.output)}")
    output = graph.output[0].name
    nodes = list(graph.node)
    final = nodes[-1] if nodes[-1].output and nodes[-1].output[0] == output else None
    provenance = []
    if final is not None and final.op_type in SOFTMAX and final.domain in ("", "ai.onnx"):
        if strip_softmax:
            nodes.pop()
            output = final.input[0]
            provenance.append(f"--strip-softmax: the final {final.op_type} of {source or path} was dropped; the net "
                              f"outputs its input (logits), which has the same argmax along its axis, not the "
                              f"same values")
    name, shape = input_shape(model, path)
    last_use = {n: k for k, node in enumerate(nodes) for n in node.input}
    last_use[output] = len(nodes)
    try:
        low = Lowering(shape, last_use)
    except NodeError as e:
        raise InputError(path, f"input {name!r}", str(e)) from None
    low.types = element_types(model)
    low.input_type = low.types.get(name, 1)
    pending = {init.name: init for init in graph.initializer}
    low.values[name] = low.input
    box: Box = domain(prod(shape))
    for index, node in enumerate(nodes):
        where = f"node {index} {node.name!r}" if node.name else f"node {index}"
        low.step = index
        convert = OPERATORS.get(node.op_type) if node.domain in ("", "ai.onnx") else None
        if convert is None:
            hint = (" (a final one is dropped by --strip-softmax, in Python strip_softmax=True: the argmax is "
                    "unchanged)") if node is final and node.op_type in SOFTMAX else ""
            raise InputError(path, where, f"unsupported operator {node.op_type!r}{hint}; supported: "
                             f"{', '.join(sorted(OPERATORS))}")
        args = []
        for n in node.input:
            if n in pending:
                low.values[n] = _initializer(low, pending.pop(n), path)
            if n and n not in low.values:
                raise InputError(path, where, f"input {n!r} is not produced before use")
            args.append(low.values[n] if n else None)
        try:
            result = convert(low, node, args)
        except NodeError as e:
            raise InputError(path, where, f"{node.op_type}: {e}") from None
        except (AttributeError, IndexError, KeyError, TypeError, ValueError) as e:   # a malformed node
            raise InputError(path, where, f"{node.op_type}: cannot lower this node "
                             f"({type(e).__name__}: {str(e)[:120]})") from None
        low.values[node.output[0]] = result
        for n in node.input:
            if n and low.last_use.get(n, -1) <= index and n != output:
                low.values.pop(n, None)
    out = low.values.get(output)
    if not isinstance(out, Tensor):
        raise InputError(path, "graph.output", "the output does not depend on the input")
    if notes is not None:
        notes.extend(low.notes)
    net = low.tracer.network(out.affine, box, path)
    return replace(net, provenance=tuple(provenance)) if provenance else net


def _initializer(low: Lowering, init, path: str):
    """An initializer as an exact constant, its size checked from its dimensions first."""
    from onnx import numpy_helper
    try:
        check_entries(init.dims, "it", MAX_CONSTANT)
        low.charge(prod(init.dims), f"initializer {init.name!r}")
        return exact_array(numpy_helper.to_array(init), "a value")
    except NodeError as e:
        raise InputError(path, f"initializer {init.name!r}", str(e)) from None
    except Exception as e:  # inconsistent raw data and the like
        raise InputError(path, f"initializer {init.name!r}", f"unreadable ({type(e).__name__})") from None


def onnxruntime_reference(path: str, strip_softmax: bool = False):
    """``f(points) -> outputs`` on the original file, in its own float type: by onnxruntime, or by
    ONNX's reference evaluator where onnxruntime has no kernel for the type (float64 ``Conv``);
    ``f.source`` names the evaluator; ``strip_softmax``: on the file without its final softmax."""
    import numpy as np
    import onnxruntime as ort

    model = read_model(path)
    name, shape = input_shape(model, path)
    elem = model.graph.input[[i.name for i in model.graph.input].index(name)].type.tensor_type.elem_type
    dtype = np.float64 if elem == 11 else np.float32
    options = ort.SessionOptions()
    options.log_severity_level = 3
    final = model.graph.node[-1] if model.graph.node else None
    strip_softmax = strip_softmax and final is not None and final.op_type in SOFTMAX and \
        final.output[0] == model.graph.output[0].name
    if strip_softmax:
        from onnx import ValueInfoProto
        model.graph.node.pop()
        model.graph.output.pop()
        model.graph.output.append(ValueInfoProto(name=final.input[0]))
    try:
        session = model.SerializeToString() if strip_softmax else path
        evaluate = ort.InferenceSession(session, options, providers=["CPUExecutionProvider"]).run
        source = "onnxruntime"
    except Exception as e:  # onnxruntime raises its own exception types for files it cannot run
        if "NOT_IMPLEMENTED" not in str(e):
            raise _unrunnable(path, e) from None
        from onnx.reference import ReferenceEvaluator
        evaluate, source = ReferenceEvaluator(model).run, "the ONNX reference evaluator"

    def run(points):
        try:
            return [evaluate(None, {name: np.array([float(v) for v in p], dtype=dtype).reshape(shape)})[0]
                    .astype(np.float64).ravel().tolist() for p in points]
        except Exception as e:
            raise _unrunnable(path, e) from None
    run.dtype, run.source = dtype, f"{source} ({np.dtype(dtype).name})"
    run.tolerance = 1e-9 if dtype == np.float64 else 1e-3
    return run


def _unrunnable(path: str, error: Exception) -> InputError:
    first = (str(error).strip().splitlines() or [""])[0][:160]
    return InputError(path, "", f"cannot run this file for the self-check ({type(error).__name__}: "
                      f"{first}); --no-verify imports it without the self-check")
