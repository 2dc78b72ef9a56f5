"""certify + check: an ACAS Xu-size ReLU net (5→6×50→5) and 5→w→w→5 ReLU nets, w = 50, 100, 200.

Targets: certify + check of the ACAS-size net under 5 s in total with check faster than
certify; certification time about linear in the number of parameters (the ratio column: time
per Maxout parameter relative to the smallest net).  Both are timed as the CLI runs them, files
included (read, prove, write; read, recompute).
"""
import contextlib
import io
import random
import tempfile
import time
from pathlib import Path

from exactform.benchmarks.timing import table
from exactform.cli import main
from exactform.construct.maxout_to_transformer import compile_maxout
from exactform.formats import write_json
from exactform.proofs.nets import relu_net


def timed(argv: list[str]) -> float:
    """CPU seconds of one in-process CLI run (the machine is shared: wall time would count others)."""
    start = time.process_time()
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    assert code == 0, argv
    return time.process_time() - start


def measure(name: str, dims: list[int], outputs: int, folder: Path) -> list:
    net = relu_net(random.Random(0), dims, outputs)
    paths = [str(folder / f"{name}.{kind}.json") for kind in ("net", "tf", "cert")]
    write_json(paths[0], net.to_json())
    write_json(paths[1], compile_maxout(net).to_json())
    certify = timed(["certify", paths[0], paths[1], "-o", paths[2]])
    check = timed(["check", paths[2]])
    return [name, net.parameter_count(), certify, check, Path(paths[2]).stat().st_size]


def run() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure("acas 5→6×50→5", [5] + [50] * 6, 5, Path(tmp))]
        rows += [measure(f"5→{w}→{w}→5", [5, w, w], 5, Path(tmp)) for w in (50, 100, 200)]
    print(table(["net", "maxout params", "certificate bytes", "certify cpu s", "check cpu s", "check/certify",
                 "certify s per param (ratio to w=50)", "check s per certificate byte (ratio to w=50)"],
                [[n, p, b, f"{c:.2f}", f"{k:.2f}", f"{k / c:.2f}", f"{c / p / (rows[1][2] / rows[1][1]):.2f}",
                  f"{k / b / (rows[1][3] / rows[1][4]):.2f}"] for n, p, c, k, b in rows]))
    name, _, c, k, _ = rows[0]
    print(f"\n{name}: certify + check = {c + k:.2f} s (target < 5 s), check {'faster' if k < c else 'SLOWER'} "
          "than certify")


if __name__ == "__main__":
    run()
