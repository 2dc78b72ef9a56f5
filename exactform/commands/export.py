"""``exactform export TF.json -o TF.onnx [--dtype float32|float64]``: the Transformer in standard ONNX."""
from __future__ import annotations

from ..formats import InputError, output_file
from ..models import Transformer, load_model


def add_parser(sub):
    p = sub.add_parser("export", help="export a Transformer to ONNX (hardmax as an argmax mask)")
    p.add_argument("model", help="exactform/transformer@1 JSON")
    p.add_argument("-o", "--output", required=True, help="where to write the .onnx file")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    return p


def run(args) -> int:
    from ..errors import requires
    requires("onnx", "export")
    output_file(args.output, "-o")
    model = load_model(args.model)
    if not isinstance(model, Transformer):
        raise InputError(args.model, "format", "export takes a Transformer (compile a Maxout net first)")
    from ..backends.onnx import to_onnx
    _write_atomically(args.output, to_onnx(model, args.dtype).SerializeToString())
    att = "hardmax (argmax mask, ties shared)" if model.is_hardmax else f"softmax λ = {model.attention}"
    print(f"wrote {args.output}: {len(model.blocks)} blocks, {model.tokens} tokens, width {model.width}, "
          f"{att}, {args.dtype} weights (rounded to nearest: float results, not exact)")
    return 0


def _write_atomically(path: str, data: bytes) -> None:
    import os
    import tempfile
    from pathlib import Path
    target = output_file(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
