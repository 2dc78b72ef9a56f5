"""The pytest plugin: ``*.cert.json`` files become one test item per claim, only when
asked (``--exactform-certs`` or the ``exactform_certs`` ini setting)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

pytest_plugins = ["pytester"]

GOLDEN = Path(__file__).parent.parent / "examples" / "ci" / "golden"
PLUGIN = ["-p", "exactform"]
"""The plugin by its entry-point name (``[project.entry-points.pytest11]``): pytest loads it once."""


def test_registered_as_a_pytest11_entry_point():
    from importlib.metadata import entry_points
    assert [e.value for e in entry_points(group="pytest11") if e.name == "exactform"] == ["exactform.pytest_plugin"]


def _copy(pytester, name="abs.cert.json"):
    target = pytester.path / name
    shutil.copy(GOLDEN / name, target)
    return target


def test_not_collected_unless_asked(pytester):
    _copy(pytester)
    result = pytester.runpytest_inprocess(*PLUGIN)
    result.assert_outcomes()        # nothing collected, nothing run
    assert "no tests ran" in result.stdout.str()


def test_one_item_per_claim(pytester):
    _copy(pytester)
    _copy(pytester, "relu_net.cert.json")
    result = pytester.runpytest_inprocess(*PLUGIN, "--exactform-certs", "-v")
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(["*abs.cert.json::C1 PASSED*", "*relu_net.cert.json::C4 PASSED*"])


def test_ini_setting_and_failure_message(pytester):
    doc = json.loads((GOLDEN / "abs.cert.json").read_text())
    doc["claims"][1]["statement"] += " and more"                # forged C2 statement
    (pytester.path / "bad.cert.json").write_text(json.dumps(doc))
    hint = json.loads((GOLDEN / "abs.cert.json").read_text())
    phases = hint["hints"]["phases"][0][0]
    phases[next(u for u, p in enumerate(phases) if p >= 0)] = -2  # an identity pair hint turned into "on"
    (pytester.path / "hint.cert.json").write_text(json.dumps(hint))
    (pytester.path / "junk.cert.json").write_text("{not json")
    pytester.makeini("[pytest]\nexactform_certs = true\n")
    result = pytester.runpytest_inprocess(*PLUGIN)
    result.assert_outcomes(passed=4, failed=5)
    out = result.stdout.str()
    assert "bad.cert.json::C2: the certificate's statement is not the checker's" in out
    assert "hint.cert.json::C3: block 0 token 0" in out
    assert "junk.cert.json::certificate:" in out and "not JSON" in out


def test_binding_to_model_folders(pytester):
    """``--exactform-models``: each certificate is checked against its own model files."""
    _copy(pytester)
    root = GOLDEN.parent.parent
    result = pytester.runpytest_inprocess(*PLUGIN, "--exactform-certs", "--exactform-models", str(root),
                                          "--exactform-models", str(GOLDEN.parent / "models"), "-v")
    result.assert_outcomes(passed=4)
    other = pytester.path / "models"
    other.mkdir()
    shutil.copy(root / "relu_net.json", other / "abs.json")                 # the wrong Maxout net
    shutil.copy(GOLDEN.parent / "models" / "abs.tf.json", other / "abs.tf.json")
    result = pytester.runpytest_inprocess(*PLUGIN, "--exactform-certs", "--exactform-models", str(other))
    result.assert_outcomes(passed=4, failed=1)
    assert "abs.cert.json::binding: the certificate's maxout is not the model in" in result.stdout.str()
    result = pytester.runpytest_inprocess(*PLUGIN, "--exactform-certs", "--exactform-models", str(pytester.path / "none"))
    result.assert_outcomes(failed=1)
    assert "no abs.json or abs.tf.json" in result.stdout.str()


def test_an_e1_certificate_in_place_of_a_golden_one_fails(pytester):
    """Bound to NAME.json / NAME.tf.json, an E1 certificate is refused, not passed."""
    from support import e1_certificate
    e1_certificate(pytester.path / "abs.cert.json")
    root = GOLDEN.parent.parent
    result = pytester.runpytest_inprocess(*PLUGIN, "--exactform-certs", "--exactform-models", str(root),
                                          "--exactform-models", str(GOLDEN.parent / "models"))
    result.assert_outcomes(failed=1)
    assert "is bound with --a FILE --b FILE" in result.stdout.str()
