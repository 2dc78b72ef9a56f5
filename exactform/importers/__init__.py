"""Importers of real networks (ONNX, ``.nnet``, ``torch.save``, ``torch.export``) → exact
``MaxoutNet``, chosen by suffix."""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from ..formats import InputError
from ..models import Box, MaxoutNet
from ..models.box import domain_box

SUFFIXES = {".onnx": "onnx", ".nnet": "nnet", ".pt": "torch", ".pth": "torch", ".pt2": "export"}
SHAPED = ("torch",)
"""Kinds whose files do not state their input shape (``--input-shape``)."""


def _kind(path: str) -> str:
    """The importer of ``path`` by its suffix, once the file exists and the extra it needs is installed."""
    from ..errors import requires_for
    kind = SUFFIXES.get(Path(path).suffix.lower())
    if kind is None:
        raise InputError(path, "", f"unknown network suffix; expected one of {', '.join(sorted(SUFFIXES))}")
    if not Path(path).is_file():
        raise InputError(path, "", "no such file")
    requires_for(path)
    return kind


def import_network(path: str, domain: list[tuple[Fraction, Fraction]], input_shape=None,
                   notes: list[str] | None = None, domain_source: str = "--domain",
                   broadcast: bool = True, strip_softmax: bool = False) -> MaxoutNet:
    """``domain``: one ``(lower, upper)`` pair for every input, or a single pair for all of them;
    ``input_shape``: the tensor shape of a torch module's input (ONNX, ``.nnet`` and ``.pt2`` files
    carry theirs: giving one for them is an error); ``notes`` collects what the conversion had to
    round (BatchNormalization square roots); ``broadcast``: whether a single pair may stand for
    every input; ``strip_softmax``: drop a final Softmax/LogSoftmax (said in the net's provenance)."""
    kind = _kind(path)
    if input_shape is not None and kind not in SHAPED:
        raise InputError(path, "--input-shape", "this file states its own input shape; --input-shape is only "
                         "for .pt files")

    def box(dim: int) -> Box:
        return domain_box(domain, dim, domain_source, broadcast)

    if kind == "onnx":
        from .onnx import load_onnx
        return load_onnx(path, box, notes, strip_softmax=strip_softmax)
    if kind == "nnet":
        from .nnet import load_nnet
        return load_nnet(path, box)
    if kind == "export":
        from .export import load_export
        return load_export(path, box, notes, strip_softmax)
    from .torch import load_torch
    return load_torch(path, box, input_shape, notes, strip_softmax)


def reference(path: str, input_shape=None, strip_softmax: bool = False):
    """The source's own float evaluation for the self-check: ``f(points) -> outputs`` with the
    attributes ``source`` (what evaluates, in which float type) and ``tolerance``; with
    ``strip_softmax``, of the source without its final Softmax/LogSoftmax."""
    from ..errors import requires
    kind = _kind(path)
    if kind == "onnx":
        requires("onnxruntime", path)
        from .onnx import onnxruntime_reference
        return onnxruntime_reference(path, strip_softmax)
    if kind == "torch":
        from torch import nn

        from .torch import default_input_shape, load_module, torch_reference
        module = load_module(path)
        shape = tuple(input_shape) if input_shape is not None else default_input_shape(module, path)
        if strip_softmax and isinstance(module, nn.Sequential) and isinstance(module[-1], (nn.Softmax, nn.LogSoftmax)):
            module = module[:-1]
        return torch_reference(module, shape)
    if kind == "export":
        from .export import export_reference
        return export_reference(path, strip_softmax)
    from .nnet import nnet_reference
    return nnet_reference(path)
