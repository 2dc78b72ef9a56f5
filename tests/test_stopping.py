"""A command or benchmark ended by a signal leaves no process of its own running (a worker
computing on, an orphan, for minutes or hours).  Processes are read from /proc (Linux)."""
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENV = dict(os.environ, PYTHONPATH=str(ROOT))
pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            if int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
        except (OSError, IndexError):
            continue
    return found


def running(pid: int) -> bool:
    """Whether ``pid`` has not exited (a zombie has)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def survivors(job: subprocess.Popen, count: int, sig: signal.Signals) -> list[int]:
    """Once ``job`` has ``count`` children: send it ``sig``, and return those children still running 5 s
    after it ended (none killed here before the assertion reads them; all killed after)."""
    workers = []
    try:
        deadline = time.monotonic() + 60          # start-up under load: a hang detector, not a timing
        while len(workers := children(job.pid)) < count and job.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(workers) == count and job.poll() is None, (workers, job.poll())
        job.send_signal(sig)
        job.wait(timeout=10)
        deadline = time.monotonic() + 5
        while any(map(running, workers)) and time.monotonic() < deadline:
            time.sleep(0.1)
        return [w for w in workers if running(w)]
    finally:
        job.kill()
        for w in workers:
            if running(w):
                os.kill(w, signal.SIGKILL)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_killed_command_leaves_no_worker_running(tmp_path, sig):
    """``regions --workers 2`` ended by SIGTERM (``kill``, a CI job's timeout) or SIGKILL (the guard of
    ``--timeout``) while its workers compute: they end within seconds (``executor.end_with_parent``)."""
    from exactform.formats import write_json
    from exactform.proofs.nets import relu_net
    write_json(tmp_path / "net.json", relu_net(random.Random(0), [4, 40, 40]).to_json())   # minutes of work
    job = subprocess.Popen([sys.executable, "-m", "exactform", "regions", str(tmp_path / "net.json"), "--workers", "2"],
                           env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert survivors(job, 2, sig) == []


BENCH = """
import time
from exactform.benchmarks import equiv_bench
equiv_bench.capped(600, clock=time.sleep)          # a case that would run for 10 minutes
"""


def test_a_killed_benchmark_leaves_no_capped_run_running():
    """``equiv_bench.capped`` runs each case in a child process: killing the benchmark ends it too."""
    job = subprocess.Popen([sys.executable, "-c", BENCH], env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert survivors(job, 1, signal.SIGTERM) == []


LIMITED = """
import sys, tempfile
from pathlib import Path
from exactform.benchmarks import verify_bench
verify_bench.limited([sys.executable, "-c", "import time; time.sleep(600)"], 600, Path(tempfile.mkdtemp()) / "log")
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_killed_benchmark_leaves_no_instance_running(sig):
    """``verify_bench.limited`` (the verify and equiv-regions benchmarks) runs each instance in a session of
    its own, out of reach of the benchmark's signals: killing the benchmark ends it too
    (``executor.ends_with_parent``)."""
    job = subprocess.Popen([sys.executable, "-c", LIMITED], env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert survivors(job, 1, sig) == []


def test_an_instance_whose_benchmark_ended_before_it_asked_ends_itself():
    """``executor.ends_with_parent`` asks the kernel for a signal when the parent ends; a parent already
    gone when it asks (killed between fork and the request) would never send it, and the instance computed
    on: it ends itself (SIGKILL) when its parent is not the benchmark that started it."""
    r = subprocess.run([sys.executable, "-c", "import os; from exactform.executor import ends_with_parent; "
                        "ends_with_parent(os.getppid() + 10**7); print('alive')"], env=ENV, capture_output=True, text=True)
    assert r.returncode == -signal.SIGKILL and "alive" not in r.stdout
    r = subprocess.run([sys.executable, "-c", "import os; from exactform.executor import ends_with_parent; "
                        "ends_with_parent(os.getppid()); print('alive')"], env=ENV, capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == "alive\n"


DATA = ROOT / "exactform" / "benchmarks" / "data"
VERIFY = [sys.executable, "-m", "exactform", "verify",
          str(ROOT / "data" / "acasxu" / "ACASXU_run2a_2_7_batch_2000.onnx"),
          str(DATA / "acasxu_vnnlib" / "prop_1.vnnlib"), "--workers", "2"]


def _cpu_limit(seconds: int):
    """``preexec_fn``: a soft CPU-time limit (SIGXCPU) of ``seconds``, the hard one far above, no core file."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 60))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return limit


@pytest.mark.parametrize("how", [pytest.param("SIGXCPU", marks=pytest.mark.slow), "--timeout"])
def test_a_stopped_verify_exits_3_at_once_with_one_line(how):
    """Stopped by a CPU-time limit or the global ``--timeout`` while its workers compute: exit 3 (no
    answer: never 1, which is ``sat``), one line on stderr, no traceback, nothing on stdout, and no hang
    (the 60 s below is a hang detector: the stop comes after about 3 s).  ACAS Xu 2_7 prop_1: about 66 CPU s
    of search (1_1, the instance before, now ends within the 3 s each process may spend)."""
    argv = VERIFY if how == "SIGXCPU" else VERIFY[:3] + ["--timeout", "3"] + VERIFY[3:]
    done = subprocess.run(argv, env=ENV, capture_output=True, text=True, timeout=60,
                          preexec_fn=_cpu_limit(3) if how == "SIGXCPU" else None)
    assert done.returncode == 3, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == "" and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("exactform: stopped"), done.stderr


STOP_IN_A_FORK_HOOK = """
import os, signal, sys, time
from exactform import driver
import exactform.commands.compile as command

def run(args):
    def hook():                               # the --timeout alarm, arriving while a fork hook runs
        os.kill(os.getpid(), signal.SIGALRM)
        for _ in range(10 ** 6):              # bytecodes: the handler runs here, where Python ignores what it raises
            pass
    os.register_at_fork(after_in_parent=hook)
    if os.fork() == 0:
        os._exit(0)
    time.sleep(30)                            # had Stopped stayed swallowed, the command would go on
    return 0

command.run = run
if sys.argv[2] == "process":
    sys.exit(driver.run_command(["compile", "net.json", "-o", sys.argv[1], "--timeout", "100"], ends_process=True))
code = driver.run_command(["compile", "net.json", "-o", sys.argv[1], "--timeout", "100"])     # in process
time.sleep(2 * driver.GRACE)                  # the guard, ended, does not kill this process
print("alive", code)
"""


@pytest.mark.parametrize("how", ["process", "in process"])
def test_a_stop_python_swallows_still_ends_the_command_with_one_line_and_no_traceback(tmp_path, how):
    """The ``--timeout`` alarm landed in logging's fork hook (a place where Python prints what is raised as
    "Exception ignored" with its traceback, and goes on): CI printed that traceback before the command's
    stop line (``equiv`` on ACAS Xu φ1, ``--timeout 6``), and in process (pytest-xdist's workers) the command
    went on until the guard killed the worker (``test_bad_input``'s timeout test, "node down").  The stop is
    raised again at once where it propagates: exit 3, one line, no traceback, the guard ended with it (left
    running, it held the pipes open until ``--timeout`` + ``GRACE``, or killed the host process)."""
    done = subprocess.run([sys.executable, "-c", STOP_IN_A_FORK_HOOK, str(tmp_path / "tf.json"), how.split()[0]], env=ENV,
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == (3 if how == "process" else 0), (done.returncode, done.stderr)
    assert done.stdout == ("" if how == "process" else "alive 3\n"), done.stdout
    assert done.stderr == "exactform: stopped after 100 s (--timeout): nothing written\n", done.stderr
    assert not (tmp_path / "tf.json").exists()
