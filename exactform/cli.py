"""The ``exactform`` command: exit 0 done, 1 refuted / failed, 2 bad input (one line), 3 stopped
(``--timeout``, a CPU-time limit), 141 stdout closed (``| head``).  ``exactform check`` with only its own
options loads only the standard-library checker (this module is part of its trusted base, so it stays
small); every other command runs through ``driver``."""
import argparse
import os
import sys


def main(argv: list[str] | None = None) -> int:
    """The command of ``argv`` (default: this process's arguments, and then a stop ends the process)."""
    ends_process = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["check"]:           # the fast path, when every --option is check's own (not --timeout, no typo)
            from .checker.command import add_parser, run
            parser = argparse.ArgumentParser(prog="exactform")
            own = add_parser(parser.add_subparsers(dest="command", required=True))._option_string_actions
            end = argv.index("--") if "--" in argv else len(argv)
        if argv[:1] == ["check"] and all(a.split("=", 1)[0] in own for a in argv[1:end] if a.startswith("--")):
            code = run(parser.parse_args(argv))
        else:                               # the driver names a misspelt option, with the closest, as for every command
            from .driver import run_command
            code = run_command(argv, ends_process)
        sys.stdout.flush()
        return code
    except BrokenPipeError:             # the reader closed stdout: stop quietly, and let no later flush complain
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except KeyboardInterrupt:
        print("exactform: interrupted", file=sys.stderr)
        return 130
