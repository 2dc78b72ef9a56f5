"""The CI recipe works as written (issue 13): the check step of examples/ci/exactform.yml, run by
bash with the workflow's own environment, passes on the golden certificates and fails when one is
not bound to its model files."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / "examples" / "ci" / "exactform.yml"


def step(name_start: str) -> str:
    """The ``run: |`` script of the step whose name starts with ``name_start``."""
    text = WORKFLOW.read_text()
    block = text[text.index(f"- name: {name_start}"):]
    body = block[block.index("run: |") + len("run: |"):].splitlines()[1:]
    indent = len(body[0]) - len(body[0].lstrip())
    lines = []
    for line in body:
        if line.strip() and len(line) - len(line.lstrip()) < indent:
            break
        lines.append(line[indent:])
    return "\n".join(lines)


def environment(**overrides) -> dict:
    text = WORKFLOW.read_text()
    env = {k: v.strip('"') for k, v in re.findall(r'^  ([A-Z]+): ("[^"]*"|\S+)', text, re.M)}
    return {**os.environ, **env, **overrides, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def test_check_step_passes_on_the_golden_certificates(tmp_path):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    done = subprocess.run(["bash", "-e", "-c", step("Check each certificate")], cwd=tmp_path, env=environment(),
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("(C1-C4)") == len(list((ROOT / "examples/ci/golden").glob("*.cert.json")))
    assert sorted(p.name for p in (tmp_path / "junit").iterdir())


def test_check_step_fails_on_an_unbound_certificate(tmp_path):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    models = tmp_path / "examples" / "ci" / "models"
    shutil.copy(models / "relu_net.tf.json", models / "abs.tf.json")        # a different Transformer
    done = subprocess.run(["bash", "-e", "-c", step("Check each certificate")], cwd=tmp_path, env=environment(),
                          capture_output=True, text=True)
    assert done.returncode == 1 and "binding" in done.stdout, done.stdout + done.stderr


def e1_certificate(path: Path) -> None:
    """A valid E1 certificate (|x| = relu(x) + relu(−x)) written to ``path``."""
    from exactform.formats import write_json
    from exactform.prove.equiv import certificate, compare
    from test_certificate import maxout
    A = maxout([[[([1], 0), ([-1], 0)]]], [([1], 0)], [-1], [1])
    B = maxout([[[([1], 0), ([0], 0)], [([-1], 0), ([0], 0)]]], [([1, 1], 0)], [-1], [1])
    box = list(zip(A.domain.lower, A.domain.upper))
    write_json(path, certificate(A.to_json(), B.to_json(), box, None, compare(A.to_json(), B.to_json(), box, None).tree))


def test_check_step_fails_on_an_e1_certificate_in_place_of_a_golden_one(tmp_path):
    """Issue 22, finding 2: any valid E1 certificate put in place of relu_net.cert.json used to pass."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    e1_certificate(tmp_path / "examples/ci/golden/relu_net.cert.json")
    done = subprocess.run(["bash", "-e", "-c", step("Check each certificate")], cwd=tmp_path, env=environment(),
                          capture_output=True, text=True)
    assert done.returncode == 1 and "is bound with --a FILE --b FILE" in done.stdout, done.stdout + done.stderr
