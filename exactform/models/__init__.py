"""The two exact models of docs/spec.md §1 and their JSON formats."""
from .box import Box
from .maxout import MaxoutLayer, MaxoutNet
from .transformer import Attention, FeedForward, Head, Transformer

__all__ = ["Box", "MaxoutLayer", "MaxoutNet", "Attention", "FeedForward", "Head", "Transformer",
           "load_model"]


def load_model(path):
    """Read a Maxout or Transformer JSON file, dispatching on its ``format`` field."""
    from ..formats import load_json
    doc = load_json(path)
    fmt = doc.field("format")
    if fmt.value == MaxoutNet.FORMAT:
        return MaxoutNet.from_json(doc)
    if fmt.value == Transformer.FORMAT:
        return Transformer.from_json(doc)
    raise fmt.error(f"expected {MaxoutNet.FORMAT!r} or {Transformer.FORMAT!r}, got {str(fmt.value)[:60]!r}")
