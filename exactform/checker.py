"""The independent certificate checker (claim C8): standard library only, nothing else of exactform.
It reads the two models of an ``exactform/certificate@2`` file with its own strict reader, re-derives
every claim with ``fractions.Fraction`` guided by hints it verifies, and writes each statement itself;
docs/spec.md §4–§6 specify the format and this algorithm."""
import gzip
import json
import math
import os
import re
import stat
import sys
import zlib
from fractions import Fraction
from typing import NamedTuple

FORMAT = "exactform/certificate@2"
CLAIMS = {"equality": ("C1", "C2", "C3", "C4"), "softmax": ("C5",)}
MAX_DIGITS = 4000            # decimal digits of a numerator or denominator
MAX_BYTES = 1 << 30          # size of a file
MAX_CELLS = 10 ** 7          # tokens × width, and hidden units × tokens: bounds the work before it starts
MAX_LN_DIGITS = 60           # digits of the ln T bound, so its series check stays small
ONE = -1                     # key of the constant term of an affine form {variable: coefficient}
_RATIONAL = re.compile(r"(-?)(0|[1-9][0-9]*)(?:/([1-9][0-9]*))?")

class Malformed(Exception): """Not a readable certificate or model (exit 2)."""

class Refuted(Exception): """A claim does not follow from the certificate (exit 1)."""

class _Float(str): """A JSON float literal or constant, kept so that the reader can name its field."""

def load(path) -> object:
    """A JSON regular file (gzip if named *.gz) of at most MAX_BYTES; floats and 40+-digit integers kept as markers to refuse."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise Malformed(f"{path}: not a regular file")
        with (gzip.open if str(path).endswith(".gz") else open)(path, "rb") as f:
            if len(data := f.read(MAX_BYTES + 1)) > MAX_BYTES:
                raise Malformed(f"{path}: larger than {MAX_BYTES} bytes")
    except (OSError, EOFError, zlib.error) as e:
        raise Malformed(f"{path}: {getattr(e, 'strerror', None) or e}") from None
    try:
        return json.loads(data, parse_float=_Float, parse_constant=_Float, object_pairs_hook=_object,
                          parse_int=lambda s: _Float(s) if len(s.lstrip("-")) > 40 else int(s))
    except (ValueError, RecursionError) as e:
        raise Malformed(f"{path}: not JSON: {str(e)[:80]}") from None

def _object(pairs):
    if len(out := dict(pairs)) != len(pairs):
        raise ValueError(f"duplicate key in {sorted(k for k, _ in pairs)[:5]}")
    return out

def _fail(where, message):
    raise Malformed(f"{where}: {message}")

def fields(obj, where, required, optional=()):
    if not isinstance(obj, dict):
        _fail(where, "expected an object")
    for k in sorted(obj.keys() - set(required) - set(optional)):
        _fail(where, f"unknown field {k!r}")
    for k in (k for k in required if k not in obj):
        _fail(where, f"missing field {k!r}")
    return obj

def integer(v, where, low=0, high=MAX_CELLS):
    if type(v) is not int or not low <= v <= high:
        _fail(where, f"expected an integer in [{low}, {high}], got {str(v)[:40]}")
    return v

def items(v, where, n=None, nonempty=False):
    if not isinstance(v, list) or (n is not None and len(v) != n) or (nonempty and not v):
        _fail(where, f"expected a {'non-empty ' if nonempty else ''}list{'' if n is None else f' of {n} entries'}")
    return v

def rational(v, where, i=None, _seen={}) -> Fraction:
    """A canonical rational string ``-?N(/D)?``: reduced, D > 1, ≤ MAX_DIGITS digits each (``_seen``: those read)."""
    if type(v) is str and v in _seen:
        return _seen[v]
    at = where if i is None else f"{where}[{i}]"
    if not isinstance(v, str) or isinstance(v, _Float):
        _fail(at, f"float literal {v[:40]} (rationals are strings such as \"-7/12\")" if isinstance(v, _Float)
              else "expected a rational string such as \"-7/12\"")
    m = _RATIONAL.fullmatch(v)
    if not m or len(m[2]) > MAX_DIGITS or len(m[3] or "") > MAX_DIGITS:
        _fail(at, f"{v[:40]!r} is not a rational of at most {MAX_DIGITS} digits such as \"-7/12\"")
    p, d = int(m[2]), int(m[3] or 1)
    if (m[3] and d == 1) or math.gcd(p, d) != 1 or (m[1] and p == 0):
        _fail(at, f"{v[:40]!r} is not canonical (reduced, denominator > 1, no '-0')")
    return _seen.setdefault(v, Fraction(-p if m[1] else p, d))

def row(v, where, n, entry=rational) -> dict:
    """The non-zero entries {index: entry} of a length-n vector, dense or ``{"length", "index", "value"}``;
    an entry is a rational, or a row when the vector is the list of rows of a matrix."""
    if isinstance(v, list):
        if len(v) != n:
            _fail(where, f"{len(v)} entries, expected {n}")
        return {i: q for i, x in enumerate(v) if (q := entry(x, where, i))}
    fields(v, where, ("length", "index", "value"))
    index, value = items(v["index"], f"{where}.index"), items(v["value"], f"{where}.value", len(v["index"]))
    if integer(v["length"], f"{where}.length") != n:
        _fail(f"{where}.length", f"{v['length']}, expected {n}")
    out, last = {}, -1
    for k, (i, x) in enumerate(zip(index, value)):
        last = integer(i, f"{where}.index[{k}]", last + 1, n - 1)
        if not (q := entry(x, f"{where}.value", k)):
            _fail(f"{where}.value[{k}]", "a listed sparse entry is zero")
        out[i] = q
    return out

def dense(v, where, n) -> list:
    r = row(v, where, n)
    return [r.get(i, Fraction(0)) for i in range(n)]

def matrix(v, where, rows, cols, nonempty=False) -> list:
    """``rows`` rows (any number if None) of ``cols`` entries; all-zero rows may be left out of a sparse list."""
    n = rows if rows is not None else len(items(v, where, nonempty=nonempty)) if isinstance(v, list) else \
        integer(fields(v, where, ("length", "index", "value"))["length"], f"{where}.length", int(nonempty))
    r, zero = row(v, where, n, lambda x, at, i: row(x, f"{at}[{i}]", cols)), {}
    return [r.get(i, zero) for i in range(n)]

def affine_rows(weight, bias, wat, bat, cols) -> list:
    """``[(weights, bias)]``: a non-empty list of rows of length ``cols`` and one bias per row."""
    rows = matrix(weight, wat, None, cols, nonempty=True)
    return list(zip(rows, dense(bias, bat, len(rows))))

def box(v, where, n) -> list:
    fields(v, where, ("lower", "upper"))
    out = list(zip(dense(v["lower"], f"{where}.lower", n), dense(v["upper"], f"{where}.upper", n)))
    for i, (lo, hi) in enumerate(out):
        if lo > hi:
            _fail(f"{where}.lower[{i}]", "above the upper bound: the box is empty")
    return out

class Maxout(NamedTuple):
    box: list          # [(lower, upper)] per input
    layers: list       # [layer][unit][piece] = (weights {input: a}, bias)
    readout: list      # [(weights, bias)] per output

class Transformer(NamedTuple):
    box: list
    tokens: int
    width: int
    scale: Fraction | None   # softmax λ, None for hardmax
    embed: list              # [coordinate] weights over the inputs
    position: list           # [token][coordinate]
    blocks: list             # ("feedforward", w1 rows, b1, w2 columns, b2) | ("attention", [(q, k, v, o)])
    token: int
    readout: list            # [(weights, bias)] per output

def read_maxout(v, where) -> Maxout:
    fields(v, where, ("format", "input_dim", "domain", "layers", "readout"))
    if v["format"] != "exactform/maxout@1":
        _fail(f"{where}.format", "expected \"exactform/maxout@1\"")
    n = integer(v["input_dim"], f"{where}.input_dim", 1)
    layers = []
    for l, layer in enumerate(items(v["layers"], f"{where}.layers", nonempty=True)):
        at = f"{where}.layers[{l}]"
        units = items(fields(layer, at, ("weight", "bias"))["weight"], f"{at}.weight", nonempty=True)
        layers.append([affine_rows(ws, bs, f"{at}.weight[{i}]", f"{at}.bias[{i}]", n)
                       for i, (ws, bs) in enumerate(zip(units, items(layer["bias"], f"{at}.bias", len(units))))])
        n = len(units)
    r = fields(v["readout"], f"{where}.readout", ("weight", "bias"))
    return Maxout(box(v["domain"], f"{where}.domain", v["input_dim"]), layers,
                  affine_rows(r["weight"], r["bias"], f"{where}.readout.weight", f"{where}.readout.bias", n))

def read_transformer(v, where) -> Transformer:
    fields(v, where, ("format", "input_dim", "tokens", "width", "attention", "domain", "embed", "blocks",
                      "readout"), ("layout",))
    if v["format"] != "exactform/transformer@1":
        _fail(f"{where}.format", "expected \"exactform/transformer@1\"")
    d, T, w = (integer(v[k], f"{where}.{k}", 1) for k in ("input_dim", "tokens", "width"))
    if T * w > MAX_CELLS:
        _fail(where, f"tokens × width = {T * w} exceeds the checker's limit {MAX_CELLS}")
    scale = None
    if v["attention"] != "hardmax":
        scale = rational(fields(v["attention"], f"{where}.attention", ("softmax",))["softmax"], f"{where}.attention.softmax")
        if scale <= 0:
            _fail(f"{where}.attention.softmax", "λ must be positive")
    fields(v["embed"], f"{where}.embed", ("weight", "bias"))
    blocks = []
    for b, block in enumerate(items(v["blocks"], f"{where}.blocks")):
        at = f"{where}.blocks[{b}]"
        if isinstance(block, dict) and block.get("kind") == "feedforward":
            fields(block, at, ("kind", "w1", "b1", "w2", "b2"))
            w1 = matrix(block["w1"], f"{at}.w1", None, w)
            if not w1 or len(w1) * T > MAX_CELLS:
                _fail(f"{at}.w1", f"expected 1 to {MAX_CELLS // T} hidden units")
            columns = [{} for _ in w1]
            for r, entries in enumerate(matrix(block["w2"], f"{at}.w2", w, len(w1))):
                for u, a in entries.items():
                    columns[u][r] = a
            blocks.append(("feedforward", w1, dense(block["b1"], f"{at}.b1", len(w1)), columns,
                           dense(block["b2"], f"{at}.b2", w)))
        else:
            heads = items(fields(block, at, ("kind", "heads"))["heads"], f"{at}.heads", nonempty=True)
            if block["kind"] != "attention":
                _fail(f"{at}.kind", "expected \"feedforward\" or \"attention\"")
            blocks.append(("attention", [head(h, f"{at}.heads[{i}]", w) for i, h in enumerate(heads)]))
    r = fields(v["readout"], f"{where}.readout", ("token", "weight", "bias"))
    return Transformer(box(v["domain"], f"{where}.domain", d), T, w, scale,
                       matrix(v["embed"]["weight"], f"{where}.embed.weight", w, d),
                       [dense(p, f"{where}.embed.bias[{t}]", w) for t, p in enumerate(items(v["embed"]["bias"], f"{where}.embed.bias", T))],
                       blocks, integer(r["token"], f"{where}.readout.token", 0, T - 1),
                       affine_rows(r["weight"], r["bias"], f"{where}.readout.weight", f"{where}.readout.bias", w))

def head(h, at, w) -> tuple:
    """``(query, key, value, output)`` of a head with at least one query row and one value row."""
    query = matrix(fields(h, at, ("query", "key", "value", "output"))["query"], f"{at}.query", None, w, True)
    value = matrix(h["value"], f"{at}.value", None, w, True)
    return query, matrix(h["key"], f"{at}.key", len(query), w), value, matrix(h["output"], f"{at}.output", w, len(value))

def combine(terms, constant=0) -> dict:
    """Σ a·form + constant over ``terms = [(a, form)]``, zero coefficients dropped."""
    out = {ONE: constant} if constant else {}
    for a, form in terms:
        for k, x in form.items():   # products by 1 and sums with a new key skipped: Fraction arithmetic is slow
            y = x if a == 1 else a if x == 1 and type(a) is Fraction else a * x
            out[k] = out[k] + y if k in out else y
    return {k: x for k, x in out.items() if x}

def form_of(weights: dict, bias, start: int) -> dict:
    """The affine form ``Σ a_c·x_{start+c} + bias`` of a row over the variables from ``start`` on."""
    return combine([(1, {start + c: a for c, a in weights.items()})], bias)

def slack(form, err) -> Fraction:
    """Σ |a_k|·err_k: how far the form moves when each variable k moves by at most err_k."""
    return sum((abs(a) * err[k] for k, a in form.items() if k != ONE and err[k]), Fraction(0))

def dot(pairs) -> Fraction:
    """Σ a·b exactly, as one integer sum over the common denominator (one Fraction, not one per term)."""
    terms = [(a.numerator * b.numerator, a.denominator * b.denominator) for a, b in pairs if b]
    den = math.lcm(1, *(d for _, d in terms))
    return Fraction(sum(n * (den // d) for n, d in terms), den)

def interval(form, box, err=None) -> tuple:
    """Exact bounds of the form over the box of its variables, widened by ``slack(form, err)``."""
    ends, s = [(a, box[k] if a > 0 else box[k][::-1]) for k, a in form.items() if k != ONE], slack(form, err) if err else 0
    return (form.get(ONE, 0) + dot((a, e[0]) for a, e in ends) - s, form.get(ONE, 0) + dot((a, e[1]) for a, e in ends) + s)

def text(q) -> str:
    if max(q.numerator.bit_length(), q.denominator.bit_length()) > 13000:
        raise Refuted(f"a derived number has more than {MAX_DIGITS} digits")
    return str(q)

class Walk:
    """The argument of C1–C3 and C5 (docs/spec.md §6.3): each token's state is an exact affine form in
    M's variables (inputs, then each layer's units, in interval boxes); with softmax, ``err`` bounds
    each variable's perturbation.  Raises Refuted at the first step that does not hold."""

    def __init__(self, net: Maxout, tf: Transformer, hints: dict, at: str, ln_tokens=None, record=False):
        self.net, self.tf, self.hints, self.at, self.ln_tokens = net, tf, hints, at, ln_tokens
        self.heads, self.pairs, self.c2 = 0, 0, None     # c2: the first token-shift defect, if any
        self.obligations = [] if record else None         # (block, token, form, sign ≥ 0 or ≤ 0) for --smt
        self.box, self.starts, self.pieces = list(net.box), [0], []
        for layer in net.layers:
            start = self.starts[-1]
            self.pieces.append(forms := [[form_of(w, b, start) for w, b in unit] for unit in layer])
            self.starts.append(len(self.box))
            self.box += [(max(lo for lo, _ in ivs), max(hi for _, hi in ivs))
                         for ivs in ([interval(f, self.box) for f in unit] for unit in forms)]
        self.err = [Fraction(0)] * len(self.box)
        if tf.box != net.box or len(tf.readout) != len(net.readout):
            raise Refuted("Tf's domain or output size is not M's")
        self.bound = self.run()

    def run(self) -> Fraction:
        tf, net, at = self.tf, self.net, self.at
        kinds = [b[0] for b in tf.blocks]
        phases = items(self.hints["phases"], f"{at}hints.phases", kinds.count("feedforward"))
        pieces = items(self.hints["pieces"], f"{at}hints.pieces", len(net.layers))
        if kinds.count("attention") != len(net.layers):
            raise Refuted(f"Tf has {kinds.count('attention')} attention blocks, M has {len(net.layers)} layers")
        X = [[combine([(1, e)], p[r]) for r, e in enumerate(tf.embed)] for p in tf.position]
        for b, block in enumerate(tf.blocks):
            k = kinds[:b].count(block[0])       # the block's number among blocks of its kind
            if block[0] == "feedforward":
                X = self.feedforward(b, block, X, phases[k], f"{at}hints.phases[{k}]", kinds[b + 1:b + 2] == ["attention"])
            else:
                X = self.attention(b, block[1], X, k, pieces[k], f"{at}hints.pieces[{k}]")
        forms = [combine(((a, X[tf.token][r]) for r, a in w.items()), c) for w, c in tf.readout]
        for o, (form, (w, c)) in enumerate(zip(forms, net.readout)):
            if form != form_of(w, c, self.starts[-1]):
                raise Refuted(f"output {o} of Tf (token {tf.token}) is not M's output {o} as an affine map")
        return max((slack(f, self.err) for f in forms), default=Fraction(0))

    def feedforward(self, b, block, X, hint, where, pieces_block):
        _, w1, b1, columns, b2 = block
        out, pres_by_token, phases = [], [], []
        for t, Xt in enumerate(X):
            phase = [integer(p, f"{where}[{t}][{u}]", -2, len(w1) - 1)
                     for u, p in enumerate(items(items(hint, where, len(X))[t], f"{where}[{t}]", len(w1)))]
            pres = [combine(((a, Xt[c]) for c, a in r.items()), b1[u]) for u, r in enumerate(w1)]
            terms = [[(1, f)] for f in Xt]
            for u, p in enumerate(phase):
                if p >= 0:          # an identity pair with hidden unit p: ReLU(v) − ReLU(−v) = v
                    if p == u or phase[p] != u or pres[p] != {k: -x for k, x in pres[u].items()} or columns[p] != {k: -x for k, x in columns[u].items()}:
                        raise Refuted(f"block {b} token {t}: hidden units {u} and {p} are not an identity pair")
                else:               # -1 off (pre ≤ 0), -2 on (pre ≥ 0) over the box, perturbation included
                    lo, hi = interval(pres[u], self.box, self.err)
                    if (p == -1 and hi > 0) or (p == -2 and lo < 0):
                        raise Refuted(f"block {b} token {t} hidden unit {u}: the phase {'off' if p == -1 else 'on'} does not "
                                      f"hold, the pre-activation reaches {text(hi if p == -1 else lo)} on the domain")
                    if self.obligations is not None:
                        self.obligations.append((b, t, pres[u], p))
                if p == -2 or u < p:        # "on", or the first half of an identity pair: adds column·pre
                    for r, a in columns[u].items():
                        terms[r].append((a, pres[u]))
            out.append([ts[0][1] if len(ts) == 1 and not c else combine(ts, c) for ts, c in zip(terms, b2)])
            pres_by_token.append(pres)
            phases.append(phase)
        if pieces_block:
            self.token_shift(b, pres_by_token, phases)
        return out

    def token_shift(self, b, pres, phases):
        """C2: an identity pair of a pieces block is one in exactly one token (its owner); in each
        other token both ReLUs are off and their pre-activations sum to less than 0 on the box."""
        for u, p in dict.fromkeys((u, p) for phase in phases for u, p in enumerate(phase) if u < p):
            ts = [t for t, phase in enumerate(phases) if phase[u] == p]
            self.pairs += 1
            if len(ts) > 1 and self.c2 is None:
                self.c2 = f"block {b}: hidden units {u}, {p} form an identity pair in tokens {ts}"
            for t in (t for t in range(len(phases)) if t not in ts):
                both = combine([(1, pres[t][u]), (1, pres[t][p])])
                if self.c2 is None and (phases[t][u] != -1 or phases[t][p] != -1 or
                                        interval(both, self.box, self.err)[1] >= 0):
                    self.c2 = (f"block {b}: the pair of hidden units {u}, {p} (owner token {ts[0]}) in token {t} is "
                               "not both off with a negative sum on the domain")
                elif self.obligations is not None:
                    self.obligations.append((b, t, both, -3))

    def attention(self, b, heads, X, layer, hint, where):
        units, start = self.pieces[layer], self.starts[layer + 1]
        if len(heads) != len(units):
            raise Refuted(f"block {b}: {len(heads)} heads for the {len(units)} units of M's layer {layer}")
        added = {}
        for i, (query, key, value, output) in enumerate(heads):
            at = f"block {b} head {i}"
            if len(value) != 1:
                raise Refuted(f"{at}: the value is not one-dimensional")
            v = [combine((a, Xt[c]) for c, a in value[0].items()) for Xt in X]
            chosen = [integer(j, f"{where}[{i}][{t}]", 0, len(units[i]) - 1)
                      for t, j in enumerate(items(items(hint, where, len(heads))[i], f"{where}[{i}]", len(X)))]
            for t, j in enumerate(chosen):
                if v[t] != units[i][j]:
                    raise Refuted(f"{at} token {t}: the value is not piece {j} of unit {i} of M's layer {layer}")
            seen = {frozenset(units[i][j].items()) for j in chosen}
            missing = [j for j, f in enumerate(units[i]) if frozenset(f.items()) not in seen]
            if missing:
                raise Refuted(f"{at}: piece {missing[0]} of unit {i} of M's layer {layer} is no token's value")
            alpha = self.max_head(at, query, key, value[0], v, X)
            lemma = self.ln_tokens / (self.tf.scale * alpha) if self.tf.scale and alpha else 0
            self.err[start + i] = max(slack(f, self.err) for f in v) + lemma
            for r, o in enumerate(output):
                if o:
                    added.setdefault(r, {})[start + i] = o[0]
            self.heads += 1
        return [[combine([(1, f), (1, added[r])]) if r in added else f for r, f in enumerate(Xt)] for Xt in X]

    def max_head(self, at, query, key, value, v, X):
        """C1 for one head: in each token t the query is constant and the score of token j is
        α_t·v_j + β_t with α_t > 0, so hardmax returns max_j v_j.  Returns min_t α_t, or None when
        all values are the same form (then any attention returns that value)."""
        if all(f == v[0] for f in v):
            return None
        alphas = []
        j, c0 = next(j for j, f in enumerate(v) if f != v[0]), next(iter(value))
        for t, Xt in enumerate(X):
            q = [combine((a, Xt[c]) for c, a in r.items()) for r in query]
            if any(k != ONE for f in q for k in f):
                raise Refuted(f"{at} token {t}: the query depends on the input")
            kappa = combine((f.get(ONE, 0), k) for f, k in zip(q, key))
            alpha = kappa.get(c0, 0) / value[c0]
            if not (alpha > 0 and kappa == {c: alpha * a for c, a in value.items()}):
                s = [combine((a, Xk[c]) for c, a in kappa.items()) for Xk in X]
                dv = combine([(1, v[j]), (-1, v[0])])
                k, c = next(iter(dv.items()))
                alpha = combine([(1, s[j]), (-1, s[0])]).get(k, 0) / c
                if alpha <= 0 or any(combine([(1, s[m]), (-alpha, v[m]), (-1, s[0]), (alpha, v[0])]) for m in range(len(X))):
                    raise Refuted(f"{at} token {t}: the score is not a positive multiple of the value plus a constant")
            alphas.append(alpha)
        return min(alphas)

def sizes(net: Maxout, tf: Transformer) -> tuple[dict, dict]:
    """C4: Tf's sizes as the token-shift construction's closed formula gives them from M, and as built."""
    n = [len(net.box)] + [len(layer) for layer in net.layers]
    L, T, o = len(net.layers), max(len(u) for layer in net.layers for u in layer), len(net.readout)
    w, hidden = 1 + T + 3 * max(n), [h for l in range(1, L + 1) for h in (2 * n[l] * T, 2 * (n[l - 1] + 2 * n[l]))]
    formula = {"blocks": ["feedforward", "attention", "feedforward"] * L, "tokens": T, "width": w, "heads": n[1:],
               "hidden": hidden, "parameters": w * n[0] + T * w + sum(2 * h * w + h + w for h in hidden)
               + 4 * w * sum(n[1:]) + o * (w + 1)}
    ff, att = [b[1] for b in tf.blocks if b[0] == "feedforward"], [b[1] for b in tf.blocks if b[0] == "attention"]
    built = {"blocks": [b[0] for b in tf.blocks], "tokens": tf.tokens, "width": tf.width, "heads": [len(h) for h in att],
             "hidden": [len(w1) for w1 in ff], "parameters": tf.width * (len(tf.box) + tf.tokens + len(tf.readout))
             + len(tf.readout) + sum(len(w1) * (2 * tf.width + 1) + tf.width for w1 in ff)
             + sum((len(q) + len(k) + 2 * len(v)) * tf.width for heads in att for q, k, v, _ in heads)}
    return formula, built

def ln_bound(v, T: int, where: str) -> Fraction:
    """U ≥ ln T, shown by a partial sum Σ_{k ≤ K} U^k/k! ≥ T of e^U (all terms are ≥ 0 for U ≥ 0)."""
    U = rational(v, where)
    if U < 0 or max(U.numerator.bit_length(), U.denominator.bit_length()) > 3.33 * MAX_LN_DIGITS:
        _fail(where, f"expected a rational ≥ 0 of at most {MAX_LN_DIGITS} digits")
    term = total = Fraction(1)
    for k in range(1, 400):
        if total >= T:
            return U
        term = term * U / k
        total += term
    raise Refuted(f"ln_tokens_upper = {U} is not shown to be at least ln {T} (400 terms of the exponential series)")

def domain(box) -> str:
    if len(box) > 1 and len(set(box)) == 1:
        return f"[{text(box[0][0])},{text(box[0][1])}]^{len(box)}"
    return " x ".join(f"[{text(lo)},{text(hi)}]" for lo, hi in box)

def statement(claim: str, walk: Walk, net=None, tf=None, eps=None, formula=None) -> str:
    """The checker's own wording of each claim, filled in with what it recomputed."""
    if claim == "C1":
        return (f"every attention head of Tf ({walk.heads} heads, T = {walk.tf.tokens} tokens) is a max head: in each "
                "token its query is constant and its score is a positive multiple of its value plus a constant, so by "
                "the hardmax lemma (proofs/C1.py) it returns the maximum of the values over the tokens, ties included")
    if claim == "C2":
        return (f"in each pieces block (a feed-forward block followed by an attention block) each of the {walk.pairs} "
                "identity pairs ReLU(v) - ReLU(-v) = v is one in exactly one token, its owner; in every other token "
                "both ReLUs are off and their pre-activations sum to less than 0, on the whole domain")
    if claim == "C3":
        return (f"Tf(x) = M(x) for every x in {domain(walk.net.box)}: in every block and token each "
                "ReLU has a fixed phase on the domain or is half of an identity pair, so each block is affine per "
                "token; the values of each head over the tokens are exactly the pieces of its unit (C1), and the "
                f"read-out of token {walk.tf.token} equals M's read-out")
    if claim == "C4":
        f, n = formula, [len(net.box)] + [len(layer) for layer in net.layers]
        source = sum(len(u) * (n[l] + 1) for l, layer in enumerate(net.layers) for u in layer) + len(net.readout) * (n[-1] + 1)
        return (f"Tf has {len(f['blocks'])} blocks (feed-forward, attention, feed-forward per layer of M), "
                f"T = {f['tokens']} tokens (the largest rank), heads {f['heads']} (the layer widths), width {f['width']} "
                f"= 1 + T + 3N, hidden widths {f['hidden']} and {f['parameters']} parameters, as the closed formula "
                f"of the token-shift construction gives them from M ({len(net.layers)} layers, {source} parameters)")
    return (f"|Tf(x) - M(x)| <= {text(walk.bound)} <= eps = {text(eps)} (max norm) for every x in "
            f"{domain(net.box)}, with softmax attention at lambda = {text(tf.scale)}: the argument of C1-C3 holds with "
            f"every fixed ReLU phase kept under the perturbation, and each head adds at most ln T/(lambda alpha) <= "
            f"{text(walk.ln_tokens)}/(lambda alpha) (lemma (a), proofs/softmax.md; alpha the head's score scale)")

class Result(NamedTuple):
    code: int            # 0 every claim holds, 1 a claim fails or is missing, 2 not a certificate
    claims: list         # [(claim, holds, the checker's statement or why it fails)]
    known: str           # what is now known, in words (code 0); why not (1); the one-line error (2)
    ok = property(lambda self: self.code == 0, doc="every check of the certificate holds")

def derive(doc, at: str = "", smt: bool = False):
    """Every claim of the certificate's kind re-derived from its models and hints (``derived``: {claim:
    (holds, statement or reason)}), with the kind, models, given claims and walk (None if it stopped)."""
    fields(doc, at.rstrip(": ") or "certificate", ("format", "kind", "maxout", "transformer", "claims", "hints"))
    if doc["format"] != FORMAT:
        _fail(f"{at}format", f"expected {FORMAT!r} (certify again to update an older certificate)")
    if not isinstance(doc["kind"], str) or doc["kind"] not in CLAIMS:
        _fail(f"{at}kind", f"expected one of {sorted(CLAIMS)}")
    kind, net, tf = doc["kind"], read_maxout(doc["maxout"], f"{at}maxout"), read_transformer(doc["transformer"], f"{at}transformer")
    hints = fields(doc["hints"], f"{at}hints", ("phases", "pieces"), ("ln_tokens_upper",) if kind == "softmax" else ())
    given = {}
    for i, c in enumerate(items(doc["claims"], f"{at}claims")):
        fields(c, f"{at}claims[{i}]", ("id", "statement"), ("eps",) if isinstance(c, dict) and c.get("id") == "C5" else ())
        if not isinstance(c["id"], str) or not isinstance(c["statement"], str) or c["id"] in given:
            _fail(f"{at}claims[{i}]", "expected a distinct string id and a string statement")
        given[c["id"]] = c
    derived, walk = {}, None
    try:
        if (tf.scale is None) != (kind == "equality"):
            raise Refuted(f"an {kind} certificate needs {'hardmax' if kind == 'equality' else 'softmax'} attention")
        U = ln_bound(hints.get("ln_tokens_upper"), tf.tokens, f"{at}hints.ln_tokens_upper") if tf.scale else None
        walk = Walk(net, tf, hints, at, U, record=smt)
    except Refuted as e:
        reason = str(e)
    for claim in CLAIMS[kind]:
        if claim == "C4":
            formula, built = sizes(net, tf)
            diff = next((k for k in formula if formula[k] != built[k]), None)
            derived[claim] = (True, statement(claim, walk, net, tf, formula=formula)) if diff is None else \
                (False, f"Tf's {diff} {built[diff]} differ from the closed formula's {formula[diff]}")
        elif walk is None:
            derived[claim] = (False, reason)
        elif claim == "C2" and walk.c2:
            derived[claim] = (False, walk.c2)
        elif claim == "C5":
            eps = rational(given.get("C5", {}).get("eps"), f"{at}claims (C5).eps")
            derived[claim] = (walk.bound <= eps, statement(claim, walk, net, tf, eps) if walk.bound <= eps else
                              f"the recomputed bound {text(walk.bound)} exceeds eps = {text(eps)}")
        else:
            derived[claim] = (True, statement(claim, walk, net, tf))
    return kind, net, tf, given, derived, walk

def verify(doc, at: str = "", maxout=None, transformer=None, smt: bool = False) -> Result:
    """Check a parsed certificate (and bind it to the model files given); never raises Refuted."""
    kind, net, tf, given, derived, walk = derive(doc, at, smt)
    claims = [(c, False, f"missing: a {kind} certificate must contain {', '.join(CLAIMS[kind])}") if c not in given else
              (c, False, f"the certificate's statement is not the checker's, which is: {w}")
              if h and given[c]["statement"] != w else (c, h, w) for c, (h, w) in derived.items()]
    claims += [(c, False, f"not a claim of a {kind} certificate") for c in given if c not in derived]
    for path, embedded, reader in ((maxout, net, read_maxout), (transformer, tf, read_transformer)):
        if path is not None and reader(load(path), f"{path}: model") != embedded:
            claims.append(("binding", False, f"the certificate's {reader.__name__[5:]} is not the model in {path}"))
    if smt and walk is not None:
        from .checker_smt import prove_obligations
        claims += prove_obligations(walk)
    box = domain(net.box)
    if any(not holds for _, holds, _ in claims):
        return Result(1, claims, f"nothing is known: {sum(not h for _, h, _ in claims)} of {len(claims)} checks fail")
    return Result(0, claims, f"Tf(x) = M(x) for every x in {box} (C1-C4)" if kind == "equality" else
                  f"|Tf(x) - M(x)| <= {given['C5']['eps']} for every x in {box}, softmax lambda = {text(tf.scale)} (C5)")

def check_file(path, maxout=None, transformer=None, smt: bool = False) -> Result:
    claim = "certificate"
    try:
        doc = load(path)
        if isinstance(doc, dict) and doc.get("kind") == "equivalence":   # claim E1: check_equiv.py, loaded only here
            from .check_equiv import check
            claim = "E1"
            return Result(0, [(claim, True, known := check(doc, str(path)))], known)
        return verify(doc, f"{path}: ", maxout, transformer, smt)
    except (Malformed, ValueError) as e:
        return Result(2, [], str(e))
    except Refuted as e:
        return Result(1, [(claim, False, str(e))], f"nothing is known: {e}")

def add_parser(sub):
    p = sub.add_parser("check", help="re-verify certificates with the independent standard-library checker")
    p.add_argument("certificates", nargs="+", help="certificate files, or folders of *cert*.json(.gz) files")
    p.add_argument("--maxout", metavar="NET", help="bind: the embedded Maxout net must be this file's")
    p.add_argument("--transformer", metavar="TF", help="bind: the embedded Transformer must be this file's")
    p.add_argument("--smt", action="store_true", help="also prove the obligations with Z3, queries built from the models")
    p.add_argument("-v", "--verbose", action="store_true", help="print every claim's statement")
    p.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report (one case per claim)")
    return p

def run(args) -> int:
    """``exactform check``: one line per certificate as it is checked, its failures, what is known."""
    files = [f for p in args.certificates for f in (sorted(os.path.join(p, n) for n in os.listdir(p) if "cert" in n
                                                            and n.endswith((".json", ".json.gz"))) if os.path.isdir(p) else [p])]
    if not files or (len(files) > 1 and (args.maxout or args.transformer)):
        print(f"exactform: error: {' '.join(args.certificates)}: " + ("no certificate files" if not files else
              "--maxout/--transformer bind exactly one certificate"), file=sys.stderr)
        return 2
    results = []
    for f in files:
        results.append(r := check_file(f, args.maxout, args.transformer, args.smt))
        if r.code == 2:
            print(f"exactform: error: {r.known}", file=sys.stderr, flush=True)
            continue
        print(f"{f}: " + ", ".join(f"{c} {'holds' if h else 'FAILS'}" for c, h, _ in r.claims))
        print("".join(f"  {c}: {words}\n" for c, h, words in r.claims if not h or args.verbose), end="")
        print(f"{f}: {r.known}", flush=True)
    if len(files) > 1:
        print(f"{sum(h for r in results for _, h, _ in r.claims)} of {sum(len(r.claims) for r in results)} claims "
              f"hold in {sum(r.ok for r in results)} of {len(files)} certificates")
    if args.junit:
        from .certificate.junit import write_junit
        write_junit(args.junit, files, results)
    return max(r.code for r in results)
