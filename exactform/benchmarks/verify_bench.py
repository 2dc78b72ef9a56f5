"""``exactform verify``, Marabou and NeuralSAT on the 186 ACAS Xu instances of VNN-COMP, in one run.

``python -m exactform.benchmarks verify [--props 1,3] [--instances N] [--timeout S] [--quick]
[--tools exactform,marabou,neuralsat] [--workers N] [--marabou BIN | --install-marabou] [--marabou-prove]
[--install-neuralsat] [--record CSV] [--recorded CSV] [-o TABLE.md]``

Each instance (network, property, VNN-COMP timeout) is run by each tool in its own process, one
after the other.  The timeout is counted in CPU seconds of that process (``RLIMIT_CPU``): the
benchmark machine is shared, and on an idle machine CPU and wall seconds agree, so the limit is
VNN-COMP's; ``--timeout S`` lowers every instance's limit to ``S`` (say so when quoting figures).
Times in the table are the CPU seconds of the tool's process and the children it waited for (wall
seconds are recorded as well); each tool runs with one worker unless ``--workers N`` says otherwise
(then the CPU seconds of worker processes that were stopped are not counted: quote wall seconds;
NeuralSAT's torch gets ``--workers`` threads).
``--record CSV`` keeps every instance's results as they come (the command in the first line);
``--recorded CSV`` (repeatable) takes a tool's results from such a file, and the tools of
``--tools`` run only the instances no file holds (``--tools none``: nothing is run), so runs of
the tools made one after the other give one table.

Every answer is checked before it counts: an exactform ``unsat`` needs its certificate accepted by
``exactform check``, an exactform ``sat`` needs its counterexample confirmed by exact evaluation of
the network (``MaxoutNet``, rationals) and of the property; a failure is a miss (exit 1).  Marabou's
answers are floating point: its ``sat`` counts as checked when the input it prints (6 decimals),
evaluated exactly, violates the property (``no`` is Marabou's rounding, not a miss here); its
``--prove-unsat`` proofs (``--marabou-prove``) are checked by Marabou itself in floating point,
which the table reports as ``float self-check`` when its statistics show a proof tree with no leaf
delegated (``no proof printed`` otherwise, e.g. an ``unsat`` found while preprocessing).
NeuralSAT's answers are floating point too: its ``sat`` counts as checked when the input of the
counterexample it writes (float32 decimals), evaluated exactly, violates the property; its ``unsat``
is unchecked (``-``).
Where two tools give opposite definite answers, the instance is printed and decided exactly:
by exactform's counterexample (re-evaluated exactly) or by exactform's accepted certificate together
with the peer's counterexample evaluated exactly (between two peers: by the ``sat`` one's point,
evaluated exactly); a disagreement that is exactform's fault is a miss.

Marabou (``pip install maraboupy``) and NeuralSAT (``pip install neuralsat``, torch's CPU build)
are peers, never dependencies of exactform: each lives in its own virtual environment
(``--install-marabou`` and ``--install-neuralsat`` create them at ``MARABOU_VENV`` and
``NEURALSAT_VENV``); without one its column reads ``marabou: not installed`` or ``neuralsat: not
installed``.  ``--quick`` runs two tiny hand-made instances (one ``sat``, one ``unsat``) instead of
ACAS Xu (NeuralSAT reads ONNX only: ``error`` there).
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import re
import resource
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import NamedTuple

from exactform.benchmarks.timing import table
from exactform.executor import ends_with_parent
from exactform.numbers import parse_number

DATA = Path(__file__).resolve().parent / "data" / "acasxu_vnnlib"
NETWORKS = Path(__file__).resolve().parents[2] / "data" / "acasxu"
MARABOU_VENV = Path(os.environ.get("EXACTFORM_MARABOU_VENV", Path.home() / ".cache" / "exactform" / "marabou"))
NEURALSAT_VENV = Path(os.environ.get("EXACTFORM_NEURALSAT_VENV", Path.home() / ".cache" / "exactform" / "neuralsat"))
NEURALSAT = "neuralsat==0.2.17"
NEURALSAT_TORCH = "torch==2.13.0"       # a CPU build must be there first: pip's default torch is CUDA's
CHECK_WORK = "1e11"     # `check --max-work`, knowingly: a certificate of many leaves and back-substitutions needs more
WALL_FACTOR, WALL_GRACE = 4, 30
"""A process is also stopped after ``WALL_FACTOR`` × its CPU limit + ``WALL_GRACE`` wall seconds."""
DECIDED = ("sat", "unsat")
TOOLS = ("exactform", "marabou", "neuralsat")
NAMES = {"exactform": "exactform", "marabou": "Marabou", "neuralsat": "NeuralSAT"}


class Instance(NamedTuple):
    net: Path
    prop: Path
    timeout: int

    @property
    def name(self) -> str:
        m = re.search(r"_(\d+_\d+)_batch", self.net.name)
        return f"{m.group(1) if m else self.net.stem}/{self.prop.stem}"


@dataclass
class Result:
    verdict: str            # sat, unsat, timeout, unknown, error, not run
    cpu: float = 0.0
    wall: float = 0.0
    checked: str = "-"      # yes / no / float self-check / -
    note: str = ""
    assignment: dict | None = None      # X_i / Y_j -> Fraction of a sat answer


# --- instances ------------------------------------------------------------------------------------

def check_bound(doc: dict) -> str:
    """The ``check --max-work`` for a certificate whose writer printed ``doc``: its ``check_work`` (the
    checker's own figure), never below ``CHECK_WORK``."""
    return str(max(int(float(CHECK_WORK)), doc.get("check_work") or 0))


def acasxu(props: set[int] | None, count: int | None) -> list[Instance]:
    """The VNN-COMP instances (``instances.csv``), those of ``props``, ``count`` of them evenly spread."""
    rows = []
    with open(DATA / "instances.csv", newline="") as f:
        for net, prop, timeout in csv.reader(f):
            number = int(re.fullmatch(r"vnnlib/prop_(\d+)\.vnnlib", prop).group(1))
            if props is None or number in props:
                rows.append(Instance(NETWORKS / Path(net).name, DATA / Path(prop).name, int(float(timeout))))
    if count is not None and count < len(rows):
        rows = [rows[k * len(rows) // count] for k in range(count)]
    return rows


TINY_NNET = """\
// tiny 2-3-2 ReLU net: y0 = relu(x0) + relu(-x0) = |x0|, y1 = relu(x1 - x0) - 0.5
2,2,2,3,
2,3,2,
0,
-1000,-1000,
1000,1000,
0,0,0,
1,1,1,
1,0,
-1,0,
-1,1,
0,
0,
0,
1,1,0,
0,0,1,
0,
-0.5,
"""
TINY_HEADER = "(declare-const X_0 Real)\n(declare-const X_1 Real)\n(declare-const Y_0 Real)\n(declare-const Y_1 Real)\n"
TINY_PROPERTIES = {
    # |x0| >= 0 everywhere: "Y_0 <= -1/8" is impossible on a union of two boxes
    "unsat_abs": TINY_HEADER + "(assert (or (and (>= X_0 -1) (<= X_0 -0.25) (>= X_1 -1) (<= X_1 1))\n"
                               "            (and (>= X_0 0.25) (<= X_0 1) (>= X_1 -1) (<= X_1 1))))\n"
                               "(assert (<= Y_0 -0.125))\n",
    # x = (-1/2, 1/2) gives y = (1/2, 1/2): the first disjunct holds
    "sat_abs": TINY_HEADER + "(assert (>= X_0 -1))\n(assert (<= X_0 1))\n(assert (>= X_1 -1))\n(assert (<= X_1 1))\n"
                             "(assert (or (and (>= Y_0 0.5) (>= Y_1 0.25)) (and (<= Y_0 -1))))\n",
}


def tiny(folder: Path) -> list[Instance]:
    """Two instances on a 2-3-2 ReLU net written as ``.nnet`` (identity normalisation), truth known."""
    net = folder / "tiny.nnet"
    net.write_text(TINY_NNET)
    out = []
    for name, text in TINY_PROPERTIES.items():
        (folder / f"{name}.vnnlib").write_text(text)
        out.append(Instance(net, folder / f"{name}.vnnlib", 20))
    return out


# --- running one process under a CPU limit -------------------------------------------------------

def limited(argv: list[str], seconds: int, log: Path, cwd: Path | None = None,
            env: dict[str, str] | None = None) -> tuple[int | None, float, float]:
    """``(exit status, CPU s, wall s)`` of ``argv`` run with ``RLIMIT_CPU`` in its own process group
    (the group killed when a limit or signal stops it); the status is ``None`` when the process was stopped at
    a limit (``SIGXCPU``, or killed at the wall limit), negative when another signal ended it."""
    parent = os.getpid()

    def limit():
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 5))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))       # a stopped child leaves no core file
        ends_with_parent(parent)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(log, "w") as out:
        child = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, preexec_fn=limit,
                                 start_new_session=True, cwd=cwd, env=env)
        try:
            code = child.wait(WALL_FACTOR * seconds + WALL_GRACE)
        except subprocess.TimeoutExpired:
            code = None
        if code is None or code < 0:        # stopped: its workers too
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, 9)
            child.wait()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return (None if code in (None, -signal.SIGXCPU, -signal.SIGKILL) else code), cpu, wall


# --- exactform -----------------------------------------------------------------------------------

def run_exactform(inst: Instance, tmp: Path, exactform: list[str], workers: int) -> Result:
    cert, ce, log = tmp / "cert.json", tmp / "ce.txt", tmp / "exactform.log"
    for p in (cert, ce):
        p.unlink(missing_ok=True)
    code, cpu, wall = limited(exactform + ["verify", str(inst.net), str(inst.prop), "--cert", str(cert),
                                           "--counterexample", str(ce), "--timeout", str(WALL_FACTOR * inst.timeout),
                                           "--workers", str(workers), "--json"], inst.timeout, log)
    printed = log.read_text(errors="replace")
    doc = last_json(printed)
    if code is None or (code == 3 and doc is None and "exactform: stopped" in printed):
        return Result("timeout", cpu, wall, note="stopped at the limit")
    if doc is None or "verdict" not in doc:
        return Result("error", cpu, wall, note=tail(printed))
    verdict = doc["verdict"]
    expected = {"unsat": 0, "sat": 1, "timeout": 3, "unknown": 3}.get(verdict)
    if expected != code:
        return Result("error", cpu, wall, note=f"verdict {verdict!r} with exit status {code}")
    if verdict == "unsat":
        try:
            checked = subprocess.run(exactform + ["check", str(cert), "--max-work", check_bound(doc)], capture_output=True,
                                     text=True, timeout=WALL_FACTOR * inst.timeout + WALL_GRACE)
        except subprocess.TimeoutExpired:
            return Result(verdict, cpu, wall, "no", "exactform check did not finish")
        ok = checked.returncode == 0
        return Result(verdict, cpu, wall, "yes" if ok else "no",
                      "" if ok else "certificate rejected: " + tail(checked.stdout + checked.stderr))
    if verdict == "sat":
        try:
            assignment = read_assignment(ce.read_text())
            failure = refuted(inst, assignment, exact_outputs=True)
        except (OSError, ValueError) as e:
            assignment, failure = None, f"unreadable counterexample: {e}"
        return Result(verdict, cpu, wall, "no" if failure else "yes", failure or "", assignment)
    return Result(verdict, cpu, wall)


def last_json(text: str) -> dict | None:
    """The last line of ``text`` that is JSON, when it is an object (what ``--json`` printed)."""
    for line in reversed(text.strip().splitlines()):
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        return doc if isinstance(doc, dict) else None
    return None


def tail(text: str) -> str:
    """The last line of ``text``, cut to 200 characters (a process's error, for a table's note)."""
    lines = text.strip().splitlines()
    return lines[-1][:200] if lines else "(nothing printed)"


# --- counterexamples, decided exactly ------------------------------------------------------------

_PAIR = re.compile(r"\(\s*([XY]_\d+)\s+([^\s()]+)\s*\)")


def read_assignment(text: str) -> dict[str, Fraction]:
    """VNN-COMP's counterexample text ``((X_0 v) ... (Y_0 v) ...)`` → exact values (decimals or p/q)."""
    values = {name: parse_number(value) for name, value in _PAIR.findall(text)}
    if not any(k.startswith("X_") for k in values):
        raise ValueError("no (X_i value) pairs")
    return values


def refuted(inst: Instance, assignment: dict[str, Fraction], exact_outputs: bool) -> str | None:
    """``None`` when the input of ``assignment`` violates the property exactly: the network evaluated
    in rationals at X lands where some disjunct of the property holds (and, with ``exact_outputs``,
    equals the Y the assignment states); otherwise the reason it does not."""
    from exactform.importers import import_network
    from exactform.importers.vnnlib import read_property
    prop = read_property(str(inst.prop))
    try:
        x = [assignment[f"X_{i}"] for i in range(prop.inputs)]
    except KeyError as e:
        return f"the counterexample lacks {e.args[0]}"
    y = import_network(str(inst.net), [(v, v) for v in x], broadcast=False)(x)
    if exact_outputs:
        stated = [assignment.get(f"Y_{j}") for j in range(len(y))]
        if stated != y:
            return "the stated Y differs from the exact evaluation at X"
    for d in prop.disjuncts:
        inside = all(lo <= v <= hi for v, (lo, hi) in zip(x, d.box))
        if inside and all(sum(a * x[i] for i, a in atom.x.items()) + sum(b * y[j] for j, b in atom.y.items())
                          + atom.c >= 0 for atom in d.atoms):
            return None
    return "X with the exact Y satisfies no disjunct of the property"


# --- Marabou -------------------------------------------------------------------------------------

def marabou_binary(path: str | None, install: bool) -> Path | None:
    """The ``Marabou`` executable of maraboupy's wheel: ``path``, else the one in ``MARABOU_VENV``
    (created with ``pip install maraboupy`` when ``install``), else ``None``."""
    if path:
        return Path(path)
    binary = MARABOU_VENV / "bin" / "Marabou"
    if not binary.exists() and install:
        subprocess.run([sys.executable, "-m", "venv", str(MARABOU_VENV)], check=True)
        subprocess.run([str(MARABOU_VENV / "bin" / "pip"), "install", "maraboupy"], check=True)
    return binary if binary.exists() else None


_MARABOU_VERDICT = {"sat": "sat", "unsat": "unsat", "TIMEOUT": "timeout", "UNKNOWN": "unknown"}
_MARABOU_VALUE = re.compile(r"^\s*([xy])(\d+) = (\S+)\s*$", re.M)


def run_marabou(inst: Instance, tmp: Path, binary: Path, prove: bool, workers: int) -> Result:
    summary, log = tmp / "marabou.summary", tmp / "marabou.log"
    summary.unlink(missing_ok=True)
    argv = [str(binary), str(inst.net), str(inst.prop), "--timeout", str(WALL_FACTOR * inst.timeout),
            "--num-workers", str(workers), "--summary-file", str(summary),
            *(["--prove-unsat", "--verbosity", "1"] if prove else ["--verbosity", "0"])]
    code, cpu, wall = limited(argv, inst.timeout, log, cwd=tmp)      # it may write assignment.txt there
    if code is None:
        return Result("timeout", cpu, wall, note="stopped at the limit")
    words = summary.read_text().split() if summary.exists() else []
    verdict = _MARABOU_VERDICT.get(words[0] if words else "", "error")
    printed = log.read_text(errors="replace")
    result = Result(verdict, cpu, wall, note="" if verdict != "error" else tail(printed))
    if verdict == "unsat" and prove:          # the proof-tree statistics of --prove-unsat (verbosity 1)
        leaves = re.search(r"certified leaves: (\d+)\s+Number of leaves to delegate: (\d+)", printed)
        result.checked = (f"float self-check ({leaves[1]} leaves)" if leaves and leaves[2] == "0" and leaves[1] != "0"
                          else "no proof printed")
    if verdict == "sat":          # the assignment Marabou prints (6 decimals), its input evaluated exactly
        result.assignment = {f"{'X' if v == 'x' else 'Y'}_{i}": parse_number(s)
                             for v, i, s in _MARABOU_VALUE.findall(printed)}
        failure = refuted(inst, result.assignment, exact_outputs=False)
        result.checked, result.note = ("no", failure) if failure else ("yes", "")
    return result


# --- NeuralSAT -----------------------------------------------------------------------------------

TORCHVISION_STANDIN = '''"""Stands for torchvision, whose PyPI wheel needs torch's CUDA build: NeuralSAT imports it
only for ONNX's NonMaxSuppression (not in ACAS Xu); any use raises."""


class _Absent:
    def __getattr__(self, name):
        raise ImportError("torchvision is not installed here")


ops = _Absent()
'''


def neuralsat_main(install: bool) -> Path | None:
    """NeuralSAT's ``main.py`` (package ``src``) in ``NEURALSAT_VENV``, created when ``install``: torch's
    CPU build, then ``neuralsat`` with torch held, torchvision replaced by ``TORCHVISION_STANDIN``."""
    def found() -> Path | None:
        return next(iter(sorted(NEURALSAT_VENV.glob("lib/python*/site-packages/src/main.py"))), None)
    if found() is None and install:
        pip = [str(NEURALSAT_VENV / "bin" / "pip")]
        subprocess.run([sys.executable, "-m", "venv", str(NEURALSAT_VENV)], check=True)
        subprocess.run(pip + ["install", NEURALSAT_TORCH], check=True)
        (NEURALSAT_VENV / "constraints.txt").write_text(NEURALSAT_TORCH + "\n")
        subprocess.run(pip + ["install", "-c", str(NEURALSAT_VENV / "constraints.txt"), NEURALSAT], check=True)
        subprocess.run(pip + ["uninstall", "-y", "torchvision"], check=True)
        standin = found().parents[1] / "torchvision"
        standin.mkdir()
        (standin / "__init__.py").write_text(TORCHVISION_STANDIN)
    return found()


def run_neuralsat(inst: Instance, tmp: Path, main_py: Path, workers: int) -> Result:
    """NeuralSAT on one instance, run from its ``main.py``'s folder (its modules import each other from there)."""
    answer, log = tmp / "neuralsat.result", tmp / "neuralsat.log"
    answer.unlink(missing_ok=True)
    argv = [str(NEURALSAT_VENV / "bin" / "python"), "main.py", "--net", str(inst.net), "--spec", str(inst.prop),
            "--device", "cpu", "--timeout", str(WALL_FACTOR * inst.timeout), "--result_file", str(answer),
            "--export_cex", "--verbosity", "1"]
    env = {**os.environ, "PYTHONPATH": ".", "OMP_NUM_THREADS": str(workers)}
    code, cpu, wall = limited(argv, inst.timeout, log, cwd=main_py.parent, env=env)
    if code is None:
        return Result("timeout", cpu, wall, note="stopped at the limit")
    return neuralsat_result(answer.read_text() if answer.exists() else "", inst, cpu, wall,
                            log.read_text(errors="replace"))


def neuralsat_result(text: str, inst: Instance, cpu: float, wall: float, printed: str) -> Result:
    """The ``Result`` of NeuralSAT's result file ``text``: its status, then a ``sat`` answer's counterexample
    in VNN-COMP's format, whose input is evaluated exactly."""
    words = text.split(maxsplit=1)
    if not words:
        return Result("error", cpu, wall, note=tail(printed))
    if words[0] not in ("sat", "unsat", "timeout"):
        return Result("unknown", cpu, wall, note=words[0])
    result = Result(words[0], cpu, wall)
    if result.verdict == "sat":
        try:
            result.assignment = read_assignment(words[1] if len(words) > 1 else "")
            failure = refuted(inst, result.assignment, exact_outputs=False)
        except ValueError as e:
            failure = f"unreadable counterexample: {e}"
        result.checked, result.note = ("no", failure) if failure else ("yes", "")
    return result


def recorded_results(path: str) -> dict[str, dict[str, tuple[int, Result]]]:
    """``{tool: {instance: (limit, result)}}`` for the tools whose columns a ``--record`` CSV of an
    earlier run filled (its command is the file's first line; a file without a tool's columns has none)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    return {tool: {r["instance"]: (int(r["limit_s"]), Result(r[f"{tool}_verdict"], float(r[f"{tool}_cpu_s"]),
                                                             float(r[f"{tool}_wall_s"]), r[f"{tool}_checked"]))
                   for r in rows if r.get(f"{tool}_verdict")}
            for tool in TOOLS if any(r.get(f"{tool}_verdict") for r in rows)}


# --- the run -------------------------------------------------------------------------------------

def decide(inst: Instance, ours: Result, theirs: Result, peer: str = "Marabou") -> str | None:
    """Opposite definite answers, decided exactly: ``None`` when exactform's answer stands."""
    if ours.verdict == "sat":
        return None if ours.checked == "yes" else "exactform's counterexample is not confirmed"
    if ours.checked != "yes":
        return "exactform's certificate is not accepted"
    if theirs.assignment and refuted(inst, theirs.assignment, exact_outputs=False) is None:
        return f"{peer}'s counterexample violates the property exactly, against an accepted certificate"
    return None


def disagreements(inst: Instance, answers: dict[str, Result]) -> tuple[list[str], list[str]]:
    """``(printed lines, misses)`` for the pairs of tools whose answers on ``inst`` are opposite: against
    exactform decided by ``decide``, between two peers by whether the ``sat`` one's point violates exactly."""
    lines, misses = [], []
    for k, a in enumerate(TOOLS):
        for b in TOOLS[k + 1:]:
            if {answers[a].verdict, answers[b].verdict} != set(DECIDED):
                continue
            head = f"DISAGREEMENT {inst.name}: {NAMES[a]} {answers[a].verdict}, {NAMES[b]} {answers[b].verdict}: "
            if a == "exactform":
                fault = decide(inst, answers[a], answers[b], NAMES[b])
                why = ("its counterexample re-evaluated exactly" if answers[a].verdict == "sat" else
                       f"its certificate accepted; {NAMES[b]}'s counterexample is not one exactly")
                lines.append(head + (f"exactform at fault: {fault}" if fault else f"decided for exactform ({why})"))
                misses += [f"{inst.name}: {fault}"] if fault else []
            else:
                sat = a if answers[a].verdict == "sat" else b
                lines.append(head + (f"decided for {NAMES[sat]} (its point violates the property exactly)"
                                     if answers[sat].checked == "yes" else
                                     f"undecided ({NAMES[sat]}'s point is not a violation exactly)"))
    return lines, misses


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m exactform.benchmarks verify", description=__doc__.split("\n")[0])
    parser.add_argument("--props", help="property numbers, e.g. 1,3 (default: all ten)")
    parser.add_argument("--instances", type=int, metavar="N", help="N instances spread evenly over the selection")
    parser.add_argument("--timeout", type=int, metavar="S",
                        help="CPU seconds per instance, at most (default: VNN-COMP's)")
    parser.add_argument("--quick", action="store_true", help="two tiny instances instead of ACAS Xu (smoke test)")
    parser.add_argument("--tools", default=",".join(TOOLS), help="which tools to run (default: all three)")
    parser.add_argument("--exactform", default=f"{shlex.quote(sys.executable)} -m exactform",
                        help="the exactform command (default: this Python's -m exactform)")
    parser.add_argument("--workers", type=int, default=1, help="processes (exactform) and threads (Marabou, "
                        "NeuralSAT's torch) per instance (default 1: CPU seconds then count all the work)")
    parser.add_argument("--marabou", metavar="BIN", help="maraboupy's Marabou executable")
    parser.add_argument("--install-marabou", action="store_true", help=f"pip install maraboupy into {MARABOU_VENV}")
    parser.add_argument("--marabou-prove", action="store_true", help="run Marabou with --prove-unsat")
    parser.add_argument("--install-neuralsat", action="store_true",
                        help=f"pip install torch's CPU build and {NEURALSAT} into {NEURALSAT_VENV}")
    parser.add_argument("--recorded", metavar="CSV", action="append", default=[],
                        help="take the results a --record CSV of an earlier run holds from it (the tools "
                        "of --tools run the rest)")
    parser.add_argument("--record", metavar="CSV", help="write every instance's results here, row by row")
    parser.add_argument("-o", "--output", metavar="TABLE.md", help="write the table here as well")
    args = parser.parse_args(argv)
    tools = set(args.tools.split(","))
    command = "python -m exactform.benchmarks verify " + " ".join(map(shlex.quote, argv))

    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        instances = tiny(tmp) if args.quick else acasxu(
            {int(p) for p in args.props.split(",")} if args.props else None, args.instances)
        if not all(i.net.is_file() for i in instances):
            print("verify: skipped, it needs the 45 ACAS Xu networks in data/acasxu/ of a source checkout "
                  "(--quick runs two tiny instances)")
            return 0
        if args.timeout:
            instances = [i._replace(timeout=min(i.timeout, args.timeout)) for i in instances]
        recorded: dict[str, dict] = {}
        for path in args.recorded:
            for tool, answers in recorded_results(path).items():
                recorded.setdefault(tool, {}).update(answers)
        live = {}
        if "exactform" in tools:
            exactform = shlex.split(args.exactform)
            live["exactform"] = lambda inst: run_exactform(inst, tmp, exactform, args.workers)
        if "marabou" in tools:
            binary = marabou_binary(args.marabou, args.install_marabou)
            if binary is None:
                print(f"marabou: not installed (--install-marabou puts maraboupy into {MARABOU_VENV}, "
                      "or --marabou BIN)")
            else:
                live["marabou"] = lambda inst: run_marabou(inst, tmp, binary, args.marabou_prove, args.workers)
        if "neuralsat" in tools:
            main_py = neuralsat_main(args.install_neuralsat)
            if main_py is None:
                print(f"neuralsat: not installed (--install-neuralsat puts {NEURALSAT} into {NEURALSAT_VENV})")
            else:
                live["neuralsat"] = lambda inst: run_neuralsat(inst, tmp, main_py, args.workers)
        record = _Record(args.record, command) if args.record else None
        rows, results, misses = [], [], []

        def answer(tool: str, inst: Instance) -> Result:
            if inst.name not in recorded.get(tool, {}):
                return live[tool](inst) if tool in live else Result("not run")
            limit, result = recorded[tool][inst.name]
            if limit != inst.timeout:
                misses.append(f"{inst.name}: {tool} was recorded with a {limit} s limit, "
                              f"this run's is {inst.timeout} s")
            return result

        for k, inst in enumerate(instances, 1):
            answers = {tool: answer(tool, inst) for tool in TOOLS}
            ours = answers["exactform"]
            results.append((inst, answers))
            if ours.verdict in DECIDED and ours.checked != "yes":
                misses.append(f"{inst.name}: exactform {ours.verdict} not confirmed ({ours.note})")
            if ours.verdict == "error":
                misses.append(f"{inst.name}: exactform error ({ours.note})")
            printed, faults = disagreements(inst, answers)
            for line in printed:
                print(line)
            misses += faults
            line = [inst.name, inst.timeout] + [cell for tool in TOOLS for cell in _cells(answers[tool])]
            rows.append(line)
            print(f"[{k}/{len(instances)}] " + "  ".join(map(str, line)), flush=True)
            if record:
                record.write(inst, answers)

    report = _report(results, rows, command, sorted(recorded))
    print("\n" + report)
    if args.output:
        Path(args.output).write_text(report + "\n")
    for m in misses:
        print(f"miss: {m}")
    return 1 if misses else 0


def _cells(r: Result) -> list[str]:
    return [r.verdict, "", ""] if r.verdict == "not run" else [r.verdict, f"{r.cpu:.2f}", r.checked]


def _at_limit(inst: Instance, r: Result) -> float:
    """CPU seconds of an answer, an unsolved instance counted at its limit."""
    return r.cpu if r.verdict in DECIDED else max(r.cpu, inst.timeout)


def _report(results, rows, command, recorded: list[str]) -> str:
    lines = [f"Command: `{command}`", "",
             table(["instance", "limit s"] + [h for t in TOOLS for h in (NAMES[t], "cpu s", "checked")], rows), ""]
    summary = []
    for tool in TOOLS:
        ran = [(i, a[tool]) for i, a in results if a[tool].verdict != "not run"]
        if not ran:
            summary.append([NAMES[tool], "not run", "", "", "", ""])
            continue
        solved = [(i, r) for i, r in ran if r.verdict in DECIDED]
        capped = [_at_limit(i, r) for i, r in ran]
        sat = sum(r.verdict == "sat" for _, r in solved)
        summary.append([NAMES[tool], f"{len(solved)}/{len(ran)}", f"{sat} / {len(solved) - sat}",
                        f"{sum(r.cpu for _, r in solved):.1f}", f"{sum(capped):.1f}",
                        f"{statistics.median(capped):.2f}"])
    lines += [table(["tool", "solved", "sat / unsat", "cpu s on solved", "cpu s, unsolved at limit",
                     "median s (unsolved at limit)"], summary), ""]
    by_property = {}
    for inst, answers in results:
        counts = by_property.setdefault(inst.prop.stem, [0] + [Counter() for _ in TOOLS])
        counts[0] += 1
        for tally, tool in zip(counts[1:], TOOLS):
            tally[answers[tool].verdict] += 1

    def tallied(c: Counter, n: int) -> str:
        if c["not run"] == n:
            return "not run"
        text = f"{c['sat']} / {c['unsat']} / {n - c['not run'] - c['sat'] - c['unsat']}"
        return text + (f" ({c['not run']} not run)" if c["not run"] else "")
    lines += [table(["property", "instances"] + [f"{NAMES[t]} sat / unsat / unsolved" for t in TOOLS],
                    [[name, n] + [tallied(c, n) for c in tallies] for name, (n, *tallies) in by_property.items()]), ""]
    for peer in TOOLS[1:]:
        common = [(i, a["exactform"], a[peer]) for i, a in results
                  if "not run" not in (a["exactform"].verdict, a[peer].verdict)]
        if not common:
            continue
        ours, theirs = (statistics.median(_at_limit(x[0], x[k]) for x in common) for k in (1, 2))
        both = [o.cpu / t.cpu for _, o, t in common if o.verdict in DECIDED and t.verdict in DECIDED and t.cpu > 0]
        lines.append(f"Median time ratio exactform / {NAMES[peer]} on the {len(common)} instances both ran: "
                     f"{ours / theirs:.2f} ({ours:.2f} s / {theirs:.2f} s, unsolved counted at the limit)"
                     + (f"; {statistics.median(both):.2f} as the median of per-instance ratios on the {len(both)} "
                        "instances both solved" if both else "") + ".")
    pairs = []
    for k, a in enumerate(TOOLS):
        for b in TOOLS[k + 1:]:
            answered = [(x[a].verdict, x[b].verdict) for _, x in results
                        if x[a].verdict in DECIDED and x[b].verdict in DECIDED]
            if answered:
                alike = sum(u == v for u, v in answered)
                pairs.append(f"{NAMES[a]} and {NAMES[b]} {alike} answered alike, "
                             f"{len(answered) - alike} disagreements")
    lines.append("Agreement: " + ("; ".join(pairs) if pairs else "no instance answered by two tools") + ".")
    if recorded:
        lines.append(f"Recorded results (--recorded), not this run's: {' and '.join(recorded)}.")
    return "\n".join(lines)


class _Record:
    """The per-instance CSV, written row by row (so a stopped run keeps what it measured)."""
    FIELDS = ["instance", "network", "property", "limit_s"] + [f"{t}_{f}" for t in TOOLS
                                                              for f in ("verdict", "cpu_s", "wall_s", "checked")]

    def __init__(self, path: str, command: str):
        self.file = open(path, "w", newline="")
        self.file.write(f"# {command}\n")
        self.writer = csv.writer(self.file, lineterminator="\n")
        self.writer.writerow(self.FIELDS)

    def write(self, inst: Instance, answers: dict[str, Result]) -> None:
        cells = [inst.name, inst.net.name, inst.prop.name, inst.timeout]
        for r in (answers[t] for t in TOOLS):
            cells += (["", "", "", ""] if r.verdict == "not run"
                      else [r.verdict, f"{r.cpu:.2f}", f"{r.wall:.2f}", r.checked])
        self.writer.writerow(cells)
        self.file.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
