"""``exactform regions MODEL.json [--json] [--plot FILE.png] [--cells FILE.jsonl] [--max-regions N]
[--workers N] [--scheduler ADDRESS]``: exact counts of linear regions and activation regions on the
model's domain (docs/spec.md §7, docs/regions.md).  With more than one worker the cells (3-D and up)
or sub-boxes of the domain (1-D, 2-D) are refined as separate tasks and merged across their shared
facets: the counts are the same whatever runs them."""
from __future__ import annotations

import itertools
import json
import sys

from ..executor import ExecutorError, add_executor_arguments, lost_work, make_executor


def add_parser(sub):
    p = sub.add_parser("regions", help="count linear regions exactly")
    p.add_argument("model", help="exactform/maxout@1 or hardmax exactform/transformer@1 JSON")
    p.add_argument("--json", action="store_true", help='print {"regions": N, "activation_regions": M, "method": ...}')
    p.add_argument("--plot", metavar="FILE.png", help="draw the partition (2-D) or the graph (1-D)")
    p.add_argument("--cells", metavar="FILE.jsonl", help="write every cell exactly, one JSON line each "
                   "(halfspaces, vertices, activation pattern, output map, neighbours; docs/regions.md)")
    p.add_argument("--max-regions", type=int, metavar="N", help="stop once more than N cells would be enumerated")
    p.add_argument("--method", choices=("interval", "polygon", "polytope", "vertices"),
                   help="cell kind (default: interval in 1-D, polygon in 2-D, vertices with their incidences "
                        "otherwise; polytope: exact LP)")
    add_executor_arguments(p)
    return p


def run(args) -> int:
    from ..formats import InputError, output_file
    from ..models import load_model
    from ..progress import Stages
    from ..geometry.regions import NotPiecewiseLinear, RegionLimit, count_regions, parts_for
    model = load_model(args.model)
    if args.plot is not None:
        output_file(args.plot, "--plot")
        if model.input_dim > 2:
            raise InputError("--plot", "", f"plots are drawn for 1-D and 2-D inputs; {args.model} has "
                             f"{model.input_dim} inputs")
    if args.cells is not None:
        output_file(args.cells, "--cells")
    if getattr(model, "is_hardmax", True) is False:
        raise InputError(args.model, "attention", "softmax attention is not piecewise linear; "
                         "regions are counted for hardmax models")
    if args.max_regions is not None and args.max_regions < 1:
        raise InputError("--max-regions", "", "expected a positive integer")
    progress = Stages()
    try:
        with make_executor(args.workers, args.scheduler) as executor:
            # plots and cell files: whole cells, not their parts in sub-boxes
            parts = 1 if args.plot or args.cells else parts_for(executor.workers, model.input_dim)
            result = count_regions(model, args.method, args.max_regions, parts, progress, executor)
    except ExecutorError as e:
        progress.close()
        return lost_work("regions", e)
    except RegionLimit as e:
        progress.close()
        print(f"exactform: regions: stopped: {e}", file=sys.stderr)
        return 1
    except (NotPiecewiseLinear, ValueError) as e:
        progress.close()
        raise InputError(args.model, "", str(e)) from None
    progress.close()
    if args.plot:
        from ..prove.region_plot import plot_regions
        plot_regions(result, args.plot)
    if args.cells:
        write_cells(args.cells, args.model, model.input_dim, result)
    if args.json:
        print(json.dumps(result.to_json(), sort_keys=True))
    else:
        print(f"{result.regions} linear regions, {result.activation_regions} activation regions "
              f"({result.method}, exact)" + (f"; plot written to {args.plot}" if args.plot else "")
              + (f"; cells written to {args.cells}" if args.cells else ""))
    return 0


def write_cells(path: str, source: str, dim: int, result) -> None:
    """A header line, then one line per cell (``geometry.regions.cell_records``), written as made."""
    from ..formats import write_text
    from ..geometry.regions import cell_records
    header = {"format": "exactform/cells@1", "model": source, "input_dim": dim, "cells": len(result.pieces),
              **result.to_json()}
    lines = (json.dumps(r, separators=(",", ":")) + "\n" for r in cell_records(result))
    write_text(path, itertools.chain([json.dumps(header, sort_keys=True) + "\n"], lines))
