"""``exactform certify NET.json TF.json -o CERT.json [--smt] [--workers N] [--scheduler ADDRESS]``: prove
C1–C4 and write the certificate.  The SMT queries run as independent tasks on the executor; the
symbolic pass is one chain (each layer starts from the previous one's state) and runs here."""
from __future__ import annotations

import time
from pathlib import Path

from ..executor import ExecutorError, add_executor_arguments, lost_work, make_executor


def add_parser(sub):
    p = sub.add_parser("certify", help="prove C1-C4 for a Maxout net and its Transformer; write a certificate")
    p.add_argument("net", help="exactform/maxout@1 JSON")
    p.add_argument("transformer", help="exactform/transformer@1 JSON")
    p.add_argument("-o", "--output", required=True, help="where to write the exactform/certificate@2 JSON")
    p.add_argument("--smt", action="store_true", help="also run the prover's Z3 queries (slower; check --smt derives its own)")
    p.add_argument("--smt-out", metavar="DIR", help="also write every SMT query as an SMT-LIB 2 file "
                   "(DIR/NNNN-CLAIM.smt2, unsat = holds) for any solver, without running them")
    add_executor_arguments(p)
    return p


def run(args) -> int:
    from ..provers.write import certify, smt_queries
    from ..layout import check_size
    from ..formats import InputError, load_json, output_file, output_folder, write_json
    from ..models import MaxoutNet, Transformer

    output_file(args.output, "-o")
    if args.smt_out is not None and output_folder(args.smt_out, "--smt-out").resolve() == Path(args.output).resolve():
        raise InputError("--smt-out", "", f"is the certificate's own path {args.output}")
    start = time.perf_counter()
    docs = []
    for path, cls in ((args.net, MaxoutNet), (args.transformer, Transformer)):
        doc = load_json(path)
        if doc.dict().get("format") != cls.FORMAT:
            raise InputError(path, "format", f"expected {cls.FORMAT!r}")
        docs.append((cls.from_json(doc), doc.value))
    (net, net_json), (tf, tf_json) = docs
    try:
        check_size(net)
    except ValueError as e:
        raise InputError(args.net, "", str(e)) from None
    with make_executor(args.workers, args.scheduler) as executor:
        try:
            cert = certify(net, tf, smt=args.smt, net_json=net_json, tf_json=tf_json, executor=executor)
        except ExecutorError as e:
            return lost_work("certify", e)
    for claim in cert.document["claims"]:
        problems = cert.problems[claim["id"]]
        print(f"{claim['id']} {'FAILS: ' + problems[0] if problems else 'proved'}")
    if cert.smt:
        print(f"{sum(a == 'unsat' for a in cert.smt.values())} of {len(cert.smt)} prover SMT queries unsat")
    seconds = time.perf_counter() - start
    if not cert.holds:
        print(f"not certified ({seconds:.2f} s); nothing written")
        return 1
    if args.smt_out:
        _write_smtlib(Path(args.smt_out), smt_queries(net, tf))
    write_json(args.output, cert.document)
    print(f"wrote {args.output} in {seconds:.2f} s")
    return 0


def _write_smtlib(folder: Path, groups: dict[str, list]) -> None:
    from ..formats import write_text
    folder.mkdir(parents=True, exist_ok=True)
    queries = [q for qs in groups.values() for q in qs]
    for n, q in enumerate(queries):
        write_text(folder / f"{n:04d}-{q.claim}.smt2", f"; {q.name}\n; the claim holds iff this is unsat\n{q.smtlib}")
    print(f"wrote {len(queries)} SMT-LIB 2 queries to {folder}/")
