"""``.nnet`` networks (the text format of Julian et al., ACAS Xu) read by the checker itself, standard
library only (docs/spec.md §8, "Binding").

A ``.nnet`` file's function is x ↦ clip(x) normalised by (x_i − mean_i)/range_i, its affine layers with
ReLU between them, and the outputs de-normalised by y·range_n + mean_n (n the input count).  Every
decimal is read exactly (``vnnlib.read_decimal``), every composition is exact (``reader.combine``).  The
result has the shape of ``reader.Maxout``'s layers and read-out (``relu_layer``, ``piece``: shared with
the ONNX reader), and the clipping box is returned for the caller to require that the property's boxes
lie inside it, where clipping is the identity."""

import io
from fractions import Fraction
from itertools import pairwise

from . import vnnlib
from .cost import beyond, weight
from .reader import MAX_LENGTH, ONE, Malformed, combine

MAX_WEIGHTS = 2 * 10**6  # weights, tensor entries and results built from one network file (ACAS Xu: 13,050)
IMPORTED_JSON = (
    "bind the certificate to the imported network instead: exactform import NET -o net.json, then --net net.json"
)


def piece(form: dict) -> tuple:
    """An affine form as a Maxout piece ``(weights {input: a}, bias)``, the shape ``reader.read_maxout`` reads."""
    return {k: a for k, a in form.items() if k != ONE}, form.get(ONE, Fraction(0))


def relu_layer(forms: list) -> list:
    """The ReLU layer of units max(form, 0), one per form."""
    return [[piece(f), ({}, Fraction(0))] for f in forms]


def read_nnet(path) -> tuple:
    """``(inputs, layers, readout, clip)``: the network of the file as exact ReLU layers and read-out
    (``reader.Maxout``'s shapes), and its input clipping box ``[(min_i, max_i)]``."""
    text = vnnlib.text(path)
    if text.count(",") > 2 * MAX_WEIGHTS:
        raise Malformed(f"{path}: more than {2 * MAX_WEIGHTS} commas, beyond the checker's limit")
    lines = (
        (n, line) for n, line in enumerate(io.StringIO(text), 1) if line.strip() and not line.lstrip().startswith("//")
    )
    bits = [0]

    def numbers(count, what: str) -> list:
        """The next line's fields: exactly ``count`` decimals (any number if None)."""
        n, line = next(lines, (0, None))
        if line is None:
            raise Malformed(f"{path}: end of file: expected {what}")
        fields = [f.strip() for f in line.split(",") if f.strip()]
        if count is not None and len(fields) != count:
            raise Malformed(f"{path}: line {n}: expected {count} numbers ({what}), got {len(fields)}")
        out = []
        for k, text in enumerate(fields):
            try:
                q = vnnlib.read_decimal(text)
            except ValueError as e:
                raise Malformed(f"{path}: line {n} field {k}: {e}") from None
            if q is None:
                raise Malformed(f"{path}: line {n} field {k}: {text[:40]!r} is not a decimal number ({what})")
            bits[0] = max(bits[0], q.numerator.bit_length(), q.denominator.bit_length())
            out.append(q)
        return out

    def count(q: Fraction, what: str) -> int:
        """A header size: an integer in [1, MAX_LENGTH]."""
        if q.denominator != 1 or not 1 <= q <= MAX_LENGTH:
            raise Malformed(f"{path}: header: {what} must be an integer in [1, {MAX_LENGTH}], got {q}")
        return int(q)

    layers, inputs, outputs = (
        count(q, w)
        for q, w in zip(
            numbers(4, "numLayers, inputSize, outputSize, maxLayerSize"), ("numLayers", "inputSize", "outputSize")
        )
    )
    sizes = [count(q, "a layer size") for q in numbers(layers + 1, "the layer sizes")]
    if sizes[0] != inputs or sizes[-1] != outputs:
        raise Malformed(
            f"{path}: layer sizes: the first and last, {sizes[0]} and {sizes[-1]}, are not inputSize "
            f"{inputs} and outputSize {outputs}"
        )
    if layers < 2:
        raise Malformed(f"{path}: header: no hidden (ReLU) layer; {IMPORTED_JSON}")
    if sum(a * b for a, b in pairwise(sizes)) > MAX_WEIGHTS:
        raise Malformed(f"{path}: layer sizes: more than {MAX_WEIGHTS} weights, beyond the checker's limit")
    numbers(None, "the symmetric flag")
    clip = list(zip(numbers(inputs, "the input minimums"), numbers(inputs, "the input maximums")))
    means, ranges = numbers(inputs + 1, "the means"), numbers(inputs + 1, "the ranges")
    if 0 in ranges:
        raise Malformed(f"{path}: ranges[{ranges.index(0)}]: a normalisation range is zero")
    forms = [{i: 1 / ranges[i], ONE: -means[i] / ranges[i]} for i in range(inputs)]
    read = [
        (
            [numbers(sizes[k], f"layer {k} weight row {j}") for j in range(sizes[k + 1])],
            [numbers(1, f"layer {k} bias {j}")[0] for j in range(sizes[k + 1])],
        )
        for k in range(layers)
    ]
    extra = next(lines, None)
    if extra is not None:
        raise Malformed(f"{path}: line {extra[0]}: more lines than the header's {layers} layers")
    work = 2 * sum(a * b for a, b in pairwise(sizes)) * weight(bits[0])
    error = beyond(work, str(path), "the weights, the first layer's twice, weighted by their size")
    if error:
        raise error
    hidden = []
    for k, (rows, biases) in enumerate(read):
        forms = [combine([(w, f) for w, f in zip(row, forms) if w], b) for row, b in zip(rows, biases)]
        if k < layers - 1:
            hidden.append(relu_layer(forms))
            forms = [{j: Fraction(1)} for j in range(len(forms))]
    readout = [piece(combine([(ranges[-1], f)], means[-1])) for f in forms]
    return inputs, hidden, readout, clip
