"""Helpers shared by several test files: small nets and pairs, certificate builders, the CI workflow's
steps, and ``cli``, the one way the tests run an ``exactform`` command in process.  Plain functions and
constants; fixtures live in conftest.py."""
from __future__ import annotations

import os
import random
import re
import sys
from fractions import Fraction
from pathlib import Path
from typing import NamedTuple

from inprocess import exactform as _in_process

from exactform.provers.write import certify, certify_softmax
from exactform.checker.reader import ONE
from exactform.construct.maxout_to_transformer import compile_maxout
from exactform.geometry.enclosure import log_upper
from exactform.models import Attention, Box, FeedForward, Head, MaxoutLayer, MaxoutNet, Transformer
from exactform.proofs.nets import random_net, relu_net

F = Fraction
ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
PY = sys.executable
WORKFLOW = ROOT / "examples" / "ci" / "exactform.yml"


# --- the CLI, in process ----------------------------------------------------------------------------

class Ran(NamedTuple):
    """What a command did: ``code, out, err = cli(...)`` or ``cli(...).returncode`` (as subprocess's)."""
    returncode: int
    stdout: str
    stderr: str


def cli(*argv, cwd=None) -> Ran:
    """``python -m exactform ARGV`` run in the test process: exit code, stdout and stderr."""
    done = _in_process(argv, cwd=cwd)
    return Ran(done.returncode, done.stdout, done.stderr)


# --- Maxout nets and C1–C5 certificates -------------------------------------------------------------

NETS = {
    "ragged": lambda: random_net(random.Random(11), [3, 4, 3], 4, outputs=2),
    "rank1": lambda: random_net(random.Random(12), [2, 3], 1),
    "relu-3-outputs": lambda: relu_net(random.Random(13), [4, 6, 5], outputs=3),
    "width1": lambda: relu_net(random.Random(14), [1, 1, 1]),
}


def q(x) -> str:
    x = Fraction(x)
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def maxout(layers, readout, lower, upper) -> MaxoutNet:
    """A Maxout net from plain numbers: layers = [[[(weights, bias) per piece] per unit]]."""
    doc = {"format": "exactform/maxout@1", "input_dim": len(lower),
           "domain": {"lower": [q(x) for x in lower], "upper": [q(x) for x in upper]},
           "layers": [{"weight": [[[q(a) for a in w] for w, _ in unit] for unit in layer],
                       "bias": [[q(b) for _, b in unit] for unit in layer]} for layer in layers],
           "readout": {"weight": [[q(a) for a in w] for w, _ in readout], "bias": [q(b) for _, b in readout]}}
    from exactform.formats import Reader
    return MaxoutNet.from_json(Reader(doc))


def good(net):
    """``net``, its compiled Transformer and a certificate that holds."""
    tf = compile_maxout(net)
    cert = certify(net, tf)
    assert cert.holds, cert.problems
    return net, tf, cert.document


def softmax_certificate(net, lam=None, eps=Fraction(1, 1000)):
    from exactform.provers.softmax import choose_scale
    scale = lam or choose_scale(net, eps)[0]
    tf = compile_maxout(net).with_attention(scale)
    return certify_softmax(net, tf, eps, log_upper(net.max_rank)).document


# ``python -c BLOCKER check ARGS``: the checker with the heavy libraries unimportable; prints the lines
# and files of exactform that it loaded.
BLOCKER = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split('.')[0] in {'flint', 'sympy', 'numpy', 'torch', 'mpmath', 'z3', 'onnx', 'onnxruntime'}:
            raise ImportError('blocked ' + name)
sys.meta_path.insert(0, Block())
from exactform.cli import main
code = main(sys.argv[1:])
files = sorted({m.__file__ for n, m in list(sys.modules.items()) if n.startswith('exactform') and getattr(m, '__file__', None)})
print('LINES', sum(len(open(f).read().splitlines()) for f in files), ' '.join(files))
sys.exit(code)
"""


# --- equivalence: evaluation, pairs, node values ----------------------------------------------------

def maxout_value(net: MaxoutNet, x: list) -> list:
    """Plain evaluation, one Fraction at a time (the independent oracle)."""
    h = list(x)
    for layer in net.layers:
        h = [max(sum((a * v for a, v in zip(w, h)), b) for w, b in zip(ws, bs)) for ws, bs in zip(layer.weight, layer.bias)]
    return [sum((a * v for a, v in zip(w, h)), c) for w, c in zip(net.readout_weight, net.readout_bias)]


def box_of(model) -> list:
    return list(zip(model.domain.lower, model.domain.upper))


def quantised(net: MaxoutNet, step: Fraction) -> MaxoutNet:
    """Every weight and bias rounded to the nearest multiple of ``step`` (a perturbed copy)."""
    r = lambda v: [r(x) for x in v] if isinstance(v, list) else round(v / step) * step  # noqa: E731
    return MaxoutNet(net.domain, [MaxoutLayer(r(l.weight), r(l.bias)) for l in net.layers],
                     r(net.readout_weight), r(net.readout_bias))


def relu_layer(rows: list) -> MaxoutLayer:
    """ReLU units ``max(w·h + b, 0)`` from rows ``(w, b)``."""
    return MaxoutLayer([[list(w), [F(0)] * len(w)] for w, _ in rows], [[b, F(0)] for _, b in rows])


def kinked_pair() -> tuple:
    """A(x) = |x0|, B(x) = max(0, 2|x0| − 1): |A − B| peaks at 1/2 at x0 = ±1/2, on B's kinks, and
    the two peaks tie."""
    box = Box((F(-1), F(-1)), (F(1), F(1)))
    a = MaxoutNet(box, [relu_layer([((F(1), F(0)), F(0)), ((F(-1), F(0)), F(0))])], [[F(1), F(1)]], [F(0)])
    b = MaxoutNet(box, [relu_layer([((F(2), F(0)), F(-1)), ((F(-2), F(0)), F(-1))])], [[F(1), F(1)]], [F(0)])
    return a, b


def small_pairs() -> list:
    """2→8→8→1 ReLU nets against quantised copies, and the kinked pair."""
    pairs = []
    for seed in (0, 2, 3):                  # (seed 1 makes 526 leaves: slow for a unit test)
        net = relu_net(random.Random(seed), [2, 8, 8], outputs=1)
        pairs.append((net, quantised(net, F(1, 2 + seed))))
    return pairs + [kinked_pair()]


def tiny_bump(net: MaxoutNet, height: Fraction, width: Fraction) -> MaxoutNet:
    """``net`` plus ``max(0, height − |x − corner|₁ · height / width)``-like bump near the corner (1, 1):
    one extra ReLU ``relu(k(x0 + x1) − (2k − height))`` with k = height / width, through layer 2."""
    k = height / width
    l1, l2 = net.layers
    w1 = [list(map(list, u)) for u in l1.weight] + [[[k, k], [F(0), F(0)]]]
    b1 = [list(u) for u in l1.bias] + [[height - 2 * k, F(0)]]
    w2 = [[list(r) + [F(0)] for r in u] for u in l2.weight] + [[[F(0)] * l1.units + [F(1)], [F(0)] * (l1.units + 1)]]
    b2 = [list(u) for u in l2.bias] + [[F(0), F(0)]]
    return MaxoutNet(net.domain, [MaxoutLayer(w1, b1), MaxoutLayer(w2, b2)],
                     [list(r) + [F(1)] for r in net.readout_weight], list(net.readout_bias))


def acas_and_float16():
    from exactform.benchmarks.equiv_bench import ACAS, float16
    from exactform.importers import import_network
    acas = import_network(str(ACAS), [(F(-1), F(1))])
    return acas, float16(acas)


def sign_transformer(tokens: int, key_scale: Fraction = F(1)) -> Transformer:
    """``tokens − 1`` tokens score x with value 1, the last scores 0 with value −1: the output of
    token 0 is 1 for x > 0, −1 for x < 0, and at x = 0 the tie average (tokens − 2)/tokens."""
    T = tokens
    width = 2 + T + 2                                  # x, one, position one-hot, y, out
    last, y, out = 2 + T - 1, 2 + T, 3 + T
    row = lambda entries: [F(entries.get(c, 0)) for c in range(width)]  # noqa: E731
    embed = [[F(int(r == 0))] for r in range(width)]
    position = [row({1: 1, 2 + t: 1}) for t in range(T)]
    ff = FeedForward([row({0: 1, 1: 2, last: -10})], [F(0)], [[F(int(r == y))] for r in range(width)],
                     [F(0)] * width)
    head = Head([row({1: 1})], [row({y: key_scale, 1: -2 * key_scale, last: 2 * key_scale})],
                [row({1: 1, last: -2})], [[F(int(r == out))] for r in range(width)])
    return Transformer(Box((F(-1),), (F(1),)), T, width, "hardmax", embed, position, [ff, Attention([head])], 0,
                       [row({out: 1})], [F(0)], {})


def hardmax_step() -> Transformer:
    """The hardmax step of two inputs on [−1, 1]²: 1 where x0 > x1, 1/2 on the line x0 = x1, 0 below.
    Token t scores x_t + 2 (a ReLU that the other token's position switches off), the value is token
    0's position coordinate."""
    width = 8                                   # x0, x1, one, first, last, y, z, out
    row = lambda entries: [F(entries.get(c, 0)) for c in range(width)]  # noqa: E731
    embed = [[F(int(r == 0)), F(int(r == 1))] for r in range(width)]
    position = [row({2: 1, 3: 1}), row({2: 1, 4: 1})]
    ff = FeedForward([row({0: 1, 2: 2, 4: -10}), row({1: 1, 2: 2, 3: -10})], [F(0), F(0)],
                     [[F(int(r == 5)), F(int(r == 6))] for r in range(width)], [F(0)] * width)
    head = Head([row({2: 1})], [row({5: 1, 6: 1})], [row({3: 1})], [[F(int(r == 7))] for r in range(width)])
    return Transformer(Box((F(-1), F(-1)), (F(1), F(1))), 2, width, "hardmax", embed, position,
                       [ff, Attention([head])], 0, [row({7: 1})], [F(0)], {})


def node_values(Fm, x: list) -> dict:
    """Every variable of the checker's node table ``Fm`` (its Forms) at x, exactly (nodes in order: a
    max of its pieces; hardmax: the average of the values of the tokens of top score)."""
    v = {i: xi for i, xi in enumerate(x)} | {ONE: F(1)}
    at = lambda f: sum((a * v[k] for k, a in dict(f).items()), F(0))  # noqa: E731
    for k, (kind, data) in enumerate(Fm.nodes):
        if kind == "max":
            v[Fm.d + k] = max(at(p) for p in data)
        else:
            scores = [at(s) for s, _ in data]
            top = [at(val) for s, (_, val) in zip(scores, data) if s == max(scores)]
            v[Fm.d + k] = sum(top, F(0)) / len(top)
    return v


# --- the CI workflow (examples/ci/exactform.yml) ----------------------------------------------------

def workflow_step(name_start: str) -> str:
    """The ``run: |`` script of the workflow step whose name starts with ``name_start``."""
    text = WORKFLOW.read_text()
    block = text[text.index(f"- name: {name_start}"):]
    body = block[block.index("run: |") + len("run: |"):].splitlines()[1:]
    indent = len(body[0]) - len(body[0].lstrip())
    lines = []
    for line in body:
        if line.strip() and len(line) - len(line.lstrip()) < indent:
            break
        lines.append(line[indent:])
    return "\n".join(lines)


def environment(**overrides) -> dict:
    """The workflow's ``env:``, over this process's environment, with this Python's bin on PATH."""
    text = WORKFLOW.read_text()
    env = {k: v.strip('"') for k, v in re.findall(r'^  ([A-Z]+): ("[^"]*"|\S+)', text, re.M)}
    return {**os.environ, **env, **overrides, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def e1_certificate(path: Path) -> None:
    """A valid E1 certificate (|x| = relu(x) + relu(−x)) written to ``path``."""
    from exactform.formats import write_json
    from exactform.search.equiv import certificate, compare
    A = maxout([[[([1], 0), ([-1], 0)]]], [([1], 0)], [-1], [1])
    B = maxout([[[([1], 0), ([0], 0)], [([-1], 0), ([0], 0)]]], [([1, 1], 0)], [-1], [1])
    box = list(zip(A.domain.lower, A.domain.upper))
    write_json(path, certificate(A.to_json(), B.to_json(), box, None, compare(A.to_json(), B.to_json(), box, None).tree))
