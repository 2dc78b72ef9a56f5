"""``exactform check CERT.json [CERT2 … | FOLDER] [--smt] [--workers N] [--scheduler ADDRESS]``: the
independent certificate checker; certificates (or, for one, its SMT re-runs) are checked as tasks."""
from __future__ import annotations

from ..executor import ExecutorError, add_executor_arguments, lost_work, make_executor


def add_parser(sub):
    p = sub.add_parser("check", help="re-verify certificates with plain rational arithmetic")
    p.add_argument("certificates", nargs="+", help="certificate files, or folders of *cert*.json files")
    p.add_argument("--smt", action="store_true", help="also re-run the embedded SMT-LIB queries (z3, cvc5)")
    p.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report (one case per certificate and per claim)")
    add_executor_arguments(p)
    return p


def run(args) -> int:
    import time

    from ..certificate.check import check_paths
    start = time.perf_counter()
    if args.junit:
        from ..certificate.results import check_many, write_junit
        code, results = check_many(args.certificates, smt=args.smt)
        write_junit(args.junit, results)
    else:
        with make_executor(args.workers, args.scheduler) as executor:
            try:
                code = check_paths(args.certificates, smt=args.smt, executor=executor)
            except ExecutorError as e:
                return lost_work("check", e)
    print(f"checked in {time.perf_counter() - start:.2f} s")
    return code
