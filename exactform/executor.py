"""One executor interface for independent obligations: serial, local processes, or Dask.

Invariant: ``map(fn, items)`` returns ``[fn(x) for x in items]`` in input order, whatever runs
it, so results merged from it (certificates, region counts) are byte-identical across executors
and worker counts.  ``fn`` must be a module-level function and ``items`` picklable.  A task that
is lost (a worker killed) is retried by Dask (``retries``); if it still fails, ``ExecutorError``
is raised and the caller writes nothing.
"""
from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Iterable, TypeVar

X, Y = TypeVar("X"), TypeVar("Y")


class ExecutorError(RuntimeError):
    """Work was lost or a task failed: no partial result may be used."""


class Serial:
    workers = 1

    def map(self, fn: Callable[[X], Y], items: Iterable[X]) -> list[Y]:
        return [fn(x) for x in items]

    def close(self) -> None:
        pass


class LocalProcesses:
    """``workers`` local processes (``concurrent.futures``)."""

    def __init__(self, workers: int):
        self.workers = workers
        self._pool = ProcessPoolExecutor(max_workers=workers)

    def map(self, fn, items):
        items = list(items)
        try:
            return list(self._pool.map(fn, items, chunksize=max(1, len(items) // (4 * self.workers))))
        except BrokenProcessPool as e:
            raise ExecutorError(f"a worker process died: {e}") from None

    def close(self) -> None:
        self._pool.shutdown(cancel_futures=True)


class Dask:
    """A ``dask.distributed`` cluster at ``address`` (``tcp://HOST:PORT``) or a ``Client``."""

    def __init__(self, address, retries: int = 2):
        try:
            from distributed import Client
        except ImportError:
            raise ExecutorError("--scheduler needs Dask: pip install 'exactform[dask]'") from None
        self._own = not hasattr(address, "submit")
        try:
            self.client = Client(address, timeout="10s") if self._own else address
        except (OSError, TimeoutError) as e:
            raise ExecutorError(f"cannot reach the Dask scheduler at {address}: {e}") from None
        self.retries = retries
        self.workers = max(1, len(self.client.scheduler_info().get("workers", {})))

    def map(self, fn, items):
        items = list(items)
        if not items:
            return []
        futures = self.client.map(fn, items, retries=self.retries, pure=False)
        try:
            return self.client.gather(futures)
        except Exception as e:  # KilledWorker, CancelledError, a task's own exception
            raise ExecutorError(f"a Dask task failed after {self.retries} retries: {type(e).__name__}: {e}") from None

    def close(self) -> None:
        if self._own:
            self.client.close()


def make_executor(workers: int | None = None, scheduler: str | None = None):
    """``--scheduler`` wins; else ``--workers N`` local processes (default: the core count);
    one worker means serial, in-process."""
    if scheduler:
        return Dask(scheduler)
    workers = workers or os.cpu_count() or 1
    return Serial() if workers <= 1 else LocalProcesses(workers)


def add_executor_arguments(parser) -> None:
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help="local worker processes (default: the number of cores; 1 = serial)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="run on a Dask distributed scheduler (tcp://HOST:PORT); needs exactform[dask]")
