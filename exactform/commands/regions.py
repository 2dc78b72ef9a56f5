"""``exactform regions MODEL.json [--json] [--plot FILE.png] [--cells FILE.jsonl] [--max-regions N]
[--workers N] [--scheduler ADDRESS]``: exact counts of linear regions and activation regions on the
model's domain (docs/spec.md §7, docs/regions.md).  With more than one worker the cells (3-D and up)
or sub-boxes of the domain (1-D, 2-D) are refined as separate tasks and merged across their shared
facets: the counts are the same whatever runs them.  ``--cells`` streams every cell with its
neighbours from one process, in memory that does not grow with the finished cells
(``geometry.complex``)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ..executor import ExecutorError, add_executor_arguments, lost_work, make_executor


PLOT_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg", ".eps", ".ps", ".tif", ".tiff", ".webp")
"""The image formats matplotlib writes, by file suffix."""


def add_parser(sub):
    p = sub.add_parser("regions", help="count linear regions exactly")
    p.add_argument("model", help="exactform/maxout@1 or hardmax exactform/transformer@1 JSON")
    p.add_argument("--json", action="store_true", help='print {"regions": N, "activation_regions": M, "method": ...}')
    p.add_argument("--plot", metavar="FILE.png", help="draw the partition (2-D) or the graph (1-D)")
    p.add_argument("--cells", metavar="FILE.jsonl", help="write every cell exactly, one JSON line each "
                   "(halfspaces, vertices, activation pattern, output map, neighbours; streamed by one process; "
                   "docs/regions.md)")
    p.add_argument("--max-regions", type=int, metavar="N", help="stop once more than N cells would be enumerated")
    p.add_argument("--method", choices=("interval", "polygon", "polytope", "vertices"),
                   help="cell kind (default: interval in 1-D, polygon in 2-D, vertices with their incidences "
                        "otherwise; polytope: exact LP)")
    add_executor_arguments(p)
    return p


def run(args) -> int:
    from ..errors import requires
    from ..formats import InputError, output_file
    from ..models import load_model
    from ..geometry.regions import NotPiecewiseLinear, RegionLimit
    model = load_model(args.model)
    if args.plot is not None:
        output_file(args.plot, "--plot")
        if Path(args.plot).suffix.lower() not in PLOT_SUFFIXES:
            raise InputError("--plot", "", f"{args.plot}: the suffix names the image format: "
                             f"{', '.join(PLOT_SUFFIXES)}")
        requires("matplotlib", "--plot")
        if model.input_dim > 2:
            raise InputError("--plot", "", f"plots are drawn for 1-D and 2-D inputs; {args.model} has "
                             f"{model.input_dim} inputs")
    if args.cells is not None:
        output_file(args.cells, "--cells")
        if args.cells.endswith(".gz"):
            raise InputError("--cells", "", "cell files are written uncompressed (the header's counts are "
                             "filled in last); compress the file afterwards")
    if getattr(model, "is_hardmax", True) is False:
        raise InputError(args.model, "attention", "softmax attention is not piecewise linear; "
                         "regions are counted for hardmax models")
    if args.max_regions is not None and args.max_regions < 1:
        raise InputError("--max-regions", "", "expected a positive integer")
    try:
        if args.cells:          # streamed by one process; the plot needs all cells at once
            result = write_cells(args.cells, args.model, model, args.method, args.max_regions).count()
        if args.plot or not args.cells:
            result = count(model, args, parts=1 if args.plot else None)
    except ExecutorError as e:
        return lost_work("regions", e)
    except RegionLimit as e:
        print(f"exactform: regions: stopped: {e}", file=sys.stderr)
        return 1
    except (NotPiecewiseLinear, ValueError) as e:
        raise InputError(args.model, "", str(e)) from None
    if args.plot:
        from ..plot import plot_regions
        plot_regions(result, args.plot)
    if args.json:
        print(json.dumps(result.to_json(), sort_keys=True))
    else:
        print(f"{result.regions} linear regions, {result.activation_regions} activation regions "
              f"({result.method}, exact)" + (f"; plot written to {args.plot}" if args.plot else "")
              + (f"; cells written to {args.cells}" if args.cells else ""))
    return 0


def count(model, args, parts: int | None):
    """``count_regions`` on the executor of ``--workers``/``--scheduler`` (``parts``: sub-boxes
    per coordinate, default ``parts_for`` the workers)."""
    from ..geometry.regions import count_regions, parts_for
    from ..progress import Stages
    with Stages() as progress, make_executor(args.workers, args.scheduler) as executor:
        parts = parts or parts_for(executor.workers, model.input_dim)
        return count_regions(model, args.method, args.max_regions, parts, progress, executor)


def write_cells(path: str, source: str, model, method: str | None, max_cells: int | None):
    """A header line, then one line per cell (``geometry.complex.CellStream``), streamed into a
    temporary file renamed over ``path`` at the end; the header's place is reserved first (its
    counts are known at the end) and filled in last, padded with spaces.  Returns the finished
    stream (``count()``, ``peak_held``)."""
    from ..files import replacing
    from ..geometry.complex import CellStream
    from ..geometry.regions import METHODS
    from ..progress import Count
    stream = CellStream(model, method, max_cells)

    def header(cells: int, counts: dict) -> str:
        return json.dumps({"format": "exactform/cells@1", "model": source, "input_dim": model.input_dim,
                           "cells": cells, **counts}, sort_keys=True)
    big = 10 ** 20
    width = len(header(big, {"regions": big, "activation_regions": big, "method": max(METHODS.values(), key=len)}))
    with replacing(path) as f, Count("cells") as tick:
        f.write(b" " * width + b"\n")
        for line in stream:
            f.write(line.encode("utf-8"))
            tick()
        f.seek(0)
        f.write(header(stream.cells, stream.count().to_json()).ljust(width).encode("utf-8"))
    return stream
