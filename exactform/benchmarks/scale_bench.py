"""Scale-out: serial vs 2 local processes vs a 2-worker Dask LocalCluster, on
``certify-all`` of ACAS Xu networks and on the region count of a region-rich net, each run as the
CLI runs it (``--workers 1``, ``--workers 2``, ``--scheduler ADDRESS``), outputs compared.

Estimates for 8 and 32 workers come from the measured per-task times (Amdahl with the measured
serial fraction): ``T(n) = serial part + makespan of the measured tasks on n workers`` (longest
task first), where the serial part is the serial run's wall time minus the sum of its task times.
Usage: ``python benchmarks/scale_bench.py [--networks K] [--region-net m,T,q,D]`` (K ≤ 45; default 8).
"""
from __future__ import annotations

import argparse
import contextlib
import heapq
import io
import json
import tempfile
import time
from pathlib import Path

from exactform.benchmarks.timing import table
from exactform.cli import main
from exactform.construct.region_rich import region_rich_net
from exactform.formats import write_json
from exactform.geometry.regions import (
    merge_boxes,
    merged_cells_in_box,
    parts_for,
    split_box,
)

ACAS = Path(__file__).resolve().parents[2] / "data" / "acasxu"      # a source checkout's 45 networks


def run_cli(argv: list[str]) -> tuple[float, str]:
    out = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    assert code == 0, (argv, out.getvalue()[-500:])
    return time.perf_counter() - start, out.getvalue()


def makespan(tasks: list[float], workers: int) -> float:
    """Longest-task-first schedule of ``tasks`` on ``workers``."""
    loads = [0.0] * workers
    for t in sorted(tasks, reverse=True):
        heapq.heapreplace(loads, loads[0] + t)
    return max(loads)


def certify_all(address: str, count: int, tmp: Path) -> list:
    folder = tmp / "zoo"
    folder.mkdir()
    for onnx in sorted(ACAS.glob("*.onnx"))[:count]:
        (folder / onnx.name).symlink_to(onnx)
    nnet = ACAS / "ACASXU_run2a_1_1_batch_2000.nnet"       # its header gives the operating box; the
    (folder / nnet.name).symlink_to(nnet)                     # .onnx of the same stem is the network
    walls, digests = {}, {}
    for mode, flags in (("serial", ["--workers", "1"]), ("2 processes", ["--workers", "2"]),
                        ("LocalCluster 2", ["--scheduler", address])):
        out = tmp / mode.replace(" ", "_")
        walls[mode], _ = run_cli(["certify-all", str(folder), "--only", ".onnx", "--out", str(out), "--json"] + flags)
        summary = json.loads((out / "summary.json").read_text())
        digests[mode] = [n["sha256"] for n in summary["networks"]]
        if mode == "serial":
            tasks = [sum(n["seconds"].values()) for n in summary["networks"]]
            per_stage = {k: sum(n["seconds"][k] for n in summary["networks"]) for k in summary["networks"][0]["seconds"]}
    assert digests["serial"] == digests["2 processes"] == digests["LocalCluster 2"], "certificates differ"
    print(f"certify-all: {len(tasks)} ACAS Xu networks; per-task s: min {min(tasks):.2f}, median {sorted(tasks)[len(tasks) // 2]:.2f}, "
          f"max {max(tasks):.2f}; by stage: " + ", ".join(f"{k} {v:.1f}" for k, v in per_stage.items()))
    return row(f"certify-all ({len(tasks)} ACAS Xu)", walls, tasks, walls["serial"] - sum(tasks))


def regions(address: str, params: tuple[int, ...], tmp: Path) -> list:
    net = region_rich_net(*params)
    path = tmp / "region_rich.json"
    write_json(path, net.to_json())
    walls, results = {}, {}
    for mode, flags in (("serial", ["--workers", "1"]), ("2 processes", ["--workers", "2"]),
                        ("LocalCluster 2", ["--scheduler", address])):
        walls[mode], text = run_cli(["regions", str(path), "--json"] + flags)
        results[mode] = text
    assert len(set(results.values())) == 1, results
    # per-task times at the split 32 workers would use (enumeration + merge inside the sub-box),
    # and the parent's join across sub-boxes (the serial part) there
    parts = parts_for(32, net.input_dim)
    tasks, found = [], []
    for box in split_box(net.domain, parts):
        start = time.perf_counter()
        found.append(merged_cells_in_box(net, box))
        tasks.append(time.perf_counter() - start)
    start = time.perf_counter()
    merge_boxes(found)
    merge = time.perf_counter() - start
    print(f"regions: region_rich_net{params}: {results['serial'].strip()}; {parts}^2 sub-boxes: per-task s "
          f"min {min(tasks):.2f}, max {max(tasks):.2f}, sum {sum(tasks):.1f}; merge {merge:.1f} s")
    return row(f"regions {params}", walls, tasks, max(0.0, merge))


def row(name: str, walls: dict, tasks: list[float], serial_part: float) -> list:
    """Measured speed-ups, and estimated ones: serial wall / (serial part + makespan on n workers)."""
    s = walls["serial"]
    serial_part = max(0.0, serial_part)
    return [name, f"{s:.1f}", f"{walls['2 processes']:.1f} ({s / walls['2 processes']:.2f}x)",
            f"{walls['LocalCluster 2']:.1f} ({s / walls['LocalCluster 2']:.2f}x)",
            f"{serial_part / (serial_part + sum(tasks)):.3f}",
            f"{s / (serial_part + makespan(tasks, 8)):.1f}x", f"{s / (serial_part + makespan(tasks, 32)):.1f}x"]


def run() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--networks", type=int, default=8)
    parser.add_argument("--region-net", default="3,2,2,12", help="m,T,q,D of region_rich_net")
    args = parser.parse_args()
    if len(list(ACAS.glob("*.onnx"))) < args.networks or not (ACAS / "ACASXU_run2a_1_1_batch_2000.nnet").is_file():
        print(f"scale: skipped, it needs {args.networks} ACAS Xu networks in data/acasxu/ of a source checkout")
        return
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster), tempfile.TemporaryDirectory() as tmp:
        rows = [certify_all(cluster.scheduler_address, args.networks, Path(tmp)),
                regions(cluster.scheduler_address, tuple(int(x) for x in args.region_net.split(",")), Path(tmp))]
    print(table(["work", "serial s", "2 processes s", "LocalCluster 2 s", "serial fraction",
                 "est. 8 workers", "est. 32 workers"], rows))
    print("estimates: Amdahl with the measured serial fraction, tasks scheduled longest first (so the "
          "longest task bounds them); the 2-worker runs share this machine's cores with the parent")


if __name__ == "__main__":
    run()
