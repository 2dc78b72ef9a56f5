"""ε-equivalence on ACAS Xu property regions: ``exactform equiv --tolerance`` of each of the
45 networks against its float16 copy on the input regions of φ1 and φ3, ε = 0.05 and 0.01 — the
benchmark of ReluDiff (ICSE 2020) and NeuroDiff (ASE 2020), whose published per-network figures are
printed beside ours — and a big-M MILP peer (HiGHS) beside ``equiv --max-diff`` on small pairs.

``python -m exactform.benchmarks equiv [--networks 1_1,2_3] [--properties 1,3] [--epsilons 0.05,0.01]
[--timeout S] [--scale F] [--outputs 0|all] [--results DIR] [--workers N] [--pairs-only | --no-pairs]
[--milp-venv DIR]`` (``python -m exactform.benchmarks equiv_bench`` is the older equiv benchmark).

Instances.  A is the network of ``data/acasxu/`` of a source checkout (``--networks-dir``) imported
exactly on the region (the ``X_i`` bounds of VNN-COMP's ``prop_1.vnnlib`` / ``prop_3.vnnlib``,
normalised inputs, read exactly); B is A with every weight and bias rounded to the nearest IEEE half
(``equiv_bench.float16``), read exactly as a rational.  ``--outputs 0`` (the default) compares output
0 (clear-of-conflict) only, as ReluDiff / NeuroDiff do for φ1 and φ3 (their ``target``);
``--outputs all`` asks ``|A − B|∞ ≤ ε`` over the five outputs, a stronger claim.  ``--scale F``
shrinks every region about its centre by F (not the benchmark: for short runs; said in the output).

Each instance runs ``exactform equiv A B --domain BOX --tolerance E --cert C.json --json`` in its
own process group under a limit of ``--timeout`` CPU seconds (default 1800, NeuroDiff's; counted as
in the verify benchmark, ``verify_bench.limited``: the machine is shared; the process group is also
stopped after 4× that in wall seconds).  A ``proved`` answer counts only when ``exactform check C.json
--a A --b B`` accepts its certificate; a ``counterexample`` only when A and B evaluated exactly at its
point differ by more than ε on the compared outputs; anything else is a miss (exit 1).  Rows are
written to ``DIR/equiv_regions.csv`` as they come (``--results DIR``, default ``out/equiv-regions``),
and with the summary to ``DIR/equiv_regions.json`` and ``DIR/equiv_regions.md``.

NeuroDiff's figures (``data/neurodiff_acasxu/``, see its README) are floating-point runs with 12
threads on their machine; φ3 there covers 42 networks (Reluplex's 45 less 1_7, 1_8, 1_9).

The MILP peer (``peers/milp_equiv.py``) runs in its own virtual environment (``--milp-venv``, default
``EXACTFORM_MILP_VENV`` or ``~/.cache/exactform/milp``, made with ``python -m venv DIR && DIR/bin/pip
install highspy``); without it the pairs are skipped with a message.  Its float maximum is a claim;
its point, re-evaluated exactly, is a true lower bound, which must not exceed exactform's exact max.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import random
import shlex
import statistics
import sys
import tempfile
from dataclasses import dataclass, fields
from fractions import Fraction
from pathlib import Path

from exactform.benchmarks.equiv_bench import quantised, float16
from exactform.benchmarks.regions_bench import sawtooth
from exactform.benchmarks.timing import table
from exactform.benchmarks.verify_bench import DATA, NETWORKS, check_bound, last_json, tail, limited
from exactform.formats import write_json
from exactform.importers import import_network
from exactform.importers.vnnlib import read_property
from exactform.models import MaxoutNet
from exactform.numbers import format_rational, parse_number, parse_rational
from exactform.proofs.nets import permuted, relu_net

HERE = Path(__file__).resolve().parent
PUBLISHED = HERE / "data" / "neurodiff_acasxu" / "neurodiff_acasxu.csv"
PEER = HERE / "peers" / "milp_equiv.py"
MILP_VENV = Path(os.environ.get("EXACTFORM_MILP_VENV", Path.home() / ".cache" / "exactform" / "milp"))
NAMES = [f"{a}_{b}" for a in range(1, 6) for b in range(1, 10)]


@dataclass
class Row:
    network: str
    property: str
    epsilon: str
    verdict: str                # proved, counterexample, timeout, error
    cpu_s: float = 0.0
    wall_s: float = 0.0
    leaves: int | str = ""
    splits: int | str = ""
    checked: str = "-"          # yes / no / -
    check_cpu_s: float | str = ""
    cert_bytes: int | str = ""
    note: str = ""


# --- the instances -------------------------------------------------------------------------------


def region(prop: int, scale: Fraction = Fraction(1)) -> list[tuple[Fraction, Fraction]]:
    """The input box of VNN-COMP's ``prop_<prop>.vnnlib`` (exact), shrunk about its centre by ``scale``."""
    (disjunct,) = read_property(str(DATA / f"prop_{prop}.vnnlib")).disjuncts
    return [((lo + hi) / 2 - scale * (hi - lo) / 2, (lo + hi) / 2 + scale * (hi - lo) / 2) for lo, hi in disjunct.box]


def restricted(net: MaxoutNet, outputs: list[int] | None) -> MaxoutNet:
    """The net with only the read-out rows ``outputs`` (all when None): the same function on them."""
    if outputs is None:
        return net
    return MaxoutNet(net.domain, net.layers, [net.readout_weight[k] for k in outputs],
                     [net.readout_bias[k] for k in outputs], net.provenance)


def pair(onnx: Path, box: list[tuple[Fraction, Fraction]], outputs: list[int] | None) -> tuple[MaxoutNet, MaxoutNet]:
    """A (the network on ``box``) and B (its float16 copy), both restricted to ``outputs``."""
    a = restricted(import_network(str(onnx), box, broadcast=False), outputs)
    return a, float16(a)


def domain_text(box: list[tuple[Fraction, Fraction]]) -> str:
    return ",".join(f"{format_rational(lo)}:{format_rational(hi)}" for lo, hi in box)


def exceeds(a: MaxoutNet, b: MaxoutNet, point: list[Fraction], epsilon: Fraction) -> str | None:
    """``None`` when ``point`` lies in A's box and ``|A − B|∞ > ε`` there, exactly; else why not."""
    if not a.domain.contains(point):
        return "the counterexample lies outside the box"
    gap = max(abs(p - q) for p, q in zip(a(point), b(point)))
    return None if gap > epsilon else f"|A − B| = {float(gap):.3e} ≤ ε at the counterexample"


# --- one instance --------------------------------------------------------------------------------

def run_instance(a: MaxoutNet, b: MaxoutNet, epsilon: str, folder: Path, exactform: list[str], timeout: int,
                 workers: int, row: Row) -> Row:
    """``equiv --tolerance`` of A and B (written to ``folder``), its certificate checked or its
    counterexample confirmed exactly."""
    files = {k: folder / f"{k}.json" for k in ("a", "b", "cert")}
    write_json(str(files["a"]), a.to_json())
    write_json(str(files["b"]), b.to_json())
    files["cert"].unlink(missing_ok=True)
    box = list(zip(a.domain.lower, a.domain.upper))
    code, row.cpu_s, row.wall_s = limited(
        exactform + ["equiv", str(files["a"]), str(files["b"]), "--domain", domain_text(box),
                     "--tolerance", format_rational(parse_number(epsilon)), "--cert", str(files["cert"]), "--json",
                     "--workers", str(workers), "--timeout", str(4 * timeout)],
        timeout, folder / "equiv.log")
    row.cpu_s, row.wall_s = round(row.cpu_s, 3), round(row.wall_s, 3)
    printed = (folder / "equiv.log").read_text(errors="replace")
    doc = last_json(printed)
    if code is None or (code == 3 and doc is None and "exactform: stopped" in printed):
        row.verdict, row.note = "timeout", "stopped at the limit" + "".join(
            f" ({line.split('when stopped: ', 1)[1]})" for line in printed.splitlines() if "when stopped: " in line)
        return row
    if doc is None or "within_tolerance" not in doc or code != (0 if doc["within_tolerance"] else 1):
        row.verdict, row.note = "error", f"exit {code}: {tail(printed)}"
        return row
    row.leaves, row.splits = doc.get("leaves", ""), doc.get("splits", "")
    if not doc["within_tolerance"]:
        failure = exceeds(a, b, [parse_rational(v) for v in doc["point"]], parse_number(epsilon))
        row.verdict, row.checked, row.note = "counterexample", "no" if failure else "yes", failure or ""
        return row
    row.verdict, row.cert_bytes = "proved", files["cert"].stat().st_size
    code, row.check_cpu_s, _ = limited(exactform + ["check", str(files["cert"]), "--a", str(files["a"]), "--b", str(files["b"]),
                                                    "--max-work", check_bound(doc)], 4 * timeout, folder / "check.log")
    row.checked, row.check_cpu_s = "yes" if code == 0 else "no", round(row.check_cpu_s, 3)
    if code != 0:
        row.note = "certificate rejected: " + tail((folder / "check.log").read_text(errors="replace"))
    return row


# --- NeuroDiff's figures -------------------------------------------------------------------------

def published() -> dict[tuple[str, str, str, str], tuple[str, float | None]]:
    """``{(tool, property, network, epsilon): (verdict, seconds or None)}`` from the artifact's logs."""
    with open(PUBLISHED, newline="") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    return {(r["tool"], r["property"], r["network"], r["epsilon"]):
            (r["verdict"], float(r["seconds"]) if r["seconds"] else None) for r in rows}


def _key(prop: str, epsilon: str) -> tuple[str, str]:
    """``(property number, ε)`` as the published CSV writes them (``φ1``, ``1/20`` → ``1``, ``0.05``)."""
    return prop.removeprefix("φ"), format(float(parse_number(epsilon)), "g")


def _theirs(figures: dict, tool: str, prop: str, epsilon: str, networks: list[str]) -> str:
    """``proved / total, median s`` of ``tool`` on ``networks`` (undetermined counted at 1800 s)."""
    number, eps = _key(prop, epsilon)
    got = [figures[k] for k in ((tool, number, n, eps) for n in networks) if k in figures]
    if not got:
        return "—"
    times = [s if s is not None else 1800.0 for _, s in got]
    return f"{sum(v == 'proved' for v, _ in got)}/{len(got)}, median {_seconds(statistics.median(times))} s"


def _their_instance(figures: dict, tool: str, row: Row) -> str:
    """``tool``'s published seconds on ``row``'s instance, ``undetermined``, or ``—`` (not in their set)."""
    number, eps = _key(row.property, row.epsilon)
    verdict, seconds = figures.get((tool, number, row.network, eps), ("—", None))
    return verdict if seconds is None else _seconds(seconds)


def _seconds(x: float) -> str:
    """Seconds to 3 significant digits, without an exponent."""
    return f"{x:.0f}" if x >= 100 else f"{x:.3g}"


# --- the MILP peer on small pairs ----------------------------------------------------------------

def small_pairs() -> list[tuple[str, MaxoutNet, MaxoutNet]]:
    """A handful of small ReLU pairs: rounded weights, a permuted (equal) copy, float16, a sawtooth pair."""
    net = relu_net(random.Random(1), [2, 8, 8], outputs=1)
    two = relu_net(random.Random(3), [3, 8, 8], outputs=2)
    return [("2→8→8→1 vs weights rounded to 1/64", net, quantised(net, Fraction(1, 64))),
            ("2→8→8→1 vs units permuted (equal)", net, permuted(net, random.Random(2))),
            ("3→8→8→2 vs float16 weights", two, float16(two)),
            ("sawtooth depth 5 vs depth 6, [0, 1]", sawtooth(5), sawtooth(6))]


def run_pairs(folder: Path, exactform: list[str], venv: Path, timeout: int) -> tuple[list[list], list[str]]:
    """``equiv --max-diff`` and the MILP peer on ``small_pairs``: table rows and misses."""
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"milp peer: skipped, no virtual environment at {venv} (python -m venv {venv} && "
              f"{venv}/bin/pip install highspy; or --milp-venv DIR)")
        return [], []
    rows, misses = [], []
    for k, (name, a, b) in enumerate(small_pairs()):
        fa, fb = folder / f"pair{k}a.json", folder / f"pair{k}b.json"
        write_json(str(fa), a.to_json())
        write_json(str(fb), b.to_json())
        code, ours_s, _ = limited(exactform + ["equiv", str(fa), str(fb), "--max-diff", "--json", "--workers", "1"],
                                  timeout, folder / "maxdiff.log")
        ours = last_json((folder / "maxdiff.log").read_text(errors="replace")) if code == 0 else None
        code, theirs_s, _ = limited([str(python), str(PEER), str(fa), str(fb), "--time-limit", str(timeout)],
                                    timeout, folder / "milp.log")
        theirs = last_json((folder / "milp.log").read_text(errors="replace")) if code == 0 else None
        exact = parse_rational(ours["max_diff"]) if ours else None
        at_point = parse_rational(theirs["exact_at_point"]) if theirs and theirs["exact_at_point"] else None
        if exact is not None and at_point is not None and at_point > exact:
            misses.append(f"{name}: the MILP's point gives {at_point}, above exactform's max {exact}")
        if exact is not None and ours["point"] and max(abs(p - q) for p, q in zip(
                a([parse_rational(v) for v in ours["point"]]), b([parse_rational(v) for v in ours["point"]]))) != exact:
            misses.append(f"{name}: exactform's point does not attain its max")
        rows.append([name, "—" if exact is None else f"{float(exact):.6g}", f"{ours_s:.2f}",
                     "—" if not theirs else f"{theirs['objective']:.6g} ({theirs['status']})",
                     "—" if at_point is None else f"{float(at_point):.6g}", f"{theirs_s:.2f}",
                     "—" if exact is None or at_point is None else
                     ("max found" if at_point == exact else f"{float((exact - at_point) / exact):.1e} below" if exact
                      else "")])
    return rows, misses


# --- the run -------------------------------------------------------------------------------------

def run_regions(args, networks: list[str], folder: Path, results: Path, command: str,
                figures: dict) -> tuple[list[Row], list[str]]:
    """Every (φ, network, ε) instance, each row written to ``results/equiv_regions.csv`` as it comes."""
    exactform, scale = shlex.split(args.exactform), parse_number(args.scale)
    shrunk = "" if scale == 1 else f" scaled by {args.scale} about their centres (NOT the benchmark)"
    print(f"{command}\nthe φ regions{shrunk}; outputs compared: {args.outputs}; "
          f"limit {args.timeout} CPU s per instance", flush=True)
    rows, misses = [], []
    with open(results / "equiv_regions.csv", "w", newline="") as f:
        f.write(f"# {command}\n")
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow([x.name for x in fields(Row)])
        for prop in args.properties.split(","):
            box = region(int(prop), scale)
            for n in networks:
                a, b = pair(Path(args.networks_dir) / f"ACASXU_run2a_{n}_batch_2000.onnx", box,
                            None if args.outputs == "all" else [0])
                for eps in args.epsilons.split(","):
                    row = run_instance(a, b, eps, folder, exactform, args.timeout, args.workers,
                                       Row(n, f"φ{prop}", eps, ""))
                    rows.append(row)
                    if row.verdict == "error" or (row.verdict in ("proved", "counterexample") and row.checked != "yes"):
                        misses.append(f"{n} φ{prop} ε={eps}: {row.verdict}, {row.note}")
                    writer.writerow([getattr(row, x.name) for x in fields(Row)])
                    f.flush()
                    print(_line(row, figures), flush=True)
    return rows, misses


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m exactform.benchmarks equiv", description=__doc__.split("\n")[0])
    parser.add_argument("--networks", help="e.g. 1_1,2_3 (default: all 45)")
    parser.add_argument("--properties", default="1,3", help="1 and/or 3 (default 1,3)")
    parser.add_argument("--epsilons", default="0.05,0.01", help="tolerances, decimals or p/q (default 0.05,0.01)")
    parser.add_argument("--timeout", type=int, default=1800, help="CPU seconds per instance (default 1800)")
    parser.add_argument("--scale", default="1", help="shrink each region about its centre by this rational "
                        "(default 1: the regions themselves)")
    parser.add_argument("--outputs", choices=["0", "all"], default="0",
                        help="compare output 0 as ReluDiff/NeuroDiff do (default), or all five")
    parser.add_argument("--workers", type=int, default=1, help="exactform's workers per instance (default 1)")
    parser.add_argument("--results", metavar="DIR", default="out/equiv-regions",
                        help="where rows and summary go (default out/equiv-regions)")
    parser.add_argument("--networks-dir", metavar="DIR", default=str(NETWORKS),
                        help="the 45 ACASXU_run2a_*_batch_2000.onnx (default: data/acasxu/ of the checkout)")
    parser.add_argument("--exactform", default=f"{shlex.quote(sys.executable)} -m exactform",
                        help="the exactform command (default: this Python's -m exactform)")
    parser.add_argument("--milp-venv", metavar="DIR", default=str(MILP_VENV), help="the MILP peer's venv")
    parser.add_argument("--pair-timeout", type=int, default=120, help="CPU seconds per small pair and tool")
    parts = parser.add_mutually_exclusive_group()
    parts.add_argument("--no-pairs", action="store_true", help="skip the MILP peer's small pairs")
    parts.add_argument("--pairs-only", action="store_true", help="run only the small pairs")
    args = parser.parse_args(argv)
    command = "python -m exactform.benchmarks equiv " + " ".join(map(shlex.quote, argv))
    networks = args.networks.split(",") if args.networks else NAMES
    try:
        scale, epsilons = parse_number(args.scale), [parse_number(e) for e in args.epsilons.split(",")]
    except ValueError as e:
        parser.error(str(e))
    if not set(args.properties.split(",")) <= {"1", "3"} or not set(networks) <= set(NAMES) \
            or not 0 < scale <= 1 or not all(e > 0 for e in epsilons):
        parser.error("properties are 1 and 3, networks a_b with a in 1..5 and b in 1..9, 0 < scale ≤ 1, ε > 0")
    if Path(args.results).exists() and not Path(args.results).is_dir():
        parser.error(f"--results {args.results}: not a folder")
    if not args.pairs_only and not all((Path(args.networks_dir) / f"ACASXU_run2a_{n}_batch_2000.onnx").is_file()
                                       for n in networks):
        print(f"equiv: skipped, it needs the ACAS Xu networks in {args.networks_dir} (--networks-dir DIR)")
        return 0
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    figures = published()
    rows, misses, pair_rows = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        if not args.pairs_only:
            rows, misses = run_regions(args, networks, Path(tmp), results, command, figures)
        if not args.no_pairs:
            pair_rows, missed = run_pairs(Path(tmp), shlex.split(args.exactform), Path(args.milp_venv),
                                          args.pair_timeout)
            misses += missed
    report = _report(command, rows, scale, args, pair_rows, figures)
    print("\n" + report)
    (results / "equiv_regions.md").write_text(report + "\n")
    (results / "equiv_regions.json").write_text(json.dumps(
        {"command": command, "rows": [vars(r) for r in rows], "pairs": pair_rows, "misses": misses}, indent=1) + "\n")
    for m in misses:
        print(f"miss: {m}")
    return 1 if misses else 0


def _line(row: Row, figures: dict) -> str:
    """One instance as it finishes, NeuroDiff's published figure beside."""
    done = [f"{row.network} {row.property} ε={row.epsilon}: {row.verdict}, {row.cpu_s:.2f} cpu s"]
    done += [f"{row.leaves} leaves"] if row.leaves != "" else []
    done += [f"checked: {row.checked}" + (f" ({row.check_cpu_s:.2f} s)" if row.check_cpu_s != "" else "")]
    done += [row.note] if row.note else []
    theirs = _their_instance(figures, "NeuroDiff", row)
    return ", ".join(done) + f"; NeuroDiff: {theirs}{' s' if theirs[0].isdigit() else ''}"


def _report(command: str, rows: list[Row], scale: Fraction, args, pair_rows: list[list], figures: dict) -> str:
    lines = [f"Command: `{command}`", ""]
    if rows:
        summary = []
        for (prop, eps) in dict.fromkeys((r.property, r.epsilon) for r in rows):
            mine = [r for r in rows if (r.property, r.epsilon) == (prop, eps)]
            proved = [r for r in mine if r.verdict == "proved"]
            at_limit = [r.cpu_s if r.verdict in ("proved", "counterexample") else max(r.cpu_s, args.timeout)
                        for r in mine]
            nets = [r.network for r in mine]
            summary.append([prop, eps, f"{len(proved)}/{len(mine)}",
                            sum(r.verdict == "counterexample" for r in mine), sum(r.verdict == "timeout" for r in mine),
                            _seconds(statistics.median(at_limit)),
                            _seconds(statistics.median(r.check_cpu_s for r in proved)) if proved else "—",
                            _theirs(figures, "NeuroDiff", prop, eps, nets),
                            _theirs(figures, "ReluDiff+", prop, eps, nets)])
        instances = [[r.network, r.property, r.epsilon, r.verdict, f"{r.cpu_s:.2f}", r.leaves, r.checked,
                      r.check_cpu_s and f"{r.check_cpu_s:.2f}", _their_instance(figures, "NeuroDiff", r),
                      _their_instance(figures, "ReluDiff+", r)] for r in rows]
        where = "the regions" if scale == 1 else f"the regions scaled by {args.scale} (not the benchmark)"
        lines += [f"exactform on {where}, outputs compared: {args.outputs}, limit {args.timeout} CPU s; "
                  "NeuroDiff / ReluDiff+ as published (their artifact's logs, floating point, 12 threads, 1800 s, "
                  "the full regions, output 0; their float16 copies):", "",
                  table(["network", "φ", "ε", "exactform", "cpu s", "leaves", "checked", "check cpu s",
                         "NeuroDiff s", "ReluDiff+ s"], instances), "",
                  table(["φ", "ε", "proved", "counterex.", "timeout", "median cpu s (timeouts at limit)",
                         "median check s", "NeuroDiff", "ReluDiff+"], summary), ""]
    if pair_rows:
        lines += ["`equiv --max-diff` beside the big-M MILP peer (HiGHS, float; its point re-evaluated exactly):", "",
                  table(["pair", "exactform max", "cpu s", "MILP objective (float)", "MILP point, exact",
                         "cpu s", "MILP point vs max"], pair_rows), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
