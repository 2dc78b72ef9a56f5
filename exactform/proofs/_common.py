"""Shared by the proof scripts: the example nets, the random test nets, arguments, certificate
output (``--out DIR`` or ``$EXACTFORM_PROOF_OUT``) and the verdict line or JSON object."""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))    # the folder holding exactform/
EXAMPLES = Path(__file__).resolve().parent / "examples"
"""The built-in example nets (shipped with the package; ``examples/`` in the repository links here)."""

from nets import random_net, relu_net  # noqa: E402  (the seeded nets the tests use; beside this file)

from exactform.construct.maxout_to_transformer import compile_maxout  # noqa: E402
from exactform.formats import load_json, write_json  # noqa: E402
from exactform.models import MaxoutNet  # noqa: E402


def arguments(doc: str) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--json", action="store_true", help='print {"claim": ..., "ok": ...} as the last line')
    p.add_argument("--out", default=os.environ.get("EXACTFORM_PROOF_OUT"), help="write certificates here")
    return p.parse_args()


def example_nets() -> dict[Path, MaxoutNet]:
    """The Maxout nets of examples/ (the other files there are Transformers and points)."""
    out = {}
    for path in sorted(EXAMPLES.glob("*.json")):
        doc = load_json(path)
        if isinstance(doc.value, dict) and doc.value.get("format") == MaxoutNet.FORMAT:
            out[path] = MaxoutNet.from_json(doc)
    return out


def nets() -> dict[str, MaxoutNet]:
    """The Maxout nets of examples/, and seeded random nets: ragged ranks, rank 1, several outputs."""
    out = {path.stem: net for path, net in example_nets().items()}
    out["random 3→4→3 ragged ranks ≤ 4, 2 outputs"] = random_net(random.Random(3), [3, 4, 3], 4, outputs=2)
    out["random 2→3 rank 1"] = random_net(random.Random(4), [2, 3], 1)
    out["random ReLU 4→8→8→3"] = relu_net(random.Random(5), [4, 8, 8], outputs=3)
    return out


def pairs():
    for name, net in nets().items():
        yield name, net, compile_maxout(net)


def write_certificate(args, claim: str, name: str, cert) -> str | None:
    """Write the certificate as ``OUT/<claim>.<name>.cert.json``, whole: a certificate carries
    every claim of its kind (C1–C4 for an equality certificate), so that ``exactform check``
    re-derives each of them from the models and hints."""
    if not args.out:
        return None
    stem = "".join(ch if ch.isalnum() else "_" for ch in name)
    path = Path(args.out) / f"{claim}.{stem}.cert.json"
    write_json(path, cert.document)
    return str(path)


def finish(args, claim: str, ok: bool, summary: str, **extra) -> int:
    print(f"{claim} {'PROVED' if ok else 'FAILED'}: {summary}")
    if args.json:
        print(json.dumps({"claim": claim, "ok": ok, **extra}, sort_keys=True))
    return 0 if ok else 1
