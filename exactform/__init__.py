"""exactform: exact, machine-checked Transformer constructions of Maxout networks.  The Python API
(``docs/api.md``: ``exactform.load``, ``compile``, ``certify``, ``check``, …) loads on first use."""
__version__ = "0.1.0"

API = ("load", "save", "compile", "certify", "check", "import_network", "from_torch", "softmax", "approx",
       "evaluate", "CheckResult", "SoftmaxResult", "NotProved", "MaxoutNet", "Transformer", "InputError")
__all__ = ["__version__", *API]


def __getattr__(name: str):
    """PEP 562: the API names resolve to ``exactform.api`` on first access."""
    if name not in API:
        raise AttributeError(f"module 'exactform' has no attribute {name!r}")
    from . import api
    return getattr(api, name)
