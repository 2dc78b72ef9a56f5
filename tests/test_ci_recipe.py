"""The CI recipe works as written: the check step of examples/ci/exactform.yml, run by
bash with the workflow's own environment, passes on the golden certificates and fails when one is
not bound to its model files."""
import shutil
import subprocess
from pathlib import Path

from support import e1_certificate, environment, workflow_step

ROOT = Path(__file__).resolve().parents[1]


def test_check_step_passes_on_the_golden_certificates(tmp_path):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    done = subprocess.run(["bash", "-e", "-c", workflow_step("Check each certificate")], cwd=tmp_path, env=environment(),
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("(C1-C4)") == len(list((ROOT / "examples/ci/golden").glob("*.cert.json")))
    assert sorted(p.name for p in (tmp_path / "junit").iterdir())


def test_check_step_fails_on_an_unbound_certificate(tmp_path):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    models = tmp_path / "examples" / "ci" / "models"
    shutil.copy(models / "relu_net.tf.json", models / "abs.tf.json")        # a different Transformer
    done = subprocess.run(["bash", "-e", "-c", workflow_step("Check each certificate")], cwd=tmp_path, env=environment(),
                          capture_output=True, text=True)
    assert done.returncode == 1 and "binding" in done.stdout, done.stdout + done.stderr


def test_check_step_fails_on_an_e1_certificate_in_place_of_a_golden_one(tmp_path):
    """Any valid E1 certificate put in place of relu_net.cert.json is refused, not passed."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    e1_certificate(tmp_path / "examples/ci/golden/relu_net.cert.json")
    done = subprocess.run(["bash", "-e", "-c", workflow_step("Check each certificate")], cwd=tmp_path, env=environment(),
                          capture_output=True, text=True)
    assert done.returncode == 1 and "is bound with --a FILE --b FILE" in done.stdout, done.stdout + done.stderr
