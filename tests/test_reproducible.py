"""Reproducibility: certifying the same pair twice gives byte-identical certificates,
whatever PYTHONHASHSEED is and whatever the key order of the input JSON; nothing that varies
between runs (times, hosts, paths) is in a certificate."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

from exactform.cli import main

ROOT = Path(__file__).parent.parent
EXAMPLES = ROOT / "examples"


def shuffled(obj, rng: random.Random):
    """The same JSON value with every object's keys in a random order."""
    if isinstance(obj, dict):
        keys = list(obj)
        rng.shuffle(keys)
        return {k: shuffled(obj[k], rng) for k in keys}
    if isinstance(obj, list):
        return [shuffled(v, rng) for v in obj]
    return obj


def certify(tmp: Path, net: Path, name: str, smt: bool = False) -> bytes:
    tf, cert = tmp / f"{name}.tf.json", tmp / f"{name}.cert.json"
    assert main(["compile", str(net), "-o", str(tf)]) == 0
    assert main(["certify", str(net), str(tf), "-o", str(cert)] + (["--smt"] if smt else [])) == 0
    return cert.read_bytes()


def test_certify_twice_is_byte_identical(tmp_path, capsys):
    for example in ("relu_net.json", "maxout_2d.json"):
        a = certify(tmp_path, EXAMPLES / example, "a")
        b = certify(tmp_path, EXAMPLES / example, "b")
        assert a == b
        assert str(tmp_path).encode() not in a and b"seconds" not in a and b"host" not in a


def test_key_order_and_whitespace_of_the_input_do_not_matter(tmp_path, capsys):
    reference = certify(tmp_path, EXAMPLES / "maxout_2d.json", "ref")
    doc = json.loads((EXAMPLES / "maxout_2d.json").read_text())
    for seed in range(3):
        net = tmp_path / f"net{seed}.json"
        net.write_text(json.dumps(shuffled(doc, random.Random(seed)), indent=seed))
        assert certify(tmp_path, net, f"s{seed}") == reference
    # a transformer file with shuffled keys embeds the same canonical transformer
    tf = tmp_path / "tf.json"
    main(["compile", str(EXAMPLES / "maxout_2d.json"), "-o", str(tf)])
    tf.write_text(json.dumps(shuffled(json.loads(tf.read_text()), random.Random(7)), indent=1))
    cert = tmp_path / "shuffled.cert.json"
    assert main(["certify", str(EXAMPLES / "maxout_2d.json"), str(tf), "-o", str(cert)]) == 0
    assert cert.read_bytes() == reference


def test_certificates_do_not_depend_on_the_hash_seed(tmp_path):
    """Three fresh processes with different PYTHONHASHSEED (set iteration order differs), with the
    prover's SMT queries run (``--smt``): same bytes, and the same as without ``--smt`` (the
    queries are reported, never embedded: ``check --smt`` derives its own)."""
    script = ("import sys; from exactform.cli import main; "
              "sys.exit(main(['compile', sys.argv[1], '-o', sys.argv[2]]) or "
              "main(['certify', sys.argv[1], sys.argv[2], '-o', sys.argv[3], '--smt']))")
    outputs = []
    for seed in ("0", "1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        tf, cert = tmp_path / f"tf{seed}.json", tmp_path / f"c{seed}.cert.json"
        done = subprocess.run([sys.executable, "-c", script, str(EXAMPLES / "abs.json"), str(tf), str(cert)],
                              env=env, capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        outputs.append(cert.read_bytes())
    assert outputs[0] == outputs[1] == outputs[2]
    assert b'smt' not in outputs[0] and b'"hints"' in outputs[0]
    assert outputs[0] == certify(tmp_path, EXAMPLES / "abs.json", "plain")
