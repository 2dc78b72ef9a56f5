"""The splits of a certificate's tree, one format read here for both claims that carry a tree: V1
(``verify_cert``, docs/spec.md §8) and E1 (``equiv``, docs/equiv.md "Certificate").

- A *coordinate split* ``{"split": i, "at": c, "children": [below, above]}`` cuts the cell's box at
  x_i = c, l_i ≤ c ≤ u_i: the closed halves x_i ≤ c and x_i ≥ c cover it (``coordinate``).
- An *affine split* ``{"split": row, "children": [...]}`` covers the cell by the sides of g = row: two
  children g ≥ 0, g ≤ 0, or (E1 only: a hardmax tie set is a cell of its own) three g > 0, g = 0, g < 0
  (``covering``); g is read by the claim (V1: over the lifted variables, E1: over x).

The checker of each claim adds a child's side to its own cell (V1: the leaf box, or a row of the leaf;
E1: a constraint of the cell, ``coordinate_sides``)."""

from __future__ import annotations

from fractions import Fraction

from .forms import negated
from .reader import ONE, Malformed, Refuted, fields, integer, items, rational


def is_coordinate(node) -> bool:
    """Whether the tree node is a coordinate split (its ``split`` an integer, not a row)."""
    return isinstance(node, dict) and type(node.get("split")) is int


def coordinate(node: dict, at: str, cube: list, name: str, allowed: tuple = ()) -> tuple:
    """``(i, c, [(below, where), (above, where)])`` of a coordinate split of the cell whose box is ``cube``:
    i an input, c in [l_i, u_i] (else ``Refuted``, naming ``name``); ``allowed``: the node's other
    optional fields (E1's ``decide``)."""
    fields(node, at, ("split", "at", "children"), allowed)
    i = integer(node["split"], f"{at}.split", 0, len(cube) - 1)
    c = rational(node["at"], f"{at}.at")
    lo, hi = cube[i]
    if not lo <= c <= hi:
        raise Refuted(f"{name}: {at}: the split x_{i} = {c} is outside the cell's [{lo}, {hi}]")
    children = items(node["children"], f"{at}.children", 2)
    return i, c, [(child, f"{at}.children[{j}]") for j, child in enumerate(children)]


def halves(cube: list, i: int, c: Fraction) -> tuple[list, list]:
    """The box's closed halves x_i ≤ c and x_i ≥ c."""
    below, above = list(cube), list(cube)
    below[i], above[i] = (cube[i][0], c), (c, cube[i][1])
    return below, above


def cell_box(cube: list, cons: list) -> list:
    """The box cut by the cell's constraints on one coordinate (``a·x_i + c ≥ 0`` or ``> 0``): a box
    containing the cell."""
    cube = list(cube)
    for g, _ in cons:
        xs = [k for k in g if k != ONE]
        if len(xs) == 1:
            i, a = xs[0], g[xs[0]]
            at = -g.get(ONE, Fraction(0)) / a
            lo, hi = cube[i]
            cube[i] = (max(lo, at), hi) if a > 0 else (lo, min(hi, at))
    return cube


def coordinate_sides(i: int, c: Fraction) -> tuple[dict, dict]:
    """The halves as constraints ``g ≥ 0`` over x: c − x_i (below), x_i − c (above)."""
    return {i: Fraction(-1), ONE: c}, {i: Fraction(1), ONE: -c}


def covering(g: dict, node: dict, at: str) -> list:
    """``[(child, where, (form, kind))]`` of an affine split at g: g ≥ 0, g ≤ 0 or g > 0, g = 0, g < 0,
    the cell covered."""
    children = items(node.get("children"), f"{at}.children")
    neg = negated(g)
    if len(children) == 2:
        parts = [(g, "ge"), (neg, "ge")]
    elif len(children) == 3:
        parts = [(g, "gt"), (g, "eq"), (neg, "gt")]
    else:
        raise Malformed(f"{at}.children: expected 2 (g ≥ 0, g ≤ 0) or 3 (g > 0, g = 0, g < 0)")
    return [(c, f"{at}.children[{i}]", p) for i, (c, p) in enumerate(zip(children, parts))]
