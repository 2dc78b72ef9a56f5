"""``exactform check CERT… | FOLDER [--maxout NET] [--transformer TF] [--smt] [--verbose] [--junit F]``:
the independent checker (``exactform.checker``, standard library only)."""


def add_parser(sub):
    p = sub.add_parser("check", help="re-verify certificates with the independent standard-library checker")
    p.add_argument("certificates", nargs="+", help="certificate files, or folders of *cert*.json files")
    p.add_argument("--maxout", metavar="NET", help="bind: the embedded Maxout net must be this file's")
    p.add_argument("--transformer", metavar="TF", help="bind: the embedded Transformer must be this file's")
    p.add_argument("--smt", action="store_true", help="also prove the phase obligations with Z3, queries derived from the models")
    p.add_argument("-v", "--verbose", action="store_true", help="print every claim's statement")
    p.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report (one case per claim)")
    return p


def run(args) -> int:
    from ..checker import run
    return run(args)
