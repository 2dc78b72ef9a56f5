"""The commands and the Python API as a user meets them: one number rule, no traceback and no hang,
progress streamed by the long commands, proof scripts shipped in the package, concise output, plots."""
import json
import os
import shutil
import subprocess
import sys
import zipfile
from fractions import Fraction
from pathlib import Path

import pytest

import exactform
from exactform.cli import main
from exactform.numbers import RationalSyntaxError, parse_number
from support import EXAMPLES, PY, ROOT, cli



def shell(*argv, cwd=ROOT, env=None, **kw):
    env = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    return subprocess.run([PY, *map(str, argv)], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, **kw)


# --- Python API ----------------------------------------------------------------------------------

def test_import_exactform_loads_nothing_heavy():
    code = ("import sys, exactform; heavy = [m for m in sys.modules if m.startswith(('exactform.', 'flint', "
            "'sympy', 'torch', 'z3'))]; print(heavy)")
    assert shell("-c", code).stdout.strip() == "[]"


def test_a_command_loads_only_its_own_module():
    code = ("import sys; from exactform import driver; driver.build_parser(driver._requested(['eval', 'm.json'])); "
            "print(sorted(m for m in sys.modules if m.startswith('exactform.commands.')))")
    assert shell("-c", code).stdout.strip() == "['exactform.commands.eval']"
    code = "import sys, exactform.cli; print([m for m in sys.modules if m.startswith(('exactform.', 'flint'))])"
    assert shell("-c", code).stdout.strip() == "['exactform.cli']"


def test_version_and_python_dash_m():
    done = shell("-m", "exactform", "--version")
    assert done.returncode == 0 and done.stdout.strip() == f"exactform {exactform.__version__}"
    assert shell("-m", "exactform", "nosuch").returncode == 2


def test_api_load_compile_certify_save(tmp_path):
    net = exactform.load(EXAMPLES / "relu_net.json")
    assert isinstance(net, exactform.MaxoutNet)
    tf = exactform.compile(net)
    assert isinstance(tf, exactform.Transformer)
    cert = exactform.certify(net, tf)
    assert cert["format"] == "exactform/certificate@2" and [c["id"] for c in cert["claims"]] == ["C1", "C2", "C3", "C4"]
    exactform.save(cert, tmp_path / "c.cert.json")
    exactform.save(tf, tmp_path / "tf.json")
    assert exactform.load(tmp_path / "c.cert.json") == cert
    assert exactform.load(tmp_path / "tf.json").to_json() == tf.to_json()
    with pytest.raises(exactform.InputError):
        exactform.save(tf, tmp_path)                       # a folder is refused, nothing written
    with pytest.raises(TypeError):
        exactform.save({"format": "other"}, tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()


def test_api_certify_refuses_a_wrong_transformer():
    from exactform.construct.maxout_to_transformer import compile_maxout, shift_constants
    net = exactform.load(EXAMPLES / "relu_net.json")
    shifts = [[[Fraction(0)] * len(row) for row in layer] for layer in shift_constants(net)]   # no shift margin
    with pytest.raises(exactform.api.NotProved) as e:
        exactform.certify(net, compile_maxout(net, shifts))
    assert e.value.problems


def test_models_take_python_numbers_and_refuse_floats():
    net = exactform.load(EXAMPLES / "relu_net.json")
    tf = exactform.compile(net)
    exact = net([Fraction(1, 2), Fraction(1)])
    for point in ([Fraction(1, 2), 1], ["0.5", "2/2"], ["1/2", "1e0"], ["5e-1", 1]):
        assert net(point) == exact and tf(point) == exact
    with pytest.raises(TypeError, match="float 0.5 is not exact"):
        net([0.5, 1])
    with pytest.raises(ValueError, match="expected 2 numbers"):
        net([1])
    with pytest.raises(ValueError, match=r"entry \[1\]"):
        net(["1", "nan"])
    assert exactform.evaluate(net, [["1/2", 1]]) == [exact]
    with pytest.raises(ValueError, match="outside the domain"):
        exactform.evaluate(net, [[5, 1]])
    assert exactform.evaluate(net, [[5, 1]], allow_outside=True) == [net([5, 1])]


def test_api_import_network_and_from_torch():
    torch = pytest.importorskip("torch")
    acas = ROOT / "data" / "acasxu" / "ACASXU_run2a_1_1_batch_2000.nnet"
    net = exactform.import_network(acas, [("-0.5", "1/2")])
    assert net.input_dim == 5 and net.domain.lower[0] == Fraction(-1, 2)
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    net = exactform.from_torch(module, [(-1, 1), ("0", "2/4")])
    assert net.domain.upper == (Fraction(1), Fraction(1, 2))
    x = [Fraction(1, 4), Fraction(1, 8)]
    expected = module(torch.tensor([[0.25, 0.125]], dtype=torch.float64).to(torch.float32)).double().item()
    assert abs(float(net(x)[0]) - expected) < 1e-6
    with pytest.raises(exactform.InputError, match="domain"):
        exactform.from_torch(module, [(0.5, 1)])           # a float bound


def test_api_softmax_meets_eps():
    net = exactform.load(EXAMPLES / "abs.json")
    result = exactform.softmax(net, "1e-3")
    assert result.bound <= Fraction(1, 1000) and not result.transformer.is_hardmax
    assert result.certificate["claims"][0]["id"] == "C5"
    with pytest.raises(TypeError, match="not exact"):
        exactform.softmax(net, 0.001)


def test_api_check_calls_the_independent_checker(tmp_path):
    pytest.importorskip("exactform.checker", reason="the lead's exactform.checker.check_file is not on this branch")
    net = exactform.load(EXAMPLES / "abs.json")
    tf = exactform.compile(net)
    cert = exactform.certify(net, tf)
    result = exactform.check(cert)
    assert result and [c for c, ok, _ in result.claims if ok] == ["C1", "C2", "C3", "C4"]
    assert exactform.check(cert, maxout=net, transformer=tf)
    other = exactform.compile(exactform.load(EXAMPLES / "relu_net.json"))
    assert not exactform.check(cert, transformer=other)


def test_api_verify_decides_both_ways_and_its_certificate_checks(tmp_path):
    """|x| on [−1, 1]: never below −1/10 (unsat, a certificate the checker accepts, bound to both
    files); above 1/2 somewhere (sat, an exact counterexample that meets the violation)."""
    net = EXAMPLES / "abs.json"
    below, above = tmp_path / "below.vnnlib", tmp_path / "above.vnnlib"
    box = "(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (>= X_0 -1))\n(assert (<= X_0 1))\n"
    below.write_text(box + "(assert (<= Y_0 -0.1))\n")
    above.write_text(box + "(assert (>= Y_0 0.5))\n")
    holds = exactform.verify(net, below)
    assert holds and holds.verdict == "unsat" and holds.counterexample is None
    assert exactform.check(holds.certificate, net=net, property=below)
    assert not exactform.check(holds.certificate, net=net, property=above)
    fails = exactform.verify(net, above)
    assert not fails and fails.verdict == "sat" and fails.certificate is None
    (x,), (y,) = fails.counterexample
    assert isinstance(x, Fraction) and -1 <= x <= 1 and y == abs(x) >= Fraction(1, 2)
    with pytest.raises(exactform.InputError, match="timeout"):
        exactform.verify(net, below, timeout=-1)


def test_api_equiv_proves_or_refutes_exactly(tmp_path):
    """A net and its compiled Transformer are equal (E1, checked); a weight moved by 1/1000 is not,
    at an exact point where the outputs differ by more than the tolerance."""
    net = exactform.load_maxout(EXAMPLES / "abs.json")
    tf = exactform.compile(net)
    same = exactform.equiv(net, tf)
    assert same and exactform.check(same.certificate, a=net, b=tf)
    moved = net.to_json()
    moved["readout"]["weight"] = [["1001/1000"]]
    (tmp_path / "moved.json").write_text(json.dumps(moved))
    other = exactform.load_maxout(tmp_path / "moved.json")
    differs = exactform.equiv(net, other)
    assert not differs and differs.certificate is None
    (x,), (a,), (b,) = differs.point, differs.a, differs.b
    assert a == abs(x) and b == Fraction(1001, 1000) * abs(x) and a != b
    assert exactform.equiv(net, other, tolerance="1/1000")
    with pytest.raises(exactform.InputError, match="tolerance"):
        exactform.equiv(net, other, tolerance="-1")


def test_py_typed_and_proofs_are_package_data():
    assert (ROOT / "exactform" / "py.typed").exists()
    text = (ROOT / "pyproject.toml").read_text()
    assert '"py.typed"' in text and '"proofs/*.py"' in text and '"tqdm' in text
    assert '"benchmarks/data/*.onnx"' in text and (ROOT / "exactform" / "benchmarks" / "__init__.py").exists()


# --- one number rule -----------------------------------------------------------------------------

@pytest.mark.parametrize("text, value", [
    ("0.001", Fraction(1, 1000)), ("1e-3", Fraction(1, 1000)), ("2/4", Fraction(1, 2)), ("-3/6", Fraction(-1, 2)),
    ("+7", Fraction(7)), (".5", Fraction(1, 2)), ("-7/12", Fraction(-7, 12)), (" 3 ", Fraction(3)), (5, Fraction(5))])
def test_parse_number_reads_exactly(text, value):
    assert parse_number(text) == value


@pytest.mark.parametrize("text", ["1/0", "nan", "inf", "1/2/3", "0x10", "1e99999", "1/-2", "", "1" * 4001 + "/3"])
def test_parse_number_refuses(text):
    with pytest.raises(RationalSyntaxError):
        parse_number(text)


def test_parse_number_refuses_floats_and_bools():
    for bad in (0.5, True):
        with pytest.raises(TypeError):
            parse_number(bad)


def test_points_and_options_take_decimals_and_fractions(tmp_path):
    pts = tmp_path / "p.json"
    pts.write_text('[["0.5"], ["2/4"], [1], [-0.25], ["1e-1"]]')          # a JSON number is read from its text
    code, out, err = cli("eval", EXAMPLES / "abs.json", "--points", pts, "--json")
    assert code == 0, err
    assert json.loads(out)["outputs"] == [["1/2"], ["1/2"], ["1"], ["1/4"], ["1/10"]]
    pts.write_text('[["1/2"], [NaN]]')
    code, _, err = cli("eval", EXAMPLES / "abs.json", "--points", pts)
    assert code == 2 and "[1][0]" in err and err.count("\n") == 1
    for eps in ("0.001", "1e-3", "2/2000"):
        code, out, err = cli("softmax", EXAMPLES / "abs.json", "--eps", eps, "-o", tmp_path / "s.json")
        assert code == 0 and "eps = 1/1000" in out, err
    code, _, err = cli("cpwl", "Max(x, 0)", "--domain", "-2/4:0.5", "-o", tmp_path / "n.json")
    assert code == 0, err
    assert json.loads((tmp_path / "n.json").read_text())["domain"]["lower"] == ["-1/2"]


def test_model_files_still_need_canonical_rationals(tmp_path):
    doc = json.loads((EXAMPLES / "abs.json").read_text())
    doc["domain"]["lower"] = ["-2/2"]
    (tmp_path / "n.json").write_text(json.dumps(doc))
    code, _, err = cli("compile", tmp_path / "n.json", "-o", tmp_path / "tf.json")
    assert code == 2 and "domain.lower[0]" in err and "canonical" in err


# --- never a traceback, never a hang -------------------------------------------------------------

def test_closed_pipe_exits_quietly(tmp_path):
    pts = tmp_path / "p.json"
    pts.write_text(json.dumps([[str(Fraction(k, 1000))] for k in range(-1000, 1001)] * 20))
    many = tmp_path / "certs"
    many.mkdir()
    for k in range(60):
        shutil.copy(ROOT / "examples" / "ci" / "golden" / "abs.cert.json", many / f"{k:02d}.cert.json")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for argv in (["eval", str(EXAMPLES / "abs.json"), "--points", str(pts)], ["check", str(many)]):
        proc = subprocess.Popen([PY, "-m", "exactform", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        proc.stdout.readline()
        proc.stdout.close()                                # `| head -1`
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=120) == 141 and err == "", argv


def test_unknown_benchmark_exits_2():
    code, _, err = cli("bench", "nosuch")
    assert code == 2 and "no benchmark 'nosuch'" in err and "numbers" in err


def test_timeout_watchdog_ends_a_native_call():
    """``sum(range(...))`` is one C call holding the GIL that never sees the alarm: the guard ends it."""
    code = ("from exactform import driver\n"
            "with driver.Timeout(0.2):\n"
            "    sum(range(10**13))\n")
    done = shell("-c", code)
    assert done.returncode == -9 and "did not return within" in done.stderr
    from exactform.driver import GRACE
    assert GRACE <= 1.0


def test_prove_timeout_is_the_whole_command():
    code, _, err = cli("prove", "C1", "--timeout", "0.5", "--workers", "1")
    assert code == 3 and "stopped after 0.5 s (--timeout)" in err
    with pytest.raises(SystemExit):
        main(["prove", "--script-timeout", "x"])


@pytest.mark.parametrize("flag", [["--compare"], ["--margins"], ["--dtype", "float64"], ["--device", "cuda"],
                                  ["--digits", "20"]])
def test_ignored_flags_exit_2_naming_them(flag):
    code, _, err = cli("eval", EXAMPLES / "abs.json", "--points", EXAMPLES / "points_1d.json", *flag)
    assert code == 2 and flag[0] in err and "ignored" in err


def _fifo(path):
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("target", ["dev", "dir", "empty", "no-parent", "fifo"])
def test_outputs_refuse_devices_folders_fifos_and_empty_paths(target, tmp_path):
    bad = {"dev": "/dev/null", "dir": str(tmp_path), "empty": "", "no-parent": str(tmp_path / "no" / "x.json"),
           "fifo": str(_fifo(tmp_path / "f.json")) if target == "fifo" else ""}[target]
    net, tf = EXAMPLES / "abs.json", tmp_path / "tf.json"
    assert cli("compile", net, "-o", tf)[0] == 0
    for argv in (["compile", net, "-o", bad], ["certify", net, tf, "-o", bad], ["export", tf, "-o", bad],
                 ["softmax", net, "--eps", "1/10", "-o", bad], ["regions", net, "--plot", bad],
                 ["prove", "C4", "--junit", bad]):
        code, out, err = cli(*argv)
        assert code == 2 and err.startswith("exactform: error: ") and err.count("\n") == 1, (argv, err)
    assert os.path.exists("/dev/null") and not Path("/dev/null").is_file()


def test_smt_out_onto_a_file_is_refused_before_the_certificate(tmp_path):
    tf = tmp_path / "tf.json"
    assert cli("compile", EXAMPLES / "abs.json", "-o", tf)[0] == 0
    (tmp_path / "file").write_text("x")
    code, _, err = cli("certify", EXAMPLES / "abs.json", tf, "-o", tmp_path / "c.json", "--smt-out", tmp_path / "file")
    assert code == 2 and "--smt-out" in err and not (tmp_path / "c.json").exists()
    code, _, err = cli("certify", EXAMPLES / "abs.json", tf, "-o", tmp_path / "c.json", "--smt-out", tmp_path / "c.json")
    assert code == 2 and not (tmp_path / "c.json").exists()


def test_write_text_never_replaces_a_special_file(tmp_path):
    from exactform.formats import InputError, write_text
    fifo = _fifo(tmp_path / "f")
    with pytest.raises(InputError):
        write_text(fifo, "x")
    assert fifo.is_fifo()


def test_reading_a_fifo_does_not_hang(tmp_path):
    code, _, err = cli("eval", _fifo(tmp_path / "m.json"), "--points", EXAMPLES / "points_1d.json")
    assert code == 2 and "FIFO" in err


def test_a_huge_file_is_refused_before_reading(tmp_path):
    from exactform.formats import MAX_FILE_BYTES
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)                     # sparse: nothing is read
    code, _, err = cli("compile", big, "-o", tmp_path / "tf.json")
    assert code == 2 and "documented limit" in err


def _net(width: int, inputs: int, numbers) -> dict:
    return {"format": "exactform/maxout@1", "input_dim": inputs,
            "domain": {"lower": ["-1"] * inputs, "upper": ["1"] * inputs},
            "layers": [{"weight": [[[next(numbers) for _ in range(inputs)], ["0"] * inputs] for _ in range(width)],
                        "bias": [["0", "0"] for _ in range(width)]}],
            "readout": {"weight": [["1"] * width], "bias": ["0"]}}


@pytest.mark.slow
def test_size_bounds_before_work(tmp_path):
    import itertools
    wide = tmp_path / "wide.json"                       # width 1 + 2 + 3·34,000 > 10^5
    wide.write_text(json.dumps(_net(34_000, 1, itertools.repeat("1"))))
    code, _, err = cli("compile", wide, "-o", tmp_path / "tf.json")
    assert code == 2 and "width" in err and "documented limit" in err and not (tmp_path / "tf.json").exists()
    dense = _net(301, 10, itertools.repeat("1"))        # one unit of rank 2000: every unit padded to 2000
    dense["layers"][0]["weight"] = [[["1"] * 10] for _ in range(300)] + [[["1"] * 10 for _ in range(2000)]]
    dense["layers"][0]["bias"] = [["0"] for _ in range(300)] + [["0"] * 2000]      # pieces (non-zero each)
    (tmp_path / "dense.json").write_text(json.dumps(dense))
    code, _, err = cli("compile", tmp_path / "dense.json", "-o", tmp_path / "tf.json")
    assert code == 2 and "non-zero parameters" in err and "documented limit" in err
    primes = (f"1/{p}" for p in itertools.count(10**300 + 1, 2))          # 600 distinct 300-digit denominators
    digits = tmp_path / "digits.json"
    digits.write_text(json.dumps(_net(300, 2, primes)))
    code, _, err = cli("compile", digits, "-o", tmp_path / "tf.json")
    assert code == 2 and "common denominators" in err
    code, _, err = cli("certify", digits, tmp_path / "tf.json", "-o", tmp_path / "c.json")
    assert code == 2 and not (tmp_path / "c.json").exists()


def test_results_beyond_the_int_to_str_limit(tmp_path):
    doc = json.loads((EXAMPLES / "abs.json").read_text())
    doc["domain"] = {"lower": ["-" + "9" * 3000], "upper": ["9" * 3000]}
    (tmp_path / "n.json").write_text(json.dumps(doc))
    (tmp_path / "p.json").write_text(json.dumps([["9" * 3000]]))
    sys.set_int_max_str_digits(4300)
    code, out, err = cli("eval", tmp_path / "n.json", "--points", tmp_path / "p.json", "--json")
    assert code == 0 and json.loads(out)["outputs"] == [["9" * 3000]], err
    from exactform.numbers import format_rational
    assert format_rational(Fraction(10 ** 5000 + 1, 3)).startswith("1" + "0" * 10)


# --- progress, tallies, certify-all --------------------------------------------------------------

def test_certify_all_streams_a_line_per_network_and_a_tally(tmp_path):
    zoo = tmp_path / "zoo"
    zoo.mkdir()
    for name in ("abs", "relu_net"):
        shutil.copy(EXAMPLES / f"{name}.json", zoo / f"{name}.json")
    code, out, err = cli("certify-all", zoo, "--out", tmp_path / "out", "--workers", "1")
    lines = out.splitlines()
    assert code == 0 and "\r" not in out + err
    assert lines[1].startswith("[1/2] abs.json on its own domain: certified and checked")
    assert lines[2].startswith("[2/2] relu_net.json")
    assert lines[-1].startswith("2 of 2 networks certified and checked")


def test_certify_all_prints_the_domain_once(tmp_path):
    pytest.importorskip("onnx")
    acas = ROOT / "data" / "acasxu"
    zoo = tmp_path / "zoo"
    zoo.mkdir()
    for suffix in (".onnx", ".nnet"):
        shutil.copy(acas / f"ACASXU_run2a_1_1_batch_2000{suffix}", zoo)
    code, out, err = cli("certify-all", zoo, "--only", ".nnet", "--domain", "0:1/2", "--out", tmp_path / "out",
                         "--workers", "1")
    assert code == 0 and "\nthe domain: 0:1/2\n" in out, out
    assert "on the domain: certified and checked" in out, err
    code, _, err = cli("certify-all", EXAMPLES, "--domain", "0:1", "--out", tmp_path / "o2")
    assert code == 2 and "--domain" in err and "ignored" in err


def test_certify_all_refuses_an_output_file_before_work(tmp_path):
    (tmp_path / "f").write_text("")
    code, out, err = cli("certify-all", EXAMPLES, "--out", tmp_path / "f")
    assert code == 2 and out == "" and "not a folder" in err


def test_prove_streams_each_script_as_it_finishes(tmp_path, monkeypatch):
    from exactform.commands import prove
    monkeypatch.setattr(prove, "PROOFS", tmp_path)
    (tmp_path / "C1.py").write_text("print('step one'); print('C1 PROVED: one')\n")
    (tmp_path / "C2.py").write_text("import sys; print('the reason'); sys.exit(1)\n")
    code, out, err = cli("prove", "C1", "C2", "C3", "--workers", "1")
    lines = out.splitlines()
    assert code == 1 and "\r" not in out + err
    assert lines[0].startswith("[1/3] C1: proved") and lines[0].endswith("C1 PROVED: one")
    assert "step one" not in out                           # concise: the script's last line only
    assert lines[1].startswith("[2/3] C2: FAILED") and "the reason" in lines[2]
    assert "[3/3] C3: not available" in out
    assert lines[-1] == "1 of 3 claims proved; C2 failed; C3 not available"
    code, out, _ = cli("prove", "C1", "--verbose", "--workers", "1")
    assert "step one" in out


def test_certify_is_concise(tmp_path):
    tf = tmp_path / "tf.json"
    cli("compile", EXAMPLES / "abs.json", "-o", tf)
    _, out, _ = cli("certify", EXAMPLES / "abs.json", tf, "-o", tmp_path / "c.json")
    assert out.splitlines()[:4] == ["C1 proved", "C2 proved", "C3 proved", "C4 proved"] and len(out.splitlines()) == 5


def test_eval_shortens_long_points_and_prints_enclosures_as_decimals(tmp_path):
    from exactform.commands.eval import shorten
    assert shorten([str(k) for k in range(64)]) == "0 1 2 3 … 62 63 (64 inputs)"
    assert shorten(["1", "2"]) == "1 2"
    soft = tmp_path / "soft.json"
    assert cli("softmax", EXAMPLES / "abs.json", "--eps", "1/100", "-o", soft)[0] == 0
    code, out, _ = cli("eval", soft, "--points", EXAMPLES / "points_1d.json")
    line = out.splitlines()[2]                             # the point -1/3
    assert code == 0 and line.startswith("-1/3 -> [0.33333") and "/" not in line.split("->")[1]


def test_outward_decimals_contain_the_interval():
    from decimal import Decimal

    from exactform.numbers import outward_decimals
    for lo, hi in [(Fraction(1, 3), Fraction(1, 3)), (Fraction(-1, 1000), Fraction(-1, 1001)),
                   (Fraction(12345678), Fraction(12345679)), (Fraction(-2, 3), Fraction(1, 7 * 10**9))]:
        a, b = outward_decimals(lo, hi, 6)
        assert Fraction(Decimal(a)) <= lo <= hi <= Fraction(Decimal(b))
        assert len(a.lstrip("-0.").split("E")[0].replace(".", "")) <= 6


# --- plots ----------------------------------------------------------------------------------------

def test_plots(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    from exactform import plot as region_plot
    from exactform.geometry.regions import count_regions
    drawn = {}
    monkey_save = plt.Figure.savefig

    def capture(fig, path, **kw):
        ax = fig.axes[0]
        drawn[Path(path).stem] = {"title": ax.get_title(), "legend": ax.get_legend(), "axes": len(fig.axes),
                                  "lines": [(line.get_label(), list(line.get_xdata())) for line in ax.lines]}
        return monkey_save(fig, path, **kw)
    plt.Figure.savefig = capture
    try:
        region_plot.plot_regions(count_regions(exactform.load(EXAMPLES / "abs.json")), tmp_path / "abs.png")
        two = count_regions(exactform.load(EXAMPLES / "maxout_2d.json"))
        region_plot.plot_regions(two, tmp_path / "maxout_2d.png")
    finally:
        plt.Figure.savefig = monkey_save
    breaks = next(x for label, x in drawn["abs"]["lines"] if label.startswith("breakpoints"))
    assert breaks == [0.0] and drawn["abs"]["legend"] is not None
    assert drawn["maxout_2d"]["axes"] == 2                  # the plot and its colour bar
    assert f"{len(two.pieces)} activation cells" in drawn["maxout_2d"]["title"]
    assert f"{two.regions} linear regions" in drawn["maxout_2d"]["title"]


def test_plot_refused_before_counting_for_3_inputs(tmp_path):
    from exactform.construct.cpwl import expression_net  # noqa: F401  (a 3-input net from the grammar)
    assert cli("cpwl", "Max(x, y, z)", "--domain", "-1:1", "-o", tmp_path / "n.json")[0] == 0
    code, out, err = cli("regions", tmp_path / "n.json", "--plot", tmp_path / "p.png")
    assert code == 2 and "3 inputs" in err and out == ""


# --- proof scripts ship with the package ----------------------------------------------------------

@pytest.fixture(scope="module")
def installed_wheel(wheel, tmp_path_factory):
    """The wheel (``conftest.wheel``) unpacked into a site folder, and an empty working folder outside
    the repository: (wheel, environment, working folder)."""
    tmp_path = tmp_path_factory.mktemp("site")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = dict(os.environ, PYTHONPATH=str(site))
    where = subprocess.run([PY, "-c", "import exactform; print(exactform.__file__)"], cwd=elsewhere, env=env,
                           capture_output=True, text=True)
    assert where.stdout.startswith(str(site))
    return wheel, env, elsewhere


@pytest.mark.slow
def test_bench_runs_from_an_installed_wheel_outside_the_repository(installed_wheel):
    """The suite and the one network it reads ship in the wheel; ``scale`` (45 networks of a
    checkout) says in one line that it is skipped; an unknown name is exit 2."""
    wheel, env, elsewhere = installed_wheel
    names = zipfile.ZipFile(wheel).namelist()
    assert "exactform/benchmarks/numbers_bench.py" in names and "exactform/benchmarks/timing.py" in names
    assert [n for n in names if n.endswith((".onnx", ".nnet"))] == [
        "exactform/benchmarks/data/ACASXU_run2a_1_1_batch_2000.onnx"]
    done = subprocess.run([PY, "-m", "exactform", "bench", "numbers", "scale"], cwd=elsewhere, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "| mat-vec 8 " in done.stdout and "whole network" in done.stdout, done.stdout
    scale = done.stdout.split("### scale")[1].strip().splitlines()
    assert len(scale) == 1 and scale[0].startswith("scale: skipped"), scale
    done = subprocess.run([PY, "-m", "exactform", "bench", "nosuch"], cwd=elsewhere, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "no benchmark 'nosuch'" in done.stderr and done.stderr.count("\n") == 1


def test_cpwl_term_bound_before_work(tmp_path):
    from exactform.commands.cpwl import MAX_TERMS
    text = "+".join(f"Abs(x-{k}/600)" for k in range(MAX_TERMS + 1))
    code, _, err = cli("cpwl", text, "--domain", "-1:1", "-o", tmp_path / "n.json")
    assert code == 2 and f"{MAX_TERMS + 1} distinct Max/Min/Abs terms" in err and not (tmp_path / "n.json").exists()
    text = "+".join(f"Abs(x-{k}/600)" for k in range(MAX_TERMS))
    assert cli("cpwl", text, "--domain", "-1:1", "-o", tmp_path / "n.json")[0] == 0
