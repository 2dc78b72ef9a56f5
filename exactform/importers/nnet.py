"""The text ``.nnet`` format (Julian et al., ACAS Xu) → exact ``MaxoutNet``.

Numbers are read as the exact decimals the text denotes (``Fraction("5.40062e-02")``).
The format's semantics are folded in exactly:

* input normalisation ``(x − mean_i) / range_i`` into the first layer;
* output de-normalisation ``y · range_out + mean_out`` into the read-out;
* input clipping to ``[min_i, max_i]``: where the user's domain lies inside the clipping box,
  clipping is the identity there and nothing is added; where it leaves the box on an input, a
  first ReLU layer computes the clip exactly, ``clip(x) = min + ReLU(x − min) − ReLU(x − max)``
  (inputs that stay inside pass as ``ReLU(x − lower)``, the identity shift on the domain).
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from ..formats import InputError
from ..numbers import RationalSyntaxError, parse_decimal
from ..models import Box, MaxoutNet
from .affine import ZERO, Affine, Tracer


@dataclass(frozen=True)
class NNet:
    """The numbers of a ``.nnet`` file, exactly as its decimals denote them."""
    mins: list[Fraction]
    maxs: list[Fraction]
    means: list[Fraction]
    ranges: list[Fraction]
    weights: list[list[list[Fraction]]]
    biases: list[list[Fraction]]


def load_nnet(path: str, domain) -> MaxoutNet:
    """``domain(input_dim) -> Box`` builds the user's box once the input width is known."""
    f = read_nnet(path)
    inputs, outputs = len(f.mins), len(f.biases[-1])
    box: Box = domain(inputs)
    tracer = Tracer(inputs)
    x = _clipped_input(tracer, box, f.mins, f.maxs, path)
    x = x.then([[Fraction(int(i == j)) / f.ranges[j] for j in range(inputs)] for i in range(inputs)],
               [-f.means[i] / f.ranges[i] for i in range(inputs)])
    for l, (w, b) in enumerate(zip(f.weights, f.biases)):
        x = x.then(w, b)
        if l < len(f.weights) - 1:
            x = tracer.relu(x)
    x = x.scaled([f.ranges[-1]] * outputs).shifted([f.means[-1]] * outputs)
    return tracer.network(x, box, path)


def nnet_reference(path: str):
    """``f(points) -> outputs``: the file's semantics evaluated directly in float64 (clip,
    normalise, ReLU layers, de-normalise), independent of the exact lowering."""
    import numpy as np
    f = read_nnet(path)
    as_float = lambda v: np.array(v, dtype=object).astype(np.float64)    # noqa: E731
    mins, maxs, means, ranges = map(as_float, (f.mins, f.maxs, f.means, f.ranges))
    layers = [(as_float(w), as_float(b)) for w, b in zip(f.weights, f.biases)]

    def run(points):
        out = []
        for p in points:
            x = (np.clip(as_float(p), mins, maxs) - means[:-1]) / ranges[:-1]
            for k, (w, b) in enumerate(layers):
                x = w @ x + b
                if k < len(layers) - 1:
                    x = np.maximum(x, 0)
            out.append((x * ranges[-1] + means[-1]).tolist())
        return out
    run.source, run.tolerance = "the .nnet text in float64", 1e-9
    return run


def read_nnet(path: str) -> NNet:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(path, "", f"cannot read: {e}") from None
    rows = [(n, [f for f in line.split(",") if f.strip()]) for n, line in enumerate(text.splitlines(), 1)
            if line.strip() and not line.lstrip().startswith("//")]
    cursor = iter(rows)

    def line(count: int | None, what: str) -> list[Fraction]:
        try:
            n, fields = next(cursor)
        except StopIteration:
            raise InputError(path, "end of file", f"expected {what}") from None
        if count is not None and len(fields) < count:
            raise InputError(path, f"line {n}", f"expected {count} numbers ({what}), got {len(fields)}")
        out = []
        for k, f in enumerate(fields[:count] if count is not None else fields):
            try:
                out.append(parse_decimal(f))
            except RationalSyntaxError as e:
                raise InputError(path, f"line {n} field {k}", f"{e} ({what})") from None
        return out

    def count(value: Fraction, what: str) -> int:
        if value.denominator != 1 or value < 1:
            raise InputError(path, "header", f"{what} must be a positive integer, got {value}")
        return int(value)

    header = line(4, "numLayers, inputSize, outputSize, maxLayerSize")
    layers, inputs, outputs = (count(v, w) for v, w in zip(header, ("numLayers", "inputSize", "outputSize")))
    sizes = [count(v, "layer size") for v in line(layers + 1, "layer sizes")]
    if sizes[0] != inputs or sizes[-1] != outputs:
        raise InputError(path, "layer sizes", f"first/last sizes {sizes[0]}/{sizes[-1]} do not match "
                         f"inputSize {inputs} / outputSize {outputs}")
    line(None, "symmetric flag")
    mins, maxs = line(inputs, "input minimums"), line(inputs, "input maximums")
    means, ranges = line(inputs + 1, "means"), line(inputs + 1, "ranges")
    if any(r == 0 for r in ranges):
        raise InputError(path, "ranges", "a normalisation range is zero")
    weights, biases = [], []
    for l in range(layers):
        weights.append([line(sizes[l], f"layer {l} weight row") for _ in range(sizes[l + 1])])
        biases.append([line(1, f"layer {l} bias")[0] for _ in range(sizes[l + 1])])
    return NNet(mins, maxs, means, ranges, weights, biases)


def _clipped_input(tracer: Tracer, box: Box, mins, maxs, path: str) -> Affine:
    """The clipped input as an affine map: the raw input when the box lies inside the clipping
    box, otherwise over a first ReLU layer that computes the clip exactly."""
    n = box.dim
    for i, (mn, mx) in enumerate(zip(mins, maxs)):
        if mn > mx:
            raise InputError(path, f"input minimums[{i}]", f"minimum {mn} exceeds maximum {mx}")
    inside = [mn <= lo and hi <= mx for lo, hi, mn, mx in zip(box.lower, box.upper, mins, maxs)]
    if all(inside):
        return tracer.input
    pre, recover, offset = [], [], []
    for i in range(n):
        unit = [ZERO] * n
        unit[i] = Fraction(1)
        row = [ZERO] * (len(pre) + (1 if inside[i] else 2))
        if inside[i]:
            pre.append((unit, -box.lower[i]))
            row[-1] = Fraction(1)
            offset.append(box.lower[i])
        else:
            pre += [(unit, -mins[i]), (unit, -maxs[i])]
            row[-2], row[-1] = Fraction(1), Fraction(-1)
            offset.append(mins[i])
        recover.append(row)
    hidden = tracer.relu(tracer.input.then([w for w, _ in pre], [b for _, b in pre]))
    return hidden.then([r + [ZERO] * (len(pre) - len(r)) for r in recover], offset)
