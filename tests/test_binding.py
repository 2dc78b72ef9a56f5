"""``exactform check V1CERT --net NET --property PROP`` binds a verification certificate to the user's files
by content: the checker reads an ONNX or ``.nnet`` network itself (``checker/onnx_reader.py``,
``checker/nnet_reader.py``, standard library) and compares it exactly with the embedded network; a SHA-256
alone never binds."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ACAS = ROOT / "data" / "acasxu"
ONNX_1_1 = ACAS / "ACASXU_run2a_1_1_batch_2000.onnx"
NNET_1_1 = ACAS / "ACASXU_run2a_1_1_batch_2000.nnet"
PROPS = ROOT / "exactform" / "benchmarks" / "data" / "acasxu_vnnlib"


def cli(*args):
    return subprocess.run([sys.executable, "-m", "exactform", *map(str, args)], capture_output=True, text=True)


def constant_net(inputs: int, outputs: list) -> dict:
    """A network whose outputs are the constants ``outputs`` on [-1, 1]^inputs (one dead unit)."""
    return {"format": "exactform/maxout@1", "input_dim": inputs,
            "domain": {"lower": ["-1"] * inputs, "upper": ["1"] * inputs},
            "layers": [{"weight": [[["0"] * inputs]], "bias": [["0"]]}],
            "readout": {"weight": [["0"] for _ in outputs], "bias": [str(y) for y in outputs]}}


def forged(tmp, net_file: Path, prop_file: Path) -> Path:
    """A valid V1 certificate about a constant network (Y_0 never the largest output), its sources and
    statement rewritten to name ``net_file`` and ``prop_file`` with their true SHA-256."""
    from exactform.checker.verify_cert import sha256_file, statement
    fake = tmp / "constant.json"
    fake.write_text(json.dumps(constant_net(5, [0, 1, 1, 1, 1])))
    r = cli("verify", fake, prop_file, "--cert", tmp / "forged.json")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp / "forged.json").read_text())
    claim = doc["claims"][0]
    sources = {"net": {"file": net_file.name, "sha256": sha256_file(net_file)},
               "property": {"file": prop_file.name, "sha256": sha256_file(prop_file)}}
    claim["evidence"]["sources"] = sources
    claim["statement"] = statement(sources, len(claim["evidence"]["property"]["disjuncts"]))
    (tmp / "forged.json").write_text(json.dumps(doc))
    return tmp / "forged.json"


def test_constant_network_with_the_onnx_files_hash_is_not_about_that_file(tmp_path):
    """A proof about a constant network that records the ONNX file's SHA-256 is still a proof about the
    constant network: bound to the ONNX file, the checker reads it, compares, and refuses (exit 1)."""
    prop = PROPS / "prop_2.vnnlib"
    cert = forged(tmp_path, ONNX_1_1, prop)
    assert cli("check", cert).returncode == 0                       # valid about what it embeds
    r = cli("check", cert, "--net", ONNX_1_1, "--property", prop)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"the embedded network is not the one in {ONNX_1_1}" in r.stdout, r.stdout
