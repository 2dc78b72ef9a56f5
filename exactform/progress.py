"""Progress of long commands (tqdm): each finished task prints one line ``[k/N] ...`` on stdout
as it finishes; on a terminal a bar on stderr shows k/N and the ETA; without a terminal there is
no bar, so logs hold plain lines and no carriage returns."""
from __future__ import annotations

import sys

from tqdm import tqdm


class Tasks:
    """``with Tasks(N, "networks") as tasks: ... tasks.done(line)`` once per finished task."""

    def __init__(self, total: int, unit: str, quiet: bool = False):
        self.k, self.total, self.quiet = 0, total, quiet
        self.bar = tqdm(total=total, unit=f" {unit}", file=sys.stderr, leave=False, dynamic_ncols=True,
                        disable=quiet or not sys.stderr.isatty())

    def done(self, line: str) -> None:
        self.k += 1
        self.bar.update(1)
        if not self.quiet:
            tqdm.write(f"[{self.k}/{self.total}] {line}", file=sys.stdout)
            sys.stdout.flush()

    def __enter__(self) -> "Tasks":
        return self

    def __exit__(self, *exc) -> None:
        self.bar.close()


class Stages:
    """``progress(done, total, cells)`` for a region enumeration: a bar on a terminal once a run
    has taken a second, nothing otherwise."""

    def __init__(self, label: str = "regions"):
        self.bar = tqdm(desc=label, unit=" stages", file=sys.stderr, leave=False, dynamic_ncols=True, delay=1.0,
                        disable=not sys.stderr.isatty())

    def __call__(self, done: int, total: int, cells: int) -> None:
        self.bar.total = total
        self.bar.set_postfix_str(f"{cells} cells", refresh=False)
        self.bar.update(done - self.bar.n)

    def __enter__(self) -> "Stages":
        return self

    def __exit__(self, *exc) -> None:
        self.bar.close()


class Count:
    """``with Count("cells") as count: ... count()`` once per item (``count(n)``: n items) of a stream of unknown length,
    ``count(0, v)`` when a part v of the whole is done (a fraction, in floats: shown, never decided on; ``part``
    names it): a bar on a terminal once a run has taken a second, nothing otherwise; ``so_far()`` says both in words."""

    def __init__(self, unit: str, part: str = "done"):
        self.unit, self.what, self.n, self.part = unit, part, 0, 0.0
        self.bar = tqdm(unit=f" {unit}", file=sys.stderr, leave=False, dynamic_ncols=True, delay=1.0,
                        disable=not sys.stderr.isatty())

    def __call__(self, n: int = 1, part: float = 0.0) -> None:
        self.n, self.part = self.n + n, self.part + part
        if part:
            self.bar.set_postfix_str(f"{100 * self.part:.1f}% {self.what}", refresh=False)
        self.bar.update(n)

    def so_far(self) -> str:
        return f"{self.n} {self.unit} searched, {100 * self.part:.1f}% {self.what}"

    def __enter__(self) -> "Count":
        return self

    def __exit__(self, *exc) -> None:
        self.bar.close()
