"""From ``pip install`` to CI: a typed API, outputs that never clobber inputs, optional
dependencies named in one line, packaging sized to the job, helpful errors."""
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

import exactform
from exactform.cli import main
from support import EXAMPLES, PY, ROOT, cli


def one_line_error(code, out, err, *words):
    assert code == 2 and err.count("\n") == 1 and err.startswith("exactform: error: "), (code, out, err)
    assert "Traceback" not in err and all(w in err for w in words), err


# --- a typed public API --------------------------------------------------------------------------

def test_mypy_strict_accepts_the_api_example_and_refuses_wrong_types(tmp_path):
    """``examples/api.py`` uses the whole API under ``mypy --strict``; wrong uses are errors, so
    nothing reaches the caller as ``Any``.  (torch, an extra, is not followed: its stubs alone take
    ten times the rest.)"""
    wrong = tmp_path / "wrong.py"
    wrong.write_text("import exactform\n"
                     "a: int = exactform.load_maxout('n.json')\n"
                     "exactform.compile(exactform.load('n.json'))\n"
                     "b: int = exactform.approx('x', [(0, 1)], eps=1)\n"
                     "c: int = exactform.check('c.json')\n"
                     "exactform.nosuch\n")
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\n[mypy-torch.*]\nfollow_imports = skip\n")
    done = subprocess.run([PY, "-m", "mypy", "--strict", "--follow-imports=silent", "--config-file", str(config),
                           "--cache-dir", str(tmp_path / "cache"), str(EXAMPLES / "api.py"), str(wrong)],
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=300)
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert [int(n) for n in re.findall(r"wrong\.py:(\d+): error", done.stdout)] == [2, 3, 4, 5, 6], done.stdout
    assert len(errors) == 5, done.stdout                        # none in examples/api.py


def test_no_subpackage_shadows_an_api_name():
    """Importing ``exactform.X.Y`` binds ``X`` on the package: no API function may share a package's name
    (``exactform.certify`` once became a module after ``exactform.certify.write`` was imported)."""
    import importlib
    import types
    for path in sorted((ROOT / "exactform").iterdir()):
        if (path / "__init__.py").is_file() and path.name not in ("benchmarks",):
            importlib.import_module(f"exactform.{path.name}")
    shadowed = [n for n in exactform.__all__ if isinstance(getattr(exactform, n), types.ModuleType)]
    assert shadowed == []


def test_help_and_dir_show_the_api_with_its_signatures():
    import inspect
    import pydoc
    names = [n for n in exactform.__all__ if n != "__version__"]
    assert set(names) <= set(dir(exactform))
    text = pydoc.plain(pydoc.render_doc(exactform))
    assert all(f"{n}(" in text for n in ("load_maxout", "certify", "check", "approx")), text[:2000]
    assert "-> exactform.models.maxout.MaxoutNet" in str(inspect.signature(exactform.load_maxout)) or \
        inspect.signature(exactform.load_maxout).return_annotation in ("MaxoutNet", exactform.MaxoutNet)
    stub = (ROOT / "exactform" / "__init__.pyi").read_text()
    assert all(f"{n} as {n}" in stub for n in names)            # the stub re-exports every name


def test_errors_are_one_hierarchy_of_value_errors():
    assert issubclass(exactform.Error, ValueError)
    assert issubclass(exactform.InputError, exactform.Error) and issubclass(exactform.NotProved, exactform.Error)


def test_check_raises_for_a_missing_file_and_names_no_temporary_file(tmp_path, monkeypatch):
    """Objects reach the checker in memory (``checker.reader.Blob``): no file is written, a tampered one is refused."""
    import tempfile

    def no_files(*args, **kwargs):
        raise AssertionError("check wrote a temporary file")
    for name in ("TemporaryDirectory", "mkdtemp", "mkstemp", "NamedTemporaryFile"):
        monkeypatch.setattr(tempfile, name, no_files)
    with pytest.raises(exactform.InputError, match="missing.cert.json: no such file"):
        exactform.check(tmp_path / "missing.cert.json")
    net = exactform.load_maxout(EXAMPLES / "abs.json")
    cert = exactform.certify(net)
    assert exactform.check(cert, maxout=net, transformer=exactform.compile(net))
    result = exactform.check({**cert, "claims": "none"})                  # malformed: falsy, saying why
    assert not result and result.known.startswith("<certificate>") and "exactform-check-" not in result.known, \
        result.known
    tampered = exactform.check(cert, maxout=exactform.approx("Abs(x)", [(-1, 1)], eps="1/2"),
                               transformer=exactform.compile(net))
    assert not tampered and ("binding", False, "the certificate's maxout is not the model in <maxout>") in tampered.claims


def test_typed_loaders_refuse_the_other_kinds(tmp_path):
    net = exactform.load_maxout(EXAMPLES / "abs.json")
    exactform.save(exactform.compile(net), tmp_path / "tf.json")
    assert isinstance(exactform.load_transformer(tmp_path / "tf.json"), exactform.Transformer)
    with pytest.raises(exactform.InputError, match="expected exactform/maxout@1"):
        exactform.load_maxout(tmp_path / "tf.json")
    with pytest.raises(exactform.InputError, match="expected exactform/certificate@"):
        exactform.load_certificate(EXAMPLES / "abs.json")


def test_approx_returns_a_maxout_net_that_compile_and_save_take(tmp_path):
    net = exactform.approx("Abs(x)", [(-1, 1)], eps="1/2")
    assert isinstance(net, exactform.MaxoutNet)
    exactform.save(exactform.compile(net), tmp_path / "tf.json")
    exactform.save(net, tmp_path / "net.json")
    assert exactform.load_maxout(tmp_path / "net.json").to_json() == net.to_json()
    with pytest.raises(exactform.NotProved):
        exactform.approx("x**2", [(-1, 1)], eps="1/1000000000000000000000000000000")
    with pytest.raises(exactform.InputError, match="expr"):
        exactform.approx("-x**2", [(-1, 1)], eps="1/2")


def test_save_names_the_path_once(tmp_path):
    with pytest.raises(exactform.InputError) as e:
        exactform.save(exactform.load_maxout(EXAMPLES / "abs.json"), tmp_path / "no" / "net.json")
    assert str(e.value).count("net.json") == 1, str(e.value)


# --- an output that is an input --------------------------------------------------------------------

@pytest.mark.parametrize("how", ["same", "dot", "link", "hard"])
def test_an_output_that_is_an_input_is_refused_before_work(how, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(EXAMPLES / "relu_net.json", "net.json")
    before = Path("net.json").read_bytes()
    out = {"same": "net.json", "dot": "./sub/../net.json", "link": "link.json", "hard": "hard.json"}[how]
    Path("sub").mkdir()
    if how == "link":
        os.symlink("net.json", "link.json")
    if how == "hard":
        os.link("net.json", "hard.json")
    one_line_error(*cli("compile", "net.json", "-o", out), "-o", "also an input")
    one_line_error(*cli("certify", "net.json", EXAMPLES / "ci/models/relu_net.tf.json", "-o", out),
                   "also an input")
    assert Path("net.json").read_bytes() == before


def test_verify_refuses_a_counterexample_file_that_is_its_property(tmp_path):
    prop = tmp_path / "p.vnnlib"
    prop.write_text("(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (>= X_0 -1))\n"
                    "(assert (<= X_0 1))\n(assert (>= Y_0 100))\n")
    before = prop.read_bytes()
    one_line_error(*cli("verify", EXAMPLES / "abs.json", prop, "--counterexample", prop),
                   "--counterexample", "also an input")
    assert prop.read_bytes() == before


def test_two_outputs_of_one_command_are_refused(tmp_path):
    one_line_error(*cli("softmax", EXAMPLES / "relu_net.json", "--eps", "1/10", "-o", tmp_path / "s.json",
                        "--cert", tmp_path / "s.json"), "--cert", "-o's file")
    assert not (tmp_path / "s.json").exists()


# --- optional dependencies named in one line --------------------------------------------------------

BLOCK = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split('.')[0] == {module!r}:
            raise ImportError('blocked ' + name)
import importlib.util
real = importlib.util.find_spec
importlib.util.find_spec = lambda name, *a: None if name.split('.')[0] == {module!r} else real(name, *a)
sys.meta_path.insert(0, Block())
from exactform.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("module, extra, argv", [
    ("onnx", "onnx", ["export", "TF", "-o", "OUT/tf.onnx"]),
    ("matplotlib", "plot", ["regions", "NET", "--plot", "OUT/p.png"]),
    ("onnx", "onnx", ["certify-all", str(ROOT / "data" / "acasxu"), "--only", ".onnx", "--out", "OUT/c"]),
])
def test_a_missing_extra_is_one_line_naming_the_pip_command(module, extra, argv, tmp_path):
    argv = [a.replace("TF", str(EXAMPLES / "ci/models/abs.tf.json")).replace("NET", str(EXAMPLES / "abs.json"))
            .replace("OUT", str(tmp_path)) for a in argv]
    done = subprocess.run([PY, "-c", BLOCK.format(module=module), *argv], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)
    one_line_error(done.returncode, done.stdout, done.stderr, f"pip install 'exactform[{extra}]'")
    assert not any(tmp_path.iterdir())


# --- packaging ---------------------------------------------------------------------------------------

def test_dependencies_are_sized_to_the_job():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    hard = " ".join(project["dependencies"])
    assert not re.search(r"\b(torch|onnx|matplotlib)\b", hard) and "==" not in hard, hard
    extras = project["optional-dependencies"]
    assert {"torch", "onnx", "plot"} <= set(extras) and isinstance(project["license"], str)
    assert "dist/" in (ROOT / ".gitignore").read_text().split()
    for text in ((ROOT / "Makefile").read_text(), (ROOT / "README.md").read_text()):
        assert "torch==2.13.0" in text and "download.pytorch.org/whl/cpu" in text


def test_examples_survive_cp_r(tmp_path):
    """No link under examples/ (a relative link dangles once the folder is copied elsewhere)."""
    links = [p for p in EXAMPLES.rglob("*") if p.is_symlink()]
    assert links == []
    for name in ("abs", "relu_net", "maxout_2d"):          # the package's copies are the same files
        assert (EXAMPLES / f"{name}.json").read_bytes() == \
            (ROOT / "exactform/proofs/examples" / f"{name}.json").read_bytes()


# --- certify-all ----------------------------------------------------------------------------------------

def test_certify_all_prefers_one_file_per_stem_and_says_which(tmp_path):
    from exactform.commands.certify_all import networks
    left_out = []
    jobs = networks(ROOT / "data" / "acasxu", None, None, left_out)
    assert len(jobs) == 45 and all(path.endswith(".onnx") for _, path, _ in jobs)
    nnet = sorted(p.name for p in (ROOT / "data" / "acasxu").glob("*.nnet"))
    assert nnet and left_out == [f"{n} (certifying {n[:-5]}.onnx)" for n in nnet]
    shutil.copy(EXAMPLES / "abs.json", tmp_path / "a.json")
    (tmp_path / "a.onnx").write_bytes(b"not read")
    assert [Path(p).name for _, p, _ in networks(tmp_path, None)] == ["a.json"]


def test_certify_all_lines_are_short_and_a_run_resumes(tmp_path, monkeypatch):
    from exactform.commands import certify_all
    zoo, out = tmp_path / "zoo", tmp_path / "out"
    zoo.mkdir()
    for name in ("abs", "maxout_2d", "relu_net"):
        shutil.copy(EXAMPLES / f"{name}.json", zoo)
    real = certify_all.certify_network

    def interrupted(job):
        if job[0] == "maxout_2d":
            raise KeyboardInterrupt
        return real(job)
    monkeypatch.setattr(certify_all, "certify_network", interrupted)
    assert cli("certify-all", zoo, "--out", out, "--workers", "1")[0] == 130
    assert sorted(p.name for p in out.iterdir()) == ["abs.cert.json"]         # Ctrl-C keeps what finished
    monkeypatch.setattr(certify_all, "certify_network", real)
    code, text, err = cli("certify-all", zoo, "--out", out, "--workers", "1")
    lines = text.splitlines()
    assert code == 0 and max(map(len, lines[1:-1])) <= 80, text
    assert "kept abs.cert.json" in lines[1] and "certified and checked" in lines[2] + lines[3]
    (out / "relu_net.cert.json").write_bytes((out / "abs.cert.json").read_bytes())     # not relu_net's
    code, text, _ = cli("certify-all", zoo, "--out", out, "--workers", "1")
    assert code == 0 and "relu_net.json on its own domain: certified and checked" in text, text
    assert exactform.check(out / "relu_net.cert.json")


# --- --max-regions bounds the work --------------------------------------------------------------------

def test_max_regions_stops_as_cells_are_cut(monkeypatch):
    """One layer of 40 ReLUs in the plane cuts the box into hundreds of cells; with a limit of 10 the
    enumeration stops after a few dozen cuts, not after the layer (the old check came only then)."""
    import random

    from exactform.proofs.nets import relu_net

    from exactform.geometry import regions
    net = relu_net(random.Random(3), [2, 40])
    cuts = []
    real = regions.argmax_split
    monkeypatch.setattr(regions, "argmax_split", lambda cell, pieces: cuts.append(1) or real(cell, pieces))
    assert regions.count_regions(net).activation_regions > 200
    everything, cuts[:] = len(cuts), []
    with pytest.raises(regions.RegionLimit, match="more than 10 activation cells in stage 1"):
        regions.count_regions(net, max_regions=10)
    assert len(cuts) <= 10 * 40 // 4 < everything, (len(cuts), everything)


def test_plot_to_a_file_that_is_not_an_image_is_refused_before_work(tmp_path, monkeypatch):
    from exactform.geometry import regions
    monkeypatch.setattr(regions, "count_regions", lambda *a, **k: pytest.fail("counted before refusing"))
    one_line_error(*cli("regions", EXAMPLES / "abs.json", "--plot", tmp_path / "f.txt"), "--plot", ".png")
    assert not (tmp_path / "f.txt").exists()


# --- errors and help pages that help --------------------------------------------------------------------

@pytest.mark.parametrize("argv, words", [
    (["comile", "net.json"], ["comile: unknown command; did you mean compile?"]),
    (["--timeout", "5", "cerify"], ["cerify: unknown command; did you mean certify or "]),
    (["compile", "ABS", "--ouput", "x.json"], ["--ouput: unknown option of exactform compile; did you mean --output?"]),
    (["check", "--mx-work", "5", "CERT"], ["--mx-work: unknown option of exactform check; did you mean --max-work?"]),
    (["check", "CERT", "--junt=r.xml"], ["--junt: unknown option of exactform check; did you mean --junit?"]),
    (["check", "--max-w", "5", "CERT"], ["--max-w: unknown option of exactform check; did you mean --max-work?"]),
    (["--timeout", "5", "check", "--mx-work", "5", "CERT"], ["--mx-work: unknown option of exactform check; did"]),
    (["check", "--timeout=5", "CERT"], ["none.cert.json: No such file or directory"]),
    (["--timout", "5", "check", "CERT"], ["--timout: unknown option of exactform; did you mean --timeout?"]),
    (["--timout=5", "eval", "ABS"], ["--timout: unknown option of exactform; did you mean --timeout?"]),
    (["compile", "ONNX", "-o", "OUT"], ["an ONNX network, not exactform JSON: run `exactform import"]),
    (["prove", "c9"], ["unknown claim 'c9' (expected C1 ... C8 or Coq)"]),
])
def test_typos_and_wrong_files_get_a_line_that_says_what_to_do(argv, words, tmp_path):
    onnx = ROOT / "data" / "acasxu" / "ACASXU_run2a_1_1_batch_2000.onnx"
    argv = [{"ABS": str(EXAMPLES / "abs.json"), "ONNX": str(onnx), "OUT": str(tmp_path / "o.json"),
             "CERT": str(tmp_path / "none.cert.json")}.get(a, a) for a in argv]
    one_line_error(*cli(*argv), *words)


def test_prove_takes_a_claim_in_either_case():
    code, out, _ = cli("prove", "c4", "--workers", "1")
    assert code == 0 and "1 of 1 claims proved" in out


def test_help_pages_describe_the_command_list_benchmarks_and_exit_codes(capsys):
    from exactform.commands.bench import benchmarks
    for argv in (["--help"], ["compile", "--help"], ["bench", "--help"], ["certify-all", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        text = " ".join(capsys.readouterr().out.split())
        assert "exit codes: 0 proved / done; 1 refuted" in text and "2 bad input" in text, text
        if argv[0] == "compile":
            assert "[-h] -o OUTPUT [--json] [--timeout SECONDS] net compile a Maxout net into" in text, text
        if argv[0] == "bench":
            assert all(name in text for name in benchmarks()) and "scale" in benchmarks()


# --- plots a reader understands --------------------------------------------------------------------------

def test_2d_plot_numbers_each_cell_by_its_linear_region_and_names_the_output_drawn(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from exactform.geometry.regions import count_regions
    from exactform import plot as region_plot
    drawn = {}
    real = Figure.savefig

    def capture(fig, path, **kw):
        ax = fig.axes[0]
        drawn.update(title=ax.get_title(), labels=[t.get_text() for t in ax.texts],
                     shading=[type(c).__name__ for c in ax.collections])
        return real(fig, path, **kw)
    monkeypatch.setattr(Figure, "savefig", capture)
    result = count_regions(exactform.load_maxout(EXAMPLES / "maxout_2d.json"))
    region_plot.plot_regions(result, tmp_path / "m.png")
    assert len(drawn["labels"]) == len(result.pieces) == 8 and len(set(drawn["labels"])) == result.regions == 5
    assert "output 0 of 2" in drawn["title"] and "dashed" in drawn["title"]
    assert "TriMesh" in drawn["shading"]             # smooth shading: no contour bands that read as boundaries
