"""Importers of real networks (ONNX, ``.nnet``, ``torch.save``) → exact ``MaxoutNet``, chosen by suffix."""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from ..formats import InputError
from ..models import Box, MaxoutNet
from ..models.box import domain_box

SUFFIXES = {".onnx": "onnx", ".nnet": "nnet", ".pt": "torch", ".pth": "torch"}


def _kind(path: str) -> str:
    kind = SUFFIXES.get(Path(path).suffix.lower())
    if kind is None:
        raise InputError(path, "", f"unknown network suffix; expected one of {', '.join(sorted(SUFFIXES))}")
    if not Path(path).is_file():
        raise InputError(path, "", "no such file")
    return kind


def import_network(path: str, domain: list[tuple[Fraction, Fraction]], input_shape=None,
                   notes: list[str] | None = None, domain_source: str = "--domain",
                   broadcast: bool = True) -> MaxoutNet:
    """``domain``: one ``(lower, upper)`` pair for every input, or a single pair for all of them;
    ``input_shape``: the tensor shape of a torch module's input (ONNX and .nnet files carry theirs);
    ``notes`` collects what the conversion had to round (BatchNormalization square roots);
    ``broadcast``: whether a single pair may stand for every input."""
    kind = _kind(path)

    def box(dim: int) -> Box:
        return domain_box(domain, dim, domain_source, broadcast)

    if kind == "onnx":
        from .onnx import load_onnx
        return load_onnx(path, box, notes)
    if kind == "nnet":
        from .nnet import load_nnet
        return load_nnet(path, box)
    from .torch import load_torch
    return load_torch(path, box, input_shape, notes)


def reference(path: str, input_shape=None):
    """The source's own float evaluation for the self-check: ``(f(points) -> outputs, name)``."""
    kind = _kind(path)
    if kind == "onnx":
        from .onnx import onnxruntime_reference
        run = onnxruntime_reference(path)
        return run, run.source
    if kind == "torch":
        from .torch import default_input_shape, load_module, torch_reference
        module = load_module(path)
        shape = tuple(input_shape) if input_shape is not None else default_input_shape(module, path)
        return torch_reference(module, shape), "torch (float64)"
    from .nnet import nnet_reference
    return nnet_reference(path), "the .nnet text in float64"
