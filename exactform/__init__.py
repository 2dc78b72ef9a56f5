"""exactform: exact, machine-checked Transformer constructions of Maxout networks.  The Python API
(``docs/api.md``) loads on first use from ``exactform.api``; ``__init__.pyi`` gives its types."""
__version__ = "0.1.0"
__all__ = ["__version__", "load", "load_maxout", "load_transformer", "load_certificate", "save", "compile",
           "certify", "check", "verify", "equiv", "import_network", "from_torch", "softmax", "approx", "evaluate",
           "CheckResult", "VerifyResult", "EquivResult", "SoftmaxResult", "MaxoutNet", "Transformer", "Error", "InputError", "NotProved"]


def __getattr__(name: str):  # PEP 562
    if name not in __all__:
        raise AttributeError(f"module 'exactform' has no attribute {name!r}")
    from . import api
    return getattr(api, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
