"""Pictures of a region count: the 2-D cells over the function's values, or the 1-D graph with its
breakpoints (matplotlib, Agg backend; presentation only —
every number drawn comes from the exact cells, converted to float for drawing)."""
from __future__ import annotations

from .geometry.cells import evaluate
from .geometry.regions import RegionCount


def plot_regions(result: RegionCount, path: str, title: str = "") -> None:
    """1-D: the graph of f with its breakpoints (where the affine map changes).  2-D: f as one
    colour scale with a colour bar (filled contours of f, which is affine on each triangulated
    cell), every activation cell outlined (dashed) and numbered by its linear region; the title
    counts what is drawn and says which output is drawn when there are several."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    fig, ax = plt.subplots(figsize=(6, 5))
    pieces = result.pieces
    output = "f(x)" if len(pieces[0].output) == 1 else "f_0(x), output 0"
    if hasattr(pieces[0].cell, "lo"):
        pieces = sorted(pieces, key=lambda p: p.cell.lo)
        for n, p in enumerate(pieces):
            a, b = p.cell.lo, p.cell.hi
            ax.plot([float(a), float(b)], [float(evaluate(p.output[0], (a,))), float(evaluate(p.output[0], (b,)))],
                    "C0-", label=output if n == 0 else None)
        breaks = [q.cell.lo for p, q in zip(pieces, pieces[1:]) if p.output != q.output]
        if breaks:
            ax.plot([float(x) for x in breaks], [float(_value(pieces, x)) for x in breaks],
                    "C3o", markersize=4, label=f"breakpoints ({len(breaks)})")
        ax.set_xlim(float(pieces[0].cell.lo), float(pieces[-1].cell.hi))
        ax.set_xlabel("x")
        ax.set_ylabel(output)
        ax.legend()
        default = f"{result.regions} linear regions ({result.method})"
    else:
        import matplotlib.tri as mtri
        from matplotlib.collections import PolyCollection

        from .geometry.facets import adjacent_pairs
        from .geometry.regions import component_labels
        xs, ys, zs, triangles = [], [], [], []
        for p in pieces:
            first = len(xs)
            for v in p.cell.vertices:
                xs.append(float(v[0]))
                ys.append(float(v[1]))
                zs.append(float(evaluate(p.output[0], v)))
            triangles += [(first, first + k, first + k + 1) for k in range(1, len(p.cell.vertices) - 1)]
        # f is affine on each cell: linear (Gouraud) shading of its triangles is f itself, with no bands
        shading = ax.tripcolor(mtri.Triangulation(xs, ys, triangles), zs, shading="gouraud", cmap="viridis")
        ratio = (max(ys) - min(ys)) / (max(xs) - min(xs))
        fig.set_size_inches(7, min(6.5, max(3.0, 5.5 * ratio + 1.2)))
        fig.colorbar(shading, ax=ax, label=f"{output} (colour)", ticks=matplotlib.ticker.MaxNLocator(5),
                     shrink=min(1.0, max(0.4, 1.2 * ratio)))
        ax.add_collection(PolyCollection([[(float(x), float(y)) for x, y in p.cell.vertices] for p in pieces],
                                         facecolors="none", edgecolors="white", linewidths=0.8, linestyles="--"))
        same_map = adjacent_pairs(pieces, lambda i, j: pieces[i].output == pieces[j].output)
        region = component_labels(len(pieces), same_map)
        for p, r in zip(pieces, region):      # each cell carries the number of its linear region
            cx, cy = (sum(float(v[k]) for v in p.cell.vertices) / len(p.cell.vertices) for k in (0, 1))
            ax.text(cx, cy, str(r + 1), ha="center", va="center", fontsize=8, color="black",
                    bbox={"boxstyle": "circle,pad=0.2", "facecolor": "white", "edgecolor": "none", "alpha": 0.8})
        ax.set_xlim(min(xs), max(xs))
        ax.set_ylim(min(ys), max(ys))
        ax.set_aspect("equal")
        ax.set_xlabel("x0")
        ax.set_ylabel("x1")
        default = (f"{len(pieces)} activation cells (dashed outlines), {result.regions} linear regions\n"
                   f"(numbers: cells with one number are one region, same affine map; {result.method})")
    if len(pieces[0].output) > 1:
        default += f"\ndrawn: output 0 of {len(pieces[0].output)} (the counts are of the whole map)"
    ax.set_title(title or default, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _value(pieces, x):
    """f at a breakpoint ``x`` (the right-hand cell's map; f is continuous)."""
    return next(evaluate(p.output[0], (x,)) for p in pieces if p.cell.lo == x)
