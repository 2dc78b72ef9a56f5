"""Claim C7 (docs/spec.md §3): exact linear-region counts of the region-rich family meet the seed's bound
``[(T−1)⌊mT/q⌋ + 1]^{q(⌊D/3⌋−1)} · Σ_{j≤q} C(mT, j)(T−1)^j`` and grow exponentially with depth.

Every count is counted (``exactform.geometry.regions``) on the Maxout JSON written under ``--out``,
re-read from that file; the bound is only ever compared with it.  A few small rows are also
compiled to hardmax Transformers whose own region count must be the same.

Usage: python proofs/C7.py [--json] [--out DIR]     (exit 0: every row holds; 1: a row fails)
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # the folder holding exactform/

from exactform.construct.maxout_to_transformer import compile_maxout  # noqa: E402
from exactform.construct.region_rich import folds_fully, region_rich_net, seed_bound  # noqa: E402
from exactform.formats import write_json  # noqa: E402
from exactform.geometry.regions import count_regions  # noqa: E402
from exactform.models import load_model  # noqa: E402

# (m, T, q) and the depths D = 3L counted (as deep as exact counting allows in about a minute)
FAMILIES = [((1, 2, 1), range(3, 28, 3)), ((2, 3, 1), range(3, 13, 3)), ((1, 4, 1), range(3, 13, 3)),
            ((1, 2, 2), range(3, 19, 3)), ((2, 2, 2), range(3, 13, 3))]
TRANSFORMER_CHECKS = [(1, 2, 1, 6), (1, 2, 2, 6), (2, 3, 1, 3)]
OUT_OF_REACH = [(1, 3, 1), (1, 3, 2), (3, 3, 1), (1, 4, 3)]

PARITY = ("A rank-T unit is convex with T−1 kinks, and the next layer weights it by one sign, so all "
          "its kinks enter the sum with that sign; a full zig-zag of K = (T−1)r kinks alternates "
          "concave/convex, so ⌈K/2⌉ concave and ⌊K/2⌋ convex kinks must each be split into groups "
          "of T−1. For T = 2 this always works; for T ≥ 3 it needs r = ⌊mT/q⌋ even. With r odd and "
          "T ≥ 3 a folding layer of this family has fewer than (T−1)r + 1 pieces, so the formula as "
          "read is out of this family's reach there (no other family is claimed).")


def run(out: str) -> dict:
    os.makedirs(out, exist_ok=True)
    rows, ok = [], True
    for (m, T, q), depths in FAMILIES:
        for D in depths:
            path = os.path.join(out, f"region_rich_m{m}_T{T}_q{q}_D{D}.json")
            write_json(path, region_rich_net(m, T, q, D).to_json())
            start = time.perf_counter()
            regions = count_regions(load_model(path)).regions
            bound = seed_bound(m, T, q, D)
            ok &= regions >= bound
            rows.append({"m": m, "T": T, "q": q, "D": D, "bound": bound, "regions": regions, "network": path,
                         "seconds": round(time.perf_counter() - start, 3)})
    checks = []
    for m, T, q, D in TRANSFORMER_CHECKS:
        net = region_rich_net(m, T, q, D)
        a, b = count_regions(net).regions, count_regions(compile_maxout(net)).regions
        ok &= a == b
        checks.append({"m": m, "T": T, "q": q, "D": D, "maxout_regions": a, "transformer_regions": b})
    reach = [{"m": m, "T": T, "q": q, "r": (m * T) // q, "folds_fully": folds_fully(m, T, q)} for m, T, q in OUT_OF_REACH]
    ok &= not any(r["folds_fully"] for r in reach)
    plot = os.path.join(out, "C7_regions_vs_depth.png")
    _plot(rows, plot)
    return {"claim": "C7", "ok": bool(ok), "rows": rows, "transformer_checks": checks,
            "out_of_reach": {"parameters": reach, "argument": PARITY}, "plot": plot}


def _plot(rows, path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    from matplotlib.lines import Line2D
    families = sorted({(r["m"], r["T"], r["q"]) for r in rows})
    handles = []
    for n, fam in enumerate(families):
        rs = [r for r in rows if (r["m"], r["T"], r["q"]) == fam]
        colour, marker, size = f"C{n}", "osD^v"[n % 5], 12 - 1.5 * n    # equal series stay visible
        ax.plot([r["D"] for r in rs], [r["bound"] for r in rs], "--", color=colour, linewidth=1)
        ax.plot([r["D"] for r in rs], [r["regions"] for r in rs], marker, color=colour, markerfacecolor="none",
                markersize=size)
        handles.append(Line2D([], [], color=colour, marker=marker, markerfacecolor="none", linestyle="--",
                              label=f"m={fam[0]}, T={fam[1]}, q={fam[2]}"))
    handles += [Line2D([], [], color="black", marker="o", markerfacecolor="none", linestyle="none",
                       label="markers: counted exactly"),
                Line2D([], [], color="black", linestyle="--", label="dashed: the lower bound of docs/spec.md §3 C7")]
    ax.set_yscale("log")
    ax.set_xlabel("Transformer depth D (3 blocks per Maxout layer)")
    ax.set_ylabel("number of linear regions (log scale)")
    ax.set_title("C7: linear regions of the region-rich Maxout family on [0,1]^q, counted exactly,\n"
                 "against the bound [(T-1)⌊mT/q⌋+1]^(q(⌊D/3⌋-1)) · Σ_j≤q C(mT,j)(T-1)^j", fontsize=9)
    ax.legend(handles=handles, fontsize=8, title="q inputs; mT units of rank T per layer", title_fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true")
    p.add_argument("--out", default=os.path.join(os.environ.get("EXACTFORM_PROOF_OUT", "exactform-proofs"), "C7"), help="where networks and the plot are written")
    args = p.parse_args(argv)
    report = run(args.out)
    if args.json:
        print(json.dumps(report, sort_keys=True))
    else:
        for r in report["rows"]:
            print(f"m={r['m']} T={r['T']} q={r['q']} D={r['D']:>2}: regions {r['regions']:>6} "
                  f"{'>=' if r['regions'] >= r['bound'] else '< '} bound {r['bound']:>6}  ({r['network']})")
        for c in report["transformer_checks"]:
            print(f"transformer check m={c['m']} T={c['T']} q={c['q']} D={c['D']}: "
                  f"Maxout {c['maxout_regions']} = Transformer {c['transformer_regions']}")
        print("out of reach:", ", ".join(f"(m,T,q)=({r['m']},{r['T']},{r['q']}) r={r['r']}"
                                         for r in report["out_of_reach"]["parameters"]))
        print(report["out_of_reach"]["argument"])
        print(f"plot: {report['plot']}")
        print("C7 holds" if report["ok"] else "C7 FAILS")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
