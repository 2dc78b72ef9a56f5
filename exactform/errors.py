"""The exceptions of exactform, one hierarchy rooted in ``ValueError`` (standard library only, so the
command line can catch them without importing the readers)."""
from __future__ import annotations

import importlib.util
from collections.abc import Sequence


class Error(ValueError):
    """Every error exactform raises for bad input, a missing extra or a claim it cannot prove."""


class InputError(Error):
    """Bad input: a one-line message with file, field path and index."""

    def __init__(self, source: str, path: str, message: str):
        self.source, self.path, self.message = source, path, message
        where = f"{source}: {path}" if path else source
        super().__init__(f"{where}: {message}")


class NotProved(Error):
    """The prover could not establish a claim; ``problems`` lists what fails."""

    def __init__(self, message: str, problems: Sequence[str] = ()):
        super().__init__(message)
        self.problems = list(problems)


EXTRAS = {"onnx": "onnx", "onnxruntime": "onnx", "onnxscript": "onnx", "torch": "torch",
          "matplotlib": "plot", "distributed": "dask", "cvc5": "smt"}
"""The optional dependencies and the extra (``pyproject.toml``) that installs each."""


NETWORK_MODULES = {".onnx": "onnx", ".pt": "torch", ".pth": "torch", ".pt2": "torch"}
"""The optional module each kind of network file needs (``.nnet`` and JSON need none)."""


def requires_for(path: str) -> None:
    """``requires`` for the network file ``path``, by its suffix (the importers' readers)."""
    module = NETWORK_MODULES.get(path[path.rfind("."):].lower()) if "." in path else None
    if module:
        requires(module, path)


def requires(module: str, what: str) -> None:
    """``InputError`` naming ``pip install 'exactform[EXTRA]'`` unless ``module`` can be imported,
    checked before any work (``what``: the command or file that needs it)."""
    if importlib.util.find_spec(module) is None:
        raise InputError(what, "", f"needs {module}, which is not installed: pip install 'exactform[{EXTRAS[module]}]'")
