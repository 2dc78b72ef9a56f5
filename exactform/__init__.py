"""exactform: exact, machine-checked Transformer constructions of Maxout networks.

The Python API (``docs/api.md``) is loaded on first use, so ``import exactform`` is cheap::

    import exactform
    net = exactform.load("examples/relu_net.json")
    tf = exactform.compile(net)
    cert = exactform.certify(net, tf)
    assert exactform.check(cert)
"""
from __future__ import annotations

__version__ = "0.1.0"

API = ("load", "save", "compile", "certify", "check", "import_network", "from_torch", "softmax", "approx",
       "evaluate", "CheckResult", "SoftmaxResult", "NotProved", "MaxoutNet", "Transformer", "InputError")
__all__ = ["__version__", *API]


def __getattr__(name: str):
    """PEP 562: the API names resolve to ``exactform.api`` on first access."""
    if name in API:
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module 'exactform' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(API))
