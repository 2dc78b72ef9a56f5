"""The ``exactform`` command (DESIGN §5).  Exit codes: 0 proved/done, 1 refuted or a failed
check, 2 bad input or usage.  Bad input is reported as one line, never as a traceback."""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from . import commands
from .formats import InputError


def command_modules() -> list[str]:
    """Every module under ``exactform.commands`` is a sub-command with ``add_parser`` and ``run``."""
    return sorted(m.name for m in pkgutil.iter_modules(commands.__path__))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="exactform", description="Exact Transformer constructions of "
                                     "Maxout networks, with proofs and certificates.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in command_modules():
        module = importlib.import_module(f".commands.{name}", __package__)
        module.add_parser(sub).set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except InputError as e:
        print(f"exactform: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("exactform: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
