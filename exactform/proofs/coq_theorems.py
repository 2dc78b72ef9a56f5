"""The paper's theorems proved once for all in Coq (``proofs/coq/``, see its README.md): every file
of ``_CoqProject`` is checked by ``coqc``, and ``Print Assumptions`` of each main theorem may name
only the axioms of Coq's classical real numbers (``ALLOWED_AXIOMS``).  Standard library only.

Run: ``python proofs/coq_theorems.py [--json]``; exit 0 when every file checks and every main
theorem rests only on those axioms, 1 when not, ``NOT_CHECKED`` (3) when ``coqc`` is absent:
then nothing is checked here, and it says so (``make proofs-coq`` installs Coq).
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "coq"
LIBRARY = "Exactform"
"""The logical name of ``proofs/coq/`` (``-Q . Exactform`` in ``_CoqProject``)."""
NOT_CHECKED = 3

THEOREMS = {
    "C1": {"C1": ["C1_hardmax_returns_max"]},
    "C2": {"C3": ["C2_pair", "C2_off"], "C2": ["C2_pieces_block"]},
    "C3": {"C3": ["C3_construction_computes_maxout", "C3_on_box", "construction_under_rule"],
           "Bounds": ["shifts_ok_sound", "C3_checked"]},
    "C4": {"C4": ["C4_sizes", "C4_params_polynomial", "C4_params_vs_maxout"]},
    "C5": {"C5": ["C5_lemma_a", "C5_head_bounds", "C5_head_perturbation", "C5_max_perturbation", "C5_head_error"],
           "C5Net": ["C5_network", "C5_err_scale", "C5_network_eps", "C5_network_lambda"],
           "SoftBounds": ["C5_checked"]},
    "C7": {"C7": ["C7_tent_pieces", "C7_tent_breakpoints", "C7_tent_net"]},
}
"""Per claim: its Coq modules, each with its main theorems."""


def theorem_names(theorems: dict = THEOREMS) -> list[str]:
    """Every main theorem, claim by claim."""
    return [name for modules in theorems.values() for names in modules.values() for name in names]

ALLOWED_AXIOMS = frozenset({
    "ClassicalDedekindReals.sig_forall_dec",      # the real numbers of Coq's standard library:
    "ClassicalDedekindReals.sig_not_dec",         # limited omniscience used to build R
    "FunctionalExtensionality.functional_extensionality_dep",
    "Classical_Prop.classic",                     # excluded middle (ln, via the classical reals)
})
"""The standard axioms of Coq's classical reals (``Coq.Reals``); nothing else is accepted."""

FORBIDDEN = re.compile(r"\b(Admitted|admit|Axiom|Axioms|Parameter|Conjecture)\b")


class CoqError(Exception):
    """A file does not check, or a theorem rests on an axiom outside ``ALLOWED_AXIOMS``."""


def coqc() -> str | None:
    return shutil.which("coqc")


def files(source: Path = SOURCE) -> list[str]:
    """The ``.v`` files of ``_CoqProject``, in dependency order."""
    return [line.strip() for line in (source / "_CoqProject").read_text().splitlines() if line.strip().endswith(".v")]


def build(source: Path, build_dir: Path) -> None:
    """Copy the files into ``build_dir`` and check each with ``coqc`` (``CoqError`` on the first
    that fails, or one that contains ``Admitted``, ``admit`` or a declared axiom)."""
    for name in files(source):
        text = (source / name).read_text()
        bad = FORBIDDEN.search(re.sub(r"\(\*.*?\*\)", "", text, flags=re.S))
        if bad:
            raise CoqError(f"{name}: {bad.group(0)!r} is not accepted")
        (build_dir / name).write_text(text)
        done = subprocess.run(["coqc", "-Q", ".", LIBRARY, name], cwd=build_dir, capture_output=True, text=True)
        if done.returncode:
            raise CoqError(f"{name} does not check: {(done.stdout + done.stderr).strip()[-2000:]}")


def assumptions(build_dir: Path, theorems: dict = THEOREMS) -> dict[str, list[str]]:
    """``Print Assumptions`` of every main theorem: the axioms each rests on."""
    modules = sorted({module for ms in theorems.values() for module in ms})
    names = theorem_names(theorems)
    script = f"From {LIBRARY} Require Import {' '.join(modules)}.\n" + \
        "".join(f'Redirect "assumptions_{name}" Print Assumptions {name}.\n' for name in names)
    (build_dir / "Assumptions.v").write_text(script)
    done = subprocess.run(["coqc", "-Q", ".", LIBRARY, "Assumptions.v"], cwd=build_dir, capture_output=True, text=True)
    if done.returncode:
        raise CoqError(f"Print Assumptions failed: {(done.stdout + done.stderr).strip()[-2000:]}")
    out = {}
    for name in names:
        text = (build_dir / f"assumptions_{name}.out").read_text()
        if "Closed under the global context" in text:
            out[name] = []
        elif text.lstrip().startswith("Axioms:"):
            out[name] = re.findall(r"^([A-Za-z_][\w.']*)\s*(?::|$)", text.split("Axioms:", 1)[1], re.M)
        else:
            raise CoqError(f"unexpected Print Assumptions output for {name}: {text[:200]!r}")
    return out


def check(source: Path = SOURCE, theorems: dict = THEOREMS) -> dict:
    """Check every file and every main theorem's axioms; ``CoqError`` when one fails."""
    start = time.perf_counter()
    version = subprocess.run(["coqc", "--version"], capture_output=True, text=True).stdout.split("version")[-1].split()[0]
    with tempfile.TemporaryDirectory(prefix="exactform-coq-") as tmp:
        build(source, Path(tmp))
        axioms = assumptions(Path(tmp), theorems)
    outside = {name: sorted(set(used) - ALLOWED_AXIOMS) for name, used in axioms.items() if set(used) - ALLOWED_AXIOMS}
    if outside:
        raise CoqError("axioms outside Coq's classical reals: " +
                       "; ".join(f"{name}: {', '.join(used)}" for name, used in outside.items()))
    return {"coq": version, "theorems": axioms, "seconds": round(time.perf_counter() - start, 1)}


def main() -> int:
    as_json = "--json" in sys.argv[1:]
    if coqc() is None:
        line = "Coq: not checked here (no coqc on PATH; `make proofs-coq` installs it)"
        result = {"claim": "Coq", "ok": False, "status": "not checked here"}
        code = NOT_CHECKED
    else:
        try:
            r = check()
            used = sorted({a for axioms in r["theorems"].values() for a in axioms})
            line = (f"Coq PROVED: {len(r['theorems'])} theorems for every net and T "
                    f"({', '.join(THEOREMS)}) checked by Coq {r['coq']} in {r['seconds']:g} s; "
                    f"axioms: {len(used)} of the classical reals")
            result = {"claim": "Coq", "ok": True, "status": "proved", "coq": r["coq"], "axioms": used,
                      "theorems": sorted(r["theorems"])}
            code = 0
        except CoqError as e:
            line, result, code = f"Coq FAILED: {e}", {"claim": "Coq", "ok": False, "status": "failed"}, 1
    print(line)
    if as_json:
        print(json.dumps(result, sort_keys=True))
    return code


if __name__ == "__main__":
    sys.exit(main())
