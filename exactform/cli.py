"""The ``exactform`` command: exit 0 done, 1 refuted / failed / ``--timeout``, 2 bad input (one line), 141
stdout closed (``| head``).  ``exactform check`` without ``--timeout`` loads only the standard-library checker."""
import argparse
import os
import sys


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["check"] and "--timeout" not in argv:
            from .checker.command import add_parser, run
            parser = argparse.ArgumentParser(prog="exactform")
            add_parser(parser.add_subparsers(dest="command", required=True))
            code = run(parser.parse_args(argv))
        else:
            from .deadline import main as run_command
            code = run_command(argv)
        sys.stdout.flush()
        return code
    except BrokenPipeError:             # the reader closed stdout: stop quietly, and let no later flush complain
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except KeyboardInterrupt:
        print("exactform: interrupted", file=sys.stderr)
        return 130
