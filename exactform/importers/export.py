"""``torch.export`` programs (``.pt2``, written by ``torch.export.save``) → exact ``MaxoutNet``,
without running code from the file.

``torch.export.load`` itself is not safe on an untrusted file: it unpickles weights and constants
flagged ``use_pickle``, falls back to ``torch.load(weights_only=False)`` for sample inputs, parses
symbolic shape expressions with ``sympy.sympify`` (``eval``), resolves metadata by name, and later
``exec``s the program's guard code. So the archive is checked first, as data, and only what is
left is handed to torch's deserializer:

* a zip archive of at most ``MAX_BYTES`` (uncompressed), holding one program (``models/model.json``),
  its weight and constant configurations and raw tensor payloads, and nothing else (no AOTInductor
  libraries, no legacy pickled weights);
* no payload flagged ``use_pickle``, no custom or opaque objects among the constants;
* static shapes only (no symbolic expressions, no range constraints);
* every node's target an ATen operator (``torch.ops.aten.<name>.<overload>``) or
  ``operator.getitem``, every value name an identifier; node metadata and guard code are dropped,
  the sample inputs never read.

Trusted: torch's JSON deserializer and raw-tensor reader, the ATen operators, the dynamo ONNX
exporter (unoptimised: no constant folding), which turns the program into ONNX for ``onnx.load_onnx``.
"""
from __future__ import annotations

import json
import operator
import os
import re
import zipfile

from ..formats import InputError
from ..models import MaxoutNet
from .onnx import MAX_BYTES

TARGET = re.compile(r"torch\.ops\.aten\.[A-Za-z_]\w*\.[A-Za-z_]\w*|_operator\.getitem")
NAME = re.compile(r"[A-Za-z_]\w*")
PARTS = re.compile(r"(models/model\.json|data/(weights|constants)/(model_(weights|constants)_config\.json|"
                   r"(weight|tensor)_\d+)|data/sample_inputs/model\.pt|archive_format|archive_version|byteorder|"
                   r"\.data/(version|serialization_id))")
"""The members of an archive with one program, as ``torch.export.save`` writes it (below its root)."""


def load_program(path: str):
    """The ``ExportedProgram`` in ``path``, after the checks above (made before torch is imported);
    its one input's shape and dtype."""
    program = _checked_program(path)
    import torch
    from torch._export.serde import schema
    from torch._export.serde.serialize import ExportedProgramDeserializer, _dict_to_dataclass
    from torch.export.pt2_archive._package import PT2ArchiveReader, _load_constants, _load_state_dict

    try:
        serialized = _dict_to_dataclass(schema.ExportedProgram, program)
        with PT2ArchiveReader(path) as reader:
            weights = _load_state_dict(reader, "model")
            constants = _load_constants(reader, "model")
        from .torch import quiet
        with quiet():
            ep = ExportedProgramDeserializer().deserialize(serialized, weights, constants, None)
    except InputError:
        raise
    except Exception as e:  # torch's deserializer raises many types on inconsistent archives
        raise InputError(path, "", f"not a readable torch.export program ({type(e).__name__}: "
                         f"{(str(e).strip().splitlines() or [''])[0][:120]})") from None
    for node in ep.graph.nodes:
        aten = isinstance(node.target, torch._ops.OpOverload) and node.target.namespace == "aten"
        if node.op not in ("placeholder", "output") and not (node.op == "call_function" and
                                                             (aten or node.target is operator.getitem)):
            raise InputError(path, f"node {node.name}", f"{node.op} {str(node.target)[:60]!r} is not an ATen operator")
    users = [s for s in ep.graph_signature.input_specs if s.kind == torch.export.graph_signature.InputKind.USER_INPUT]
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    if len(users) != 1 or len(ep.graph_signature.user_outputs) != 1:
        raise InputError(path, "graph_signature", f"expected one input and one output, got {len(users)} and "
                         f"{len(ep.graph_signature.user_outputs)}")
    value = placeholders[users[0].arg.name].meta.get("val")
    if value is None or not all(isinstance(d, int) for d in value.shape):
        raise InputError(path, "graph_signature", "the input has no static shape")
    return ep, tuple(value.shape), value.dtype


def _checked_program(path: str) -> dict:
    """The program's JSON, checked and stripped of metadata and guard code (module docstring)."""
    if os.path.getsize(path) > MAX_BYTES:
        raise InputError(path, "", f"more than {MAX_BYTES:,} bytes; the documented limit")
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError):
        raise InputError(path, "", "not a torch.export program (torch.export.save writes a zip archive)") from None
    with archive:
        infos = archive.infolist()
        if sum(i.file_size for i in infos) > MAX_BYTES:
            raise InputError(path, "", f"its members hold more than {MAX_BYTES:,} bytes; the documented limit")
        roots = {i.filename.split("/", 1)[0] for i in infos}
        if len(roots) != 1:
            raise InputError(path, "", "not a torch.export program (one root folder expected)")
        root = roots.pop() + "/"
        names = {i.filename[len(root):] for i in infos if not i.is_dir()}
        for name in sorted(names):
            if not PARTS.fullmatch(name):
                raise InputError(path, name, "not part of a plain torch.export program (one program, raw tensors "
                                 "only); refused rather than read")
        if "models/model.json" not in names or archive.read(root + "archive_format").strip() != b"pt2":
            raise InputError(path, "", "not a torch.export program written by torch.export.save")
        for kind in ("weights", "constants"):
            config = _json(archive, root + f"data/{kind}/model_{kind}_config.json", path)
            for fqn, meta in (config.get("config") or {}).items():
                if not isinstance(meta, dict) or meta.get("use_pickle") or \
                        not re.fullmatch(r"(weight|tensor)_\d+", str(meta.get("path_name"))):
                    raise InputError(path, f"data/{kind}/{fqn}", "a pickled payload or an object; loading it would "
                                     "run code from the file")
        program = _json(archive, root + "models/model.json", path)
    _check_graph(program, path)
    return program


def _json(archive, name: str, path: str) -> dict:
    try:
        value = json.loads(archive.read(name))
    except KeyError:
        raise InputError(path, name, "missing") from None
    except ValueError:
        raise InputError(path, name, "not JSON") from None
    if not isinstance(value, dict):
        raise InputError(path, name, "expected an object")
    return value


def _check_graph(program: dict, path: str) -> None:
    """Refuse symbolic shapes, non-ATen targets and odd names; drop metadata and guard code."""
    if program.get("range_constraints"):
        raise InputError(path, "range_constraints", "the program has dynamic shapes; export it with static shapes "
                         "(torch.export.export without dynamic_shapes)")
    program["guards_code"] = []
    module = program.get("graph_module")
    graph = module.get("graph") if isinstance(module, dict) else None
    if not isinstance(graph, dict) or not isinstance(graph.get("nodes"), list):
        raise InputError(path, "graph_module.graph", "missing")
    for key in ("sym_int_values", "sym_float_values", "sym_bool_values"):
        if graph.get(key):
            raise InputError(path, f"graph_module.graph.{key}", "the program has symbolic values; export it with "
                             "static shapes")
    for k, node in enumerate(graph["nodes"]):
        where = f"graph_module.graph.nodes[{k}]"
        target = node.get("target") if isinstance(node, dict) else None
        if not isinstance(target, str) or not TARGET.fullmatch(target):
            raise InputError(path, where, f"target {str(target)[:80]!r} is not an ATen operator; only ATen "
                             "operators are run")
        node["metadata"] = {}
    for name in _names(graph):
        if not NAME.fullmatch(name):
            raise InputError(path, "graph_module.graph", f"value name {name[:40]!r} is not an identifier")
    for key in ("as_expr", "expr_str"):
        if _contains_key(program, key):
            raise InputError(path, "graph_module", "the program has symbolic shapes; export it with static shapes")


def _names(value):
    """Every ``name`` string of the graph's values and nodes."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "name" and isinstance(v, str):
                yield v
            else:
                yield from _names(v)
    elif isinstance(value, list):
        for v in value:
            yield from _names(v)


def _contains_key(value, key: str) -> bool:
    if isinstance(value, dict):
        return key in value or any(_contains_key(v, key) for v in value.values())
    if isinstance(value, list):
        return any(_contains_key(v, key) for v in value)
    return False


def load_export(path: str, domain, notes: list[str] | None = None, strip_softmax: bool = False) -> MaxoutNet:
    """``domain(input_dim) -> Box``: the program's exact net (through the dynamo ONNX exporter)."""
    ep, shape, dtype = load_program(path)
    import torch

    from .onnx import load_onnx
    from .torch import export_program
    try:
        model = export_program(ep, torch.zeros(shape, dtype=dtype))
    except Exception as e:  # the exporter raises many types
        raise InputError(path, "", f"the dynamo ONNX exporter failed: {(str(e).strip().splitlines() or [''])[0][:160]}"
                         ) from None
    return load_onnx(path, domain, notes, model=model, strip_softmax=strip_softmax)


SOFTMAX = ("_softmax", "softmax", "_log_softmax", "log_softmax")
"""ATen operators ``strip_softmax`` drops from the end of a program."""


def export_reference(path: str, strip_softmax: bool = False):
    """``f(points) -> outputs``: the program run by torch in float64 (weights widen exactly), or in
    its own float type where it does not run in float64; ``strip_softmax``: without a final
    softmax."""
    ep, shape, dtype = load_program(path)
    import torch

    from .torch import TORCH_TOLERANCE
    module = ep.module()
    if strip_softmax:
        output = next(n for n in module.graph.nodes if n.op == "output")
        (last,) = output.args[0]
        if last.op == "call_function" and getattr(last.target, "_opname", None) in SOFTMAX:
            output.args = ((last.args[0],),)
            module.graph.eliminate_dead_code()
            module.recompile()
    example = torch.zeros(shape, dtype=torch.float64)
    try:
        with torch.no_grad():
            module.double()(example)
        wide = torch.float64
    except Exception:  # a program that fixes its dtypes: compared in its own type
        module, wide = module.float() if dtype == torch.float32 else module, dtype

    def run(points):
        with torch.no_grad():
            return [module(torch.tensor([float(v) for v in p], dtype=wide).reshape(shape)).reshape(-1)
                    .double().tolist() for p in points]
    run.source = f"torch.export program in {str(wide).removeprefix('torch.')}"
    run.tolerance = TORCH_TOLERANCE if wide == torch.float64 else 1e-3
    return run
