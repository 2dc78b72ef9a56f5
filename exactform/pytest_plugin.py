"""A pytest plugin: ``*.cert.json`` files become tests, one item per claim, checked by the
independent checker (``exactform.checker.command.check_file``, standard library only); a failing claim
fails with the checker's message, a file that is not a certificate (exit 2) fails as one item
named ``certificate`` with the checker's one-line error.

Off unless asked, so that it never collects anything by accident::

    pytest --exactform-certs golden/            # or, in pytest.ini / pyproject:
    [tool.pytest.ini_options]
    exactform_certs = true
    exactform_smt = false                       # true: also prove the phase obligations with Z3
    exactform_models = examples examples/ci/models   # bind NAME.cert.json to NAME.json and NAME.tf.json
                                                     # (E1: NAME.a.json and NAME.b.json; V1: NAME.vnnlib
                                                     # and NAME.net.json, NAME.onnx or NAME.nnet)

Registered through the entry point ``[project.entry-points.pytest11] exactform =
"exactform.pytest_plugin"`` (or ``-p exactform.pytest_plugin`` without it).
"""
from __future__ import annotations

from pathlib import Path

import pytest

SUFFIX = ".cert.json"


def pytest_addoption(parser):
    group = parser.getgroup("exactform", "exactform certificates")
    group.addoption("--exactform-certs", action="store_true", default=None,
                    help=f"collect {SUFFIX} files as tests (one item per claim)")
    group.addoption("--exactform-smt", action="store_true", default=None,
                    help="also prove the phase obligations with Z3 (queries derived from the models)")
    group.addoption("--exactform-models", action="append", metavar="DIR", default=None,
                    help="bind NAME.cert.json to NAME.json (Maxout) and NAME.tf.json (Transformer), NAME.a.json and "
                         "NAME.b.json (E1), or NAME.vnnlib and NAME.net.json|.onnx|.nnet (V1), looked up in these "
                         "folders in order (repeatable); a missing model file fails the certificate")
    parser.addini("exactform_certs", type="bool", default=False, help=f"collect {SUFFIX} files as tests")
    parser.addini("exactform_models", type="linelist", default=[], help="folders of the bound model files")
    parser.addini("exactform_smt", type="bool", default=False, help="also prove the phase obligations with Z3")


def _flag(config, name: str) -> bool:
    value = config.getoption(f"--exactform-{name}")
    return bool(config.getini(f"exactform_{name}") if value is None else value)


def pytest_collect_file(file_path, parent):
    if file_path.name.endswith(SUFFIX) and _flag(parent.config, "certs"):
        return CertificateFile.from_parent(parent, path=file_path)
    return None


def _bound(config, cert) -> tuple[dict, list]:
    """The model files bound to NAME.cert.json ({role: path}), and the names not found: NAME.a.json and
    NAME.b.json for an E1 certificate when both exist; NAME.vnnlib and the first of NAME.net.json, NAME.onnx
    and NAME.nnet for a V1 certificate when NAME.vnnlib exists; else NAME.json (Maxout) and NAME.tf.json."""
    folders = config.getoption("--exactform-models") or [str(config.rootpath / d) for d in config.getini("exactform_models")]
    if not folders:
        return {}, []
    name = cert.name[:-len(SUFFIX)]
    find = lambda model: next((p for p in (Path(d) / model for d in folders) if p.is_file()), None)  # noqa: E731
    roles = {"a": [f"{name}.a.json"], "b": [f"{name}.b.json"]}
    if find(f"{name}.vnnlib"):
        roles = {"net": [f"{name}.net.json", f"{name}.onnx", f"{name}.nnet"], "property": [f"{name}.vnnlib"]}
    elif not all(find(m[0]) for m in roles.values()):
        roles = {"maxout": [f"{name}.json"], "transformer": [f"{name}.tf.json"]}
    bound = {role: next(filter(None, map(find, models)), None) for role, models in roles.items()}
    return bound, [" or ".join(roles[role]) for role, path in bound.items() if path is None]


class CertificateFile(pytest.File):
    def collect(self):
        from .checker.command import check_file
        bound, missing = _bound(self.config, self.path)
        if missing:
            yield ClaimItem.from_parent(self, name="binding", ok=False,
                                        message=f"no {' or '.join(missing)} in the --exactform-models folders")
            return
        result = check_file(self.path, _flag(self.config, "smt"), **bound)
        if result.code == 2 or not result.claims:
            yield ClaimItem.from_parent(self, name="certificate", ok=False, message=result.known)
            return
        for cid, ok, message in result.claims:
            yield ClaimItem.from_parent(self, name=cid, ok=ok, message=message)


class CertificateFailure(Exception):
    pass


class ClaimItem(pytest.Item):
    def __init__(self, *, ok: bool, message: str, **kwargs):
        super().__init__(**kwargs)
        self.ok, self.message = ok, message

    def runtest(self):
        if not self.ok:
            raise CertificateFailure(self.message)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, CertificateFailure):
            return f"{self.path.name}::{self.name}: {self.message}"
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, ""
