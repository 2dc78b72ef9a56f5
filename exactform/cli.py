"""The ``exactform`` command.  Exit codes: 0 proved/done, 1 refuted, a failed check or stopped by
``--timeout``, 2 bad input or usage, 141 when the reader of stdout closed it (``| head``); bad input
is one line, never a traceback.  ``exactform check``
without ``--timeout`` takes a fast path that loads only the standard-library checker; every other
command runs through ``exactform.deadline``."""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["check"] and "--timeout" not in argv:
        import argparse

        from .checker import run
        from .commands import check
        parser = argparse.ArgumentParser(prog="exactform")
        check.add_parser(parser.add_subparsers(dest="command", required=True))
        try:
            code = run(parser.parse_args(argv))
            sys.stdout.flush()
            return code
        except BrokenPipeError:
            return closed_pipe()
        except KeyboardInterrupt:
            print("exactform: interrupted", file=sys.stderr)
            return 130
    from .deadline import main as run_command
    return run_command(argv)


def closed_pipe() -> int:
    """The reader closed stdout (``| head``): stop quietly, and let no later flush complain."""
    import os
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 141


if __name__ == "__main__":
    sys.exit(main())
