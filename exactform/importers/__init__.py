"""Importers of real networks (ONNX, ``.nnet``, ``torch.save``) → exact ``MaxoutNet``, chosen by suffix."""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from ..formats import InputError
from ..models import Box, MaxoutNet
from ..models.box import domain_box

SUFFIXES = {".onnx": "onnx", ".nnet": "nnet", ".pt": "torch", ".pth": "torch"}


def import_network(path: str, domain: list[tuple[Fraction, Fraction]]) -> MaxoutNet:
    """``domain``: one ``(lower, upper)`` pair for every input, or a single pair for all of them."""
    kind = SUFFIXES.get(Path(path).suffix.lower())
    if kind is None:
        raise InputError(path, "", f"unknown network suffix; expected one of {', '.join(sorted(SUFFIXES))}")
    if not Path(path).is_file():
        raise InputError(path, "", "no such file")

    def box(dim: int) -> Box:
        return domain_box(domain, dim)

    if kind == "onnx":
        from .onnx import load_onnx
        return load_onnx(path, box)
    if kind == "nnet":
        from .nnet import load_nnet
        return load_nnet(path, box)
    from .torch import load_torch
    return load_torch(path, box)
