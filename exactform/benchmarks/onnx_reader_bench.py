"""The checker's standard-library ONNX reader (``checker/onnx_reader.py``) against onnx on every ACAS Xu
network: each initializer decoded by the reader equals ``onnx.numpy_helper.to_array``'s exactly, and the
network it reads (input count, ReLU layers, read-out) equals the Maxout net exactform's importer builds
from onnx's parse.  Prints one line per mismatch and the CPU times; exits 1 on any mismatch.
Usage: ``python -m exactform.benchmarks onnx_reader`` (the repository's data/acasxu), or
``python exactform/benchmarks/onnx_reader_bench.py FOLDER``."""
import sys
import time
from fractions import Fraction
from pathlib import Path

import onnx
from onnx import numpy_helper

from exactform.checker.onnx_reader import Wire, read_file, read_onnx
from exactform.checker.reader import read_maxout
from exactform.importers import import_network

FOLDER = Path(__file__).resolve().parents[2] / "data" / "acasxu"


def tensors_equal(path: Path) -> bool:
    """Every initializer, decoded by the reader's wire format, is onnx's exactly (shape and values)."""
    wire = Wire(path)
    graph = wire.message(wire.one(wire.message(read_file(path), "model", {7: "graph"}), 7, 2, "graph"), "graph", {5: "i"})
    ours = [wire.tensor(data, "initializer") for data in wire.many(graph, 5, "initializer")]
    theirs = [numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer]
    return [(c.shape, c.values) for c in ours] == [(a.shape, [Fraction(float(x)) for x in a.ravel()]) for a in theirs]


def main(folder: Path) -> int:
    files = sorted(folder.glob("*.onnx"))
    clocks = {"reader": 0.0, "onnx + importer": 0.0}
    misses = 0
    for path in files:
        start = time.process_time()
        network = read_onnx(path)
        clocks["reader"] += time.process_time() - start
        start = time.process_time()
        model = read_maxout(import_network(str(path), [(-1, 1)] * network[0]).to_json(), "net")
        clocks["onnx + importer"] += time.process_time() - start
        same = network == (len(model.box), model.layers, model.readout) and tensors_equal(path)
        if not same:
            misses += 1
            print(f"{path.name}: the reader's network or tensors differ from onnx's")
    times = ", ".join(f"{k} {t:.2f} CPU s ({1000 * t / max(len(files), 1):.0f} ms a network)" for k, t in clocks.items())
    print(f"{len(files) - misses} of {len(files)} networks in {folder} read equal to onnx's; {times}")
    return 1 if misses or not files else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else FOLDER))
