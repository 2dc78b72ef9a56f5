"""``exactform check CERT.json [CERT2 … | FOLDER] [--smt]``: the independent certificate checker."""
from __future__ import annotations


def add_parser(sub):
    p = sub.add_parser("check", help="re-verify certificates with plain rational arithmetic")
    p.add_argument("certificates", nargs="+", help="certificate files, or folders of *cert*.json files")
    p.add_argument("--smt", action="store_true", help="also re-run the embedded SMT-LIB queries (z3, cvc5)")
    return p


def run(args) -> int:
    import time

    from ..certificate.check import check_paths
    start = time.perf_counter()
    code = check_paths(args.certificates, smt=args.smt)
    print(f"checked in {time.perf_counter() - start:.2f} s")
    return code
