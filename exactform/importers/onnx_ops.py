"""Exact converters of ONNX operators, one function per operator (tested at opsets 10 to 18).

Each converter takes the ``Lowering``, the node, its arguments (``Tensor`` for values that depend
on the network input, NumPy arrays for constants: ``Fraction`` objects for floats, ``int64`` for
integers) and returns the output value. Operators on constants only are folded exactly. Affine
operators compose exact maps; MaxPool, ReduceMax, Max/Min, Relu, Abs, LeakyRelu, PRelu, Clip and
HardSigmoid are Maxout units (``max(x, αx)`` for a leak ``α ≤ 1``, ``−max(−x, −αx)`` for ``α > 1``,
``min = −max(−·)``, ``clip(x) = lo + relu(x − lo) − relu(x − hi)``). A cast of a constant to a
binary float type rounds it exactly to that type (the value the source computes with).
BatchNormalization divides by ``√(var + ε)``, which is irrational unless ``var + ε`` is a rational
square: it is then rounded down to at least 64 significant bits and the lowering records a note
with a rigorous bound on the relative change.
"""
from __future__ import annotations

import math
from fractions import Fraction
from itertools import product

import numpy as np

from ..numbers import from_float, outward_decimals
from .affine import ONE, ZERO, Affine
from .graph import (MAX_CONSTANT, MAX_ENTRIES, Lowering, NodeError, Tensor, broadcast_pieces, check_entries,
                    elementwise_scale, elementwise_sum, negate, output_spatial, windows)


# --- values and attributes -----------------------------------------------------------------------
def exact_array(array: np.ndarray, what: str) -> np.ndarray:
    """Floats as an object array of exact ``Fraction``; integers and booleans as ``int64``."""
    if array.dtype.kind == "f":
        flat = array.astype(np.float64).ravel()
        bad = np.flatnonzero(~np.isfinite(flat))
        if bad.size:
            raise NodeError(f"{what} entry [{int(bad[0])}] is {flat[bad[0]]} (only finite numbers are exact)")
        out = np.empty(flat.size, dtype=object)
        out[:] = [Fraction(x) for x in flat.tolist()]
        return out.reshape(array.shape)
    if array.dtype.kind in "iub":
        return array.astype(np.int64)
    raise NodeError(f"{what} has unsupported element type {array.dtype}")


def attr(node, name: str, default=None):
    """An attribute as exact Python values (floats → ``Fraction``, tensors → exact arrays)."""
    import onnx
    from onnx import numpy_helper
    for a in node.attribute:
        if a.name != name:
            continue
        value = onnx.helper.get_attribute_value(a)
        if isinstance(value, float):
            if not math.isfinite(value):
                raise NodeError(f"attribute {name} is {value} (only finite numbers are exact)")
            return from_float(value)
        if isinstance(value, bytes):
            return value.decode()
        if isinstance(value, onnx.TensorProto):
            return exact_array(numpy_helper.to_array(value), f"attribute {name}")
        if isinstance(value, list):
            if any(isinstance(v, float) and not math.isfinite(v) for v in value):
                raise NodeError(f"attribute {name} holds a non-finite number")
            return [from_float(v) if isinstance(v, float) else v for v in value]
        return value
    return default


def ints(value) -> list[int]:
    return [int(v) for v in np.asarray(value).ravel().tolist()]


def fractions(value) -> np.ndarray:
    """A constant as an object array of ``Fraction``."""
    arr = np.asarray(value)
    if arr.dtype == object:
        return arr
    out = np.empty(arr.shape, dtype=object)
    out.ravel()[:] = [Fraction(int(v)) for v in arr.ravel().tolist()]
    return out


def constant(value, what: str) -> np.ndarray:
    if isinstance(value, Tensor):
        raise NodeError(f"{what} must be a constant, but it depends on the network input")
    return value


def constant_free(x) -> Tensor:
    if not isinstance(x, Tensor):
        raise NodeError("this operator is lowered on input-dependent values only, not on constants")
    return x


def axis_of(axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise NodeError(f"axis {axis} out of range for rank {rank}")
    return axis % rank


def optional(args, i):
    return args[i] if len(args) > i and args[i] is not None else None


# --- shape operators (Tensor or constant) --------------------------------------------------------
def _layout(x, make):
    """Apply an index rearrangement ``make(grid)`` to a tensor or a constant (by gathering; the
    result's size is checked before its entries exist)."""
    if isinstance(x, Tensor):
        return x.gather(make(x.grid()))
    x = np.asarray(x)
    picks = make(np.arange(x.size).reshape(x.shape))
    check_entries(picks.shape, "the rearranged constant", MAX_CONSTANT)
    return x.ravel()[picks]


def op_identity(low, node, args):
    return args[0]


def op_flatten(low, node, args):
    x = args[0]
    shape = x.shape
    axis = attr(node, "axis", 1)
    axis = axis % len(shape) if axis < 0 else axis
    new = (math.prod(shape[:axis]), math.prod(shape[axis:]))
    return x.reshaped(new) if isinstance(x, Tensor) else x.reshape(new)


def op_reshape(low, node, args):
    x, shape = args[0], ints(constant(args[1], "the shape"))
    if not attr(node, "allowzero", 0):
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    if shape.count(-1) > 1:
        raise NodeError("more than one -1 in the shape")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        shape[shape.index(-1)] = math.prod(x.shape) // known if known else 0
    if math.prod(shape) != math.prod(x.shape):
        raise NodeError(f"cannot reshape {list(x.shape)} to {shape}")
    return x.reshaped(shape) if isinstance(x, Tensor) else x.reshape(shape)


def _axes(node, args, index=1):
    """Axes from the input ``index`` (newer opsets) or the ``axes`` attribute (older ones)."""
    given = optional(args, index)
    return ints(constant(given, "axes")) if given is not None else attr(node, "axes", None)


def op_squeeze(low, node, args):
    x = args[0]
    axes = _axes(node, args)
    rank = len(x.shape)
    axes = [axis_of(a, rank) for a in axes] if axes is not None else [i for i, d in enumerate(x.shape) if d == 1]
    if any(x.shape[a] != 1 for a in axes):
        raise NodeError(f"squeezes an axis of size other than 1 in {list(x.shape)}")
    shape = [d for i, d in enumerate(x.shape) if i not in axes]
    return x.reshaped(shape) if isinstance(x, Tensor) else x.reshape(shape)


def op_unsqueeze(low, node, args):
    x = args[0]
    axes = _axes(node, args)
    rank = len(x.shape) + len(axes)
    shape = list(x.shape)
    for a in sorted(axis_of(a, rank) for a in axes):
        shape.insert(a, 1)
    return x.reshaped(shape) if isinstance(x, Tensor) else x.reshape(shape)


def op_transpose(low, node, args):
    perm = attr(node, "perm", None)
    return _layout(args[0], lambda g: g.transpose(perm) if perm is not None else g.T)


def op_concat(low, node, args):
    axis = attr(node, "axis")
    check_entries([sum(math.prod(a.shape) for a in args)], "the Concat output",
                  MAX_ENTRIES if any(isinstance(a, Tensor) for a in args) else MAX_CONSTANT)
    if not any(isinstance(a, Tensor) for a in args):
        return np.concatenate(args, axis=axis)
    parts = [low.as_tensor(a) for a in args]
    offsets = np.cumsum([0] + [p.size for p in parts])
    grid = np.concatenate([p.grid() + o for p, o in zip(parts, offsets)], axis=axis_of(axis, len(parts[0].shape)))
    rows = [r for p in parts for r in p.affine.rows]
    bias = [b for p in parts for b in p.affine.bias]
    whole = Tensor((len(rows),), Affine(rows, bias, low.tracer.width, low.tracer.frame))
    return whole.gather(grid)


def op_expand(low, node, args):
    """Broadcast to ``shape`` (bidirectionally: the output shape is the broadcast of both)."""
    x, shape = args[0], ints(constant(args[1], "the shape"))
    out = tuple(np.broadcast_shapes(tuple(x.shape), tuple(shape)))
    check_entries(out, "the Expand output", MAX_ENTRIES if isinstance(x, Tensor) else MAX_CONSTANT)
    return _layout(x, lambda g: np.broadcast_to(g, out))


_PAD_MODES = ("constant", "reflect", "edge", "wrap")
"""ONNX's padding modes, which are also NumPy's names for the same rules."""


def op_pad(low, node, args):
    """Padding (negative widths crop): ``constant`` entries are constants; ``reflect``, ``edge``
    and ``wrap`` repeat entries of the input."""
    x = args[0]
    rank = len(x.shape)
    if len(args) > 1:
        pads = ints(constant(args[1], "the pads"))
        value = optional(args, 2)
        value = ZERO if value is None else fractions(constant(value, "the constant value")).ravel()[0]
        axes = optional(args, 3)
        axes = list(range(rank)) if axes is None else [axis_of(a, rank) for a in ints(constant(axes, "the axes"))]
    else:
        pads, value, axes = attr(node, "pads"), attr(node, "value", ZERO), list(range(rank))
    mode = attr(node, "mode", "constant")
    if mode not in _PAD_MODES or len(pads) != 2 * len(axes):
        raise NodeError(f"mode {mode!r} with {len(pads)} pads for {len(axes)} axes")
    widths = [[0, 0] for _ in range(rank)]
    for i, a in enumerate(axes):
        widths[a] = [pads[i], pads[len(axes) + i]]
    crop = tuple(slice(max(0, -b), n - max(0, -e)) for (b, e), n in zip(widths, x.shape))
    grow = [(max(0, b), max(0, e)) for b, e in widths]
    check_entries([max(0, n + b + e) for (b, e), n in zip(widths, x.shape)], "the Pad output",
                  MAX_ENTRIES if isinstance(x, Tensor) else MAX_CONSTANT)
    if not isinstance(x, Tensor):
        x = fractions(x)[crop]
        return np.pad(x, grow, mode, constant_values=value) if mode == "constant" else np.pad(x, grow, mode)
    grid = x.grid()[crop]
    if mode != "constant":
        return x.gather(np.pad(grid, grow, mode))
    padded = np.pad(grid, grow, mode, constant_values=x.size)             # entry x.size is the constant
    a = x.affine
    return Tensor((x.size + 1,), Affine(a.rows + [{}], a.bias + [value], a.width, a.frame)).gather(padded)


def op_gather(low, node, args):
    indices = np.asarray(constant(args[1], "the indices"))
    axis = attr(node, "axis", 0)
    data = args[0]
    rank = len(data.shape)
    indices = np.where(indices < 0, indices + data.shape[axis_of(axis, rank)], indices)
    return _layout(data, lambda g: np.take(g, indices, axis=axis))


def op_slice(low, node, args):
    x = args[0]
    if len(args) > 1:
        starts, ends = ints(args[1]), ints(args[2])
        axes = ints(args[3]) if optional(args, 3) is not None else list(range(len(starts)))
        steps = ints(args[4]) if optional(args, 4) is not None else [1] * len(starts)
    else:
        starts, ends = attr(node, "starts"), attr(node, "ends")
        axes, steps = attr(node, "axes", list(range(len(starts)))), [1] * len(starts)
    # slice.indices clamps as ONNX does; the positions are then taken explicitly, since a slice
    # rebuilt from them would read an end of −1 (before position 0, for a negative step) as the last
    picks = [(axis_of(a, len(x.shape)), range(*slice(s, e, st).indices(x.shape[axis_of(a, len(x.shape))])))
             for s, e, a, st in zip(starts, ends, axes, steps)]

    def take(g):
        for axis, positions in picks:
            g = np.take(g, np.array(positions, dtype=np.int64), axis=axis)
        return g
    return _layout(x, take)


def op_shape(low, node, args):
    shape = list(args[0].shape)
    return np.array(shape[attr(node, "start", 0):attr(node, "end", None)], dtype=np.int64)


_FLOAT_FORMATS = {1: (24, -126, 127), 10: (11, -14, 15), 16: (8, -126, 127)}
"""FLOAT, FLOAT16, BFLOAT16: significand bits (with the implicit one), least normal and greatest
exponent. DOUBLE (11) holds every constant exactly: a constant is a float32 or float64 value, or
an exact fold of such values."""


def nearest_float(q: Fraction, code: int) -> Fraction:
    """``q`` rounded to the nearest value of the float format ``code`` (ties to even), computed
    exactly — the value a Cast of the constant ``q`` produces; overflow to infinity is refused."""
    if code == 11 or q == 0:
        return q
    bits, emin, emax = _FLOAT_FORMATS[code]
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()       # 2^(e−1) < a < 2^(e+1)
    if a < Fraction(2) ** e:
        e -= 1                                                        # 2^e ≤ a < 2^(e+1)
    ulp = Fraction(2) ** (max(e, emin) - bits + 1)
    r = round(a / ulp) * ulp                                          # Fraction rounds half to even
    if r > (2 - Fraction(2) ** (1 - bits)) * Fraction(2) ** emax:
        raise NodeError(f"the constant {float(q):.6g} overflows the target float type")
    return r if q > 0 else -r


_INTEGER_TYPES = (2, 3, 4, 5, 6, 7, 12, 13)
"""UINT8, INT8, UINT16, INT16, INT32, INT64, UINT32, UINT64 (BOOL is 9)."""


def _cast(x, code: int):
    """``x`` cast to the ONNX element type ``code``."""
    if isinstance(x, Tensor):
        if code not in (1, 11):
            raise NodeError("only casts of input-dependent values to float or double are exact")
        return x
    if code in (1, 10, 11, 16):
        rounded = np.empty(np.shape(x), dtype=object)
        rounded.ravel()[:] = [nearest_float(v, code) for v in fractions(x).ravel().tolist()]
        return rounded
    if code == 9:
        return (np.asarray(x) != 0).astype(np.int64)
    if code not in _INTEGER_TYPES:
        raise NodeError(f"cast to element type {code}")
    if x.dtype == object:
        if any(v.denominator != 1 for v in x.ravel().tolist()):
            raise NodeError("casting a non-integer constant to an integer type")
        return np.array([int(v) for v in x.ravel().tolist()], dtype=np.int64).reshape(x.shape)
    return x


def op_cast(low, node, args):
    return _cast(args[0], attr(node, "to"))


def op_cast_like(low, node, args):
    """Cast to the element type of the second input (from ONNX type inference; an input-dependent
    value without an inferred type has the network input's type)."""
    like = args[1]
    to = low.types.get(node.input[1])
    if to is None:
        to = low.input_type if isinstance(like, Tensor) else 11 if like.dtype == object else 7
    return _cast(args[0], to)


def op_constant(low, node, args):
    value = attr(node, "value")
    if value is None:
        for name in ("value_float", "value_floats", "value_int", "value_ints"):
            v = attr(node, name)
            if v is not None:
                return fractions(np.array(v, dtype=object)) if "float" in name else np.array(v, dtype=np.int64)
        raise NodeError("a Constant without a supported value attribute")
    return value


def _constant_map(rule):
    """An elementwise operator on constants only (index arithmetic), exact on ``Fraction``/int."""
    def op(low, node, args):
        x = np.asarray(constant(args[0], f"the {node.op_type} operand"))
        if x.dtype != object:
            return np.vectorize(lambda v: int(rule(int(v))), otypes=[np.int64])(x) if x.size else x
        out = np.empty(x.shape, dtype=object)
        out.ravel()[:] = [Fraction(rule(v)) for v in x.ravel().tolist()]
        return out
    return op


op_floor, op_ceil = _constant_map(math.floor), _constant_map(math.ceil)
op_sign = _constant_map(lambda v: (v > 0) - (v < 0))


def op_range(low, node, args):
    """``start, start + delta, …`` below ``limit`` (constants only: shape arithmetic)."""
    start, limit, delta = (np.asarray(constant(a, "a Range operand")).ravel()[0] for a in args)
    if delta == 0:
        raise NodeError("delta is 0")
    count = max(0, math.ceil(Fraction(limit - start) / Fraction(delta)))
    check_entries([count], "the Range output", MAX_CONSTANT)
    values = [start + k * delta for k in range(count)]
    return np.array(values, dtype=object if any(isinstance(v, Fraction) for v in values) else np.int64)


def op_constant_of_shape(low, node, args):
    value = attr(node, "value")
    fill = value.ravel()[0] if value is not None else Fraction(0)
    shape = ints(constant(args[0], "the shape"))
    if min(shape, default=1) < 0:
        raise NodeError(f"negative size in {shape}")
    check_entries(shape, "the ConstantOfShape output", MAX_CONSTANT)
    out = np.empty(shape, dtype=object if isinstance(fill, Fraction) else np.int64)
    out.fill(fill)
    return out


# --- elementwise arithmetic ------------------------------------------------------------------------
def _fold_shape(*constants) -> None:
    """Refuse a fold of constants whose broadcast result is too large, before it exists."""
    check_entries(np.broadcast_shapes(*(np.shape(c) for c in constants)), "the folded constant", MAX_CONSTANT)


def op_add(low, node, args, sign=ONE):
    a, b = args
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        _fold_shape(a, b)
        return a + b if sign == ONE else a - b
    return elementwise_sum(low, low.as_tensor(a), low.as_tensor(b), sign)


def op_sub(low, node, args):
    return op_add(low, node, args, -ONE)


def op_neg(low, node, args):
    x = args[0]
    return elementwise_scale(low, x, np.array(-ONE, dtype=object)) if isinstance(x, Tensor) else -x


def op_mul(low, node, args):
    a, b = args
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        raise NodeError("multiplies two input-dependent values (not affine)")
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        _fold_shape(a, b)
        return a * b
    x, c = (a, b) if isinstance(a, Tensor) else (b, a)
    return elementwise_scale(low, x, fractions(c))


def op_mod(low, node, args):
    """Remainder of integer constants (shape arithmetic): the divisor's sign, or C's ``fmod``."""
    a, b = (np.asarray(constant(v, "a Mod operand")) for v in args)
    _fold_shape(a, b)
    if a.dtype == object or b.dtype == object:
        raise NodeError("Mod of non-integer constants")
    return np.fmod(a, b) if attr(node, "fmod", 0) else np.mod(a, b)


def op_div(low, node, args):
    a, b = args
    if isinstance(b, Tensor):
        raise NodeError("divides by an input-dependent value (not affine)")
    if not isinstance(a, Tensor):
        _fold_shape(a, b)
        if a.dtype != object and b.dtype != object:      # integer division truncates toward zero
            return (np.abs(a) // np.abs(b)) * np.sign(a) * np.sign(b)
        return fractions(a) / fractions(b)
    c = fractions(b)
    if any(v == 0 for v in c.ravel().tolist()):
        raise NodeError("division by zero")
    return elementwise_scale(low, a, np.vectorize(lambda v: 1 / v, otypes=[object])(c))


# --- products ----------------------------------------------------------------------------------------
def matmul(low: Lowering, a, b) -> Tensor:
    """``a @ b`` with one constant factor (NumPy semantics for ranks 1 and 2)."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        raise NodeError("multiplies two input-dependent values (not affine)")
    if isinstance(a, Tensor):
        w = fractions(b)
        if w.ndim not in (1, 2) or w.shape[0] != a.shape[-1]:
            raise NodeError(f"weight of shape {list(w.shape)} does not fit input {list(a.shape)}")
        mat = w if w.ndim == 2 else w.reshape(-1, 1)
        k, n = mat.shape
        check_entries(a.shape[:-1] + (n,), "the product")
        low.charge(a.size * n, "MatMul")
        columns = [[(i, mat[i, j]) for i in range(k) if mat[i, j]] for j in range(n)]
        lead = a.size // k
        terms = [[(r * k + i, c) for i, c in col] for r in range(lead) for col in columns]
        shape = a.shape[:-1] + ((n,) if w.ndim == 2 else ())
        return low.linear(a, shape, terms)
    w = fractions(a)
    x = b
    if w.ndim not in (1, 2) or len(x.shape) < 2 and w.ndim == 2 and w.shape[1] != x.shape[0]:
        raise NodeError(f"constant of shape {list(w.shape)} does not fit input {list(x.shape)}")
    if len(x.shape) == 1:
        mat = w if w.ndim == 2 else w.reshape(1, -1)
        low.charge(mat.size, "MatMul")
        terms = [[(i, mat[m, i]) for i in range(mat.shape[1]) if mat[m, i]] for m in range(mat.shape[0])]
        return low.linear(x, (mat.shape[0],) if w.ndim == 2 else (), terms)
    kdim, n = x.shape[-2], x.shape[-1]
    mat = w if w.ndim == 2 else w.reshape(1, -1)
    if mat.shape[1] != kdim:
        raise NodeError(f"constant of shape {list(w.shape)} does not fit input {list(x.shape)}")
    low.charge(x.size * mat.shape[0], "MatMul")
    batch = x.size // (kdim * n)
    terms = [[(bt * kdim * n + i * n + j, mat[m, i]) for i in range(kdim) if mat[m, i]]
             for bt in range(batch) for m in range(mat.shape[0]) for j in range(n)]
    shape = x.shape[:-2] + ((mat.shape[0],) if w.ndim == 2 else ()) + (n,)
    return low.linear(x, shape, terms)


def op_matmul(low, node, args):
    a, b = args
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        low.charge(np.size(a) * (np.shape(b)[-1] if np.ndim(b) else 1), "MatMul of constants")
        return fractions(a).dot(fractions(b))
    return matmul(low, a, b)


def op_gemm(low, node, args):
    a, b = args[0], args[1]
    if attr(node, "transA", 0):
        a = _layout(a, lambda g: g.T)
    if attr(node, "transB", 0):
        b = _layout(b, lambda g: g.T)
    y = matmul(low, a, b)
    alpha, beta = attr(node, "alpha", ONE), attr(node, "beta", ONE)
    if alpha != ONE:
        y = elementwise_scale(low, y, np.array(alpha, dtype=object))
    c = optional(args, 2)
    if c is not None and beta != 0:
        c = elementwise_scale(low, c, np.array(beta, dtype=object)) if isinstance(c, Tensor) else fractions(c) * beta
        shape = y.shape
        y = elementwise_sum(low, y, low.as_tensor(c), ONE)
        if y.shape != shape:
            raise NodeError(f"the bias does not broadcast to the product {list(shape)}")
    return y


# --- convolution and pooling -----------------------------------------------------------------------
def _window_attrs(node, spatial, kernel):
    d = len(spatial)
    strides = attr(node, "strides", [1] * d)
    dilations = attr(node, "dilations", [1] * d)
    pads = attr(node, "pads", [0] * (2 * d))
    auto = attr(node, "auto_pad", "NOTSET")
    if auto == "VALID":
        pads = [0] * (2 * d)
    elif auto in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0] * (2 * d)
        for i, (n, k, s, dil) in enumerate(zip(spatial, kernel, strides, dilations)):
            total = max(0, (-(-n // s) - 1) * s + (k - 1) * dil + 1 - n)
            small, large = total // 2, total - total // 2
            pads[i], pads[d + i] = (small, large) if auto == "SAME_UPPER" else (large, small)
    elif auto != "NOTSET":
        raise NodeError(f"auto_pad {auto!r}")
    return strides, pads, dilations


def _kernel_operands(node, args) -> tuple:
    """``(x, W, group, bias)`` of a ``Conv`` / ``ConvTranspose``: the input, the constant kernel as
    Fractions, the group count and ``bias(m)``: the m output channels' biases (zeros without one)."""
    bias = optional(args, 2)
    return (constant_free(args[0]), fractions(constant(args[1], "the kernel")), attr(node, "group", 1),
            lambda m: [ZERO] * m if bias is None else list(fractions(constant(bias, "the bias")).ravel()))


def op_conv(low, node, args):
    x, w, group, bias = _kernel_operands(node, args)
    n, channels, *spatial = x.shape
    m, per_group, *kernel = w.shape
    if per_group * group != channels or m % group:
        raise NodeError(f"kernel {list(w.shape)} with {group} group(s) does not fit input {list(x.shape)}")
    strides, pads, dilations = _window_attrs(node, spatial, kernel)
    out = output_spatial(spatial, kernel, strides, pads, dilations, False)
    check_entries((n, m, *out), "the Conv output")
    low.charge(n * m * math.prod(out) * per_group * math.prod(kernel), "Conv")
    taps = [inside for _, inside, _ in windows(spatial, kernel, strides, pads, dilations, False)]
    grid, b = x.grid(), bias(m)
    terms, out_bias = [], []
    for batch in range(n):
        for oc in range(m):
            first = (oc // (m // group)) * per_group
            for inside in taps:
                terms.append([(int(grid[(batch, first + c) + ipos]), w[(oc, c) + kpos])
                              for c in range(per_group) for ipos, kpos in inside if w[(oc, c) + kpos]])
                out_bias.append(b[oc])
    return low.linear(x, (n, m, *out), terms, out_bias)


def op_conv_transpose(low, node, args):
    """The transpose of ``Conv``: input position ``i`` and kernel position ``k`` add
    ``x[i]·W[k]`` to output position ``i·stride − pad_begin + k·dilation`` (an affine map)."""
    x, w, group, bias = _kernel_operands(node, args)
    n, channels, *spatial = x.shape
    c, per_group, *kernel = w.shape
    d = len(spatial)
    if c != channels or channels % group or len(kernel) != d:
        raise NodeError(f"kernel {list(w.shape)} with {group} group(s) does not fit input {list(x.shape)}")
    m = per_group * group
    strides = attr(node, "strides", [1] * d)
    dilations = attr(node, "dilations", [1] * d)
    extra = attr(node, "output_padding", [0] * d)
    span = [(k - 1) * dil + 1 for k, dil in zip(kernel, dilations)]
    full = [s * (i - 1) + e + sp for s, i, e, sp in zip(strides, spatial, extra, span)]
    shape = attr(node, "output_shape", None)
    auto = attr(node, "auto_pad", "NOTSET")
    if shape is not None or auto in ("SAME_UPPER", "SAME_LOWER"):
        out = list(shape)[-d:] if shape is not None else [i * s for i, s in zip(spatial, strides)]
        total = [f - o for f, o in zip(full, out)]
        if min(total) < 0:
            raise NodeError(f"output_shape {out} is larger than the full transposed output {full}")
        lower = auto == "SAME_LOWER"
        begin = [t - t // 2 if lower else t // 2 for t in total]
    else:
        if auto not in ("NOTSET", "VALID"):
            raise NodeError(f"auto_pad {auto!r}")
        pads = [0] * (2 * d) if auto == "VALID" else attr(node, "pads", [0] * (2 * d))
        begin = pads[:d]
        out = [f - b - e for f, b, e in zip(full, pads[:d], pads[d:])]
    if min(out) < 1:
        raise NodeError(f"the transposed output {out} is empty")
    check_entries((n, m, *out), "the ConvTranspose output")
    low.charge(n * m * math.prod(out) + n * c * per_group * math.prod(spatial) * math.prod(kernel), "ConvTranspose")
    taps: dict[tuple, list] = {}
    for ipos in product(*(range(i) for i in spatial)):
        for kpos in product(*(range(k) for k in kernel)):
            opos = tuple(i * s - b + k * dil for i, s, b, k, dil in zip(ipos, strides, begin, kpos, dilations))
            if all(0 <= o < size for o, size in zip(opos, out)):
                taps.setdefault(opos, []).append((ipos, kpos))
    grid, b = x.grid(), bias(m)
    terms, out_bias = [], []
    for batch in range(n):
        for oc in range(m):
            g, j = divmod(oc, per_group)
            ins = range(g * (channels // group), (g + 1) * (channels // group))
            for opos in product(*(range(o) for o in out)):
                terms.append([(int(grid[(batch, ic) + ipos]), w[(ic, j) + kpos])
                              for ipos, kpos in taps.get(opos, ()) for ic in ins if w[(ic, j) + kpos]])
                out_bias.append(b[oc])
    return low.linear(x, (n, m, *out), terms, out_bias)


def _source_index(o: int, scale: Fraction, size_in: int, size_out: int, transform: str, nearest: str) -> int:
    """The input index ``Resize`` (mode ``nearest``) reads for output index ``o``, computed exactly
    from the ONNX definition (coordinate transformation, then rounding, then clamping)."""
    if transform == "asymmetric":
        x = o / scale
    elif transform in ("half_pixel", "pytorch_half_pixel"):
        x = (o + Fraction(1, 2)) / scale - Fraction(1, 2) if transform == "half_pixel" or size_out > 1 else ZERO
    elif transform == "align_corners":
        x = Fraction(o * (size_in - 1), size_out - 1) if size_out > 1 else ZERO
    elif transform == "tf_half_pixel_for_nn":
        x = (o + Fraction(1, 2)) / scale
    else:
        raise NodeError(f"coordinate_transformation_mode {transform!r}")
    floor, ceil = math.floor(x), math.ceil(x)
    if nearest == "floor":
        i = floor
    elif nearest == "ceil":
        i = ceil
    elif nearest in ("round_prefer_floor", "round_prefer_ceil"):
        half = x - floor
        i = floor if half < Fraction(1, 2) or (half == Fraction(1, 2) and nearest == "round_prefer_floor") else ceil
    else:
        raise NodeError(f"nearest_mode {nearest!r}")
    return min(max(i, 0), size_in - 1)


def op_resize(low, node, args):
    """``Resize``/``Upsample`` in mode ``nearest``: every output entry is one input entry (a
    selection); its index follows the ONNX rule exactly, on the scales' exact float values."""
    x = args[0]
    mode = attr(node, "mode", "nearest")
    if mode != "nearest":
        raise NodeError(f"mode {mode!r}: only 'nearest' (a selection) is lowered; linear and cubic "
                        "interpolation are refused")
    rank = len(x.shape)
    if node.op_type == "Upsample":
        scales, sizes = optional(args, 1), None
        scales = attr(node, "scales") if scales is None else scales
        transform, nearest = "asymmetric", "floor"
    else:
        if attr(node, "axes", None) is not None or attr(node, "keep_aspect_ratio_policy", "stretch") != "stretch":
            raise NodeError("axes and keep_aspect_ratio_policy are not supported")
        if optional(args, 1) is not None and np.asarray(constant(args[1], "the roi")).size:
            if attr(node, "coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize":
                raise NodeError("tf_crop_and_resize")
        scales, sizes = optional(args, 2), optional(args, 3)
        transform = attr(node, "coordinate_transformation_mode", "half_pixel")
        nearest = attr(node, "nearest_mode", "round_prefer_floor")
    if sizes is not None and np.asarray(constant(sizes, "the sizes")).size:
        out = ints(sizes)
        scales = [Fraction(o, i) for o, i in zip(out, x.shape)]
    elif scales is not None and np.asarray(constant(scales, "the scales")).size:
        scales = list(fractions(scales).ravel()) if not isinstance(scales, list) else scales
        if any(s <= 0 for s in scales):
            raise NodeError(f"non-positive scale in {[float(s) for s in scales]}")
        out = [math.floor(i * s) for i, s in zip(x.shape, scales)]
    else:
        raise NodeError("neither scales nor sizes is given")
    if len(out) != rank or min(out) < 1:
        raise NodeError(f"output shape {out} for input {list(x.shape)}")
    check_entries(out, "the Resize output")
    index = [np.array([_source_index(o, s, i, n, transform, nearest) for o in range(n)], dtype=np.int64)
             for i, n, s in zip(x.shape, out, scales)]

    def select(g):
        for axis, picks in enumerate(index):
            g = np.take(g, picks, axis=axis)
        return g
    return _layout(x, select)


def op_depth_to_space(low, node, args):
    """Channels to ``blocksize × blocksize`` spatial blocks (``DCR`` or ``CRD`` order): a permutation."""
    x = args[0]
    b, mode = attr(node, "blocksize"), attr(node, "mode", "DCR")
    n, c, h, w = x.shape
    if c % (b * b):
        raise NodeError(f"{c} channels are not a multiple of blocksize² = {b * b}")
    if mode == "DCR":
        make = lambda g: g.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)  # noqa: E731
    elif mode == "CRD":
        make = lambda g: g.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)  # noqa: E731
    else:
        raise NodeError(f"mode {mode!r}")
    return _layout(x, lambda g: make(g).reshape(n, c // (b * b), h * b, w * b))


def op_space_to_depth(low, node, args):
    """Spatial ``blocksize × blocksize`` blocks to channels: a permutation."""
    x = args[0]
    b = attr(node, "blocksize")
    n, c, h, w = x.shape
    if h % b or w % b:
        raise NodeError(f"spatial size {[h, w]} is not a multiple of blocksize {b}")
    return _layout(x, lambda g: g.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
                   .reshape(n, c * b * b, h // b, w // b))


def op_gather_nd(low, node, args):
    """``GatherND`` with constant indices: a selection of entries (or slices)."""
    data, indices = args[0], np.asarray(constant(args[1], "the indices"))
    batch = attr(node, "batch_dims", 0)
    shape = data.shape
    depth = indices.shape[-1]
    if indices.dtype.kind not in "iu" or batch + depth > len(shape):
        raise NodeError(f"indices of shape {list(indices.shape)} for data {list(shape)}")
    bounds = np.array(shape[batch:batch + depth])
    if ((indices < -bounds) | (indices >= bounds)).any():
        raise NodeError("an index is out of range")
    indices = np.where(indices < 0, indices + bounds, indices)
    check_entries(indices.shape[:-1] + tuple(shape[batch + depth:]), "the GatherND output")

    def take(g):
        lead = g.shape[:batch]
        flat_g = g.reshape((-1,) + g.shape[batch:])
        flat_i = indices.reshape((math.prod(lead), -1, depth)) if batch else indices.reshape(1, -1, depth)
        parts = [fg[tuple(fi.T)] for fg, fi in zip(flat_g, flat_i)] if batch else [g[tuple(flat_i[0].T)]]
        return np.stack(parts).reshape(indices.shape[:-1] + g.shape[batch + depth:])
    return _layout(data, take)


def _pool_windows(low, node, x: Tensor, global_pool: bool):
    n, channels, *spatial = x.shape
    if global_pool:
        kernel, strides, pads, dilations, ceil = spatial, [1] * len(spatial), [0] * (2 * len(spatial)), \
            [1] * len(spatial), False
    else:
        kernel = attr(node, "kernel_shape")
        strides, pads, dilations = _window_attrs(node, spatial, kernel)
        ceil = bool(attr(node, "ceil_mode", 0))
    out = output_spatial(spatial, kernel, strides, pads, dilations, ceil)
    check_entries((n, channels, *out), "the pooling output")
    low.charge(n * channels * math.prod(out) * math.prod(kernel), "pooling")
    return (n, channels, *out), list(windows(spatial, kernel, strides, pads, dilations, ceil))


def op_maxpool(low, node, args, global_pool=False):
    x = constant_free(args[0])
    if len(node.output) > 1 and node.output[1]:
        raise NodeError("the Indices output is not a function of the values")
    shape, wins = _pool_windows(low, node, x, global_pool)
    grid = x.grid()
    units = []
    for batch in range(shape[0]):
        for c in range(shape[1]):
            for _, inside, _ in wins:
                if not inside:
                    raise NodeError("a pooling window lies entirely in the padding")
                units.append([(x.affine.rows[k], x.affine.bias[k])
                              for k in (int(grid[(batch, c) + ipos]) for ipos, _ in inside)])
    return low.maxout(shape, units)


def op_global_maxpool(low, node, args):
    return op_maxpool(low, node, args, global_pool=True)


def op_avgpool(low, node, args, global_pool=False):
    x = constant_free(args[0])
    shape, wins = _pool_windows(low, node, x, global_pool)
    include_pad = not global_pool and attr(node, "count_include_pad", 0)
    grid = x.grid()
    terms = []
    for batch in range(shape[0]):
        for c in range(shape[1]):
            for _, inside, padded in wins:
                share = Fraction(1, padded if include_pad else len(inside))
                terms.append([(int(grid[(batch, c) + ipos]), share) for ipos, _ in inside])
    return low.linear(x, shape, terms)


def op_global_avgpool(low, node, args):
    return op_avgpool(low, node, args, global_pool=True)


def op_batchnorm(low, node, args):
    """``scale·(x − mean)/√(var + ε) + shift`` per channel; where ``√(var + ε)`` is irrational the
    factor is rounded (``inverse_square_root``) and a note states the channels and the bound."""
    x = constant_free(args[0])
    if attr(node, "training_mode", 0) or any(node.output[1:]):
        raise NodeError("training mode (running statistics as outputs)")
    scale, shift, mean, var = (list(fractions(constant(a, "a statistic")).ravel()) for a in args[1:5])
    eps = attr(node, "epsilon", from_float(float(np.float32(1e-5))))
    roots = [inverse_square_root(v + eps) for v in var]
    factor = [s * f for s, (f, _) in zip(scale, roots)]
    rounded = [bound for _, bound in roots if bound]
    if rounded:
        low.notes.append(
            f"BatchNormalization {node.name or node.output[0]!r}: var+eps is not the square of a rational in "
            f"{len(rounded)} of {len(roots)} channel(s); there 1/sqrt(var+eps) is replaced by 1/r, r = sqrt(var+eps) "
            f"rounded down to at least {ROOT_BITS} significant bits, which multiplies the channel's term "
            f"scale*(x-mean)/sqrt(var+eps) by 1+e with 0 <= e < {outward_decimals(max(rounded), max(rounded), 2)[1]}; "
            "the rest of the node is exact")
    channels = [1] * len(x.shape)
    channels[1] = len(factor)
    f = np.array(factor, dtype=object).reshape(channels)
    t = np.array([b - mu * fc for b, mu, fc in zip(shift, mean, factor)], dtype=object).reshape(channels)
    return elementwise_sum(low, elementwise_scale(low, x, f), low.as_tensor(t), ONE)


ROOT_BITS = 64
"""Significant bits of a rounded square root."""


def inverse_square_root(q: Fraction) -> tuple[Fraction, Fraction]:
    """``(f, δ)`` with ``f = 1/√q`` exactly and ``δ = 0`` when ``q`` is the square of a rational;
    otherwise ``f = 1/r`` for ``r = ⌊√q·2^s⌋/2^s`` (``√q`` rounded down to ``ROOT_BITS`` or more
    significant bits), so ``r ≤ √q < r + 2^−s`` and ``f·√q ∈ [1, 1 + δ)`` with ``δ = 2^−s/r``."""
    if q <= 0:
        raise NodeError(f"variance + epsilon = {q} is not positive")
    p, d = q.numerator, q.denominator
    rp, rd = math.isqrt(p), math.isqrt(d)
    if rp * rp == p and rd * rd == d:
        return Fraction(rd, rp), ZERO
    s = max(0, ROOT_BITS - (p.bit_length() - d.bit_length()) // 2 + 2)
    r = Fraction(math.isqrt((p << (2 * s)) // d), 1 << s)
    return 1 / r, Fraction(1, 1 << s) / r


# --- reductions ----------------------------------------------------------------------------------------
def _reduction_groups(low, node, args, x: Tensor):
    rank = len(x.shape)
    axes = _axes(node, args)
    if not axes:
        if attr(node, "noop_with_empty_axes", 0):
            return None, None
        axes = list(range(rank))
    axes = sorted(axis_of(a, rank) for a in axes)
    low.charge(x.size, "a reduction")
    kept = [i for i in range(rank) if i not in axes]
    keepdims = attr(node, "keepdims", 1)
    shape = [1 if i in axes else d for i, d in enumerate(x.shape)] if keepdims else [x.shape[i] for i in kept]
    groups = x.grid().transpose(kept + axes).reshape(math.prod(x.shape[i] for i in kept), -1)
    return shape, groups.tolist()


def op_reduce_max(low, node, args, sign=ONE):
    x = constant_free(args[0])
    shape, groups = _reduction_groups(low, node, args, x)
    if shape is None:
        return x
    units = [[(x.affine.rows[k], x.affine.bias[k]) for k in g] for g in groups]
    if sign != ONE:
        units = [negate(u) for u in units]
    return low.maxout(shape, units, None if sign == ONE else [sign] * len(units))


def op_reduce_min(low, node, args):
    return op_reduce_max(low, node, args, -ONE)


def op_reduce_mean(low, node, args, mean=True):
    x = constant_free(args[0])
    shape, groups = _reduction_groups(low, node, args, x)
    if shape is None:
        return x
    return low.linear(x, shape, [[(k, Fraction(1, len(g)) if mean else ONE) for k in g] for g in groups])


def op_reduce_sum(low, node, args):
    return op_reduce_mean(low, node, args, mean=False)


# --- Maxout units ----------------------------------------------------------------------------------------
def op_relu(low, node, args):
    x = args[0]
    if not isinstance(x, Tensor):
        return np.maximum(fractions(x), ZERO)
    return low.maxout(x.shape, [[(r, b), ({}, ZERO)] for r, b in zip(x.affine.rows, x.affine.bias)])


def op_abs(low, node, args):
    """``|x| = max(x, −x)``, a rank-2 unit."""
    x = args[0]
    if not isinstance(x, Tensor):
        return np.abs(x)
    return low.maxout(x.shape, [[(r, b), *negate([(r, b)])] for r, b in zip(x.affine.rows, x.affine.bias)])


def _leaky(low, x: Tensor, slopes: list[Fraction]) -> Tensor:
    """``x`` where ``x ≥ 0``, ``α·x`` elsewhere: ``max(x, αx)`` for ``α ≤ 1``, else ``−max(−x, −αx)``."""
    units, signs = [], []
    for r, b, a in zip(x.affine.rows, x.affine.bias, slopes):
        pieces = [(r, b), ({j: a * w for j, w in r.items()}, a * b)]
        units.append(pieces if a <= 1 else negate(pieces))
        signs.append(ONE if a <= 1 else -ONE)
    return low.maxout(x.shape, units, signs)


def op_leaky_relu(low, node, args):
    x = constant_free(args[0])
    return _leaky(low, x, [attr(node, "alpha", from_float(float(np.float32(0.01))))] * x.size)


def op_prelu(low, node, args):
    x = constant_free(args[0])
    slope = fractions(constant(args[1], "the slope"))
    return _leaky(low, x, list(np.broadcast_to(slope, x.shape).ravel()))


def op_clip(low, node, args):
    if len(args) > 1:
        lo, hi = optional(args, 1), optional(args, 2)
        lo = None if lo is None else fractions(constant(lo, "min")).ravel()[0]
        hi = None if hi is None else fractions(constant(hi, "max")).ravel()[0]
    else:
        lo, hi = attr(node, "min", None), attr(node, "max", None)
    return clip(low, args[0], lo, hi)


def clip(low, x, lo: Fraction | None, hi: Fraction | None):
    """``min(max(x, lo), hi)`` (a missing bound is no bound)."""
    if not isinstance(x, Tensor):
        x = fractions(x)
        x = x if lo is None else np.maximum(x, lo)
        return x if hi is None else np.minimum(x, hi)
    rows, bias = x.affine.rows, x.affine.bias
    if lo is None and hi is None:
        return x
    if hi is None:
        return low.maxout(x.shape, [[(r, b), ({}, lo)] for r, b in zip(rows, bias)])
    if lo is None:
        return low.maxout(x.shape, [negate([(r, b), ({}, hi)]) for r, b in zip(rows, bias)], [-ONE] * x.size)
    if lo > hi:                                  # the ONNX rule: every entry becomes max
        return low.as_tensor(np.full(x.shape, hi, dtype=object))
    # clip(x) = lo + relu(x − lo) − relu(x − hi): two ReLU units per entry in one layer
    units = [[(r, b - c), ({}, ZERO)] for c in (lo, hi) for r, b in zip(rows, bias)]
    both = low.maxout((2, x.size), units)
    n = x.size
    return low.linear(both, x.shape, [[(i, ONE), (n + i, -ONE)] for i in range(n)], [lo] * n)


def op_hard_sigmoid(low, node, args):
    """``clip(α·x + β, 0, 1)``."""
    alpha = attr(node, "alpha", from_float(float(np.float32(0.2))))
    beta = attr(node, "beta", from_float(float(np.float32(0.5))))
    x = args[0]
    if not isinstance(x, Tensor):
        return clip(low, fractions(x) * alpha + beta, ZERO, ONE)
    y = elementwise_scale(low, x, np.array(alpha, dtype=object))
    return clip(low, elementwise_sum(low, y, low.as_tensor(np.array(beta, dtype=object)), ONE), ZERO, ONE)


def op_max(low, node, args, sign=ONE):
    if not any(isinstance(a, Tensor) for a in args):
        fold = np.maximum if sign == ONE else np.minimum
        _fold_shape(*args)
        out = args[0]
        for a in args[1:]:
            out = fold(out, a)
        return out
    shape, units = broadcast_pieces([low.as_tensor(a) for a in args])
    if sign != ONE:
        units = [negate(u) for u in units]
    return low.maxout(shape, units, None if sign == ONE else [sign] * len(units))


def op_min(low, node, args):
    return op_max(low, node, args, -ONE)


OPERATORS = {
    "Identity": op_identity, "Dropout": op_identity, "Flatten": op_flatten, "Reshape": op_reshape,
    "Squeeze": op_squeeze, "Unsqueeze": op_unsqueeze, "Transpose": op_transpose, "Concat": op_concat,
    "Expand": op_expand, "Pad": op_pad, "Gather": op_gather, "Slice": op_slice, "Shape": op_shape,
    "Cast": op_cast, "CastLike": op_cast_like, "Constant": op_constant, "ConstantOfShape": op_constant_of_shape,
    "Range": op_range, "Floor": op_floor, "Ceil": op_ceil, "Sign": op_sign,
    "Add": op_add, "Sub": op_sub, "Neg": op_neg, "Mul": op_mul, "Div": op_div, "Mod": op_mod,
    "MatMul": op_matmul, "Gemm": op_gemm, "Conv": op_conv, "ConvTranspose": op_conv_transpose,
    "Resize": op_resize, "Upsample": op_resize, "DepthToSpace": op_depth_to_space, "SpaceToDepth": op_space_to_depth,
    "GatherND": op_gather_nd,
    "AveragePool": op_avgpool, "GlobalAveragePool": op_global_avgpool, "BatchNormalization": op_batchnorm,
    "ReduceMean": op_reduce_mean, "ReduceSum": op_reduce_sum,
    "Relu": op_relu, "Abs": op_abs, "LeakyRelu": op_leaky_relu, "PRelu": op_prelu, "Clip": op_clip,
    "HardSigmoid": op_hard_sigmoid, "Max": op_max, "Min": op_min, "MaxPool": op_maxpool, "GlobalMaxPool": op_global_maxpool, "ReduceMax": op_reduce_max,
    "ReduceMin": op_reduce_min,
}
"""Supported operators of the default ONNX domain."""
