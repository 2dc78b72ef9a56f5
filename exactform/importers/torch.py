"""PyTorch modules → exact ``MaxoutNet``: from an ``nn.Module`` in Python, or a ``torch.save``d one.

A module is traced by the TorchScript ONNX exporter (``dynamo=False``, no constant folding, so
every weight reaches the lowering as the module holds it and BatchNorm is not folded in float32)
into an in-memory ONNX graph, which ``onnx.load_onnx`` lowers exactly; a residual ``forward``
traces like any other. Where the TorchScript exporter has no rule (adaptive pooling whose output
size does not divide the input size), ``torch.export`` and the dynamo exporter (unoptimised) are
used instead. The import is exact to the traced graph: the module's float32 weights as stored,
and its Python-float constants (a LeakyReLU slope) as the exporter stores them, in float32.

Files are loaded with ``weights_only=True`` and only the ``torch.nn`` classes listed in
``_allowed`` permitted, so loading never runs code from the file. A custom class (a residual
block) cannot be loaded safely from a file: its one-line error says to call
``exactform.from_torch`` in Python or to save a ``torch.export`` program (``.pt2``, see
``export``); a ``state_dict`` gets one line saying what to pass.
"""
from __future__ import annotations

import contextlib
import copy
import io
import logging
import os
import re
import sys
import warnings
import zipfile
from fractions import Fraction

from ..formats import InputError
from ..models import Box, MaxoutNet
from ..models.box import domain_box
from ..numbers import RationalSyntaxError, from_float, parse_decimal, parse_rational


def _allowed():
    """The ``torch.nn`` classes a ``.pt`` file may name: containers and layers without code of
    their own (those without an exact lowering load too, so their refusal names the operator)."""
    from torch import nn
    return [nn.Sequential, nn.Linear, nn.ReLU, nn.Conv1d, nn.Conv2d, nn.ConvTranspose1d, nn.ConvTranspose2d,
            nn.MaxPool1d, nn.MaxPool2d, nn.AvgPool1d, nn.AvgPool2d, nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d,
            nn.AdaptiveMaxPool1d, nn.AdaptiveMaxPool2d, nn.BatchNorm1d, nn.BatchNorm2d, nn.LeakyReLU, nn.PReLU,
            nn.ReLU6, nn.Hardtanh, nn.Hardsigmoid, nn.Flatten, nn.Unflatten, nn.Identity, nn.Dropout, nn.Dropout1d,
            nn.Dropout2d, nn.ZeroPad1d, nn.ZeroPad2d, nn.ConstantPad1d, nn.ConstantPad2d, nn.ReflectionPad1d,
            nn.ReflectionPad2d, nn.ReplicationPad1d, nn.ReplicationPad2d, nn.CircularPad1d, nn.CircularPad2d,
            nn.Upsample, nn.UpsamplingNearest2d, nn.PixelShuffle, nn.PixelUnshuffle, nn.Softmax, nn.LogSoftmax,
            nn.Sigmoid, nn.Tanh]


SAFE_PATHS = ("in Python, build the module and call exactform.from_torch(module, domain, input_shape=...), or "
              "save a torch.export program (torch.export.save(torch.export.export(module, (x,)), 'net.pt2')), "
              "which carries the graph without code, and import that")


def load_module(path: str):
    """The ``nn.Module`` saved in ``path``, loaded without running code from the file."""
    import pickle

    import torch
    _refuse_other_formats(path)
    try:
        with torch.serialization.safe_globals(_allowed()):
            module = torch.load(path, weights_only=True, map_location="cpu")
    except pickle.UnpicklingError as e:
        name = re.search(r"GLOBAL ([\w.]+)", str(e))
        what = f"class {name.group(1)}" if name else "a class"
        raise InputError(path, "", f"the file needs {what}, which is not a torch.nn class exactform loads; "
                         f"unpickling it would run code from the file; {SAFE_PATHS}") from None
    except Exception as e:  # corrupt zip, truncated file, ...
        raise InputError(path, "", f"not a readable torch.save file ({type(e).__name__})") from None
    if isinstance(module, dict):
        raise InputError(path, "", "this is a state_dict (weights without the architecture); save the whole "
                         "module with torch.save(model), or in Python call model.load_state_dict(...) and "
                         "exactform.from_torch(model, domain)")
    if not isinstance(module, torch.nn.Module):
        raise InputError(path, "", f"expected a saved nn.Module, got {type(module).__name__}")
    return module


def _refuse_other_formats(path: str) -> None:
    """A ``torch.export`` archive or an ONNX model under a ``.pt`` name is named as such."""
    with open(path, "rb") as f:
        head = f.read(4)
    if head.startswith(b"PK"):
        with contextlib.suppress(zipfile.BadZipFile, OSError), zipfile.ZipFile(path) as z:
            if any(n.endswith("/archive_format") or n == "archive_format" for n in z.namelist()):
                raise InputError(path, "", "this is a torch.export program (torch.export.save), not a torch.save "
                                 "file; name it NET.pt2")
        return
    if head[:1] != b"\x80":                # not a pickle either: an ONNX protobuf?
        import onnx
        try:
            is_onnx = bool(onnx.load(path, load_external_data=False).graph.node)
        except Exception:  # protobuf's errors on anything else
            is_onnx = False
        if is_onnx:
            raise InputError(path, "", "this is an ONNX model, not a torch.save file; name it NET.onnx")


@contextlib.contextmanager
def quiet():
    """The exporters' warnings, log lines and prints held back, their C++ ones too (the
    TorchScript exporter writes its graph dump to file descriptor 1): errors are one line."""
    logger = logging.getLogger("torch")
    level = logger.level
    logger.setLevel(logging.ERROR)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    sink = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(sink, 1)
        os.dup2(sink, 2)
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, sink):
            os.close(fd)
        logger.setLevel(level)


def load_torch(path: str, domain, input_shape=None, notes: list[str] | None = None,
               strip_softmax: bool = False) -> MaxoutNet:
    """``domain(input_dim) -> Box``; ``input_shape`` as in ``from_module``."""
    return from_module(load_module(path), domain, input_shape, notes, source=path, strip_softmax=strip_softmax)


def default_input_shape(module, source: str = "<module>") -> tuple[int, ...]:
    """``(1, in_features)`` of a first ``Linear`` (before any other layer, in registration order)."""
    from torch import nn
    for m in module.modules():
        if isinstance(m, nn.Linear):
            return (1, m.in_features)
        if m is not module and not isinstance(m, (nn.Sequential, nn.Flatten, nn.Identity, nn.Dropout)):
            break
    raise InputError(source, "", "cannot tell the input shape of this module; pass input_shape, e.g. "
                     "(1, 1, 28, 28) (--input-shape 1,1,28,28)")


def from_module(module, domain, input_shape=None, notes: list[str] | None = None,
                source: str = "<module>", strip_softmax: bool = False) -> MaxoutNet:
    """The exact ``MaxoutNet`` of ``module`` (in eval mode) on ``domain``: a ``Box``, one
    ``(lower, upper)`` pair for every input or for all of them, or ``domain(input_dim) -> Box``.
    The input is ``input_shape`` (default ``(1, in_features)`` of a first ``Linear``), flattened
    row-major; ``strip_softmax`` drops a final Softmax/LogSoftmax."""
    import torch

    from .onnx import load_onnx
    shape = tuple(input_shape) if input_shape is not None else default_input_shape(module, source)
    dtype = next((p.dtype for p in module.parameters()), torch.float32)
    module = copy.deepcopy(module).eval()
    model = to_onnx(module, torch.zeros(shape, dtype=dtype), source)
    return load_onnx(source, as_domain(domain), notes, model=model, strip_softmax=strip_softmax)


def to_onnx(module, example, source: str):
    """The ONNX model of ``module`` traced at ``example``: by the TorchScript exporter, or where it
    has no rule for a layer, by ``torch.export`` and the dynamo exporter (unoptimised)."""
    import onnx
    import torch
    buffer = io.BytesIO()
    try:
        with quiet():
            torch.onnx.export(module, (example,), buffer, dynamo=False, do_constant_folding=False,
                              opset_version=17, input_names=["x"], output_names=["y"])
        return onnx.load_from_string(buffer.getvalue())
    except Exception as e:  # the exporter raises many types; its first line names the problem
        first = _first_line(e)
    try:
        with quiet():
            return export_program(torch.export.export(module, (example,)), example)
    except Exception as e:
        raise InputError(source, "", f"torch.onnx.export failed: {first}; torch.export: {_first_line(e)}") from None


def export_program(program, example):
    """The ONNX model of a ``torch.export`` program, by the dynamo exporter without optimisation
    (no constant folding: the weights reach the lowering as the program holds them)."""
    import torch
    with quiet():
        return torch.onnx.export(program, (example,), dynamo=True, optimize=False, verbose=False).model_proto


def _first_line(error: Exception) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]


def torch_reference(module, input_shape):
    """``f(points) -> outputs`` by ``module`` evaluated in float64 (a copy; weights widen exactly).
    Its Python-float constants (a LeakyReLU slope) stay unrounded there, while the import is exact
    to their float32 values in the traced graph: ``f.tolerance`` allows for that."""
    import torch
    double = copy.deepcopy(module).eval().double()

    def run(points):
        with torch.no_grad():
            x = torch.tensor([[float(v) for v in p] for p in points], dtype=torch.float64)
            return [double(row.reshape(input_shape)).reshape(-1).tolist() for row in x]
    run.source, run.tolerance = "torch in float64", TORCH_TOLERANCE
    return run


TORCH_TOLERANCE = 1e-6
"""Self-check tolerance against a torch module in float64: float64 rounding (≈10⁻¹⁵) plus the
float32 rounding of the module's Python-float constants (≤ 2⁻²⁴ ≈ 6·10⁻⁸ relative each)."""


def as_domain(domain):
    """``Box`` / pairs / callable → ``domain(input_dim) -> Box`` (numbers exact; floats convert exactly)."""
    if callable(domain):
        return domain
    if isinstance(domain, Box):
        def fixed(dim):
            if dim != domain.dim:
                raise InputError("domain", "", f"a box of {domain.dim} inputs for a network of {dim}")
            return domain
        return fixed
    pairs = [domain] if len(domain) == 2 and not isinstance(domain[0], (tuple, list)) else list(domain)
    exact = [(_exact(lo), _exact(hi)) for lo, hi in pairs]
    return lambda dim: domain_box(exact, dim, "domain")


def _exact(value) -> Fraction:
    if isinstance(value, float):
        return from_float(value)
    if isinstance(value, str):
        try:
            return parse_rational(value)
        except RationalSyntaxError:
            return parse_decimal(value)
    return Fraction(value)
