"""The README as written, from a wheel: the wheel installed in a fresh venv by the CI
workflow's install step (no network: ``--no-deps``, the test venv's packages on its path), every command of the quickstart and of "Use in
CI" run by bash from a folder outside the clone into which ``examples/`` was copied with ``cp -r``,
and every option of the commands table listed by that command's ``--help``.  The CI block's
``exactform prove`` is the suite's one run of the eight proof scripts (what ``make demo`` ends
with): every claim is proved and every certificate it writes passes the independent checker."""
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()

pytestmark = pytest.mark.slow            # every test here runs the wheel installed in a fresh venv


def block(after: str) -> list[str]:
    """The shell commands of the first ``sh`` block after ``after`` (continuations joined)."""
    text = README[README.index(after):]
    body = text[text.index("```sh\n") + 6:]
    body = body[:body.index("```")]
    return [line.strip() for line in body.replace("\\\n", " ").splitlines() if line.strip()]


OFFLINE = """
pip() { python -m pip "$@" --no-deps --no-index -q; }      # no network here: the test venv's packages
pytest() { python -m pytest -p no:cacheprovider "$@"; }    # the venv's python, so the wheel's plugin
"""


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory):
    """(environment, outside folder): a fresh venv on PATH, into which the CI workflow's install
    step (``pip install "$EXACTFORM"``, examples/ci/exactform.yml) installed the wheel."""
    from support import environment, workflow_step as step
    tmp = tmp_path_factory.mktemp("readme")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp / "venv")], check=True, timeout=120)
    site = next((tmp / "venv" / "lib").glob("python3*/site-packages"))
    (site / "test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")   # no network here
    outside = tmp / "elsewhere"
    outside.mkdir()
    env = {k: v for k, v in environment(EXACTFORM=str(wheel)).items() if k != "PYTHONPATH"}
    env["PATH"] = f"{tmp / 'venv' / 'bin'}{os.pathsep}{os.environ['PATH']}"
    install = [line for line in step("Install exactform").splitlines() if "$EXACTFORM" in line]
    assert install == ['pip install "$EXACTFORM"             # the check needs no extra; pytest for the second step']
    done = bash(OFFLINE + install[0], env, outside)
    assert done.returncode == 0, done.stdout + done.stderr
    where = subprocess.run(["python", "-c", "import exactform; print(exactform.__file__)"], cwd=outside, env=env,
                           capture_output=True, text=True)
    assert where.stdout.startswith(str(site)), where.stdout + where.stderr
    return env, outside


def bash(command: str, env, cwd, timeout=600):
    return subprocess.run(["bash", "-e", "-o", "pipefail", "-c", command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_quickstart_as_written(venv):
    env, outside = venv
    commands = block("From a wheel or an editable install")
    assert commands[0].startswith("pip install") and "net.onnx" in commands[1]
    for command in commands[1:]:                         # pip install: done by the fixture, from the wheel
        done = bash(command, env, outside)
        assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
    assert "C1 holds, C2 holds, C3 holds, C4 holds" in done.stdout, done.stdout      # the check's verdict


@pytest.fixture(scope="module")
def ci_block(venv):
    """Every command of "Use in CI", in order, after ``cp -r`` of the clone's examples."""
    env, outside = venv
    copied = bash(f"cp -r {ROOT / 'examples'} examples", env, outside)
    assert copied.returncode == 0, copied.stderr
    runs = [(command, bash(OFFLINE + command, env, outside, timeout=1800)) for command in block("## Use in CI")]
    return runs, outside


def test_ci_commands_as_written(ci_block):
    runs, _ = ci_block
    for command, done in runs:
        assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
    assert [command.split()[1] for command, _ in runs] == ["check", "check", "prove", "--exactform-certs", "equiv",
                                                            "check"]


def test_every_claim_is_proved_and_its_certificates_check(ci_block, venv):
    """The CI block's ``exactform prove --out proofs-out --junit report.xml`` (C1–C8 and Coq)."""
    env, outside = venv
    cases = list(ET.parse(outside / "report.xml").getroot().iter("testcase"))
    verdicts = {case.get("name"): case.find("failure") is None and case.find("error") is None for case in cases}
    assert all(f"C{i}" in " ".join(verdicts) for i in range(1, 9)) and all(verdicts.values()), verdicts
    coq = next(case.findtext("system-out") or "" for case in cases if case.get("name") == "Coq")
    assert ("Coq PROVED" if shutil.which("coqc") else "not checked here") in coq, coq
    certificates = list((outside / "proofs-out").rglob("*cert*.json*"))
    assert certificates
    checked = bash("exactform check proofs-out", env, outside)
    assert checked.returncode == 0 and f"in {len(certificates)} of {len(certificates)} certificates" in checked.stdout, \
        checked.stdout[-2000:] + checked.stderr[-2000:]


def test_every_option_of_the_commands_table_is_in_its_help(venv):
    env, outside = venv
    table = README[README.index("| command | what it does |"):README.index("Exit codes:")]
    rows = re.findall(r"^\| `exactform ([a-z-]+)([^`]*)`", table, re.M)
    assert len(rows) >= 14
    for command, usage in rows:
        done = bash(f"exactform {command} --help", env, outside)
        assert done.returncode == 0, done.stderr
        for option in re.findall(r"(--[a-z][a-z-]*|(?<![\w-])-[a-z]\b)", usage):
            assert option in done.stdout, (command, option)


def test_the_ci_workflow_steps_from_the_wheel(ci_block, venv):
    """The workflow's check and pytest steps, as written, in the folder the README's commands ran in."""
    from support import workflow_step as step
    env, outside = venv
    for name in ("Check each certificate", "Or as pytest items"):
        done = bash(OFFLINE + step(name), env, outside)
        assert done.returncode == 0, (name, done.stdout[-2000:], done.stderr[-2000:])
    assert sorted(p.name for p in (outside / "junit").iterdir()) == ["abs.xml", "maxout_2d.xml", "relu_net.xml"]
    assert re.search(r"\b(\d+) passed", done.stdout), done.stdout[-500:]


def test_the_installed_package_is_typed(venv, wheel, tmp_path):
    """From the wheel: ``py.typed`` and ``__init__.pyi`` ship, and ``mypy --strict`` on the API example
    (outside the clone) sees the installed package's types."""
    import zipfile
    names = zipfile.ZipFile(wheel).namelist()
    assert "exactform/py.typed" in names and "exactform/__init__.pyi" in names
    env, _ = venv
    shutil.copy(ROOT / "examples" / "api.py", tmp_path / "api.py")
    (tmp_path / "mypy.ini").write_text("[mypy]\n[mypy-torch.*]\nfollow_imports = skip\n")   # torch: an extra
    done = bash("python -m mypy --strict --follow-imports=silent --config-file mypy.ini --cache-dir cache api.py "
                "&& python -c 'import exactform, inspect; print(inspect.getsourcefile(exactform.load_maxout))'",
                env, tmp_path)
    assert done.returncode == 0 and "Success" in done.stdout and "site-packages" in done.stdout, done.stdout + done.stderr
