"""ONNX networks → exact ``MaxoutNet``, and onnxruntime as the reference for the self-check.

Model-local functions are inlined first. The graph is walked in its (topological) node order;
``onnx_ops.OPERATORS`` converts each node exactly (see ``graph`` for the lowering). Initializers
that are also listed as graph inputs (older exporters) are constants. The one remaining input is the network input; a symbolic first
dimension is the batch, taken as 1. Input and output tensors are flattened row-major, the order of
``tensor.flatten()``. An unsupported operator is an ``InputError`` naming the node, the operator
and the supported set. Every float becomes its exact rational; NaN or infinity is refused.
"""
from __future__ import annotations

from math import prod

from ..formats import InputError
from ..models import Box, MaxoutNet
from .graph import Lowering, NodeError, Tensor
from .onnx_ops import OPERATORS, exact_array


def read_model(path: str):
    import onnx
    try:
        return onnx.load(path)
    except Exception as e:  # protobuf raises several unrelated types on malformed files
        raise InputError(path, "", f"not a readable ONNX model ({type(e).__name__})") from None


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
    inference where it succeeds (it is only consulted for ``CastLike``)."""
    import onnx
    try:
        model = onnx.shape_inference.infer_shapes(model)
    except Exception:  # inference is an aid: a model it cannot type is still lowered
        pass
    graph = model.graph
    types = {v.name: v.type.tensor_type.elem_type for v in (*graph.input, *graph.value_info, *graph.output)
             if v.type.HasField("tensor_type") and v.type.tensor_type.elem_type}
    types.update((i.name, i.data_type) for i in graph.initializer)
    return types


def load_onnx(path: str, domain, notes: list[str] | None = None, model=None) -> MaxoutNet:
    """``domain(input_dim) -> Box`` builds the user's box once the input width is known;
    ``notes`` collects what was rounded (BatchNormalization square roots), if anything."""
    from onnx import numpy_helper

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
    name, shape = input_shape(model, path)
    last_use = {n: k for k, node in enumerate(graph.node) for n in node.input}
    last_use[graph.output[0].name] = len(graph.node)
    low = Lowering(shape, last_use)
    low.types = element_types(model)
    low.input_type = low.types.get(name, 1)
    for init in graph.initializer:
        try:
            low.values[init.name] = exact_array(numpy_helper.to_array(init), "a value")
        except NodeError as e:
            raise InputError(path, f"initializer {init.name!r}", str(e)) from None
    low.values[name] = low.input
    box: Box = domain(prod(shape))
    for index, node in enumerate(graph.node):
        where = f"node {index} {node.name!r}" if node.name else f"node {index}"
        low.step = index
        convert = OPERATORS.get(node.op_type) if node.domain in ("", "ai.onnx") else None
        if convert is None:
            raise InputError(path, where, f"unsupported operator {node.op_type!r}; supported: "
                             f"{', '.join(sorted(OPERATORS))}")
        args = []
        for n in node.input:
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
            if n and low.last_use.get(n, -1) <= index and n != graph.output[0].name:
                low.values.pop(n, None)
    out = low.values.get(graph.output[0].name)
    if not isinstance(out, Tensor):
        raise InputError(path, "graph.output", "the output does not depend on the input")
    if notes is not None:
        notes.extend(low.notes)
    return low.tracer.network(out.affine, box, path)


def onnxruntime_reference(path: str):
    """``f(points) -> outputs`` on the original file, in its own float type: by onnxruntime, or by
    ONNX's reference evaluator where onnxruntime has no kernel for the type (float64 ``Conv``);
    ``f.source`` names the evaluator."""
    import numpy as np
    import onnxruntime as ort

    model = read_model(path)
    name, shape = input_shape(model, path)
    elem = model.graph.input[[i.name for i in model.graph.input].index(name)].type.tensor_type.elem_type
    dtype = np.float64 if elem == 11 else np.float32
    options = ort.SessionOptions()
    options.log_severity_level = 3
    try:
        evaluate = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"]).run
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
    return run


def _unrunnable(path: str, error: Exception) -> InputError:
    first = (str(error).strip().splitlines() or [""])[0][:160]
    return InputError(path, "", f"cannot run this file for the self-check ({type(error).__name__}: "
                      f"{first}); --no-verify imports it without the self-check")
