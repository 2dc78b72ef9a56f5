"""``exactform equiv``: CPU seconds of the CLI (files read, compared, certificate written).

Targets: ACAS Xu 1_1 against its exactform Transformer at most 2× ``certify``'s time;
two 2→16→16→1 ReLU nets equal up to rewrites under 5 s; ACAS Xu against itself with units permuted,
rescaled and split under 10 s; ``--max-diff`` of ACAS Xu 1_1 against its weights rounded to
float16 on boxes around 0 (side 1/32 asked, run with ``--workers 2``; smaller sides reported, side 1/64
with 1 and 2 workers; each capped at ``CAP`` seconds, ``python benchmarks/equiv_bench.py [CAP]``), with
the leaves whose maximum the pruned search skipped.

ACAS Xu 1_1 against its copy with one read-out weight moved by 2^-20 on [-1/2, 1/2]^5 (a
counterexample found first); a rank-4 Maxout net against its weights rounded to 1/3 (``--max-diff``,
no witness LP in the pruned search); ACAS Xu 1_1 against float16 on the φ1 and φ3 regions at
ε = 1/20 and 1/100 (ReluDiff / NeuroDiff's benchmark: NeuroDiff's artifact reports 1_1 φ1 at
ε = 0.05 in 2.4 s and 0.01 in 0.22 s, in floating point), each capped at ``CAP`` seconds.
"""
import contextlib
import io
import json
import multiprocessing
import os
import random
import struct
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

from exactform.benchmarks.timing import table
from exactform.cli import main
from exactform.construct.maxout_to_transformer import compile_maxout
from exactform.executor import end_with_parent
from exactform.formats import write_json
from exactform.importers import import_network
from exactform.models import MaxoutLayer, MaxoutNet
from exactform.numbers import format_rational, parse_rational
from exactform.proofs.nets import permuted, random_net, relu_net, rescaled_and_split

ACAS = Path(__file__).resolve().parent / "data" / "ACASXU_run2a_1_1_batch_2000.onnx"
CAP = 900
REGIONS = {"φ1": "0.6:0.679857769,-0.5:0.5,-0.5:0.5,0.45:0.5,-0.5:-0.45",
           "φ3": "-0.303531156:-0.298552812,-0.009549297:0.009549297,0.493380324:0.5,0.3:0.5,0.3:0.5"}


def timed(argv: list[str], expect: int | None = 0) -> tuple[float, str]:
    """CPU seconds of one in-process CLI run (the machine is shared) and what it printed (``expect``:
    its exit code, None: any)."""
    out = io.StringIO()
    start = time.process_time()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    assert expect is None or code == expect, (argv, code)
    return time.process_time() - start, out.getvalue()


def wall(argv: list[str]) -> tuple[float, str]:
    """Wall seconds of one in-process CLI run (for ``--workers``: the workers' CPU is not ours)."""
    start = time.perf_counter()
    _, printed = timed(argv)
    return time.perf_counter() - start, printed


def half(q: Fraction) -> Fraction:
    """The nearest IEEE half to q, as the exact dyadic rational it stands for."""
    return Fraction(struct.unpack("e", struct.pack("e", float(q)))[0])


def float16(net: MaxoutNet) -> MaxoutNet:
    """The net with every weight and bias rounded to the nearest IEEE half."""
    rounded = lambda v: [rounded(x) for x in v] if isinstance(v, list) else half(v)  # noqa: E731
    return MaxoutNet(net.domain, [MaxoutLayer(rounded(l.weight), rounded(l.bias)) for l in net.layers],
                     rounded(net.readout_weight), rounded(net.readout_bias))


def _max_diff(args, queue, clock, parent):
    end_with_parent(parent)
    queue.put(clock(args))


def answered(argv: list[str]) -> tuple[float, str]:
    """``timed`` whatever the answer (equal or not)."""
    return timed(argv, None)


def _moved(net: MaxoutNet, delta: Fraction) -> MaxoutNet:
    """The net with its first read-out weight moved by ``delta``."""
    weight = [list(r) for r in net.readout_weight]
    weight[0][0] += delta
    return MaxoutNet(net.domain, net.layers, weight, net.readout_bias)


def quantised(net: MaxoutNet, step: Fraction) -> MaxoutNet:
    """Every weight and bias rounded to the nearest multiple of ``step``."""
    r = lambda v: [r(x) for x in v] if isinstance(v, list) else round(v / step) * step  # noqa: E731
    return MaxoutNet(net.domain, [MaxoutLayer(r(l.weight), r(l.bias)) for l in net.layers],
                     r(net.readout_weight), r(net.readout_bias))


def capped(args: list[str], clock=timed) -> tuple[float, str] | None:
    """``clock`` (``timed`` or ``wall``) in a child process stopped after CAP seconds (None), or when
    this one is stopped (Ctrl-C; ``end_with_parent`` when killed)."""
    queue = multiprocessing.Queue()
    child = multiprocessing.Process(target=_max_diff, args=(args, queue, clock, os.getpid()))
    child.start()
    try:
        child.join(CAP)
        return None if child.is_alive() else queue.get()
    finally:
        if child.is_alive():
            child.terminate()
            child.join()


def run() -> None:
    rows, misses = [], []
    with tempfile.TemporaryDirectory() as tmp:
        path = lambda name: str(Path(tmp) / name)  # noqa: E731
        box = [(Fraction(-1), Fraction(1))]
        acas = import_network(str(ACAS), box)
        write_json(path("acas.json"), acas.to_json())
        write_json(path("acas.tf.json"), compile_maxout(acas).to_json())
        certify, _ = timed(["certify", path("acas.json"), path("acas.tf.json"), "-o", path("c.json")])
        equiv, _ = timed(["equiv", path("acas.json"), path("acas.tf.json"), "--cert", path("e.json")])
        rows.append(["ACAS Xu 1_1 vs its Transformer", f"{equiv:.2f}", f"certify {certify:.2f} s: "
                     f"{equiv / certify:.2f}× (target ≤ 2×)"])
        misses += [] if equiv <= 2 * certify else ["ACAS vs Transformer"]

        rng = random.Random(0)
        small = relu_net(rng, [2, 16, 16], outputs=1)
        write_json(path("s.json"), small.to_json())
        write_json(path("s2.json"), rescaled_and_split(permuted(small, rng), rng).to_json())
        seconds, _ = timed(["equiv", path("s.json"), path("s2.json"), "--cert", path("e2.json")])
        rows.append(["2→16→16→1 vs permuted, rescaled, split", f"{seconds:.2f}", "target < 5 s"])
        misses += [] if seconds < 5 else ["2→16→16→1 rewrites"]

        write_json(path("acas.p.json"), rescaled_and_split(permuted(acas, rng), rng).to_json())
        seconds, _ = timed(["equiv", path("acas.json"), path("acas.p.json"), "--cert", path("e3.json")])
        rows.append(["ACAS Xu 1_1 vs permuted, rescaled, split", f"{seconds:.2f}", "target < 10 s"])
        misses += [] if seconds < 10 else ["ACAS rewrites"]

        write_json(path("acas16.json"), float16(acas).to_json())
        diff = lambda side, workers: ["equiv", path("acas.json"), path("acas16.json"), "--max-diff", "--json",  # noqa: E731
                                      "--domain", f"{format_rational(-parse_rational(side) / 2)}:"
                                      f"{format_rational(parse_rational(side) / 2)}", "--workers", str(workers)]
        def described(doc: dict) -> str:
            value = parse_rational(doc["max_diff"])
            return (f"max = {float(value):.3e} (exact: {len(doc['max_diff'])} characters), {doc['leaves']} leaves, "
                    f"{doc['splits']} splits, {doc['pruned']} leaves skipped")
        for side in ("1/1024", "1/256", "1/128"):
            result = capped(diff(side, 1))
            if result is None:
                rows.append([f"--max-diff ACAS vs float16, box side {side}", f"> {CAP}", "not finished"])
                continue
            rows.append([f"--max-diff ACAS vs float16, box side {side}", f"{result[0]:.2f}", described(json.loads(result[1]))])
        walls = [capped(diff("1/64", n), wall) for n in (1, 2)]
        if None not in walls:
            docs = [json.loads(printed) for _, printed in walls]
            assert docs[0] == docs[1] | {"seconds": docs[0]["seconds"]}      # the same answer and counters
            rows.append(["--max-diff ACAS vs float16, side 1/64, wall s: --workers 1, 2",
                         f"{walls[0][0]:.2f}, {walls[1][0]:.2f}",
                         f"{described(docs[0])}; speed-up {walls[0][0] / walls[1][0]:.2f}× on 2 cores"])
        result = capped(diff("1/32", 2), wall)
        rows.append(["--max-diff ACAS vs float16, side 1/32, wall s, --workers 2",
                     f"> {CAP}" if result is None else f"{result[0]:.2f}",
                     "not finished" if result is None else described(json.loads(result[1]))])
        write_json(path("moved.json"), _moved(acas, Fraction(1, 2 ** 20)).to_json())
        seconds, printed = timed(["equiv", path("acas.json"), path("moved.json"), "--domain", "-1/2:1/2", "--json",
                                  "--workers", "1"], expect=1)
        rows.append(["ACAS Xu 1_1 vs one read-out weight + 2^-20, [-1/2, 1/2]^5", f"{seconds:.2f}",
                     f"different, {json.loads(printed)['splits']} splits"])
        rank4 = random_net(random.Random(0), [3, 6, 6], max_rank=4, outputs=1)
        write_json(path("r4.json"), rank4.to_json())
        write_json(path("r4q.json"), quantised(rank4, Fraction(1, 3)).to_json())
        seconds, printed = timed(["equiv", path("r4.json"), path("r4q.json"), "--max-diff", "--json", "--workers", "1"])
        doc = json.loads(printed)
        rows.append(["3→6→6→1 rank-4 Maxout vs rounded to 1/3, --max-diff", f"{seconds:.2f}",
                     f"{doc['leaves']} leaves (before: 6374 leaves, 69.6 s cpu, 5.5 ms a cell)"])
        for region, eps in [(r, e) for r in REGIONS for e in ("1/20", "1/100")]:
            result = capped(["equiv", path("acas.json"), path("acas16.json"), "--domain", REGIONS[region],
                             "--tolerance", eps, "--json", "--workers", "1"], answered)
            rows.append([f"ACAS Xu 1_1 vs float16, {region} region, ε = {eps}",
                         f"> {CAP}" if result is None else f"{result[0]:.2f}",
                         "not finished" if result is None else
                         f"equal within ε: {json.loads(result[1])['equal']}, {json.loads(result[1])['pruned']} pruned"])
    print(table(["comparison", "cpu s", "note"], rows))
    if misses:
        print(f"\nmissed: {', '.join(misses)}")
        sys.exit(1)


if __name__ == "__main__":
    CAP = int(sys.argv[1]) if len(sys.argv) > 1 else CAP
    run()
