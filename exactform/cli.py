"""The ``exactform`` command.  Exit codes: 0 proved/done, 1 refuted, a failed check or ``--timeout``,
2 bad input or usage (one line, never a traceback), 141 stdout closed by its reader (``| head``).
``exactform check`` without ``--timeout`` loads only the standard-library checker."""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["check"] and "--timeout" not in argv:
            import argparse

            from .checker import run
            from .commands import check
            parser = argparse.ArgumentParser(prog="exactform")
            check.add_parser(parser.add_subparsers(dest="command", required=True))
            code = run(parser.parse_args(argv))
        else:
            from .deadline import main as run_command
            code = run_command(argv)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        return closed_pipe()
    except KeyboardInterrupt:
        print("exactform: interrupted", file=sys.stderr)
        return 130


def closed_pipe() -> int:
    """The reader closed stdout (``| head``): stop quietly, and let no later flush complain."""
    import os
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 141


if __name__ == "__main__":
    sys.exit(main())
