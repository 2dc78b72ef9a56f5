"""PyTorch modules → exact ``MaxoutNet``: from an ``nn.Module`` in Python, or a ``torch.save``d one.

A module is traced by the TorchScript ONNX exporter (``dynamo=False``, no constant folding, so
every weight reaches the lowering as the module holds it and BatchNorm is not folded in float32)
into an in-memory ONNX graph, which ``onnx.load_onnx`` lowers exactly; a residual ``forward``
traces like any other. Files are loaded with ``weights_only=True`` and only the ``torch.nn``
classes the lowering supports allowed, so loading never runs code from the file. A custom class
(a residual block) cannot be loaded safely from a file: its one-line error says to call
``from_module`` in Python instead; a ``state_dict`` gets one line saying what to pass.
"""
from __future__ import annotations

import copy
import io
import re
import warnings
from fractions import Fraction

from ..formats import InputError
from ..models import Box, MaxoutNet
from ..models.box import domain_box
from ..numbers import RationalSyntaxError, from_float, parse_decimal, parse_rational


def _allowed():
    from torch import nn
    return [nn.Sequential, nn.Linear, nn.ReLU, nn.Conv1d, nn.Conv2d, nn.MaxPool1d, nn.MaxPool2d, nn.AvgPool1d,
            nn.AvgPool2d, nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.BatchNorm1d, nn.BatchNorm2d,
            nn.LeakyReLU, nn.PReLU, nn.ReLU6, nn.Hardtanh, nn.Flatten, nn.Unflatten, nn.Identity, nn.Dropout]


def load_module(path: str):
    """The ``nn.Module`` saved in ``path``, loaded without running code from the file."""
    import pickle

    import torch
    try:
        with torch.serialization.safe_globals(_allowed()):
            module = torch.load(path, weights_only=True, map_location="cpu")
    except pickle.UnpicklingError as e:
        name = re.search(r"GLOBAL ([\w.]+)", str(e))
        what = f"class {name.group(1)}" if name else "a class"
        raise InputError(path, "", f"the file needs {what}, which is not a supported torch.nn module and "
                         "loading it would run code from the file; in Python, build the module and call "
                         "exactform.from_torch(module, domain), or export it with torch.onnx.export") from None
    except Exception as e:  # corrupt zip, truncated file, ...
        raise InputError(path, "", f"not a readable torch.save file ({type(e).__name__})") from None
    if isinstance(module, dict):
        raise InputError(path, "", "this is a state_dict (weights without the architecture); save the whole "
                         "module with torch.save(model), or in Python call model.load_state_dict(...) and "
                         "exactform.from_torch(model, domain)")
    if not isinstance(module, torch.nn.Module):
        raise InputError(path, "", f"expected a saved nn.Module, got {type(module).__name__}")
    return module


def load_torch(path: str, domain, input_shape=None, notes: list[str] | None = None) -> MaxoutNet:
    """``domain(input_dim) -> Box``; ``input_shape`` as in ``from_module``."""
    return from_module(load_module(path), domain, input_shape, notes, source=path)


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
                source: str = "<module>") -> MaxoutNet:
    """The exact ``MaxoutNet`` of ``module`` (in eval mode) on ``domain``: a ``Box``, one
    ``(lower, upper)`` pair for every input or for all of them, or ``domain(input_dim) -> Box``.
    The input is ``input_shape`` (default ``(1, in_features)`` of a first ``Linear``), flattened
    row-major."""
    import onnx
    import torch

    from .onnx import load_onnx
    shape = tuple(input_shape) if input_shape is not None else default_input_shape(module, source)
    dtype = next((p.dtype for p in module.parameters()), torch.float32)
    module = copy.deepcopy(module).eval()
    buffer = io.BytesIO()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(module, (torch.zeros(shape, dtype=dtype),), buffer, dynamo=False,
                              do_constant_folding=False, opset_version=17, input_names=["x"], output_names=["y"])
    except Exception as e:  # the exporter raises many types; its first line names the problem
        raise InputError(source, "", f"torch.onnx.export failed: {str(e).strip().splitlines()[0][:200]}") from None
    model = onnx.load_from_string(buffer.getvalue())
    return load_onnx(source, as_domain(domain), notes, model=model)


def torch_reference(module, input_shape):
    """``f(points) -> outputs`` by ``module`` evaluated in float64 (a copy; weights widen exactly)."""
    import torch
    dtype = next((p.dtype for p in module.parameters()), torch.float32)
    double = copy.deepcopy(module).eval().double()

    def run(points):
        with torch.no_grad():
            x = torch.tensor([[float(v) for v in p] for p in points], dtype=torch.float64)
            return [double(row.reshape(input_shape)).reshape(-1).tolist() for row in x]
    run.dtype = "float64" if dtype == torch.float64 else "float32"
    return run


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
