"""One executor interface for independent obligations: serial, local processes, or Dask.

Invariant: ``map(fn, items)`` returns ``[fn(x) for x in items]`` in input order, whatever runs
it, so results merged from it (certificates, region counts) are byte-identical across executors
and worker counts.  ``fn`` must be picklable (a module-level function or a ``functools.partial``
of one) and pure, so re-running a task is always safe.  An exception raised by a task propagates
unchanged.  Work lost with a worker is re-run: by a fresh process pool (``LocalProcesses``, up to
``retries`` times) or by the Dask scheduler (its ``distributed.scheduler.allowed-failures``); when
it is still lost, ``ExecutorError`` is raised and the caller writes nothing.  Local workers end with
their command however it ends: stopped (``--timeout``, Ctrl-C) or killed (``end_with_parent``).
"""
from __future__ import annotations

import os
import sys
from concurrent.futures import CancelledError, ProcessPoolExecutor
from concurrent.futures import as_completed as futures_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Iterable, Iterator, TypeVar

from .formats import InputError

X, Y = TypeVar("X"), TypeVar("Y")


class ExecutorError(RuntimeError):
    """Work was lost or the cluster is unusable: no partial result may be used."""


class Executor:
    """The interface (and the serial executor): ``map``, ``close``, ``workers``; a context manager."""
    workers = 1
    name = "serial"

    def map(self, fn: Callable[[X], Y], items: Iterable[X]) -> list[Y]:
        return [fn(x) for x in items]

    def as_completed(self, fn: Callable[[X], Y], items: Iterable[X]) -> Iterator[tuple[int, Y]]:
        """``(index, fn(item))`` as each task finishes (for progress); results are the same as ``map``'s."""
        return enumerate(map(fn, items))

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


Serial = Executor


def end_with_parent(parent: int, every: float = 0.5) -> None:
    """In a child process of ``parent``: a daemon thread that ends this process (and its process group
    when it leads one) once ``parent`` has gone, checked every ``every`` seconds.  A parent ended by
    SIGTERM or SIGKILL cannot stop its children itself; without this they would compute on, orphans."""
    import signal
    import threading
    import time

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        if os.getpgrp() == os.getpid():                 # a worker: the proof scripts it started too
            os.killpg(os.getpid(), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)
    threading.Thread(target=watch, name="end_with_parent", daemon=True).start()


def ends_with_parent(parent: int) -> None:
    """``preexec_fn`` of a command a benchmark (process ``parent``) starts in a session of its own: the
    kernel kills it when the benchmark ends, however it ends (Linux's ``PR_SET_PDEATHSIG``; elsewhere
    nothing); its workers follow it (``end_with_parent``).  A parent gone before the request (between
    fork and ``prctl``) would never signal: the process then ends itself."""
    if sys.platform == "linux":
        import ctypes
        import signal
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)          # 1: PR_SET_PDEATHSIG
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)


def _worker_init(parent: int) -> None:
    """Worker initializer: its own process group, which SIGTERM kills whole (the worker and any
    proof script it started), so a stopped command leaves nothing running; and so does a killed one
    (``end_with_parent``)."""
    import signal
    os.setpgrp()
    signal.signal(signal.SIGTERM, lambda signum, frame: os.killpg(os.getpgrp(), signal.SIGKILL))
    end_with_parent(parent)


class LocalProcesses(Executor):
    """``workers`` local processes (``concurrent.futures``); a dead process costs a fresh pool and
    a re-run of that ``map`` (tasks are pure), at most ``retries`` times."""

    def __init__(self, workers: int, retries: int = 1):
        self.workers, self.retries = workers, retries
        self.name = f"{workers} local processes"
        self._pool = self._fresh()

    def _fresh(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=self.workers, initializer=_worker_init, initargs=(os.getpid(),))

    def map(self, fn, items):
        items = list(items)
        chunk = max(1, len(items) // (4 * self.workers))
        for attempt in range(self.retries + 1):
            try:
                return list(self._pool.map(fn, items, chunksize=chunk))
            except BrokenProcessPool as e:
                self._pool.shutdown(cancel_futures=True)
                self._pool = self._fresh()
                lost = e
        raise ExecutorError(f"a worker process died on each of {self.retries + 1} attempts ({lost})")

    def as_completed(self, fn, items):
        pending = dict(enumerate(items))
        for attempt in range(self.retries + 1):
            futures = {self._pool.submit(fn, x): i for i, x in pending.items()}
            try:
                for future in futures_completed(futures):
                    i = futures[future]
                    result = future.result()
                    del pending[i]
                    yield i, result
                return
            except BrokenProcessPool as e:
                self._pool.shutdown(cancel_futures=True)
                self._pool = self._fresh()
                lost = e
        raise ExecutorError(f"a worker process died on each of {self.retries + 1} attempts ({lost})")

    def close(self) -> None:
        self._pool.shutdown(cancel_futures=True)

    def __exit__(self, kind, *exc) -> None:
        if kind is not None and not issubclass(kind, Exception):    # --timeout, Ctrl-C: stop the workers now
            for process in list(getattr(self._pool, "_processes", {}).values()):
                process.terminate()
            self._pool.shutdown(wait=False)     # pending futures then fail with the pool (cancelling them races it)
        else:
            self.close()


class Dask(Executor):
    """A ``dask.distributed`` cluster at ``address`` (``tcp://HOST:PORT``) or an existing ``Client``.
    Workers need exactform installed and the input files readable (a shared filesystem)."""

    def __init__(self, address):
        try:
            from distributed import Client
        except ImportError:
            raise InputError("--scheduler", "", "needs Dask: pip install 'exactform[dask]'") from None
        self._own = not hasattr(address, "submit")
        try:
            self.client = Client(address, timeout="10s") if self._own else address
        except (OSError, TimeoutError, ValueError) as e:
            raise InputError("--scheduler", "", f"cannot reach the Dask scheduler at {address}: {e}") from None
        self.workers = max(1, len(self.client.scheduler_info().get("workers", {})))
        self.name = f"Dask at {self.client.scheduler.address} ({self.workers} workers)"

    def map(self, fn, items):
        from distributed import KilledWorker
        from distributed.comm import CommClosedError
        items = list(items)
        if not items:
            return []
        futures = self.client.map(fn, items, pure=False)
        try:
            return self.client.gather(futures)
        except (KilledWorker, CancelledError, CommClosedError, TimeoutError) as e:
            raise ExecutorError(f"Dask lost a task ({type(e).__name__}: {e})") from None
        finally:
            self.client.cancel(futures)

    def as_completed(self, fn, items):
        from distributed import KilledWorker, as_completed
        from distributed.comm import CommClosedError
        items = list(items)
        futures = self.client.map(fn, items, pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        try:
            for future, result in as_completed(futures, with_results=True):
                yield index[future.key], result
        except (KilledWorker, CancelledError, CommClosedError, TimeoutError) as e:
            raise ExecutorError(f"Dask lost a task ({type(e).__name__}: {e})") from None
        finally:
            self.client.cancel(futures)

    def close(self) -> None:
        if self._own:
            self.client.close()


def make_executor(workers: int | None = None, scheduler: str | None = None) -> Executor:
    """``--scheduler`` wins; else ``--workers N`` local processes (default: the core count);
    one worker means serial, in-process.  Bad usage raises ``InputError`` (exit 2)."""
    if workers is not None and workers < 1:
        raise InputError("--workers", "", f"expected a positive integer, got {workers}")
    if scheduler:
        return Dask(scheduler)
    workers = workers or os.cpu_count() or 1
    return Serial() if workers <= 1 else LocalProcesses(workers)


def add_executor_arguments(parser) -> None:
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help="local worker processes (default: the number of cores; 1 = serial)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="run on a Dask distributed scheduler (tcp://HOST:PORT); needs exactform[dask]")


def lost_work(command: str, error: ExecutorError) -> int:
    """Report lost work on one line (stderr) and return exit code 1: the command wrote nothing."""
    import sys
    print(f"exactform: {command}: {error}; nothing written", file=sys.stderr)
    return 1
