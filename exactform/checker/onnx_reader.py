"""ONNX networks read by the checker itself, standard library only (docs/spec.md §8, "Binding").

**Wire format.** A message is a sequence of fields, each a varint key (field number × 8 + wire type) and
a value: a varint (wire type 0, at most 10 bytes, below 2^64), 8 bytes (1), a length-delimited byte
string (2) or 4 bytes (5); every value must end inside its message.  Only the fields of the ONNX schema
below are kept (at most ``MAX_FIELDS`` in a file), others are skipped; a kept singular field appears at
most once and with its declared wire type; a repeated number field is read packed or not.  Messages are
read only where the schema nests them (model, graph, node, attribute, tensor; value info, type, tensor
type, shape, dimension), so the nesting depth is fixed by this reader, never by the file.

**Tensors.** float (1), int64 (7) or double (11), data in ``raw_data`` (little-endian) or in the type's
own field; the entries the dims declare must be exactly the entries present, counted before any is
decoded; floats are converted exactly (``Fraction(float)``), NaN and infinities refused; external,
segmented or sparse tensors are refused.

**Graph.** Initializers (also when listed as graph inputs) are constants; the one other graph input is
the network input, of static shape (a first dimension without a static size, of a shape of rank > 1,
is the batch: 1).  Nodes run in file order, every value as a constant tensor or a tensor of affine
forms of the current frame (the flattened input, then the units of the last ReLU layer); a node that
reads a value of an earlier frame (a skip connection) is refused.  The function of the graph's one
output, flattened row-major, is the read-out."""

import math
import struct
from fractions import Fraction
from itertools import product
from typing import NamedTuple

from .cost import beyond, weight
from .nnet_reader import IMPORTED_JSON, MAX_WEIGHTS, piece, relu_layer
from .reader import ONE, Malformed, combine, contents

MAX_BYTES = 1 << 24  # an ONNX file: 2·10^6 float32 weights take 8 MB; skipping 16 MiB of fields takes ~3 CPU s
MAX_FIELDS = 2 * 10**5  # protobuf fields kept while reading one file (ACAS Xu: 253)
MAX_RANK = 64  # a tensor's dims, a Reshape's shape
FLOAT, INT64, DOUBLE = 1, 7, 11
ATTRIBUTES = {
    "Add": {},
    "Sub": {},
    "MatMul": {},
    "Relu": {},
    "Identity": {},
    "Flatten": {"axis": 3},
    "Reshape": {"allowzero": 3},
    "Constant": {"value": 5},
    "Gemm": {"alpha": 2, "beta": 2, "transA": 3, "transB": 3},
}
"""The operators read, and the attributes each may carry: the AttributeProto field holding the value
(2 ``f``, a float; 3 ``i``, an integer; 5 ``t``, a tensor)."""
ARITY = {"Constant": (0,), "Add": (2,), "Sub": (2,), "MatMul": (2,), "Reshape": (2,), "Gemm": (2, 3)}
"""The inputs each operator takes (the others: one)."""


class Const(NamedTuple):
    """A constant tensor: its shape and its entries, row-major (``Fraction``, or ``int`` when ``integral``)."""

    shape: tuple
    values: list
    integral: bool


class Var(NamedTuple):
    """An input-dependent tensor: its entries, row-major, as affine forms over frame ``frame``."""

    shape: tuple
    forms: list
    frame: int


class Wire:
    """The protobuf wire format of one file: fields kept, failures named ``path: where: message``."""

    def __init__(self, path):
        self.path, self.kept, self.entries = path, 0, 0

    def fail(self, where: str, message: str):
        raise Malformed(f"{self.path}: {where}: {message}")

    def varint(self, data, pos: int, where: str) -> tuple:
        """The varint at ``pos`` and the position after it."""
        if pos < len(data) and data[pos] < 0x80:  # one byte: most keys and small numbers
            return data[pos], pos + 1
        value = shift = 0
        while True:
            if pos >= len(data):
                self.fail(where, "a varint runs past the end of its message")
            byte = data[pos]
            value |= (byte & 0x7F) << shift
            pos, shift = pos + 1, shift + 7
            if byte < 0x80:
                break
            if shift >= 70:
                self.fail(where, "a varint longer than 10 bytes")
        if value >= 1 << 64:
            self.fail(where, "a varint beyond 64 bits")
        return value, pos

    def message(self, data, where: str, names: dict) -> dict:
        """The fields of ``names`` ({number: name}) in ``data``: {number: [(wire type, value)]}."""
        out, pos, end = {}, 0, len(data)
        while pos < end:
            key, pos = self.varint(data, pos, where)
            number, wire = key >> 3, key & 7
            if number == 0 or wire not in (0, 1, 2, 5):
                self.fail(where, f"field number {number}, wire type {wire}: not a protobuf field of this reader")
            if wire == 0:
                value, pos = self.varint(data, pos, where)
                if number not in names:
                    continue
            else:
                size, pos = self.varint(data, pos, where) if wire == 2 else (8 if wire == 1 else 4, pos)
                if size > end - pos:
                    self.fail(
                        f"{where}.{names.get(number, f'field {number}')}",
                        f"a length of {size} bytes runs past the end of its message",
                    )
                value, pos = data[pos : pos + size], pos + size
            if number in names:
                self.kept += 1
                if self.kept > MAX_FIELDS:
                    self.fail(f"{where}.{names[number]}", f"more than {MAX_FIELDS} fields, beyond the checker's limit")
                out.setdefault(number, []).append((wire, value))
        return out

    def one(self, msg: dict, number: int, wire: int, where: str, default=None):
        """The value of a singular field (``default`` if absent)."""
        values = msg.get(number, [])
        if len(values) > 1:
            self.fail(where, "a singular field given more than once")
        if values and values[0][0] != wire:
            self.fail(where, f"wire type {values[0][0]}, expected {wire}")
        return values[0][1] if values else default

    def many(self, msg: dict, number: int, where: str) -> list:
        """The values of a repeated message or string field."""
        if any(w != 2 for w, _ in msg.get(number, [])):
            self.fail(where, "not a length-delimited field")
        return [v for _, v in msg.get(number, [])]

    def text(self, msg: dict, number: int, where: str) -> str:
        return self.string(self.one(msg, number, 2, where, b""), where)

    def string(self, value, where: str) -> str:
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            self.fail(where, "not UTF-8")

    def integers(self, msg: dict, number: int, where: str, limit: int = MAX_RANK) -> list:
        """A repeated int64 field, packed or not, of at most ``limit`` entries (counted before decoding)."""
        chunks = msg.get(number, [])
        if sum(len(v) if w == 2 else 1 for w, v in chunks) > 10 * limit:
            self.fail(where, f"more than {limit} integers, beyond this reader's limit")
        out = []
        for w, v in chunks:
            if w == 0:
                out.append(v)
            elif w == 2:
                pos = 0
                while pos < len(v):
                    value, pos = self.varint(v, pos, where)
                    out.append(value)
            else:
                self.fail(where, f"wire type {w}, expected an integer")
        if len(out) > limit:
            self.fail(where, f"more than {limit} integers, beyond this reader's limit")
        return [signed(v) for v in out]

    def floats(self, msg: dict, number: int, size: int, where: str) -> bytes:
        """A repeated float (``size`` 4) or double (8) field, packed or not, as its little-endian bytes."""
        wire = 5 if size == 4 else 1
        if any(w not in (2, wire) or len(v) % size for w, v in msg.get(number, [])):
            self.fail(where, f"not a list of {8 * size}-bit floats")
        return b"".join(bytes(v) for _, v in msg.get(number, []))

    def count(self, entries: int, where: str) -> int:
        """Account for ``entries`` about to be materialised (tensors, results): at most ``MAX_WEIGHTS`` in a file."""
        self.entries += entries
        if self.entries > MAX_WEIGHTS:
            self.fail(where, f"more than {MAX_WEIGHTS} tensor entries in the file, beyond the checker's limit")
        return entries

    def tensor(self, data, where: str) -> Const:
        """A float, double or int64 tensor, its entries counted before they are decoded."""
        t = self.message(
            data,
            where,
            {
                1: "dims",
                2: "data_type",
                3: "segment",
                4: "float_data",
                5: "int32_data",
                6: "string_data",
                7: "int64_data",
                9: "raw_data",
                10: "double_data",
                11: "uint64_data",
                13: "external_data",
                14: "data_location",
            },
        )
        dims = self.integers(t, 1, f"{where}.dims")
        dtype = self.one(t, 2, 0, f"{where}.data_type", 0)
        own = {FLOAT: 4, INT64: 7, DOUBLE: 10}.get(dtype)
        if own is None:
            self.fail(f"{where}.data_type", f"{dtype}: the checker reads float (1), int64 (7) and double (11) tensors")
        stored = sorted(k for k in t if k not in (1, 2, 14))
        if self.one(t, 14, 0, f"{where}.data_location", 0) or any(k in (3, 13) for k in stored):
            self.fail(where, "external or segmented data: the checker reads tensors stored in the file")
        if stored not in ([], [9], [own]):
            self.fail(where, f"data in fields {stored}: expected raw_data or the field of its type ({own}) alone")
        if any(d < 0 for d in dims):
            self.fail(f"{where}.dims", f"a negative dimension in {dims}")
        count, size = math.prod(dims), 4 if dtype == FLOAT else 8
        if own not in stored:
            raw = bytes(self.one(t, 9, 2, f"{where}.raw_data", b""))
        elif dtype == INT64:
            integers = self.integers(t, own, f"{where}.int64_data")
            raw = struct.pack(f"<{len(integers)}q", *integers)
        else:
            raw = self.floats(t, own, size, f"{where}.data")
        if count * size != len(raw):
            self.fail(where, f"the dims {dims} declare {count} entries, its data holds {len(raw) // size}")
        if dtype == INT64 and count > MAX_RANK:
            self.fail(
                where,
                f"an int64 tensor of {count} entries: the checker reads int64 only as a Reshape's shape, "
                f"of at most {MAX_RANK}",
            )
        values = struct.unpack(f"<{self.count(count, where)}{({FLOAT: 'f', DOUBLE: 'd', INT64: 'q'})[dtype]}", raw)
        if dtype == INT64:
            return Const(tuple(dims), list(values), True)
        return Const(tuple(dims), [self.exact(x, f"{where}[{i}]") for i, x in enumerate(values)], False)

    def exact(self, x: float, where: str) -> Fraction:
        """The rational value of a finite float."""
        if not math.isfinite(x):
            self.fail(where, f"{x} (only finite numbers are exact)")
        return Fraction(x)


def signed(v: int) -> int:
    """A 64-bit varint as the int64 it encodes (two's complement)."""
    return v - (1 << 64) if v >= 1 << 63 else v


def read_onnx(path) -> tuple:
    """``(inputs, layers, readout)``: the network of the ONNX file as exact ReLU layers and read-out
    (``reader.Maxout``'s shapes), by the rules of the module docstring."""
    wire = Wire(path)
    model = wire.message(memoryview(contents(path, MAX_BYTES)), "model", {7: "graph"})
    graph = wire.one(model, 7, 2, "model.graph")
    if graph is None:
        wire.fail("model", "no graph")
    graph = wire.message(
        graph, "graph", {1: "node", 5: "initializer", 11: "input", 12: "output", 15: "sparse_initializer"}
    )
    if graph.get(15):
        wire.fail("graph.sparse_initializer", f"sparse tensors are not read; {IMPORTED_JSON}")
    pending = {}
    for k, data in enumerate(wire.many(graph, 5, "graph.initializer")):
        name = wire.text(wire.message(data, f"graph.initializer[{k}]", {8: "name"}), 8, f"graph.initializer[{k}].name")
        if name in pending:
            wire.fail(f"graph.initializer[{k}]", f"a second initializer named {name!r}")
        pending[name] = (data, f"initializer {name!r}")
    name, shape = network_input(wire, graph, pending)
    outputs = [
        wire.text(wire.message(v, f"graph.output[{k}]", {1: "name"}), 1, f"graph.output[{k}].name")
        for k, v in enumerate(wire.many(graph, 12, "graph.output"))
    ]
    if len(outputs) != 1:
        wire.fail("graph.output", f"{len(outputs)} outputs, expected one")
    net = Graph(path, wire, pending, math.prod(shape))
    net.values[name] = Var(shape, [{i: Fraction(1)} for i in range(wire.count(net.inputs, "the input"))], 0)
    for k, data in enumerate(wire.many(graph, 1, "graph.node")):
        net.node(data, k)
    out = net.value(outputs[0], "graph.output")
    if not isinstance(out, Var) or out.frame != len(net.layers) or not net.layers:
        wire.fail(
            "graph.output", f"not a function of the last ReLU layer (a network of at least one Relu); {IMPORTED_JSON}"
        )
    return net.inputs, net.layers, [piece(f) for f in out.forms]


def network_input(wire: Wire, graph: dict, constants: dict) -> tuple:
    """The name and static shape of the one graph input that is not an initializer."""
    inputs = []
    for k, v in enumerate(wire.many(graph, 11, "graph.input")):
        info = wire.message(v, f"graph.input[{k}]", {1: "name", 2: "type"})
        if wire.text(info, 1, f"graph.input[{k}].name") not in constants:
            inputs.append((k, info))
    if len(inputs) != 1:
        wire.fail("graph.input", f"{len(inputs)} inputs that are not initializers, expected one")
    k, info = inputs[0]
    where = f"graph.input[{k}]"
    kind = wire.message(wire.one(info, 2, 2, f"{where}.type", b""), f"{where}.type", {1: "tensor_type"})
    tensor = wire.message(
        wire.one(kind, 1, 2, f"{where}.type.tensor_type", b""), f"{where}.type.tensor_type", {2: "shape"}
    )
    shape = wire.one(tensor, 2, 2, f"{where}.type.tensor_type.shape")
    if shape is None:
        wire.fail(f"{where}.type.tensor_type", "no shape")
    dims = wire.many(wire.message(shape, f"{where}.shape", {1: "dim"}), 1, f"{where}.shape.dim")
    if not 1 <= len(dims) <= MAX_RANK:
        wire.fail(f"{where}.shape", f"rank {len(dims)}, expected 1 to {MAX_RANK}")
    shape = []
    for i, d in enumerate(dims):
        size = signed(
            wire.one(
                wire.message(d, f"{where}.shape.dim[{i}]", {1: "dim_value"}),
                1,
                0,
                f"{where}.shape.dim[{i}].dim_value",
                0,
            )
        )
        if size <= 0 and not (i == 0 and len(dims) > 1):
            wire.fail(f"{where}.shape.dim[{i}]", "no static size")
        shape.append(size if size > 0 else 1)
    return wire.text(info, 1, f"{where}.name"), tuple(shape)


class Graph:
    """The graph's values by name while its nodes run; ``layers`` the ReLU layers closed so far."""

    def __init__(self, path, wire: Wire, pending: dict, inputs: int):
        self.path, self.wire, self.pending, self.inputs = path, wire, pending, inputs
        self.values, self.layers, self.work, self.bits, self.where = {}, [], 0, 0, "graph"

    def value(self, name: str, where: str):
        if name in self.pending:
            data, at = self.pending.pop(name)
            const = self.wire.tensor(data, at)
            self.bits = max(
                [self.bits]
                + [
                    max(q.numerator.bit_length(), q.denominator.bit_length())
                    for q in const.values
                    if not const.integral
                ]
            )
            self.values[name] = const
        if name not in self.values:
            self.wire.fail(where, f"{name[:80]!r} is not produced before it is read")
        return self.values[name]

    def charge(self, terms: int):
        """Count the terms an operation is about to write, against the checker's work bound."""
        self.work += terms
        error = beyond(self.work * weight(self.bits), f"{self.path}: {self.where}", "the network's affine forms")
        if error:
            raise error

    def node(self, data, k: int):
        wire = self.wire
        where = f"graph.node[{k}]"
        node = wire.message(data, where, {1: "input", 2: "output", 4: "op_type", 5: "attribute", 7: "domain"})
        op = wire.text(node, 4, f"{where}.op_type")
        where = f"{where} ({op[:40]})"
        if op not in ATTRIBUTES or wire.text(node, 7, f"{where}.domain") not in ("", "ai.onnx"):
            wire.fail(
                where, f"operator {op[:40]!r}: the checker reads {', '.join(sorted(ATTRIBUTES))}; {IMPORTED_JSON}"
            )
        names = [wire.string(v, f"{where}.input") for v in wire.many(node, 1, f"{where}.input")]
        outputs = [wire.string(v, f"{where}.output") for v in wire.many(node, 2, f"{where}.output")]
        if len(names) not in ARITY.get(op, (1,)) or len(outputs) != 1:
            wire.fail(where, f"{len(names)} inputs and {len(outputs)} outputs")
        attrs = self.attributes(wire.many(node, 5, f"{where}.attribute"), op, where)
        if outputs[0] in self.values or outputs[0] in self.pending:
            wire.fail(where, f"the output {outputs[0][:80]!r} is already a value")
        if "" in names[:2] or op == "Constant" and "value" not in attrs:
            wire.fail(where, "a required input or the value attribute is missing")
        args = [self.value(n, f"{where}.input") if n else None for n in names]
        if any(isinstance(x, Var) and x.frame != len(self.layers) for x in args):
            wire.fail(where, f"reads a value from before the last Relu (a skip connection); {IMPORTED_JSON}")
        self.where = where
        try:
            self.values[outputs[0]] = attrs["value"] if op == "Constant" else getattr(self, op.lower())(*args, **attrs)
        except Malformed as e:  # reader.combine's cap on derived numbers does not name the file
            if str(e).startswith(f"{self.path}: "):
                raise
            wire.fail(where, str(e))

    def attributes(self, attributes: list, op: str, where: str) -> dict:
        """{name: value} of a node's attributes, each one of ``ATTRIBUTES[op]``, at most once, of its type."""
        wire, out = self.wire, {}
        for i, data in enumerate(attributes):
            at = f"{where}.attribute[{i}]"
            attr = wire.message(data, at, {1: "name", 2: "f", 3: "i", 5: "t", 20: "type"})
            name = wire.text(attr, 1, f"{at}.name")
            field = ATTRIBUTES[op].get(name)
            if field is None or name in out:
                wire.fail(
                    at,
                    f"attribute {name[:40]!r}: {op} is read with {sorted(ATTRIBUTES[op]) or 'none'}, once each; "
                    f"{IMPORTED_JSON}",
                )
            kind = wire.one(attr, 20, 0, f"{at}.type", None)
            if kind is not None and kind != {2: 1, 3: 2, 5: 4}[field] or field not in attr:
                wire.fail(
                    at, f"attribute {name!r}: expected a {({2: 'float', 3: 'integer', 5: 'tensor'})[field]} value"
                )
            value = wire.one(attr, field, {2: 5, 3: 0, 5: 2}[field], f"{at}.{name}")
            if field == 2:
                out[name] = wire.exact(struct.unpack("<f", value)[0], f"{at}.f")
            else:
                out[name] = signed(value) if field == 3 else wire.tensor(value, f"{at}.t")
        return out

    def fail(self, message: str):
        self.wire.fail(self.where, message)

    def numeric(self, x):
        """``x``, refused if an int64 constant (read only as a Reshape's shape)."""
        if isinstance(x, Const) and x.integral:
            self.fail(f"an int64 operand: the checker reads int64 tensors only as a Reshape's shape; {IMPORTED_JSON}")
        return x

    def forms(self, x) -> list:
        """The entries of ``x`` as affine forms (a constant's are constant forms)."""
        if isinstance(x, Var):
            return x.forms
        return [{ONE: v} if v else {} for v in self.numeric(x).values]

    def broadcast(self, *shapes) -> tuple:
        """The multidirectional (NumPy) broadcast of ``shapes``, and per shape the index of its entry
        read by each entry of the result (row-major)."""
        rank = max(map(len, shapes))
        padded = [(1,) * (rank - len(s)) + tuple(s) for s in shapes]
        out = []
        for dims in zip(*padded):
            sizes = set(dims) - {1}
            if len(sizes) > 1:
                self.fail(f"shapes {[list(s) for s in shapes]} do not broadcast")
            out.append(sizes.pop() if sizes else 1)
        self.wire.count(math.prod(out), self.where)
        maps = []
        for p in padded:
            strides, step = [], 1
            for d in reversed(p):
                strides.append(step if d > 1 else 0)
                step *= d
            strides.reverse()
            maps.append([sum(i * s for i, s in zip(index, strides)) for index in product(*map(range, out))])
        return tuple(out), maps

    def identity(self, x):
        return x

    def flatten(self, x, axis=1):
        rank = len(x.shape)
        if not -rank <= axis <= rank:
            self.fail(f"axis {axis} outside [{-rank}, {rank}]")
        axis = axis + rank if axis < 0 else axis
        return x._replace(shape=(math.prod(x.shape[:axis]), math.prod(x.shape[axis:])))

    def reshape(self, x, shape, allowzero=0):
        if not (isinstance(shape, Const) and shape.integral and len(shape.shape) == 1):
            self.fail("the shape is not a constant int64 vector")
        dims = list(shape.values)
        if not allowzero and any(d == 0 and i >= len(x.shape) for i, d in enumerate(dims)):
            self.fail(f"a 0 in {dims} copies a dimension {list(x.shape)} does not have")
        dims = [x.shape[i] if d == 0 and not allowzero else d for i, d in enumerate(dims)]
        size = math.prod(x.shape)
        if dims.count(-1) == 1:
            known = -math.prod(dims)
            dims[dims.index(-1)] = size // known if known > 0 and size % known == 0 else -1
        if any(d < 0 for d in dims) or math.prod(dims) != size:
            self.fail(f"cannot reshape {list(x.shape)} to {list(shape.values)}")
        return x._replace(shape=tuple(dims))

    def add(self, a, b, sign=1):
        shape, (ia, ib) = self.broadcast(a.shape, b.shape)
        if isinstance(a, Const) and isinstance(b, Const):
            a, b = self.numeric(a).values, self.numeric(b).values
            return Const(shape, [a[i] + sign * b[j] for i, j in zip(ia, ib)], False)
        fa, fb = self.forms(a), self.forms(b)
        self.charge(sum(len(fa[i]) + len(fb[j]) for i, j in zip(ia, ib)))
        return Var(shape, [combine([(1, fa[i]), (sign, fb[j])]) for i, j in zip(ia, ib)], len(self.layers))

    def sub(self, a, b):
        return self.add(a, b, -1)

    def matmul(self, a, b, scale=Fraction(1), bias=None):
        """``a @ b`` (``a`` input-dependent, of rank ≥ 1; ``b`` a constant matrix), times ``scale``, plus ``bias``
        (one constant per entry of the result)."""
        if not (isinstance(a, Var) and isinstance(b, Const) and len(b.shape) == 2 and a.shape[-1:] == b.shape[:1]):
            self.fail(
                f"expected an input-dependent value of shape [..., k] times a constant [k, n], got "
                f"{type(a).__name__} {list(a.shape)} and {type(b).__name__} {list(b.shape)}; {IMPORTED_JSON}"
            )
        k, n = b.shape
        if k == 0:
            self.fail("an empty product (k = 0)")
        w = self.numeric(b).values
        rows = [a.forms[r * k : (r + 1) * k] for r in range(len(a.forms) // k)]
        self.wire.count(len(rows) * n, self.where)
        nonzero = [sum(1 for j in range(n) if w[i * n + j]) for i in range(k)]  # per row i of b
        self.charge(sum(nonzero[i] * len(row[i]) for row in rows for i in range(k)))
        columns = [[(scale * w[i * n + j], i) for i in range(k) if w[i * n + j]] for j in range(n)]
        bias = bias or [0] * (len(rows) * n)
        return Var(
            a.shape[:-1] + (n,),
            [
                combine([(c, row[i]) for c, i in col], bias[r * n + j])
                for r, row in enumerate(rows)
                for j, col in enumerate(columns)
            ],
            a.frame,
        )

    def gemm(self, a, b, c=None, alpha=Fraction(1), beta=Fraction(1), transA=0, transB=0):
        """alpha · A' B' + beta · C, A' = A or its transpose (transA), B' likewise; C constant, broadcast to A' B'."""
        if not (
            isinstance(a, Var)
            and len(a.shape) == 2
            and isinstance(b, Const)
            and len(b.shape) == 2
            and not isinstance(c, Var)
        ):
            self.fail(f"expected an input-dependent matrix A, a constant matrix B and a constant C; {IMPORTED_JSON}")
        if transA:
            a = Var(
                a.shape[::-1],
                [a.forms[i * a.shape[1] + m] for m in range(a.shape[1]) for i in range(a.shape[0])],
                a.frame,
            )
        if transB:
            b = Const(
                b.shape[::-1],
                [b.values[i * b.shape[1] + m] for m in range(b.shape[1]) for i in range(b.shape[0])],
                b.integral,
            )
        bias = None
        if c is not None:
            shape, (_, ic) = self.broadcast((a.shape[0], b.shape[-1]), c.shape)
            if shape != (a.shape[0], b.shape[-1]):
                self.fail(f"C of shape {list(c.shape)} does not broadcast to A'B' {list(shape)}")
            bias = [beta * self.numeric(c).values[i] for i in ic]
        return self.matmul(a, b, alpha, bias)

    def relu(self, x):
        """max(x, 0) entrywise: a constant's, or a new ReLU layer of one unit per entry (a new frame)."""
        if isinstance(x, Const):
            return Const(x.shape, [max(v, Fraction(0)) for v in self.numeric(x).values], False)
        self.charge(sum(map(len, x.forms)))
        self.layers.append(relu_layer(x.forms))
        return Var(x.shape, [{i: Fraction(1)} for i in range(len(x.forms))], len(self.layers))
