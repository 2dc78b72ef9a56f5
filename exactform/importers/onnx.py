"""ONNX ReLU/maxout networks → exact ``MaxoutNet``.

Supported operators: Gemm, MatMul, Add, Sub, Mul, Div (by constants), Neg, Relu, Max (of affine
maps: a maxout unit), Flatten, Reshape, Squeeze, Unsqueeze, Identity, Dropout (inference), Constant.
Initializers that are also listed as graph inputs (older exporters) are constants. Anything else
is an ``InputError`` naming the node and its operator. Every float becomes its exact rational.
"""
from __future__ import annotations

from fractions import Fraction

from ..formats import InputError
from ..models import Box, MaxoutNet
from ..numbers import from_float
from .affine import ZERO, Affine, Tracer

SHAPE_OPS = {"Flatten", "Reshape", "Squeeze", "Unsqueeze", "Identity", "Dropout"}


def load_onnx(path: str, domain) -> MaxoutNet:
    """``domain(input_dim) -> Box`` builds the user's box once the input width is known."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    try:
        model = onnx.load(path)
    except Exception as e:  # protobuf raises several unrelated types on malformed files
        raise InputError(path, "", f"not a readable ONNX model ({type(e).__name__})") from None
    graph = model.graph
    if not graph.node:
        raise InputError(path, "graph", "the graph has no nodes")
    values: dict[str, object] = {}
    for init in graph.initializer:
        try:
            values[init.name] = _exact_array(numpy_helper.to_array(init))
        except (ValueError, TypeError) as e:
            raise InputError(path, f"initializer {init.name!r}", str(e)) from None
    inputs = [i for i in graph.input if i.name not in values]
    if len(inputs) != 1:
        raise InputError(path, "graph.input", f"expected one non-constant input, got {len(inputs)}")
    dims = [d.dim_value for d in inputs[0].type.tensor_type.shape.dim]
    width = int(np.prod([d for d in dims[1:] if d] or [d for d in dims if d] or [0]))
    if width < 1:
        raise InputError(path, f"input {inputs[0].name!r}", "cannot read a static input width from its shape")
    box: Box = domain(width)
    tracer = Tracer(width)
    values[inputs[0].name] = tracer.input
    for index, node in enumerate(graph.node):
        where = f"node {index} {node.name!r}" if node.name else f"node {index}"
        args = []
        for name in node.input:
            if name and name not in values:
                raise InputError(path, where, f"input {name!r} is not produced before use")
            args.append(values.get(name))
        try:
            result = _apply(node, args, tracer, np)
        except _Unsupported as e:
            raise InputError(path, where, f"unsupported {node.op_type}: {e}") from None
        values[node.output[0]] = result
    if len(graph.output) != 1:
        raise InputError(path, "graph.output", f"expected one output, got {len(graph.output)}")
    out = values.get(graph.output[0].name)
    if not isinstance(out, Affine):
        raise InputError(path, "graph.output", "the output does not depend on the input")
    if out.frame != tracer.frame:
        raise InputError(path, "graph.output", "the output skips a layer (skip connections are not supported)")
    return tracer.network(out, box)


class _Unsupported(Exception):
    pass


def _exact_array(array):
    """A numeric array as an object array of ``Fraction`` (floats exactly, integers as is)."""
    import numpy as np
    if array.dtype.kind == "f":
        flat = [from_float(float(x)) for x in array.astype(np.float64).ravel().tolist()]
    elif array.dtype.kind in "iub":
        flat = [Fraction(int(x)) for x in array.ravel().tolist()]
    else:
        raise ValueError(f"unsupported tensor type {array.dtype}")
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out.reshape(array.shape)


def _attr(node, name, default):
    import onnx
    for a in node.attribute:
        if a.name == name:
            value = onnx.helper.get_attribute_value(a)
            return from_float(value) if isinstance(value, float) else value
    return default


def _vector(const, size: int) -> list[Fraction]:
    """A constant broadcast against a feature vector of ``size`` entries."""
    flat = list(const.ravel())
    if len(flat) == 1:
        return flat * size
    if len(flat) != size:
        raise _Unsupported(f"constant of {len(flat)} entries does not broadcast to {size} features")
    return flat


def _same_frame(a: Affine, b: Affine) -> None:
    if a.frame != b.frame or a.size != b.size:
        raise _Unsupported("combines values of different layers or widths (skip connections are not supported)")


def _apply(node, args, tracer: Tracer, np):
    op = node.op_type
    affine = [a for a in args if isinstance(a, Affine)]
    if op == "Constant":
        from onnx import numpy_helper
        return _exact_array(numpy_helper.to_array(_attr(node, "value", None)))
    if not affine:
        return _constant_op(node, args, np)
    x = affine[0]
    if op in SHAPE_OPS:
        if op == "Reshape":
            size = int(np.prod([int(d) for d in args[1].ravel() if int(d) > 0]))
            if size != x.size and -1 not in [int(d) for d in args[1].ravel()]:
                raise _Unsupported(f"reshape to {size} features from {x.size}")
        return x
    if op == "Relu":
        return tracer.relu(_current(x, tracer))
    if op == "Max":
        pieces = [_current(a, tracer) if isinstance(a, Affine) else None for a in args]
        for p in pieces:
            if p is not None:
                _same_frame(p, x)
        width = len(x.weight[0])
        pieces = [p if p is not None else Affine([[ZERO] * width for _ in range(x.size)], _vector(a, x.size), x.frame)
                  for p, a in zip(pieces, args)]
        return tracer.maxout(pieces)
    if op in ("MatMul", "Gemm"):
        if not isinstance(args[0], Affine) or isinstance(args[1], Affine):
            raise _Unsupported("only (input-dependent) × (constant) products are supported")
        b = args[1]
        if b.ndim != 2:
            raise _Unsupported(f"weight of rank {b.ndim}, expected 2")
        alpha, beta = (_attr(node, "alpha", Fraction(1)), _attr(node, "beta", Fraction(1))) if op == "Gemm" \
            else (Fraction(1), Fraction(1))
        if op == "Gemm" and _attr(node, "transA", 0):
            raise _Unsupported("transA = 1 on the input")
        if op == "Gemm" and _attr(node, "transB", 0):
            b = b.T
        if b.shape[0] != x.size:
            raise _Unsupported(f"weight has {b.shape[0]} rows, input has {x.size} features")
        matrix = [[alpha * v for v in row] for row in b.T.tolist()]
        bias = [beta * v for v in _vector(args[2], b.shape[1])] if op == "Gemm" and len(args) > 2 \
            and args[2] is not None else None
        return x.then(matrix, bias)
    if op == "Neg":
        return x.scaled([Fraction(-1)] * x.size)
    if op in ("Add", "Sub"):
        a, b = args
        sign = Fraction(1) if op == "Add" else Fraction(-1)
        if isinstance(a, Affine) and isinstance(b, Affine):
            _same_frame(a, b)
            return a.plus(b.scaled([sign] * b.size))
        if isinstance(a, Affine):
            return a.shifted([sign * v for v in _vector(b, a.size)])
        return b.scaled([sign] * b.size).shifted(_vector(a, b.size))
    if op in ("Mul", "Div"):
        a, b = args
        if isinstance(b, Affine) and (op == "Div" or isinstance(a, Affine)):
            raise _Unsupported("only multiplication or division by a constant is supported")
        const = b if isinstance(a, Affine) else a
        factors = _vector(const, x.size)
        if op == "Div":
            if any(f == 0 for f in factors):
                raise _Unsupported("division by zero")
            factors = [1 / f for f in factors]
        return x.scaled(factors)
    raise _Unsupported("operator not supported")


def _current(x: Affine, tracer: Tracer) -> Affine:
    if x.frame != tracer.frame:
        raise _Unsupported("reads a value of an earlier layer (skip connections are not supported)")
    return x


def _constant_op(node, args, np):
    """Constant folding in exact arithmetic (object arrays of ``Fraction``)."""
    op = node.op_type
    if op in ("Identity", "Dropout"):
        return args[0]
    if op == "Reshape":
        shape = [int(d) for d in args[1].ravel()]
        shape = [args[0].shape[i] if d == 0 else d for i, d in enumerate(shape)]
        return args[0].reshape(shape)
    if op == "Flatten":
        axis = _attr(node, "axis", 1)
        return args[0].reshape(int(np.prod(args[0].shape[:axis])), -1)
    binary = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}
    if op in binary:
        return binary[op](args[0], args[1])
    if op == "Neg":
        return -args[0]
    raise _Unsupported("operator not supported on constants")
