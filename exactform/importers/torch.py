"""A PyTorch ``nn.Sequential`` of ``Linear`` / ``ReLU`` (``Flatten``, ``Identity`` pass through)
→ exact ``MaxoutNet``; from a module in Python or a file written by ``torch.save(module)``.

Files are loaded with ``weights_only=True`` and only these module classes allowed, so loading
never runs code from the file; any other class is an ``InputError`` naming it.
"""
from __future__ import annotations

from ..formats import InputError
from ..models import Box, MaxoutNet
from .affine import Tracer, exact_matrix, exact_vector


def load_torch(path: str, domain) -> MaxoutNet:
    """``domain(input_dim) -> Box`` builds the user's box once the input width is known."""
    import pickle

    import torch
    from torch import nn

    allowed = [nn.Sequential, nn.Linear, nn.ReLU, nn.Flatten, nn.Identity]
    try:
        with torch.serialization.safe_globals(allowed):
            module = torch.load(path, weights_only=True, map_location="cpu")
    except pickle.UnpicklingError as e:
        first = str(e).strip().splitlines()
        hint = next((l for l in first if "GLOBAL" in l or "global" in l), first[0] if first else "")
        raise InputError(path, "", f"not a supported torch.save file: {hint[:160]}") from None
    except Exception as e:  # corrupt zip, truncated file, ...
        raise InputError(path, "", f"not a readable torch.save file ({type(e).__name__})") from None
    return from_sequential(module, domain, path)


def from_sequential(module, domain, source: str = "<module>") -> MaxoutNet:
    """Trace ``Linear``/``ReLU`` layers exactly (every float32/float64 weight is a dyadic rational)."""
    from torch import nn

    if not isinstance(module, nn.Sequential):
        raise InputError(source, "", f"expected an nn.Sequential, got {type(module).__name__}")
    layers = list(module)
    first = next((m for m in layers if isinstance(m, nn.Linear)), None)
    if first is None:
        raise InputError(source, "", "the Sequential has no Linear layer")
    box: Box = domain(first.in_features)
    tracer = Tracer(first.in_features)
    x = tracer.input
    for index, m in enumerate(layers):
        if isinstance(m, nn.Linear):
            if m.in_features != x.size:
                raise InputError(source, f"[{index}]", f"Linear expects {m.in_features} features, gets {x.size}")
            w = m.weight.detach().to("cpu", dtype=m.weight.dtype).double().tolist()
            b = m.bias.detach().double().tolist() if m.bias is not None else [0.0] * m.out_features
            x = x.then(exact_matrix(w), exact_vector(b))
        elif isinstance(m, nn.ReLU):
            x = tracer.relu(x)
        elif not isinstance(m, (nn.Flatten, nn.Identity)):
            raise InputError(source, f"[{index}]", f"unsupported module {type(m).__name__}")
    return tracer.network(x, box)
