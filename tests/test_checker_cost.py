"""The checker's work bound counts every entry it reads (docs/spec.md §6.1): small hostile V1 and E1 certificates
(gzip, a few kB) whose cost hides in atoms, output forms, a Transformer's growth or witnesses are refused at
once, exit 2 with one line naming the field, under a 1 GiB address-space cap; a cheap valid one is accepted."""
import gzip
import json
import resource
import subprocess
import sys
from fractions import Fraction

import pytest

from exactform.checker import cost, verify_cert
from exactform.checker.forms import Forms, outputs, read_model
from exactform.checker.reader import FORMAT
from exactform.checker.relax import layout

CAP = 1 << 30
SOURCES = {"net": {"file": "net.json", "sha256": "0" * 64}, "property": {"file": "p.vnnlib", "sha256": "0" * 64}}


def check(path):
    """``exactform check PATH`` in a child under a 1 GiB address-space cap and 120 CPU s: (exit, stderr, CPU s)."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))
        resource.setrlimit(resource.RLIMIT_CPU, (120, 120))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-m", "exactform", "check", str(path)], capture_output=True, text=True,
                          preexec_fn=limit, timeout=600, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return done.returncode, done.stderr, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def refused(path, field):
    code, err, _ = check(path)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err and field in err, (code, err[-2000:])
    assert "beyond the checker's limit" in err
    return err


def write(path, doc):
    path.write_bytes(gzip.compress(json.dumps(doc).encode(), compresslevel=1))
    return path


def q(x) -> str:
    """A rational as the checker reads it (canonical)."""
    return str(Fraction(x))


def relu_layer(biases, inputs, weight="1"):
    """ReLU units max(weight·Σ inputs + b, 0), one per bias."""
    return {"weight": [[[weight] * inputs, ["0"] * inputs] for _ in biases], "bias": [[b, "0"] for b in biases]}


def maxout(d, layers, readout):
    return {"format": "exactform/maxout@1", "input_dim": d, "domain": {"lower": ["0"] * d, "upper": ["1"] * d},
            "layers": layers, "readout": readout}


def wide_net(width):
    """x ↦ Σ_k relu(x − k/width) through one fixed unit: every output's form reads all ``width`` nodes."""
    first = {"weight": [[["1"], ["0"]] for _ in range(width)],
             "bias": [[q(Fraction(-k, width)), "0"] for k in range(width)]}
    return maxout(1, [first, relu_layer(["0"], width)], {"weight": [["1"]], "bias": ["0"]})


def v1(net, atoms, tree):
    """A V1 certificate: one disjunct, the box [0, 1]^d, ``atoms`` dense rows over X, Y and 1."""
    d = net["input_dim"]
    prop = {"inputs": d, "outputs": len(net["readout"]["weight"]),
            "disjuncts": [{"box": {"lower": ["0"] * d, "upper": ["1"] * d}, "atoms": atoms}]}
    return {"format": FORMAT, "kind": "verification", "models": {"net": net},
            "claims": [{"id": "V1", "statement": verify_cert.statement(SOURCES, 1),
                        "evidence": {"sources": SOURCES, "property": prop, "trees": [tree]}}]}


def rows_and_atoms(net, atoms):
    """The number of a leaf's rows and the index of its first atom row (``relax.layout``)."""
    model = read_model(net, "net")
    F = Forms(model.box)
    outputs(F, model)
    n = len(layout(F, 0, atoms)[0])
    return n, n - atoms


def splits(depth, leaf, e1=False):
    """A tree splitting x_0 ``depth`` times, every leaf ``leaf`` (E1: at the row x_0 − c, children ≥ and ≤)."""
    def tree(lo, hi, k):
        if k == 0:
            return leaf
        mid = (lo + hi) / 2
        if e1:
            return {"split": ["1", q(-mid)], "children": [tree(mid, hi, k - 1), tree(lo, mid, k - 1)]}
        return {"split": 0, "at": str(mid), "children": [tree(lo, mid, k - 1), tree(mid, hi, k - 1)]}
    return tree(Fraction(0), Fraction(1), depth)


def estimate(doc):
    """The V1 work figure of ``doc`` without a bound (``verify_cert.work``)."""
    model = read_model(doc["models"]["net"], "net")
    ev = doc["claims"][0]["evidence"]
    disjuncts = verify_cert.read_property(ev["property"], len(model.box), len(model.readout))
    return verify_cert.work(model, disjuncts, ev["trees"]), model, disjuncts


def test_many_atoms_build_the_outputs_once_and_a_cheap_valid_certificate_is_accepted(tmp_path):
    """20 000 atoms Y_0 ≥ 10^6 on one leaf: the outputs are built once per disjunct (not once per atom)."""
    net, n = wide_net(24), 20_000
    total, first = rows_and_atoms(net, n)
    witness = {"length": total, "index": [first], "value": ["1"]}
    doc = v1(net, [["0", "1", "-1000000"]] * n, {"witness": witness})
    code, err, _ = check(write(tmp_path / "atoms.cert.json.gz", doc))
    assert code == 0 and "Traceback" not in err, err[-2000:]
    work, model, disjuncts = estimate(doc)
    assert work <= cost.MAX_WORK
    F = Forms(model.box)
    ys = outputs(F, model)
    atom_entries = sum(len(verify_cert.atom_form(a, 1, ys)) for a in disjuncts[0][1])
    assert work >= 2 * (F.work + atom_entries)        # the table (built twice) and every atom's form, charged


def test_witnesses_naming_atoms_of_whole_output_forms_are_charged_by_those_forms(tmp_path):
    """Each atom reads Y_0, a form of 2 000 entries; every leaf's witness names 100 atoms: refused before any leaf."""
    net, n = wide_net(2000), 100
    total, first = rows_and_atoms(net, n)
    witness = {"length": total, "index": list(range(first, first + n)), "value": ["1"] * n}
    doc = v1(net, [["0", "1", "-1000000"]] * n, splits(10, {"witness": witness}))
    path = write(tmp_path / "named.cert.json.gz", doc)
    assert path.stat().st_size < 100_000
    refused(path, "claims[0].evidence.trees")
    work, model, disjuncts = estimate(doc)
    F = Forms(model.box)
    ys = outputs(F, model)
    named = 2 ** 10 * n * (len(verify_cert.atom_form(disjuncts[0][1][0], 1, ys)) + 1)
    assert work >= cost.ROW * named > cost.MAX_WORK     # each leaf's named atom rows, at their forms' sizes


def transformer(d, tokens, hidden):
    """A hardmax Transformer of width 1 whose coordinate reads all d inputs; its first block keeps that form
    (a unit fixed on, added back), its second has ``hidden`` units per token, each reading the d + 1 entries."""
    def block(h):
        return {"kind": "feedforward", "w1": [["1"]] * h, "b1": ["1"] * h, "w2": [["1"] * h], "b2": ["0"]}
    return {"format": "exactform/transformer@1", "input_dim": d, "tokens": tokens, "width": 1, "attention": "hardmax",
            "domain": {"lower": ["0"] * d, "upper": ["1"] * d},
            "embed": {"weight": [["1"] * d], "bias": [["0"]] * tokens},
            "blocks": [block(1), block(hidden)], "readout": {"token": 0, "weight": [["1"]], "bias": ["0"]}}


def test_a_transformer_whose_forms_grow_by_block_is_refused_before_the_block(tmp_path):
    """1 000 inputs, 200 tokens, 100 hidden units a token: the second block's pre-activations read 1 001 entries
    each, 2·10^7 in all, charged from the forms' sizes before the block is built."""
    net = transformer(1000, 200, 100)
    doc = v1(net, [{"length": 1002, "index": [1000], "value": ["1"]}], {"witness": [["0"]]})
    path = write(tmp_path / "grown.cert.json.gz", doc)
    assert path.stat().st_size < 100_000
    err = refused(path, "models.net")
    assert "block 1" in err
    model = read_model(net, "net")
    X = [[{i: Fraction(1) for i in range(1001)}] for _ in range(200)]        # the state the second block reads
    assert cost.block_work(model.blocks[1], X) >= cost.FRACTION * 4 * 200 * 100 * 1001 > cost.MAX_WORK


def e1(net, m, depth, named, length):
    """A valid E1 certificate of ``net`` against itself within tolerance 1 on [0, 1], its read-out replaced by
    ``m`` sums of the last layer: relaxed leaves at ``depth``, the witness of output k, side i, naming its atom
    row (A − B = 0, so the row is −1 ≥ 0) and, with multipliers 10^-9, the rows ``named``."""
    width = len(net["layers"][-1]["weight"])
    net = dict(net, readout={"weight": [["1"] * width] * m, "bias": ["0"] * m})
    small = ["1/1000000000"] * len(named)

    def witness(j):
        return {"length": length, "index": named + [length - 2 * m + j], "value": small + ["1"]}
    leaf = {"relaxed": [[witness(2 * k), witness(2 * k + 1)] for k in range(m)]}
    from exactform.checker.equiv import statement
    return {"format": FORMAT, "kind": "equivalence", "models": {"a": net, "b": net},
            "claims": [{"id": "E1", "statement": statement([(Fraction(0), Fraction(1))], Fraction(1)),
                        "evidence": {"box": {"lower": ["0"], "upper": ["1"]}, "tolerance": "1",
                                     "tree": splits(depth, leaf, e1=True)}}]}


@pytest.mark.slow
def test_e1_witnesses_naming_every_node_row_are_charged(tmp_path):
    """600 outputs, 8 relaxed leaves whose 1 200 witnesses each name every row of the 100 second-layer nodes
    (1 000 entries each): refused before any leaf, each witness charged by the rows it names."""
    first = {"weight": [[["1"], ["0"]] for _ in range(1000)],
             "bias": [[q(Fraction(-k, 1000)), "0"] for k in range(1000)]}
    net = maxout(1, [first, relu_layer([q(Fraction(-10 * k - 1, 2)) for k in range(100)], 1000)],
                 {"weight": [["1"] * 100], "bias": ["0"]})
    model = read_model(net, "net")
    F = Forms(model.box)
    outputs(F, model)
    rows = cost.LeafCost(F).rows
    named = [i for i, r in enumerate(rows) if r > 100]
    doc = e1(net, 600, 3, named, len(layout(F, 0, 1200)[0]))
    path = write(tmp_path / "witnesses.cert.json.gz", doc)
    assert path.stat().st_size < 500_000
    refused(path, "claims[0].evidence.tree")
    from exactform.checker import equiv
    a = read_model(doc["models"]["a"], "a")
    F = Forms(a.box)
    outputs(F, a)
    outputs(F, a)
    charged = equiv.work(doc["claims"][0]["evidence"]["tree"], (a, a), 1, F)
    assert charged >= 8 * 1200 * cost.SUM * sum(rows[i] for i in named) > cost.MAX_WORK
