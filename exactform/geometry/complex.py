"""Every activation cell of a model on its box, with its neighbours, streamed (``regions --cells``).

The cells are enumerated depth first over the tree of splits (``regions.refine``, one decision
at a time, in the same order as ``regions.cells_in_box``), so only the current path is held, not
the cells already finished.

Neighbours.  Let F be a facet of a final cell P, on the hyperplane H, and let A be the deepest
split on P's path whose hyperplanes (the differences of two pieces that both win somewhere in A)
include H.  H passes through the interior of A, so the relative interior of F does too, and the
cell Q across F lies in A: every pair of neighbours is found when A's subtree is finished, among
the cells registered at A on H, on opposite sides of H (the same deepest split holds Q's facet).
Two such cells share a facet only if they make the same choice at every later decision of A's
stage whose hyperplanes do not include H (two faces on opposite closed sides of a hyperplane
G ≠ H meet in at most G ∩ H): the candidates are grouped by those choices.  A group whose side
holds a single cell pairs it with every cell of the other side (``CellStream._pairs``); other
candidate pairs are decided exactly (``facets.facet_pairs``).

A cell is written once the last split holding one of its facets is finished.  What is held at any
time: the current path (its cells, their states and open splits) and the cells with a facet on a
hyperplane of an open split, with their faces.  Counts: linear and activation regions are the
components of neighbours with equal output maps / equal patterns (as ``regions.count_regions``),
joined with a union-find over the cells still held (a finished cell is never joined again).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..models import Box
from ..numbers import format_rational
from .cells import Q, Polygon, Polytope, Vertices, argmax_split, box_cell, difference, is_constant
from .facets import cell_facets, facet_pairs, plane
from .regions import METHODS, RegionCount, RegionLimit, checked_method, program_of


def decision_planes(pieces) -> set:
    """The hyperplanes where two of a decision's pieces are equal (non-constant differences)."""
    out = set()
    for a in range(len(pieces)):
        for b in range(a + 1, len(pieces)):
            g = difference(pieces[a], pieces[b])
            if not is_constant(g):
                out.add(plane(g)[0])
    return out


@dataclass
class Split:
    """An open split of a cell by the decision at pattern position ``start``; the stage's later
    decisions are at positions ``start + 1 .. end - 1`` and ``masked[H]`` lists those whose
    hyperplanes include H.  ``faces[(H, choices)]`` holds the registered facets on H, on its
    positive and negative side: ``(cell number, cell, facet)``."""
    planes: set
    start: int
    end: int
    masked: dict
    faces: dict = field(default_factory=dict)


@dataclass
class Held:
    """A final cell whose line waits for ``waiting`` registered facets to be matched."""
    line: str
    pattern: tuple
    output: tuple
    neighbours: list
    waiting: int = 0


class Components:
    """A union-find over the cells still held; ``merges`` counts the joins of two components."""

    def __init__(self):
        self.parent: dict[int, int] = {}
        self.merges = 0

    def find(self, n: int) -> int:
        parent = self.parent
        root = n
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(n, n) != root:
            parent[n], n = root, parent[n]
        return root

    def join(self, n: int, m: int) -> None:
        a, b = self.find(n), self.find(m)
        if a != b:
            self.parent[a] = b
            self.merges += 1

    def compact(self, held) -> None:
        """Keep only the held cells (pointing at their roots) and those roots."""
        roots = {n: self.find(n) for n in held}
        self.parent = {**{r: r for r in roots.values()}, **roots}


FORMS_HELD = 1 << 12      # integer forms remembered at most (then forgotten: bounded memory)


class CellStream:
    """``for line in CellStream(model): ...`` yields one JSON line per cell (``regions --cells``),
    each once its neighbours are known; afterwards ``count()`` gives the exact counts.  Raises
    ``RegionLimit`` once more than ``max_cells`` cells are enumerated."""

    def __init__(self, model, method: str | None = None, max_cells: int | None = None, box: Box | None = None):
        box = box or model.domain
        self.method = checked_method(method, box.dim)
        self.model, self.box, self.max_cells = model, box, max_cells
        self.cells = 0
        self.held: dict[int, Held] = {}
        self.open: dict[tuple, list[Split]] = {}
        self.maps, self.patterns = Components(), Components()
        self.ready: list[str] = []
        self.peak_held = 0
        self.forms: dict = {}          # integer forms of constraints, by identity (facets._form)

    def count(self) -> RegionCount:
        return RegionCount(self.cells - self.maps.merges, self.cells - self.patterns.merges, METHODS[self.method], [])

    def __iter__(self):
        program = program_of(self.model)
        stages = program.stages()
        stack: list = [(box_cell(self.box, self.method), 0, 0, (), program.initial(), None)]
        while stack:
            item = stack.pop()
            if isinstance(item, Split):
                self._close(item)
            else:
                stack.extend(self._expand(item, stages, program))
            yield from self.ready
            self.ready.clear()

    def _expand(self, item, stages, program) -> list:
        """The items that replace ``item`` (a cell at decision i of stage k) on the stack."""
        cell, k, i, pattern, state, stage = item
        if stage is None and k == len(stages):
            self._leaf(cell, pattern, program.output(state))
            return []
        if stage is None:
            decisions, update = stages[k](state)
            stage = (decisions, update, {})
        decisions, update, planes = stage
        if i == len(decisions):
            return [(cell, k + 1, 0, pattern, update(pattern[len(pattern) - i:]), None)]
        parts = argmax_split(cell, decisions[i])
        split = [self._split(decisions, i, [j for _, j in parts], len(pattern), planes)] if len(parts) > 1 else []
        return split + [(part, k, i + 1, pattern + (j,), state, stage) for part, j in reversed(parts)]

    def _split(self, decisions, i: int, chosen: list, start: int, planes: dict) -> Split:
        pieces = decisions[i]
        split = Split(decision_planes([pieces[j] for j in chosen]), start, start + len(decisions) - i, {})
        for later in range(i + 1, len(decisions)):
            if later not in planes:
                planes[later] = decision_planes(decisions[later])
        for key in split.planes:
            split.masked[key] = frozenset(start + later - i for later in range(i + 1, len(decisions)) if key in planes[later])
            self.open.setdefault(key, []).append(split)
        return split

    def _leaf(self, cell, pattern: tuple, output: tuple) -> None:
        n = self.cells
        self.cells += 1
        if self.max_cells is not None and self.cells > self.max_cells:
            raise RegionLimit(f"more than {self.max_cells} activation cells; raise --max-regions to write them all")
        halfspaces, facets = cell_facets(cell)

        def encode(rows):      # fmpq's own string is the canonical "p/q" (format_rational) and faster
            return [[str(v) if isinstance(v, Q) else format_rational(v) for v in row] for row in rows]
        record = {"cell": n, "halfspaces": encode(halfspaces), "pattern": list(pattern), "output": encode(output)}
        if isinstance(cell, (Polygon, Vertices)):
            record["vertices"] = encode(cell.vertices)
        held = Held(json.dumps(record, separators=(",", ":"))[:-1], pattern, output, [])
        for key, positive, facet in facets:
            if key in self.open:
                split = self.open[key][-1]
                choices = tuple(None if p in split.masked[key] else pattern[p] for p in range(split.start + 1, split.end))
                split.faces.setdefault((key, choices), ([], []))[0 if positive else 1].append((n, cell, facet))
                held.waiting += 1
        if held.waiting:
            self.held[n] = held
            self.peak_held = max(self.peak_held, len(self.held))
        else:
            self._write(n, held)

    def _close(self, split: Split) -> None:
        for key in split.planes:
            assert self.open[key].pop() is split
            if not self.open[key]:
                del self.open[key]
        if len(self.forms) > FORMS_HELD:
            self.forms.clear()
        for (key, _), (plus, minus) in split.faces.items():
            for n, m in self._pairs(plus, minus, not split.masked[key]):
                p, q = self.held[n], self.held[m]
                p.neighbours.append(m)
                q.neighbours.append(n)
                if p.output == q.output:
                    self.maps.join(n, m)
                if p.pattern == q.pattern:
                    self.patterns.join(n, m)
            for n, _, _ in plus + minus:
                held = self.held[n]
                held.waiting -= 1
                if not held.waiting:
                    self._write(n, self.held.pop(n))
        for components in (self.maps, self.patterns):
            if len(components.parent) > 2 * len(self.held) + 1024:
                components.compact(self.held)

    def _pairs(self, plus: list, minus: list, unmasked: bool):
        """The neighbours among one group of faces on one hyperplane H of a split.  Unmasked, the
        group's cells lie in two cells S+ = C ∩ {H ≥ 0} and S− = C ∩ {H ≤ 0} of the split's stage,
        C convex, whose facets on H are both C ∩ H, covered by the facets of the group's cells on
        each side: a side with one cell has all of C ∩ H as its facet, which holds the facet of
        every cell of the other side (facets, not ``Polytope`` constraints, are registered)."""
        sides = [{n for n, _, _ in side} for side in (plus, minus)]
        if not plus or not minus:
            return []
        if unmasked and not isinstance(plus[0][1], Polytope) and min(map(len, sides)) == 1:
            return [(n, m) for n in sides[0] for m in sides[1]]
        return facet_pairs(plus, minus, forms=self.forms)

    def _write(self, n: int, held: Held) -> None:
        self.ready.append(held.line + ',"neighbours":' + json.dumps(sorted(set(held.neighbours)), separators=(",", ":"))
                          + "}\n")

