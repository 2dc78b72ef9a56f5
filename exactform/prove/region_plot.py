"""Pictures of a region count: the 2-D cells over the function's values, or the 1-D graph with its
breakpoints (matplotlib, Agg backend; presentation only —
every number drawn comes from the exact cells, converted to float for drawing)."""
from __future__ import annotations

from .cells import evaluate
from .regions import RegionCount


def plot_regions(result: RegionCount, path: str, title: str = "") -> None:
    """1-D: the graph of f with its breakpoints (where the affine map changes).  2-D: f as one
    colour scale with a colour bar (filled contours of f, which is affine on each triangulated
    cell), every activation cell outlined; the title counts what is drawn."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    fig, ax = plt.subplots(figsize=(6, 5))
    pieces = result.pieces
    if hasattr(pieces[0].cell, "lo"):
        pieces = sorted(pieces, key=lambda p: p.cell.lo)
        for n, p in enumerate(pieces):
            a, b = p.cell.lo, p.cell.hi
            ax.plot([float(a), float(b)], [float(evaluate(p.output[0], (a,))), float(evaluate(p.output[0], (b,)))],
                    "C0-", label="f(x)" if n == 0 else None)
        breaks = [q.cell.lo for p, q in zip(pieces, pieces[1:]) if p.output != q.output]
        if breaks:
            ax.plot([float(x) for x in breaks], [float(_value(pieces, x)) for x in breaks],
                    "C3o", markersize=4, label=f"breakpoints ({len(breaks)})")
        ax.set_xlim(float(pieces[0].cell.lo), float(pieces[-1].cell.hi))
        ax.set_xlabel("x")
        ax.set_ylabel("f(x)")
        ax.legend()
        default = f"{result.regions} linear regions ({result.method})"
    else:
        import matplotlib.tri as mtri
        xs, ys, zs, triangles = [], [], [], []
        for p in pieces:
            first = len(xs)
            for v in p.cell.vertices:
                xs.append(float(v[0]))
                ys.append(float(v[1]))
                zs.append(float(evaluate(p.output[0], v)))
            triangles += [(first, first + k, first + k + 1) for k in range(1, len(p.cell.vertices) - 1)]
        shading = ax.tricontourf(mtri.Triangulation(xs, ys, triangles), zs, levels=40, cmap="viridis")
        ratio = (max(ys) - min(ys)) / (max(xs) - min(xs))
        fig.set_size_inches(7, min(6.5, max(3.0, 5.5 * ratio + 1.2)))
        fig.colorbar(shading, ax=ax, label="f(x)", ticks=matplotlib.ticker.MaxNLocator(5), shrink=min(1.0, max(0.4, 1.2 * ratio)))
        from matplotlib.collections import PolyCollection
        ax.add_collection(PolyCollection([[(float(x), float(y)) for x, y in p.cell.vertices] for p in pieces],
                                         facecolors="none", edgecolors="white", linewidths=0.5))
        ax.set_xlim(min(xs), max(xs))
        ax.set_ylim(min(ys), max(ys))
        ax.set_aspect("equal")
        ax.set_xlabel("x0")
        ax.set_ylabel("x1")
        default = (f"{len(pieces)} activation cells (outlined), {result.regions} linear regions "
                   f"({result.method})")
    ax.set_title(title or default, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _value(pieces, x):
    """f at a breakpoint ``x`` (the right-hand cell's map; f is continuous)."""
    return next(evaluate(p.output[0], (x,)) for p in pieces if p.cell.lo == x)
