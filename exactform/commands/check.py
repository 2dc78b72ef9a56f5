"""``exactform check CERT… | FOLDER [--maxout NET] [--transformer TF] [--smt] [-v] [--junit F]``: the
independent checker, defined with its options in ``exactform.checker`` (standard library only)."""
from ..checker.command import add_parser as add_parser, run as run
