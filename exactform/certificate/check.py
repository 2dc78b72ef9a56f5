"""The independent certificate checker (claim C8): ``exactform check CERT.json [--smt]``.

Trusted base: Python (``fractions``, ``json``, ``itertools``), the strict JSON readers of
``exactform.formats`` and ``exactform.models`` (parsing and shape checks of the two embedded models,
no arithmetic), and this file.  Nothing else of exactform is imported: every fact is recomputed
here with ``Fraction`` from the embedded models, by a second implementation (sparse affine forms)
independent of the prover's (``exactform.prove``, integer matrices), and each claim's evidence
must equal the recomputation entry for entry, so no number in the certificate is trusted.
Exceptions: the ``"smt"`` lists, which ``--smt`` re-runs with z3 (and the ``cvc5`` binary when it
is on PATH) as written, without re-deriving them; and C5, delegated to
``exactform.certificate.check_softmax``.

Exit codes: 0 every claim holds, 1 a claim fails (named), 2 not a certificate.
"""
from __future__ import annotations

import collections
import functools
import itertools
import os
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

from ..formats import InputError, check_format, load_json
from ..models import Attention, MaxoutNet, Transformer

FORMAT = "exactform/certificate@1"
STATEMENTS = {
    "C1": "a hardmax head whose score is a positive constant times its value returns the maximum of "
          "the values over the tokens, ties included; every head of the Transformer has that form",
    "C2": "in every pieces block each ReLU pair is an identity pair in its owner token, and in every other "
          "token both ReLUs are off and the pair's pre-activations lie on a line u + v = -2R < 0 "
          "(disjoint from u + v = 0), over the whole domain",
    "C3": "Tf(x) = M(x) for every x in the domain: per block and token every ReLU has a fixed phase or is "
          "half of an identity pair, the composed affine maps give every token a piece of every unit, the "
          "heads return the units' maxima, and the read-out is the Maxout read-out",
    "C4": "depth 3L blocks, T = max rank tokens, n_l heads in layer l, width 1 + T + 3N and the parameter "
          "count of the closed formula, beside the Maxout net's own counts",
}
ONE = -1
"""Key of the constant term of a sparse affine form ``{variable: coefficient}``."""


# --- sparse exact affine forms ------------------------------------------------------------------

def affine(terms, constant: Fraction = Fraction(0)) -> dict:
    """``Σ a·form + constant`` over ``terms = [(a, form)]``, zero coefficients dropped."""
    out = {ONE: constant} if constant else {}
    for a, form in terms:
        unit = a == 1
        for k, v in form.items():
            x = v if unit else a if v == 1 else a * v
            old = out.get(k)
            out[k] = x if old is None else old + x
    return {k: v for k, v in out.items() if v}


def interval(form: dict, box: list) -> tuple[Fraction, Fraction]:
    lo = hi = Fraction(form.get(ONE, 0))
    for k, a in form.items():
        if k != ONE:
            lo, hi = (lo + a * box[k][0], hi + a * box[k][1]) if a > 0 else (lo + a * box[k][1], hi + a * box[k][0])
    return lo, hi


def negated(form: dict) -> frozenset:
    return frozenset((k, -v) for k, v in form.items())


def text(q) -> str:
    q = Fraction(q)
    return str(q.numerator) if q.denominator == 1 else f"{q.numerator}/{q.denominator}"


# --- the recomputation --------------------------------------------------------------------------

class Facts:
    """Everything C1–C4 state about the pair, recomputed; ``defects`` lists what breaks C1/C3."""

    def __init__(self, net: MaxoutNet, tf: Transformer):
        self.net, self.tf = net, tf
        self.feedforward, self.heads, self.pieces, self.pairs, self.defects = [], [], [], [], []
        self.readout_ok = False
        self.boxes = [list(zip(net.domain.lower, net.domain.upper))]
        for layer in net.layers:
            self.boxes.append([(max(lo for lo, _ in ivs), max(hi for _, hi in ivs)) for ivs in
                               ([interval(self.piece(w, b), self.boxes[-1]) for w, b in zip(ws, bs)]
                                for ws, bs in zip(layer.weight, layer.bias))])
        try:
            self.run()
        except _Stop:
            pass

    @staticmethod
    def piece(weights, bias) -> dict:
        return affine([(Fraction(1), {k: a for k, a in enumerate(weights) if a})], bias)

    def fail(self, message: str):
        self.defects.append(message)
        raise _Stop

    def run(self):
        net, tf = self.net, self.tf
        L = len(net.layers)
        if tf.domain != net.domain or not tf.is_hardmax or tf.input_dim != net.input_dim \
                or tf.output_dim != net.output_dim:
            self.fail("domain, attention or dimensions differ from the Maxout net's")
        if [b.kind for b in tf.blocks] != ["feedforward", "attention", "feedforward"] * L:
            self.fail(f"the blocks are not {L} × (feedforward, attention, feedforward)")
        states = [[self.piece(row, tf.embed_bias[t][r]) for r, row in enumerate(tf.embed_weight)]
                  for t in range(tf.tokens)]
        for l, layer in enumerate(net.layers):
            n = net.widths[l]
            states = self.feedforward_block(3 * l, states, self.boxes[l], pieces=True)
            states = self.attention_block(3 * l + 1, states, layer, n)
            states = self.feedforward_block(3 * l + 2, states, self.boxes[l] + self.boxes[l + 1])
            if any(k != ONE and k < n for X in states for form in X for k in form):
                self.fail(f"block {3 * l + 2}: the state still depends on h^{l}")
            states = [[{k if k == ONE else k - n: v for k, v in form.items()} for form in X] for X in states]
        X = states[tf.readout_token]
        got = [affine(((a, X[r]) for r, a in enumerate(row) if a), c) for row, c in zip(tf.readout_weight, tf.readout_bias)]
        self.readout_ok = got == [self.piece(row, c) for row, c in zip(net.readout_weight, net.readout_bias)]
        if not self.readout_ok:
            self.fail(f"the read-out of token {tf.readout_token} is not the Maxout read-out")

    def feedforward_block(self, b: int, states, box, pieces: bool = False):
        ff = self.tf.blocks[b]
        rows = [[(c, a) for c, a in enumerate(row) if a] for row in ff.w1]
        cols = [[] for _ in ff.w1]
        for r, row in enumerate(ff.w2):
            for u, a in enumerate(row):
                if a:
                    cols[u].append((r, a))
        phases, bounds, out, pres_by_token = [], [], [], []
        for t, X in enumerate(states):
            pres = [affine(((a, X[c]) for c, a in row), bias) for row, bias in zip(rows, ff.b1)]
            groups = {}  # the k-th unit with (pre, column) pairs with the k-th with (-pre, -column)
            for u, p in enumerate(pres):
                groups.setdefault((frozenset(p.items()), tuple(cols[u])), []).append(u)
            phase, ivs = [], []
            for u, pre in enumerate(pres):
                own = groups[(frozenset(pre.items()), tuple(cols[u]))]
                partners = groups.get((negated(pre), tuple((r, -a) for r, a in cols[u])), [])
                if own.index(u) < len(partners):       # identity pairs first: they need no bounds
                    phase.append(partners[own.index(u)])
                    ivs.append(None)
                    continue
                lo, hi = interval(pre, box)
                ivs.append((lo, hi))
                if lo >= 0 or hi <= 0:
                    phase.append("on" if lo >= 0 else "off")
                else:
                    self.defects.append(f"block {b} (feed-forward) token {t} unit {u}: pre-activation in "
                                        f"[{lo}, {hi}] is neither fixed nor half of an identity pair")
                    phase.append("?")
            Y = [dict(form) for form in X]
            for u, p in enumerate(phase):
                if p == "on" or (isinstance(p, int) and u < p):
                    for r, a in cols[u]:
                        Y[r] = affine([(Fraction(1), Y[r]), (a, pres[u])])
            out.append([affine([(Fraction(1), y)], c) for y, c in zip(Y, ff.b2)])
            phases.append(phase)
            bounds.append(ivs)
            pres_by_token.append(pres)
        self.feedforward.append({"block": b, "phases": phases, "bounds": [[iv and [text(iv[0]), text(iv[1])] for iv in ivs]
                                                                          for ivs in bounds]})
        if self.defects:
            raise _Stop
        if pieces:
            self.token_shift(b, phases, bounds, pres_by_token, box)
        return out

    def token_shift(self, b, phases, bounds, pres_by_token, box):
        for owner, phase in enumerate(phases):
            for u, p in ((u, p) for u, p in enumerate(phase) if isinstance(p, int) and u < p):
                others = [[t, text(bounds[t][u][1]), text(bounds[t][p][1]),
                           text(interval(affine([(Fraction(1), pres[u]), (Fraction(1), pres[p])]), box)[1])]
                          for t, pres in enumerate(pres_by_token) if t != owner]
                self.pairs.append({"block": b, "owner": owner, "units": [u, p], "others": others})

    def attention_block(self, b: int, states, layer, n: int):
        att: Attention = self.tf.blocks[b]
        if len(att.heads) != layer.units:
            self.fail(f"block {b}: {len(att.heads)} heads for {layer.units} units")
        chosen = [[] for _ in states]
        out = [[dict(form) for form in X] for X in states]
        for i, head in enumerate(att.heads):
            targets = [self.piece(wj, bj) for wj, bj in zip(layer.weight[i], layer.bias[i])]
            support = [c for c in range(self.tf.width) if head.value[0][c] or any(k[c] for k in head.key)]
            scales = []
            for t, X in enumerate(states):
                q = [affine((a, X[c]) for c, a in enumerate(row) if a) for row in head.query]
                if len(head.value) != 1 or any(k != ONE for form in q for k in form):
                    self.fail(f"block {b} head {i} token {t}: not a max head (query not constant or value not 1-D)")
                key = [sum((form.get(ONE, 0) * k[c] for form, k in zip(q, head.key)), Fraction(0)) for c in support]
                value = [head.value[0][c] for c in support]
                j = next((c for c, x in enumerate(value) if x), None)
                scale = None if j is None else key[j] / value[j]
                if scale is None or scale <= 0 or key != [scale * x for x in value]:
                    self.fail(f"block {b} head {i} token {t}: the score is not a positive multiple of the value")
                v = affine((a, X[c]) for c, a in enumerate(head.value[0]) if a)
                if v not in targets:
                    self.fail(f"block {b} head {i} token {t}: the value is not a piece of unit {i}")
                scales.append(text(scale))
                chosen[t].append(targets.index(v))
            if {chosen[t][i] for t in range(len(states))} != set(range(len(targets))):
                self.fail(f"block {b} head {i}: not every piece of unit {i} is in some token")
            self.heads.append({"block": b, "head": i, "scales": scales})
            for Y in out:
                for r, o in enumerate(head.output):
                    if o[0]:
                        Y[r] = affine([(Fraction(1), Y[r]), (o[0], {n + i: Fraction(1)})])
        self.pieces.append({"block": b, "pieces": chosen})
        return out

    # --- the evidence each claim must carry, recomputed ---
    def c1(self) -> dict:
        return {"tokens": self.tf.tokens, "heads": self.heads}

    def c2(self) -> dict:
        return {"pairs": self.pairs}

    def c3(self) -> dict:
        return {"boxes": [[[text(lo), text(hi)] for lo, hi in box] for box in self.boxes],
                "feedforward": self.feedforward, "pieces": self.pieces,
                "readout": {"token": self.tf.readout_token}}

    @functools.cached_property
    def sizes(self) -> dict:
        """C4's three tables: the closed formula, the built Transformer, the Maxout net."""
        net, tf = self.net, self.tf
        n, T, L, d, o = net.widths, net.max_rank, len(net.layers), net.input_dim, net.output_dim
        w = 1 + T + 3 * max(n)
        hidden = [h for l in range(1, L + 1) for h in (2 * n[l] * T, 2 * (n[l - 1] + 2 * n[l]))]
        measured = sizes(tf)
        formula = {"blocks": 3 * L, "tokens": T, "width": w, "heads": n[1:], "hidden": hidden,
                   "parameters": w * d + T * w + sum(2 * h * w + h + w for h in hidden) + 4 * w * sum(n[1:]) + o * (w + 1),
                   **{k: measured[k] for k in ("nonzero_parameters", "numerator_bits", "denominator_bits")}}
        numbers = [x for layer in net.layers for ws in layer.weight for wj in ws for x in wj] + \
                  [x for layer in net.layers for bs in layer.bias for x in bs] + \
                  [x for row in net.readout_weight for x in row] + list(net.readout_bias)
        source = {"layers": L, "widths": n, "max_rank": T,
                  "parameters": sum(k * (layer.input_dim + 1) for layer in net.layers for k in layer.ranks) + o * (n[-1] + 1),
                  **counts(numbers)}
        return {"formula": formula, "transformer": measured, "maxout": source}

    def c4(self) -> dict:
        return self.sizes


class _Stop(Exception):
    """The argument cannot go on past a defect."""


def counts(numbers) -> dict:
    """Non-zero count and bit sizes; equal entries are shared objects after reading, so each
    distinct object is inspected once."""
    distinct = {id(x): x for x in numbers}
    nonzero = sum(n for i, n in collections.Counter(map(id, numbers)).items() if distinct[i])
    values = [Fraction(x) for x in distinct.values()]
    return {"nonzero_parameters": nonzero,
            "numerator_bits": max(abs(x.numerator).bit_length() for x in values),
            "denominator_bits": max(x.denominator.bit_length() for x in values)}


def sizes(tf: Transformer) -> dict:
    mats = [tf.embed_weight, tf.embed_bias, tf.readout_weight]
    vecs = [tf.readout_bias]
    for b in tf.blocks:
        if b.kind == "feedforward":
            mats += [b.w1, b.w2]
            vecs += [b.b1, b.b2]
        else:
            mats += [m for h in b.heads for m in (h.query, h.key, h.value, h.output)]
    numbers = [x for m in mats for row in m for x in row] + [x for v in vecs for x in v]
    return {"blocks": len(tf.blocks), "tokens": tf.tokens, "width": tf.width,
            "heads": [len(b.heads) for b in tf.blocks if b.kind == "attention"],
            "hidden": [len(b.w1) for b in tf.blocks if b.kind == "feedforward"],
            "parameters": sum(len(m) * len(m[0]) if m else 0 for m in mats) + sum(len(v) for v in vecs),
            **counts(numbers)}


# --- claims -------------------------------------------------------------------------------------

def first_difference(given, expected, path: str = "evidence") -> str | None:
    """The first path where two JSON values differ, with both values."""
    if isinstance(given, dict) and isinstance(expected, dict):
        for k in sorted(given.keys() | expected.keys()):
            if k not in given or k not in expected:
                return f"{path}.{k}: {'missing' if k not in given else 'not expected'}"
            diff = first_difference(given[k], expected[k], f"{path}.{k}")
            if diff:
                return diff
        return None
    if isinstance(given, list) and isinstance(expected, list):
        for i, (g, e) in enumerate(zip(given, expected)):
            diff = first_difference(g, e, f"{path}[{i}]")
            if diff:
                return diff
        return None if len(given) == len(expected) else f"{path}: {len(given)} entries, recomputed {len(expected)}"
    if given == expected and type(given) is type(expected):
        return None
    return f"{path}: certificate says {str(given)[:60]}, recomputed {str(expected)[:60]}"


def recomputed_claim(name: str, condition, analysed: bool = True):
    """A check comparing the evidence (less ``smt``) with ``Facts.<name>()`` and testing
    ``condition``; ``analysed`` claims also fail on any defect of the layer-by-layer argument."""
    def check(evidence: dict, facts: Facts) -> list[str]:
        given = {k: v for k, v in evidence.items() if k != "smt"}
        diff = first_difference(given, getattr(facts, name)())
        return (facts.defects[:1] if analysed else []) + ([diff] if diff else []) + condition(facts)
    return check


def c2_condition(facts: Facts) -> list[str]:
    for p in facts.pairs:
        for t, hi_u, hi_v, hi_sum in p["others"]:
            if Fraction(hi_u) > 0 or Fraction(hi_v) > 0 or Fraction(hi_sum) >= 0:
                return [f"block {p['block']} pair {p['units']} (owner token {p['owner']}) in token {t}: "
                        f"upper bounds {hi_u}, {hi_v}, sum {hi_sum}"]
    return [] if facts.pairs or facts.tf.tokens == 1 else ["no token-shift pair found"]


def c1_condition(facts: Facts) -> list[str]:
    """The lemma on every weak ordering of min(T, 5) values, and ``m · (v/m) = v`` for every tie size."""
    m = min(facts.tf.tokens, 5)
    for values in itertools.product(range(m), repeat=m):
        top = max(values)
        argmax = [v for v in values if v == top]
        if sum(Fraction(v, len(argmax)) for v in argmax) != top:
            return [f"hardmax average is not the max on {values}"]
    if any(size * Fraction(1, size) != 1 for size in range(1, facts.tf.tokens + 1)):
        return ["tie averaging fails"]
    return [] if len(facts.heads) == sum(facts.net.widths[1:]) else ["not every head was shown to be a max head"]


def c4_condition(facts: Facts) -> list[str]:
    e = facts.c4()
    return [] if e["formula"] == e["transformer"] else ["the built Transformer's sizes differ from the formula"]


def check_c5(evidence: dict, facts: Facts) -> list[str]:
    try:
        from .check_softmax import check_c5 as softmax_check
    except ImportError:
        return ["C5 checker (exactform.certificate.check_softmax) is not installed"]
    result = softmax_check(evidence, facts.net, facts.tf)
    return ([] if result else ["C5 does not hold"]) if isinstance(result, bool) else list(result)


CHECKS = {
    "C1": recomputed_claim("c1", c1_condition),
    "C2": recomputed_claim("c2", c2_condition),
    "C3": recomputed_claim("c3", lambda facts: [] if facts.readout_ok else ["the read-out was not reached"]),
    "C4": recomputed_claim("c4", c4_condition, analysed=False),
    "C5": check_c5,
}


# --- SMT re-runs --------------------------------------------------------------------------------

def solver_names() -> list[str]:
    """z3 when importable and, when its binary is on PATH, cvc5."""
    try:
        import z3  # noqa: F401
        names = ["z3"]
    except ImportError:
        names = []
    return names + (["cvc5"] if shutil.which("cvc5") else [])


def smt_answer(task: tuple[str, str]) -> str:
    """One re-run, ``(solver, smtlib) -> 'unsat' | 'sat' | 'unknown'``: a pure task for an executor."""
    solver, smtlib = task
    if solver == "z3":
        import z3
        s = z3.Solver()
        s.set("timeout", 60_000)
        s.from_string(smtlib)
        return str(s.check())
    done = subprocess.run(["cvc5", "--lang=smt2", "--tlim=60000"], input=smtlib, text=True, capture_output=True)
    return (done.stdout.split() or ["unknown"])[-1]


def smt_problems(evidence: dict, executor=None) -> tuple[int, list[str]]:
    """Re-run every query with every solver (``executor.map`` when given, one task per run); the
    first answer other than unsat, in query order, fails the claim."""
    queries = evidence.get("smt", [])
    names = solver_names()
    if queries and not names:
        return 0, ["--smt: no SMT solver is installed"]
    if any(not isinstance(q, dict) or not isinstance(q.get("smtlib"), str) for q in queries):
        return 0, ["evidence.smt: an entry is not {name, claim, smtlib}"]
    tasks = [(name, q["smtlib"]) for q in queries for name in names]
    answers = (executor.map if executor else map)(smt_answer, tasks)
    for (name, _), answer, q in zip(tasks, answers, (q for q in queries for _ in names)):
        if answer != "unsat":
            return 0, [f"SMT query {q.get('name')!r}: {name} says {answer}, expected unsat"]
    return len(queries), []


# --- files --------------------------------------------------------------------------------------

def read_certificate(path: str | os.PathLike) -> tuple[MaxoutNet, Transformer, list[tuple[str, str, dict]]]:
    """Parse and shape-check a certificate; ``InputError`` (file, field path, index) otherwise."""
    doc = load_json(path)
    doc.dict({"format", "maxout", "transformer", "claims"})
    check_format(doc, FORMAT)
    try:
        net = MaxoutNet.from_json(doc.field("maxout"))
        tf = Transformer.from_json(doc.field("transformer"))
    except ValueError as e:
        if isinstance(e, InputError):
            raise
        raise doc.error(f"inconsistent model: {e}") from None
    claims, seen = [], set()
    for r in doc.field("claims").list(nonempty=True):
        r.dict({"id", "statement", "evidence"})
        cid = r.field("id").str()
        if cid in seen:
            raise r.field("id").error(f"claim {cid} appears twice")
        seen.add(cid)
        claims.append((cid, r.field("statement").str(), r.field("evidence").dict()))
    return net, tf, claims


def check_certificate(path, smt: bool = False, say=print, executor=None) -> int:
    """Check one certificate, printing one line per claim; the exit code of the module docstring.
    ``executor`` (anything with an order-keeping ``map``) runs the SMT re-runs."""
    try:
        net, tf, claims = read_certificate(path)
    except InputError as e:
        say(f"{e}  (not a certificate)")
        return 2
    facts = None
    failed = []
    for cid, statement, evidence in claims:
        if cid in STATEMENTS and statement != STATEMENTS[cid]:
            problems = [f"the statement is not the checker's statement of {cid}"]
        elif cid not in CHECKS:
            problems = [f"unknown claim id {cid!r}"]
        else:
            if facts is None and cid != "C5":
                facts = Facts(net, tf)
            problems = CHECKS[cid](evidence, facts or _Lazy(net, tf))
        queries = 0
        if smt and not problems:
            queries, problems = smt_problems(evidence, executor)
        if problems:
            failed.append(cid)
            say(f"{cid} FAILS: {problems[0]}")
        else:
            say(f"{cid} holds (recomputed{f'; {queries} SMT queries unsat' if queries else ''}): {statement}")
    if failed:
        say(f"{path}: FAILED {', '.join(failed)} ({len(failed)} of {len(claims)} claims)")
        return 1
    say(f"{path}: all {len(claims)} claims hold")
    return 0


class _Lazy:
    """What a C5-only certificate passes on: the models, without the C1–C4 recomputation."""

    def __init__(self, net, tf):
        self.net, self.tf = net, tf


def certificate_files(paths: list[str]) -> list[Path]:
    """The files named, and every ``*cert*.json`` in a folder named."""
    out = []
    for p in map(Path, paths):
        out += sorted(p.glob("*cert*.json")) if p.is_dir() else [p]
    return out


def check_lines(path, smt: bool = False) -> tuple[int, list[str]]:
    """``check_certificate`` as a pure task: its exit code and its lines."""
    lines: list[str] = []
    return check_certificate(path, smt, lines.append), lines


def check_paths(paths: list[str], smt: bool = False, say=print, executor=None) -> int:
    """Check every certificate named; with an ``executor``, one task per file (several files) or
    per SMT re-run (one file).  Lines are printed in file order whatever runs them."""
    files = certificate_files(paths)
    if not files:
        say(f"{' '.join(paths)}: no certificate files")
        return 2
    if executor is None or len(files) == 1:
        return max(check_certificate(f, smt, say, executor) for f in files)
    codes = []
    for code, lines in executor.map(functools.partial(check_lines, smt=smt), files):
        codes.append(code)
        for line in lines:
            say(line)
    return max(codes)

