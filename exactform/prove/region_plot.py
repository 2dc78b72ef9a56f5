"""Pictures of a region count: the 2-D partition coloured by linear region over a heat map of the
function, or the 1-D graph with its breakpoints (matplotlib, Agg backend; presentation only —
every number drawn comes from the exact cells, converted to float for drawing)."""
from __future__ import annotations

from .cells import evaluate
from .regions import RegionCount, adjacent_pairs


def _labels(result: RegionCount) -> list[int]:
    pieces = result.pieces
    parent = list(range(len(pieces)))

    def find(i):
        while parent[i] != i:
            i = parent[i]
        return i
    for i, j in adjacent_pairs(pieces, lambda i, j: pieces[i].output == pieces[j].output):
        parent[find(i)] = find(j)
    roots = {}
    return [roots.setdefault(find(i), len(roots)) for i in range(len(pieces))]


def plot_regions(result: RegionCount, path: str, title: str = "") -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection
    fig, ax = plt.subplots(figsize=(6, 5))
    pieces = result.pieces
    if hasattr(pieces[0].cell, "lo"):
        xs = sorted({float(p.cell.lo) for p in pieces} | {float(p.cell.hi) for p in pieces})
        for p in pieces:
            a, b = p.cell.lo, p.cell.hi
            ax.plot([float(a), float(b)], [float(evaluate(p.output[0], (a,))), float(evaluate(p.output[0], (b,)))], "C0-")
        breaks = [p.cell.lo for p in pieces[1:]]
        ax.plot([float(x) for x in breaks], [float(evaluate(p.output[0], (p.cell.lo,))) for p in pieces[1:]],
                "C3o", markersize=3, label="breakpoints")
        ax.set_xlim(xs[0], xs[-1])
        ax.set_xlabel("x")
        ax.set_ylabel("f(x)")
    else:
        labels = _labels(result)
        polys = [[(float(x), float(y)) for x, y in p.cell.vertices] for p in pieces]
        heat = [float(evaluate(p.output[0], p.cell.sample())) for p in pieces]
        ax.add_collection(PolyCollection(polys, array=heat, cmap="viridis", edgecolors="none"))
        colours = plt.get_cmap("tab20")
        ax.add_collection(PolyCollection(polys, facecolors=[colours(k % 20) for k in labels], alpha=0.35,
                                         edgecolors="white", linewidths=0.3))
        xs = [x for poly in polys for x, _ in poly]
        ys = [y for poly in polys for _, y in poly]
        ax.set_xlim(min(xs), max(xs))
        ax.set_ylim(min(ys), max(ys))
        ax.set_aspect("equal")
        ax.set_xlabel("x0")
        ax.set_ylabel("x1")
    ax.set_title(title or f"{result.regions} linear regions ({result.method})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
