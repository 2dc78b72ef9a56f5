"""Running any sub-command but the fast path of ``check`` (see ``cli``): ``--timeout SECONDS`` (a ``SIGALRM`` that takes effect between Python
bytecodes, and a watchdog thread that ends the process ``GRACE`` seconds later if a call into
native code holds on past it), bad input as one line and exit 2, the argument rules.  Files are
written atomically (``formats.write_text``), so a stopped command leaves no half-written file."""
from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import signal
import sys
import threading

from . import commands
from . import formats
from .formats import InputError

GRACE = 10.0
"""Seconds a native call may overrun ``--timeout`` before the watchdog ends the process."""

VALUE_OPTIONS = ("--domain", "--eps", "--lambda")
"""Options whose value may start with a minus sign (``--domain -1:1``), which argparse would
otherwise read as an option: ``main`` rewrites ``--domain -1:1`` to ``--domain=-1:1``."""


class Stopped(BaseException):
    """Raised by the ``--timeout`` alarm.  A ``BaseException``, like ``KeyboardInterrupt``, so
    that no ``except Exception`` in a reader turns it into an input error."""


def command_modules() -> list[str]:
    """Every module under ``exactform.commands`` is a sub-command with ``add_parser`` and ``run``."""
    return sorted(m.name for m in pkgutil.iter_modules(commands.__path__))


def _timeout_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value < 10**7:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="exactform", description="Exact Transformer constructions of "
                                     "Maxout networks, with proofs and certificates.")
    parser.add_argument("--timeout", dest="global_timeout", type=_timeout_seconds, metavar="SECONDS",
                        help="stop the command after SECONDS (exit 1, nothing half-written)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in command_modules():
        module = importlib.import_module(f".commands.{name}", __package__)
        p = module.add_parser(sub)
        p.set_defaults(run=module.run)
        if "--timeout" not in p._option_string_actions:
            p.add_argument("--timeout", dest="global_timeout", type=_timeout_seconds, metavar="SECONDS",
                           default=argparse.SUPPRESS, help="stop after SECONDS (exit 1, nothing half-written)")
    return parser


def normalise_argv(argv: list[str]) -> list[str]:
    """``--domain -1:1`` → ``--domain=-1:1`` (and the same for the other ``VALUE_OPTIONS``)."""
    out, i = [], 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return out + argv[i:]
        if arg in VALUE_OPTIONS and i + 1 < len(argv) and argv[i + 1].startswith("-") \
                and not argv[i + 1].startswith("--"):
            out.append(f"{arg}={argv[i + 1]}")
            i += 2
            continue
        out.append(arg)
        i += 1
    return out


def main(argv: list[str]) -> int:
    argv = normalise_argv(argv)
    args = build_parser().parse_args(argv)
    seconds = getattr(args, "global_timeout", None)
    formats.WRITTEN.clear()
    try:
        with _deadline(seconds):
            return args.run(args)
    except Stopped:
        done = sorted(set(formats.WRITTEN))
        what = f"wrote only {', '.join(done)} before it" if done else "nothing written"
        print(f"exactform: stopped after {seconds:g} s (--timeout): {what}", file=sys.stderr)
        return 1
    except InputError as e:
        print(f"exactform: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("exactform: interrupted", file=sys.stderr)
        return 130


class _deadline:
    """``SIGALRM`` after ``seconds`` raises ``Stopped``; a watchdog ends the process if that
    cannot happen within ``GRACE`` seconds (the alarm is only seen between Python bytecodes)."""

    def __init__(self, seconds: float | None):
        self.seconds = seconds
        self.old = self.watchdog = None

    def __enter__(self):
        if self.seconds is None:
            return self
        if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
            raise InputError("--timeout", "", "needs the main thread of a POSIX process")

        def alarm(signum, frame):
            raise Stopped()
        self.old = signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        self.watchdog = threading.Timer(self.seconds + GRACE, self._kill)
        self.watchdog.daemon = True
        self.watchdog.start()
        return self

    def _kill(self):
        print(f"exactform: stopped after {self.seconds:g} s (--timeout; a native call did not return "
              f"within {GRACE:g} s more): no file was half-written", file=sys.stderr, flush=True)
        os._exit(1)

    def __exit__(self, *exc):
        if self.seconds is not None:
            self.watchdog.cancel()
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.old)
        return False


