"""The linear relaxation of a node table on a box, in floating point: every node's bounds (DeepPoly's, with
the back-substitutions worth stating), an atom's bound by back-substitution through the leaf's rows, the
leaf LP (HiGHS), the network's values; and float multipliers rounded into an exact Farkas witness, kept
only when the checker's own test accepts it (``relax.infeasible``).  Everything here guides the search
(``bab``); only the witness's exact test decides.

The rows are ``relax.LeafRows``' (docs/spec.md §8): the box, per node its bounds, pieces and chord, per
pair of nodes (A's and B's at one position, ``equiv_relax``) the rows of their difference, then the atoms.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..checker.forms import Forms, outputs
from ..checker.reader import ONE, combine
from ..checker.relax import LeafRows, infeasible, relaxation_plan
from ..checker.verify_cert import atom_form

SHRINK = 0.1          # a back-substitution bound is stated where it makes a gap or a pair's h stable or narrower by this part
DENSE = 1 << 22        # entries of a run's dense form matrices (``Relaxation._run_forms``), at most


class Relaxation:
    """Atoms ``a ≥ 0`` over a node table on a box: the table (the checker's), the atoms as forms over
    its variables, the pairs of nodes whose differences the relaxation bounds (``relax.pairs``), the
    same in floating point, and the leaf rows' layout (``relax.LeafRows``)."""

    def __init__(self, F: Forms, cube: list, forms: list, pairs: list = ()):
        self.cube, self.F, self.forms, self.pairs = cube, F, forms, list(pairs)
        self.d, self.N = F.d, len(F.nodes)
        self.pieces = []           # per node: [(indices, coefficients, constant)] (max: pieces; hardmax: (score, value))
        self.base = []             # per node: the index of its row z − L in the leaf rows
        row = 2 * self.d
        for kind, data in F.nodes:
            parts = [dict(p) for p in data] if kind == "max" else [dict(s) for s, _ in data] + [dict(v) for _, v in data]
            self.pieces.append((kind, [_floats(p) for p in parts]))
            self.base.append(row)
            row += 2 + (len(data) + (len(data) == 2) if kind == "max" else 0)
        self.gaps = {k: _floats(combine([(1, dict(data[0])), (-1, dict(data[1]))]))
                     for k, (kind, data) in enumerate(F.nodes) if kind == "max" and len(data) == 2}
        self.pairs_at, self.diffs = row, {}
        self.deltas = np.zeros((2, len(self.pairs), self.d + self.N + 1))     # per pair: δ_0, δ_1 dense (and the constant)
        for k, (_, _, paired) in enumerate(relaxation_plan(F, self.pairs)):     # per pair, at its node b: δ's parts
            if paired is not None:
                j, _, delta, h, order, raw = paired
                self.diffs[k] = (j, order, [_prepared_floats(f) for f in delta + [h]])
                for i, f in enumerate(raw):
                    for v, a in f.items():
                        self.deltas[i, j, -1 if v == ONE else v] = float(a)
        self.chords_at = row + 2 * len(self.pairs)       # the pairs' rows over the variables (relax.LeafRows)
        row = self.chords_at + 2 * len(self.pairs)
        self.atoms_at = row
        self.rows = row + len(self.forms)
        self.atom_floats = [_floats(f) for f in self.forms]

    @classmethod
    def of(cls, model, cube: list, atoms: list) -> Relaxation:
        """A VNN-LIB disjunct (atoms ``{index: q}`` over X, Y and the constant) of one network."""
        F = Forms(cube)
        ys = outputs(F, model)
        p = cls(F, cube, [atom_form(a, F.d, ys) for a in atoms])
        p.ys = ys
        return p

    # --- floating point: evaluation, bounds, the leaf LP -------------------------------------------
    def values(self, X: np.ndarray) -> np.ndarray:
        """Every variable at each point (rows of X), in floating point (hardmax ties averaged); a run of
        two-piece nodes by one product with its forms (``_run_forms``)."""
        V = np.zeros((X.shape[0], self.d + self.N))
        V[:, :self.d] = X
        for run, two, (cols, _, Mp, Mn, _, _, const, _) in zip(self._depths()[0], self._two_piece_runs(), self._run_forms()):
            if two is not None:
                W = ((Mp + Mn) @ V[:, cols].T).T + const
                V[:, self.d + run] = np.maximum(W[:, two[1]], W[:, two[2]])
                continue
            for k in run.tolist():
                self._value(V, k)
        return V

    def _value(self, V: np.ndarray, k: int) -> None:
        """Node k's value at each point (row of V), from the variables before it."""
        kind, parts = self.pieces[k]
        vals = np.stack([V[:, i] @ a + c for i, a, c in parts], axis=1)
        if kind == "max":
            V[:, self.d + k] = vals.max(axis=1)
        else:
            T = vals.shape[1] // 2
            scores, v = vals[:, :T], vals[:, T:]
            top = scores >= scores.max(axis=1, keepdims=True) - 1e-12
            V[:, self.d + k] = (v * top).sum(axis=1) / top.sum(axis=1)

    def margin(self, X: np.ndarray) -> np.ndarray:
        """The least atom's value at each point: ≥ 0 where the point violates the property (floats)."""
        V = self.values(X)
        if not self.atom_floats:
            return np.zeros(X.shape[0])
        return np.stack([V[:, i] @ a + c for i, a, c in self.atom_floats], axis=1).min(axis=1)

    def _depths(self) -> tuple[list, np.ndarray]:
        """The runs of consecutive nodes of one depth (x: 0; a node: 1 + its pieces' deepest variable), and
        the two-piece nodes' pieces as dense rows over the variables and the constant (floats)."""
        if not hasattr(self, "runs"):
            d, depth, runs = self.d, [0] * self.d, []
            P = np.zeros((2, self.N, d + self.N + 1))
            for k, (kind, data) in enumerate(self.F.nodes):
                parts = data if kind == "max" else [f for pair in data for f in pair]
                depth.append(1 + max((depth[v] for f in parts for v, _ in f if v != ONE), default=0))
                if depth[-1] != depth[-2] or not runs:
                    runs.append([])
                runs[-1].append(k)
                if k in self.gaps:
                    for i, piece in enumerate(data):
                        for v, a in piece:
                            P[i, k, -1 if v == ONE else v] += float(a)
            self.runs = [np.array(r) for r in runs]
            self.P = P
        return self.runs, self.P

    def _run_rows(self) -> list:
        """Per run of ``_depths``, what back-substitution reads of it, on the columns its rows touch (the
        constant last): ``(n, a, b, st, cols, δ_0, δ_1)`` for the pairs n whose node b is in it (their nodes'
        variables a, b, [s, t]) and ``(R, cols, p, q, base)`` for its two-piece nodes R (their pieces, their rows' first
        index); None for either when the run has none."""
        if not hasattr(self, "run_rows"):
            runs, P = self._depths()

            def columns(*M):
                return np.append(np.flatnonzero(np.any(np.concatenate([m[:, :-1] for m in M]) != 0, axis=0)), P.shape[2] - 1)
            self.run_rows = []
            for run in runs:
                paired = [k for k in run.tolist() if k in self.diffs]
                n = np.array([self.diffs[k][0] for k in paired], dtype=int)
                pairs = None
                if len(n):
                    cols = columns(self.deltas[0, n], self.deltas[1, n])
                    pairs = (n, np.array([self.pairs[j][0] for j in n.tolist()]), self.d + np.array(paired), np.array(
                        [[float(self.pairs[j][1]), float(self.pairs[j][3])] for j in n.tolist()]), cols,
                        self.deltas[0, n][:, cols], self.deltas[1, n][:, cols])
                R = np.array([k for k in run.tolist() if k in self.gaps], dtype=int)
                nodes = None
                if len(R):
                    cols = columns(P[0, R], P[1, R])
                    nodes = (R, cols, P[0, R][:, cols], P[1, R][:, cols], np.array(self.base)[R])
                self.run_rows.append((pairs, nodes))
        return self.run_rows

    @staticmethod
    def chords(n: np.ndarray, D0: np.ndarray, D1: np.ndarray, hinges: dict) -> tuple[np.ndarray, np.ndarray]:
        """The pairs n's lower and upper forms of Δ (``relax.LeafRows``' rows −3), from their δ_0, δ_1 (the
        constant last)."""
        low, up = D1.copy(), D1.copy()
        for i, j in enumerate(n.tolist()):
            state = hinges[j]
            if len(state) == 1:
                low[i] = up[i] = (D0, D1)[state[0]][i]
                continue
            hl, hu = state
            h = D0[i] - D1[i]
            if hl >= 0:
                up[i] = D0[i]
            elif hu <= 0:
                low[i] = D0[i]
            else:
                r, c = -hl / (hu - hl), hu / (hu - hl)
                low[i] += r * h
                low[i, -1] -= r * hu
                up[i] += c * h
                up[i, -1] -= c * hl
        return low, up

    def backsubstitution(self, run: np.ndarray, L: np.ndarray, U: np.ndarray, gaps: dict, hinges: dict,
                         cache: dict | None = None) -> dict:
        """``{key: (lo, hi)}`` for the two-piece nodes of ``run`` (key k: g = p − q) and the
        pairs whose second node is in it (key ``("h", n)``: h = δ_0 − δ_1), by ``substituted`` (the rest at
        the variables' bounds): ``LeafRows.backsubstituted`` in floating point, a guide to the sides worth stating."""
        P, loose = self._depths()[1], self.loose()
        keys = [k for k in run.tolist() if k in self.gaps and k not in loose] + \
            [("h", self.diffs[k][0]) for k in run.tolist() if k in self.diffs]
        out = {k: (-np.inf, np.inf) for k in run.tolist() if k in loose}
        if not keys:
            return out
        G = np.empty((2 * len(keys), P.shape[2]))
        for i, key in enumerate(keys):
            G[2 * i] = P[0, key] - P[1, key] if isinstance(key, int) else self.deltas[0, key[1]] - self.deltas[1, key[1]]
            G[2 * i + 1] = -G[2 * i]
        value = self.substituted(G, int(run[0]), L, U, gaps, hinges, cache=cache)
        return out | {k: (-value[2 * i + 1], value[2 * i]) for i, k in enumerate(keys)}

    def loose(self) -> set:
        """The two-piece nodes that no node reads, that no pair holds, and that every atom reads with a
        coefficient ≤ 0: an atom's bound takes them from below, by a row z − p or z − q, which holds whatever
        their gap, so a back-substitution of their gap is not stated (ACAS Xu prop_1: about half of the last
        layer, each back-substituted through every layer before it)."""
        if not hasattr(self, "loose_nodes"):
            held = {v for _, parts in self.pieces for keys, _, _ in parts for v in keys.tolist()}
            held |= {v for p in self.pairs for v in (p[0], p[2])}
            self.loose_nodes = {k for k in self.gaps if self.d + k not in held
                                and all(f.get(self.d + k, 0) <= 0 for f in self.forms)}
        return self.loose_nodes

    def substituted(self, G: np.ndarray, before: int, L: np.ndarray, U: np.ndarray, gaps: dict, hinges: dict,
                    W: np.ndarray | None = None, cache: dict | None = None) -> np.ndarray:
        """Upper bounds of the forms ``G`` (rows over the variables and the constant, reading nodes before
        ``before`` only; changed in place) by back-substitution through the earlier rows: a paired node's
        coefficient moved onto Δ (``relax.through``) and Δ replaced by its row over the variables; a two-piece
        node by ``top − z`` where the coefficient is positive, ``z − p`` or ``z − q`` (the piece larger on
        more of the gap's range) where it is negative; the rest at the variables' bounds.  ``W``: per form,
        the rows' multipliers (leaf layout) to which those of the rows added are added.  ``cache``: per run,
        its nodes' rows (``{run: (first, top, low)}``) and its pairs' (``{("pairs", run): (low, up)}``), kept
        between calls while the gaps and hinges stay."""
        d = self.d
        earlier = [run_rows for run, run_rows in zip(self._depths()[0], self._run_rows()) if run[0] < before]
        for at, (paired, nodes) in reversed(list(enumerate(earlier))):
            if paired is not None and (ca := G[:, paired[1]]).any():
                n, a, b, st, cols, D0, D1 = paired
                cd = ca / st[:, 0]
                G[:, a] = 0
                G[:, b] += cd * st[:, 1]
                low, up = _kept(cache, ("pairs", at), self.chords, n, D0, D1, hinges)
                pos, neg = np.maximum(cd, 0), np.minimum(cd, 0)
                G[:, cols] += pos @ up + neg @ low
                if W is not None:
                    W[:, self.chords_at + 2 * n + 1] += pos
                    W[:, self.chords_at + 2 * n] -= neg
            if nodes is None or not (C := G[:, d + nodes[0]]).any():
                continue
            R, cols, P0, P1, base = nodes
            first, top, low = _kept(cache, at, _node_rows, [gaps[k] for k in R.tolist()], P0, P1)
            pos, neg = np.maximum(C, 0), np.minimum(C, 0)
            G[:, d + R] = 0
            G[:, cols] += pos @ top + neg @ low
            if W is not None:
                W[:, base + 4] += pos
                W[:, base + np.where(first, 2, 3)] -= neg
        ends = np.where(G[:, :-1] > 0, U[None, :], L[None, :])
        return (G[:, :-1] * ends).sum(axis=1) + G[:, -1]

    def atom_plan(self, j: int, bounds: tuple) -> tuple[float, np.ndarray, np.ndarray]:
        """``(bound, multipliers, slope)``: an upper bound of atom j on the cell by back-substitution
        (``substituted``: DeepPoly's output bound, with the pairs' rows), the rows it adds (the atom's with
        1): a Farkas witness in floating point when the bound is negative, the leaf LP's work without it;
        and the bound's coefficients of x (which coordinates it depends on)."""
        P = self._depths()[1]
        i, a, c = self.atom_floats[j]
        G = np.zeros((1, P.shape[2]))
        G[0, i], G[0, -1] = a, c
        W = np.zeros((1, self.rows))
        W[0, self.atoms_at + j] = 1.0
        value = self.substituted(G, self.N, bounds[0], bounds[1], bounds[2], bounds[5], W)
        return float(value[0]), W[0], G[0, :self.d]

    def _run_forms(self) -> list:
        """Per run of ``_depths``, the forms its nodes read, as rows over the variables (positive and negative
        parts apart), the pairs' differences and the constant: per node its pieces (a hardmax node: its values),
        g = p − q for two pieces, and for the node b of a pair δ_0, δ_1, h read through the earlier pairs; with
        ``{node: (pieces' rows, g's row, δ_0's row)}``: ``(columns, pair columns, M⁺, M⁻, C⁺, C⁻, constants,
        slots)``, the matrices dense over the columns the run reads, or (beyond ``DENSE`` entries) sparse over
        all.  Every form of a run reads only earlier runs' variables, so one product per run gives all its
        sides."""
        if not hasattr(self, "run_forms"):
            n, P, self.run_forms = self.d + self.N, max(len(self.pairs), 1), []
            for run in self._depths()[0]:
                parts, slots = [], {}
                for k in run.tolist():
                    kind, pieces = self.pieces[k]
                    values = pieces if kind == "max" else pieces[len(pieces) // 2:]
                    slots[k] = (range(len(parts), len(parts) + len(values)), len(parts) + len(values) if k in self.gaps else None,
                                len(parts) + len(values) + (k in self.gaps) if k in self.diffs else None)
                    parts += [(p, []) for p in values] + ([(self.gaps[k], [])] if k in self.gaps else []) + \
                        (self.diffs[k][2] if k in self.diffs else [])
                rows = np.repeat(np.arange(len(parts)), [len(i) for (i, _, _), _ in parts])
                at = np.concatenate([np.zeros(0, int)] + [i for (i, _, _), _ in parts])
                terms = [(r, j, c) for r, (_, ts) in enumerate(parts) for j, c in ts]
                # sorted sets, not np.unique: its first call imports numpy.ma (8 ms a process)
                cols, pcols = (np.array(sorted(set(v)), dtype=int) for v in (at.tolist(), [j for _, j, _ in terms]))
                if len(parts) * (len(cols) + len(pcols)) <= DENSE:
                    M, C = np.zeros((len(parts), len(cols))), np.zeros((len(parts), len(pcols)))
                    np.add.at(M, (rows, np.searchsorted(cols, at)), np.concatenate([np.zeros(0)] + [a for (_, a, _), _ in parts]))
                    for r, j, c in terms:
                        C[r, np.searchsorted(pcols, j)] += c
                    Mp, Mn, Cp, Cn = M.clip(min=0), M.clip(max=0), C.clip(min=0), C.clip(max=0)
                else:
                    from scipy.sparse import csr_matrix  # a run too large for dense rows (imported only then)
                    M = csr_matrix((np.concatenate([np.zeros(0)] + [a for (_, a, _), _ in parts]), (rows, at)), shape=(len(parts), n))
                    C = csr_matrix(([c for _, _, c in terms], ([r for r, _, _ in terms], [j for _, j, _ in terms])),
                                   shape=(len(parts), P))
                    cols = pcols = slice(None)
                    Mp, Mn, Cp, Cn = M.maximum(0), M.minimum(0), C.maximum(0), C.minimum(0)
                self.run_forms.append((cols, pcols, Mp, Mn, Cp, Cn, np.array([c for (_, _, c), _ in parts]), slots))
        return self.run_forms

    def least_plan(self, bounds: tuple) -> tuple[float, np.ndarray | None, np.ndarray | None]:
        """``atom_plan`` of the atom of least bound on the cell of ``bounds`` (one false atom refutes the
        disjunct there)."""
        return min((self.atom_plan(j, bounds) for j in range(len(self.forms))), key=lambda plan: plan[0], default=(0.0, None, None))

    def bounds(self, lo: np.ndarray, hi: np.ndarray, tighten: bool = False, signs: dict | None = None) -> tuple:
        """``relax.node_bounds`` in floating point (no outward rounding: a guide only): ``(L, U, gaps,
        dfns, tight, hinges)``; with ``tighten``, each two-piece node's gap and pair's h met with its
        back-substitution bounds (``backsubstitution``, ``_met``), ``tight`` the sides stated
        (``{key: [side]}``, ``LeafRows.tight``); then each gap met with 0 on the sides ``signs`` names (the
        cell's affine splits, ``relax.gap_signs``).  A run's forms are bounded together (``_run_forms``)."""
        d = self.d
        n = d + self.N
        LO, UP = np.zeros((n, d + 1)), np.zeros((n, d + 1))
        LO[:d, :d] = UP[:d, :d] = np.eye(d)
        DLO, DUP = np.zeros((max(len(self.pairs), 1), d + 1)), np.zeros((max(len(self.pairs), 1), d + 1))
        L, U = np.concatenate([lo, np.zeros(self.N)]), np.concatenate([hi, np.zeros(self.N)])
        gaps, hinges, tight, shown, cache = {}, {}, {}, {}, {}

        def extreme(f, up):
            return float(f[:d] @ np.where((f[:d] > 0) == up, hi, lo) + f[d])
        for r, (run, (cols, pcols, Mp, Mn, Cp, Cn, const, slots)) in enumerate(zip(self._depths()[0], self._run_forms())):
            if tighten and r:
                shown = self.backsubstitution(run, L, U, gaps, hinges, cache)
            lo_, up_, dlo, dup = LO[cols], UP[cols], DLO[pcols], DUP[pcols]
            low, high = Mp @ lo_ + Mn @ up_ + Cp @ dlo + Cn @ dup, Mp @ up_ + Mn @ lo_ + Cp @ dup + Cn @ dlo
            low[:, d] += const
            high[:, d] += const
            elo = np.einsum("ij,ij->i", low[:, :d], np.where(low[:, :d] > 0, lo, hi)) + low[:, d]
            eup = np.einsum("ij,ij->i", high[:, :d], np.where(high[:, :d] > 0, hi, lo)) + high[:, d]
            if (two := self._two_piece_runs()[r]) is not None:
                self._two_piece(two, low, high, elo, eup, (lo, hi, L, U, LO, UP), gaps, shown, tight, signs)
                for k in run.tolist() if self.diffs else ():
                    if k in self.diffs:
                        self._pair(k, slots[k][2], low, high, elo, eup, gaps, shown, tight, hinges, (DLO, DUP))
                continue
            for k in run.tolist():
                z, (values, g, paired) = d + k, slots[k]
                ivs = [(elo[i], eup[i]) for i in values]
                if self.pieces[k][0] != "max":
                    L[z], U[z] = min(a for a, _ in ivs), max(b for _, b in ivs)
                    LO[z, d], UP[z, d] = L[z], U[z]
                    continue
                j = max(range(len(ivs)), key=lambda i: ivs[i][0] + ivs[i][1])
                below, above = low[values[j]], None
                if g is not None:
                    gl, gu = _met(k, max(elo[g], ivs[0][0] - ivs[1][1]), min(eup[g], ivs[0][1] - ivs[1][0]), shown, tight)
                    for side in (signs or {}).get(k, ()):
                        gl, gu = (gl, min(gu, 0.0)) if side else (max(gl, 0.0), gu)
                    gaps[k] = (gl, gu)
                    if gl >= 0 or gu <= 0:
                        below, above = low[values[0 if gl >= 0 else 1]], high[values[0 if gl >= 0 else 1]]
                    else:
                        b = 0 if ivs[0][1] - ivs[0][0] <= ivs[1][1] - ivs[1][0] else 1
                        hl, hu, h = (-gu, -gl, -low[g]) if b == 0 else (gl, gu, high[g])
                        s = hu / (hu - hl)
                        above = high[values[b]] + s * h
                        above[d] += max(-s * hl, hu - s * hu)
                L[z] = max(max(a for a, _ in ivs), extreme(below, False))
                U[z] = max(b for _, b in ivs) if above is None else min(max(b for _, b in ivs), extreme(above, True))
                if g is not None:
                    U[z] = min(U[z], max(ivs[1][1] + max(gu, 0), ivs[0][1] + max(-gl, 0)))
                LO[z] = below
                if above is None:
                    UP[z, d] = U[z]
                else:
                    UP[z] = above
                if paired is not None:
                    self._pair(k, paired, low, high, elo, eup, gaps, shown, tight, hinges, (DLO, DUP))
        return L, U, gaps, {j: (DLO[j], DUP[j]) for j in hinges}, tight, hinges

    def _pair(self, k: int, at: int, low, high, elo, eup, gaps: dict, shown: dict, tight: dict, hinges: dict,
              functions: tuple) -> None:
        """``bounds``' step for the pair whose second node is k (its forms from ``at`` in the run's, ``_run_forms``),
        once both nodes' gaps are known: the difference's hinge state (``hinges[j]``: the piece both nodes take,
        else h's range met with its back-substitution bounds) and its functions below and above (``functions``:
        DLO, DUP; ``relax.node_bounds``)."""
        d, (DLO, DUP) = self.d, functions
        j, order, _ = self.diffs[k]
        won = [o[0 if gaps[v][0] >= 0 else 1] if gaps[v][0] >= 0 or gaps[v][1] <= 0 else None
               for v, o in ((self.pairs[j][0] - d, order[0]), (k, order[1]))]
        if won[0] is not None and won[0] == won[1]:
            hinges[j] = (won[0],)
            DLO[j], DUP[j] = low[at + won[0]], high[at + won[0]]
            return
        h = at + 2
        hl, hu = _met(("h", j), elo[h], eup[h], shown, tight)
        hinges[j] = (hl, hu)
        DLO[j], DUP[j] = low[at + 1], high[at + 1]
        if hl >= 0:
            DUP[j] += high[h]
        elif hu <= 0:
            DLO[j] += low[h]
        else:
            s, t = hu / (hu - hl), -hl / (hu - hl)
            DLO[j] += t * low[h]
            DLO[j, d] -= t * hu
            DUP[j] += s * high[h]
            DUP[j, d] -= s * hl

    def _two_piece_runs(self) -> list:
        """Per run of ``_depths``, when each of its nodes is a max of two pieces (paired or not), ``(nodes,
        p's rows, q's rows, g's rows)`` (indices into the run's forms, ``_run_forms``), else None."""
        if not hasattr(self, "two_piece_runs"):
            self.two_piece_runs = []
            for run, (*_, slots) in zip(self._depths()[0], self._run_forms()):
                ks = run.tolist()
                if all(k in self.gaps for k in ks):
                    self.two_piece_runs.append((run, *(np.array([slots[k][0][i] for k in ks]) for i in (0, 1)),
                                                np.array([slots[k][1] for k in ks])))
                else:
                    self.two_piece_runs.append(None)
        return self.two_piece_runs

    def _two_piece(self, two: tuple, low, high, elo, eup, state: tuple, gaps: dict, shown: dict, tight: dict,
                   signs: dict | None) -> None:
        """``bounds``' step for a run of two-piece nodes, all nodes at once (their pairs' after it, ``_pair``): the same
        bounds, gaps, sides stated and functions as its node-by-node step."""
        run, i0, i1, ig = two
        lo, hi, L, U, LO, UP = state
        d, z = self.d, self.d + run
        l0, u0, l1, u1 = elo[i0], eup[i0], elo[i1], eup[i1]
        gl, gu = np.maximum(elo[ig], l0 - u1), np.minimum(eup[ig], u0 - l1)
        if shown:                              # _met, for every node of the run
            bl, bu = np.array([shown[k] for k in run.tolist()]).T
            open_ = (gl < 0) & (gu > 0)
            cut = SHRINK * (gu - gl)
            upper = open_ & ((bu < gu - cut) | (bu < -1e-7))
            lower = open_ & ((bl > gl + cut) | (bl > 1e-7))
            gu, gl = np.where(upper, bu, gu), np.where(lower, bl, gl)
            for k, up, down in zip(run[upper | lower].tolist(), upper[upper | lower], lower[upper | lower]):
                tight[k] = [1] * bool(up) + [0] * bool(down)
        for at, k in enumerate(run.tolist()):
            for side in (signs or {}).get(k, ()):
                gl[at], gu[at] = (gl[at], min(gu[at], 0.0)) if side else (max(gl[at], 0.0), gu[at])
        gaps.update(zip(run.tolist(), zip(gl.tolist(), gu.tolist())))
        first = gl >= 0
        second = ~first & (gu <= 0)
        unstable = ~first & ~second
        below = low[np.where(first | ~second & (l1 + u1 <= l0 + u0), i0, i1)]
        b0 = u0 - l0 <= u1 - l1                # z = b + max(h, 0), b the piece of narrower range
        hl, hu = np.where(b0, -gu, gl), np.where(b0, -gl, gu)
        s = np.where(unstable, hu / np.where(unstable, hu - hl, 1), 0)
        above = np.where(unstable[:, None], high[np.where(b0, i0, i1)] + s[:, None] * np.where(b0[:, None], -low[ig], high[ig]),
                         high[np.where(first, i0, i1)])
        above[:, d] += np.where(unstable, np.maximum(-s * hl, hu - s * hu), 0)

        def extreme(F, up):
            return np.einsum("ij,ij->i", F[:, :d], np.where((F[:, :d] > 0) == up, hi, lo)) + F[:, d]
        L[z] = np.maximum(np.maximum(l0, l1), extreme(below, False))
        U[z] = np.minimum(np.minimum(np.maximum(u0, u1), extreme(above, True)),
                          np.maximum(u1 + np.maximum(gu, 0), u0 + np.maximum(-gl, 0)))
        LO[z], UP[z] = below, above

    def fixed(self, bounds: tuple) -> bool:
        """Whether the relaxation of the cell of ``bounds`` is the network itself (floats: a guide): every node
        a max of two pieces whose gap has one sign."""
        return len(bounds[2]) == self.N and all(gl >= 0 or gu <= 0 for gl, gu in bounds[2].values())

    def gap(self, k: int) -> dict:
        """Two-piece node k's gap p − q over the variables (``relax.LeafRows.gap``)."""
        p, q = (dict(piece) for piece in self.F.nodes[k][1])
        return combine([(1, p), (-1, q)])

    def lp(self, lo: np.ndarray, hi: np.ndarray, bounds: tuple, only: list | None = None):
        """``(−t*, multipliers, x*)`` of the leaf relaxation over the box [lo, hi] with ``bounds`` (floats;
        the rows in ``LeafRows``' order) and the atoms ``only`` (default: all), or None when HiGHS fails."""
        d, n = self.d, self.d + self.N
        L, U, gaps, dfns, _, hinges = bounds
        chosen = range(len(self.forms)) if only is None else only
        rows, cols, vals, const = [], [], [], np.zeros(self.rows)

        def add(r, idx, coef, c):
            rows.extend([r] * len(idx))
            cols.extend(idx)
            vals.extend(coef)
            const[r] = c
        for i in range(d):
            add(2 * i, [i], [1.0], -lo[i])
            add(2 * i + 1, [i], [-1.0], hi[i])
        for k, (kind, parts) in enumerate(self.pieces):
            z, b = d + k, self.base[k]
            add(b, [z], [1.0], -L[z])
            add(b + 1, [z], [-1.0], U[z])
            if kind != "max":
                continue
            for j, (i, a, c) in enumerate(parts):
                add(b + 2 + j, [z, *i], [1.0, *(-a)], -c)
            if len(parts) == 2:
                (ip, ap, cp), (iq, aq, cq) = parts
                gl, gu = gaps[k]
                if gl >= 0 or gu <= 0:
                    i, a, c = parts[0] if gl >= 0 else parts[1]
                    add(b + 4, [z, *i], [-1.0, *a], c)
                else:
                    lam = gu / (gu - gl)
                    add(b + 4, [z, *ip, *iq], [-1.0, *(lam * ap), *((1 - lam) * aq)], lam * cp + (1 - lam) * cq - lam * gl)
        for j, (a, s, b, t, _, _) in enumerate(self.pairs):
            lower, upper = dfns[j]
            add(self.pairs_at + 2 * j, [a, b, *range(d)], [float(s), -float(t), *(-lower[:d])], -lower[d])
            add(self.pairs_at + 2 * j + 1, [a, b, *range(d)], [-float(s), float(t), *upper[:d]], upper[d])
        if self.pairs:
            for j, (low, up) in enumerate(zip(*self.chords(np.arange(len(self.pairs)), hinges))):
                za, s, zb, t = self.pairs[j][:4]
                for r, f, sign in ((self.chords_at + 2 * j, low, 1), (self.chords_at + 2 * j + 1, up, -1)):
                    idx = np.flatnonzero(f[:-1])
                    add(r, [za, zb, *idx], [sign * float(s), -sign * float(t), *(-sign * f[idx])], -sign * f[-1])
        for j in chosen:
            i, a, c = self.atom_floats[j]
            add(self.atoms_at + j, list(i), list(a), c)
        rows += [self.atoms_at + j for j in chosen]      # g(v) = G v + const ≥ 0 as −G v ≤ const, atoms −G v + t ≤ const
        cols += [n] * len(chosen)
        from scipy.optimize import linprog  # imported where first needed: 0.35 CPU s a command that solves no LP
        from scipy.sparse import csr_matrix

        A = csr_matrix((-np.array(vals + [-1.0] * len(chosen)), (rows, cols)), shape=(self.rows, n + 1))
        c = np.zeros(n + 1)
        c[-1] = -1.0
        res = linprog(c, A_ub=A, b_ub=const, bounds=[(None, None)] * (n + 1), method="highs")
        return (res.fun, -res.ineqlin.marginals, res.x[:d]) if res.status == 0 else None

    # --- exact: the witness --------------------------------------------------------------------
    def witness(self, cube: list, multipliers, rows: LeafRows | None = None) -> dict | None:
        """An exact Farkas witness of the leaf's rows (``rows``, else built on ``cube``) from float
        multipliers (``{row: q}``), or None: the multipliers rounded to a common 40-bit dyadic denominator,
        kept when the checker's test (``relax.infeasible``: ``Σ w_i g_i`` exactly, its gradient's rounding
        residue taken at the variables' bounds) shows the rows infeasible."""
        rows = rows or LeafRows(self.F, cube, self.forms, self.pairs)
        w = dyadic(dict(enumerate(multipliers.tolist())))
        return w if w and infeasible(rows, w) else None


def dyadic(multipliers: dict) -> dict:
    """Float multipliers ``{row: q}`` rounded to one common 40-bit dyadic denominator (those that round to
    0 dropped: any nonnegative multipliers are valid, the rounding only loosens)."""
    top = max(multipliers.values(), default=0.0)
    if not top > 0:
        return {}
    scale = 2 ** (40 - math.frexp(top)[1])
    return {i: Fraction(n, scale) for i, q in multipliers.items() if q > top * 1e-12 and (n := round(q * scale)) > 0}


def _kept(cache: dict | None, key, build, *args):
    """``build(*args)``, kept in ``cache[key]`` for the next call (``cache`` None: built every time)."""
    if cache is None:
        return build(*args)
    if key not in cache:
        cache[key] = build(*args)
    return cache[key]


def _node_rows(gaps: list, P0: np.ndarray, P1: np.ndarray) -> tuple:
    """``(first, top, low)`` of a run's two-piece nodes (their gaps' bounds ``[(gl, gu)]``, their pieces'
    rows P0, P1): whether the first piece is the lower row's, the top row (the chord of an open gap,
    else the piece it fixes) and the lower row, as ``substituted`` reads them."""
    gl, gu = np.array(gaps).T
    lam = np.where(gl >= 0, 1.0, np.where(gu <= 0, 0.0, gu / np.where(gu > gl, gu - gl, 1)))
    first = np.where(gl >= 0, True, np.where(gu <= 0, False, gu >= -gl))
    top = lam[:, None] * P0 + (1 - lam)[:, None] * P1
    top[:, -1] -= np.where((gl < 0) & (gu > 0), lam * gl, 0)
    return first, top, np.where(first[:, None], P0, P1)


def _met(key, lo: float, hi: float, shown: dict, tight: dict) -> tuple[float, float]:
    """[lo, hi] met with the back-substitution bounds ``shown[key]`` on each side where they make it
    stable or narrower by ``SHRINK`` of its width, the sides recorded in ``tight[key]``; not when [lo, hi]
    is of one sign already (the node's rows, or the pair's, are then exact whatever the bounds)."""
    if key in shown and lo < 0 < hi:
        bl, bu = shown[key]
        cut = SHRINK * (hi - lo)
        if bu < hi - cut or bu < -1e-7:
            hi = bu
            tight.setdefault(key, []).append(1)
        if bl > lo + cut or bl > 1e-7:
            lo = bl
            tight.setdefault(key, []).append(0)
    return lo, hi


def _prepared_floats(form: tuple) -> tuple:
    """A ``relax`` prepared form in floating point: (the parts of its rest, [(pair, coefficient)])."""
    terms, const, pairs, _ = form
    keys = np.array([k for k, _, _ in terms], dtype=int)
    return (keys, np.array([float(a) for _, a, _ in terms]), float(const)), [(j, float(c)) for j, c, _ in pairs]


def _floats(form: dict) -> tuple:
    keys = sorted(k for k in form if k != ONE)
    return (np.array(keys, dtype=int), np.array([float(form[k]) for k in keys]), float(form.get(ONE, 0)))
