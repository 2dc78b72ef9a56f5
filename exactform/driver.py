"""Running one sub-command (every command but the fast path of ``check``, see ``cli``): parsing,
``--timeout`` and CPU-time stops, and the exit codes: 0 proved/done, 1 refuted or a failed check,
2 bad input or usage (one line, never a traceback), 3 stopped by ``--timeout`` or a CPU-time limit
(``SIGXCPU``) with no answer, 130 interrupted, 137 when native code held on past ``--timeout`` + ``GRACE``.

Only the standard library is imported here; a command imports only its own module
(``commands/<name>.py``; ``--help`` loads them all).  ``--timeout SECONDS`` is a ``SIGALRM`` that takes
effect between Python bytecodes, and a guard process that ends this one ``GRACE`` seconds later if a
call into native code holds on past it (``Timeout``).  Files are written atomically
(``formats.write_text``), so a stopped command leaves no half-written file.

A stop raises ``Stopped`` so that a command can say how far it got; when the command is the process
(``ends_process``), the process then ends at once (``os._exit``): no exit handler joins a worker pool's
threads or queues, which a stop may have left mid-operation, and an ``SIGALRM`` ``GRACE`` seconds after
the stop ends it even if library code swallowed ``Stopped`` or hangs while it unwinds.  A ``Stopped`` that
Python itself swallows (raised in a fork hook or a finaliser) is raised again at once (``_raised_again``).
"""
from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import signal
import sys
import threading
import time

GRACE = 1.0
"""Seconds a native call may overrun ``--timeout`` before the watchdog ends the process."""

VALUE_OPTIONS = ("--domain", "--eps", "--lambda")
"""Options whose value may start with a minus sign (``--domain -1:1``), which argparse would
otherwise read as an option: ``main`` rewrites ``--domain -1:1`` to ``--domain=-1:1``."""


class Stopped(BaseException):
    """Raised by the ``--timeout`` alarm, or at a CPU-time limit (``SIGXCPU``: ``ulimit -t``, ``RLIMIT_CPU``;
    the message says which).  A ``BaseException``, like ``KeyboardInterrupt``, so that no ``except
    Exception`` in a reader turns it into an input error."""


STOPPED = 3
"""The exit code of a command stopped before its answer (``--timeout``, a CPU-time limit)."""


def _stopper(ends_process: bool):
    """``stop(reason)``, called from a signal handler: raise ``Stopped``; when the CLI is the process,
    first arm the last resort, a ``SIGALRM`` ``GRACE`` seconds later that reports and ends the process
    (exit ``STOPPED``) in case the exception never reaches ``main``."""
    def stop(why: str):
        if ends_process:
            def last_resort(signum, frame):
                Timeout.end_guard()          # no guard left behind, holding the command's stdout and stderr open
                _report_stop(why)
                os._exit(STOPPED)
            signal.signal(signal.SIGALRM, last_resort)
            signal.setitimer(signal.ITIMER_REAL, GRACE)
        raise Stopped(why)
    return stop


def _report_stop(why: str) -> None:
    """The one line a stopped command prints: what stopped it and which files it completed."""
    done = sorted(set(getattr(sys.modules.get(f"{__package__}.formats"), "WRITTEN", [])))
    what = f"wrote only {', '.join(done)} before it" if done else "nothing written"
    sys.stdout.flush()
    print(f"exactform: stopped {why}: {what}", file=sys.stderr, flush=True)


def command_modules() -> list[str]:
    """Every module under ``exactform.commands`` is a sub-command with ``add_parser`` and ``run``."""
    from . import commands
    return sorted(m.name for m in pkgutil.iter_modules(commands.__path__))


def _timeout_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value < 10**7:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _requested(argv: list[str]) -> str | None:
    """The module of the command named in ``argv`` (``certify-all`` → ``certify_all``), if one of
    that name exists; else None (then every command is loaded, e.g. for ``--help``)."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--timeout":
            i += 2
            continue
        if arg.startswith("-"):
            i += 1
            continue
        name = arg.replace("-", "_")
        return name if name in command_modules() else None
    return None


EXIT_CODES = ("exit codes: 0 proved / done; 1 refuted or a failed check; 2 bad input or usage (one line, nothing "
              "written); 3 stopped by --timeout or a CPU-time limit (no answer); 130 interrupted; 137 native code held "
              "on past --timeout; 141 stdout closed (| head)")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    from . import __version__
    parser = argparse.ArgumentParser(prog="exactform", description="Exact Transformer constructions of "
                                     "Maxout networks, with proofs and certificates.", epilog=EXIT_CODES)
    parser.add_argument("--version", action="version", version=f"exactform {__version__}")
    parser.add_argument("--timeout", dest="global_timeout", type=_timeout_seconds, metavar="SECONDS",
                        help="stop the command after SECONDS (exit 3, nothing half-written)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in [only] if only else command_modules():
        module = importlib.import_module(f".commands.{name}", __package__)
        p = module.add_parser(sub)
        p.set_defaults(run=module.run)
        p.description = p.description or next(a.help for a in sub._choices_actions if a.dest == p.prog.split()[-1])
        p.epilog = p.epilog or EXIT_CODES
        try:
            p.add_argument("--timeout", dest="global_timeout", type=_timeout_seconds, metavar="SECONDS",
                           default=argparse.SUPPRESS, help="stop after SECONDS (exit 3, nothing half-written)")
        except argparse.ArgumentError:  # the command's own --timeout (verify, equiv): the same meaning, exit 3
            pass
    return parser


def misspelt(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """``InputError`` for an unknown command or ``--option``, with the closest names (argparse would
    report a missing required option first, or list every command)."""
    from difflib import get_close_matches

    from .errors import InputError

    def unknown(option: str, known: dict, of: str) -> InputError:
        close = get_close_matches(option, [k for k in known if k.startswith("--")], n=1)
        return InputError(option, "", f"unknown option of {of}; " +
                          (f"did you mean {close[0]}?" if close else f"{of} --help lists them"))

    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    i = 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "--":
        if (option := argv[i].split("=", 1)[0]).startswith("--") and option not in parser._option_string_actions:
            raise unknown(option, parser._option_string_actions, "exactform")
        i += 2 if argv[i] == "--timeout" else 1
    if i == len(argv) or argv[i] == "--":
        return
    name = argv[i]
    if name not in sub.choices:
        close = get_close_matches(name, sub.choices, n=2)
        raise InputError(name, "", "unknown command; " + (f"did you mean {' or '.join(close)}?" if close
                                                           else "exactform --help lists the commands"))
    known = {**sub.choices[name]._option_string_actions, **parser._option_string_actions}
    for arg in argv[i + 1:argv.index("--") if "--" in argv else len(argv)]:
        if (option := arg.split("=", 1)[0]).startswith("--") and option not in known:
            raise unknown(option, known, f"exactform {name}")


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


def run_command(argv: list[str], ends_process: bool = False) -> int:
    """Run the command of ``argv``; ``ends_process``: this is the ``exactform`` process, which a stop
    ends at once (module docstring)."""
    from .errors import InputError
    from .files import outputs_apart
    argv = normalise_argv(argv)
    sys.set_int_max_str_digits(0)      # every reader bounds its digits itself; results may be longer
    parser = build_parser(_requested(argv))
    try:
        misspelt(parser, argv)
    except InputError as e:
        print(f"exactform: error: {e}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    seconds = getattr(args, "global_timeout", None)
    written = getattr(sys.modules.get(f"{__package__}.formats"), "WRITTEN", [])
    written.clear()
    stop = _stopper(ends_process)

    def cpu_limit(signum, frame):
        """The first ``SIGXCPU`` stops the command; the kernel repeats it once per CPU second until the
        hard limit, so the rest are ignored (else one would kill the process while it reports, or exits)."""
        signal.signal(signal.SIGXCPU, signal.SIG_IGN)
        stop("at the CPU-time limit (SIGXCPU)")

    cpu = threading.current_thread() is threading.main_thread() and hasattr(signal, "SIGXCPU")
    old = signal.signal(signal.SIGXCPU, cpu_limit) if cpu else None
    unraisable, alarm = sys.unraisablehook, signal.getsignal(signal.SIGALRM) if cpu else None
    sys.unraisablehook = _raised_again(unraisable, stop)
    try:
        outputs_apart(args)
        with Timeout(seconds, stop):
            code = args.run(args)
            sys.stdout.flush()
            return code
    except Stopped as e:
        Timeout.end_guard()      # the one-shot alarm may have fired inside __exit__, before it ended the guard
        _report_stop(str(e))
        if ends_process:
            os._exit(STOPPED)
        return STOPPED
    except InputError as e:
        print(f"exactform: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("exactform: interrupted", file=sys.stderr)
        return 130
    finally:
        sys.unraisablehook = unraisable
        if cpu and signal.getsignal(signal.SIGXCPU) is cpu_limit:      # not reached: as it was
            signal.signal(signal.SIGXCPU, old)
        if cpu and not ends_process:
            signal.signal(signal.SIGALRM, alarm)


def _raised_again(hook, stop):
    """``sys.unraisablehook`` while a command runs: where a stop lands in code whose exceptions Python cannot
    propagate (a fork hook, a finaliser), Python would print "Exception ignored" with a traceback and go on
    computing until the guard kills the process (in process: the caller's).  Such a ``Stopped`` is not
    printed; an alarm 1 ms later raises it again (``stop``) where it propagates.  Anything else: ``hook``."""
    def again(unraisable):
        if not isinstance(unraisable.exc_value, Stopped):
            return hook(unraisable)
        why = str(unraisable.exc_value)
        signal.signal(signal.SIGALRM, lambda signum, frame: stop(why))
        signal.setitimer(signal.ITIMER_REAL, 0.001)
    return again


class Timeout:
    """``SIGALRM`` after ``seconds`` raises ``Stopped``.  The alarm is seen only between Python
    bytecodes, so a forked guard process ends this one ``GRACE`` seconds later if native code
    (a solver, a long exact product holding the GIL) has not returned: it prints one line and
    sends ``SIGKILL`` (exit status 137).  Atomic writes leave no half-written file either way."""

    guard: int | None = None
    """The pid of the running guard (one at a time: the CLI runs one command)."""

    def __init__(self, seconds: float | None, stop=None):
        self.seconds, self.stop = seconds, stop or _stopper(False)
        self.old = None

    def __enter__(self):
        if self.seconds is None:
            return self
        if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
            from .errors import InputError
            raise InputError("--timeout", "", "needs the main thread of a POSIX process")
        parent = os.getpid()
        sys.stderr.flush()
        pid = os.fork()                                     # first the guard, then the alarm: no Stopped can
        if pid == 0:                                        # come between them; the guard sleeps, then ends the parent
            try:
                time.sleep(self.seconds + GRACE)
                if os.getppid() == parent:
                    os.write(2, f"exactform: stopped after {self.seconds:g} s (--timeout; a native call did not "
                                f"return within {GRACE:g} s more): no file was half-written\n".encode())
                    os.kill(parent, signal.SIGKILL)
            finally:
                os._exit(0)
        Timeout.guard = pid

        def alarm(signum, frame):
            self.stop(f"after {self.seconds:g} s (--timeout)")
        self.old = signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *exc):
        if self.seconds is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            Timeout.end_guard()
            signal.signal(signal.SIGALRM, self.old)
        return False

    @staticmethod
    def end_guard() -> None:
        """End the guard, if one runs (idempotent: also called where ``Stopped`` is caught, since the
        one-shot alarm can interrupt ``__exit__`` before it gets here)."""
        pid, Timeout.guard = Timeout.guard, None
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
