"""Executors: certificates and region counts are byte-identical serial, on 2 local
processes and on a 2-worker Dask LocalCluster; a worker killed mid-run is retried or the command
fails with exit 1 and writes nothing."""
from __future__ import annotations

import os
import random
import signal
from functools import partial
from pathlib import Path

import pytest
from exactform.proofs.nets import random_net

from exactform.cli import main
from exactform.construct.maxout_to_transformer import compile_maxout
from exactform.construct.region_rich import region_rich_net
from exactform.executor import Dask, ExecutorError, LocalProcesses, Serial
from exactform.formats import write_json
from exactform.geometry.regions import count_regions

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def cluster():
    import dask
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as c, distributed.Client(c) as client:
            yield client


@pytest.fixture(scope="module")
def zoo(tmp_path_factory) -> Path:
    """Three small Maxout nets and one of them compiled, as files."""
    folder = tmp_path_factory.mktemp("zoo")
    for k in range(3):
        net = random_net(random.Random(k), [2, 3, 2], 3)
        write_json(folder / f"net{k}.json", net.to_json())
    write_json(folder.parent / "tf0.json", compile_maxout(random_net(random.Random(0), [2, 3, 2], 3)).to_json())
    return folder


def die_once(marker: str, fn, x):
    """Kill this worker process the first time any task runs (``marker`` records it), then run."""
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return fn(x)
    os.kill(os.getpid(), signal.SIGKILL)


def die_always(fn, x):
    os.kill(os.getpid(), signal.SIGKILL)


class Sabotaged:
    """An executor whose tasks kill their worker (``die_once`` or ``die_always``)."""

    def __init__(self, inner, killer):
        self.inner, self.killer = inner, killer
        self.workers, self.name = inner.workers, inner.name

    def map(self, fn, items):
        return self.inner.map(partial(self.killer, fn), items)

    def as_completed(self, fn, items):
        return self.inner.as_completed(partial(self.killer, fn), items)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


def test_map_keeps_order_everywhere(cluster):
    items = list(range(20))
    for ex in (Serial(), LocalProcesses(2), Dask(cluster)):
        with ex:
            assert ex.map(abs, [-x for x in items]) == items


def test_usage_errors_exit_2(zoo, capsys, monkeypatch):
    assert main(["certify-all", str(zoo), "--workers", "0"]) == 2
    assert "--workers" in capsys.readouterr().err
    monkeypatch.setitem(__import__("sys").modules, "distributed", None)     # Dask not installed
    assert main(["regions", str(zoo / "net0.json"), "--scheduler", "tcp://127.0.0.1:8786"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--scheduler" in err and "pip install 'exactform[dask]'" in err and "\n" not in err


def test_certificates_identical_serial_processes_dask(zoo, tmp_path, cluster, monkeypatch, capsys):
    from exactform.commands import certify_all
    runs = {"serial": ["--workers", "1"], "procs": ["--workers", "2"]}
    for name, flags in runs.items():
        assert main(["certify-all", str(zoo), "--out", str(tmp_path / name)] + flags) == 0
    monkeypatch.setattr(certify_all, "make_executor", lambda *a: Dask(cluster))
    assert main(["certify-all", str(zoo), "--out", str(tmp_path / "dask")]) == 0
    files = sorted(p.name for p in (tmp_path / "serial").glob("*.cert.json"))
    assert files == ["net0.cert.json", "net1.cert.json", "net2.cert.json"]
    for f in files:
        assert (tmp_path / "serial" / f).read_bytes() == (tmp_path / "procs" / f).read_bytes() \
            == (tmp_path / "dask" / f).read_bytes()
    # certify --smt: one task per SMT query; same bytes; check --smt (its own derived queries) accepts it
    for w in ("1", "2"):
        assert main(["certify", str(zoo / "net0.json"), str(zoo.parent / "tf0.json"), "-o",
                     str(tmp_path / f"smt{w}.json"), "--smt", "--workers", w]) == 0
    assert (tmp_path / "smt1.json").read_bytes() == (tmp_path / "smt2.json").read_bytes()
    assert main(["check", str(tmp_path / "smt1.json"), str(tmp_path / "serial"), "--smt"]) == 0


def test_region_counts_identical(cluster):
    net = region_rich_net(2, 2, 2, 9)
    serial = count_regions(net).to_json()
    with LocalProcesses(2) as ex:
        assert count_regions(net, parts=3, executor=ex).to_json() == serial
    assert count_regions(net, parts=3, executor=Dask(cluster)).to_json() == serial
    assert serial["regions"] == 891


def test_killed_worker_is_retried(zoo, tmp_path, cluster, monkeypatch, capsys):
    from exactform.commands import certify_all
    reference = tmp_path / "reference"
    assert main(["certify-all", str(zoo), "--out", str(reference), "--workers", "1"]) == 0
    for name, inner in (("procs", LocalProcesses(2)), ("dask", Dask(cluster))):
        killer = partial(die_once, str(tmp_path / f"{name}.killed"))
        monkeypatch.setattr(certify_all, "make_executor", lambda *a: Sabotaged(inner, killer))
        assert main(["certify-all", str(zoo), "--out", str(tmp_path / name)]) == 0
        assert (tmp_path / f"{name}.killed").exists()
        for f in reference.glob("*.cert.json"):
            assert (tmp_path / name / f.name).read_bytes() == f.read_bytes()
        inner.close()


def test_always_killed_worker_fails_cleanly(zoo, tmp_path, cluster, monkeypatch, capsys):
    from exactform.commands import certify_all
    for name, inner in (("procs", LocalProcesses(2)), ("dask", Dask(cluster))):
        monkeypatch.setattr(certify_all, "make_executor", lambda *a: Sabotaged(inner, die_always))
        assert main(["certify-all", str(zoo), "--out", str(tmp_path / name)]) == 1
        err = capsys.readouterr().err
        assert "certify-all" in err and "nothing written" in err, err
        assert not (tmp_path / name).exists()
        inner.close()
    with pytest.raises(ExecutorError):
        LocalProcesses(2, retries=0).map(partial(die_always, abs), [1, 2])


def test_equiv_search_identical_serial_processes_dask(cluster, monkeypatch):
    """The pruned --max-diff and --tolerance searches give the serial answer, counters included, on
    2 local processes and on Dask (cut into subtrees once 3 cells wait, so that most of the work is
    distributed)."""
    from support import box_of, small_pairs

    from exactform.search import equiv
    monkeypatch.setattr(equiv, "SUBTREES", 3)
    a, b = small_pairs()[1]
    runs = {}
    for name, ex in (("serial", Serial()), ("procs", LocalProcesses(2)), ("dask", Dask(cluster))):
        with ex:
            top = equiv.compare(a.to_json(), b.to_json(), box_of(a), max_diff=True, executor=ex)
            within = equiv.compare(a.to_json(), b.to_json(), box_of(a), top.maximum / 2, prune=True, executor=ex)
        runs[name] = [(o.maximum, o.point, o.equal, o.leaves, o.splits, o.pruned) for o in (top, within)]
    assert runs["serial"][0][4] >= 3 and not runs["serial"][1][2]       # several rounds; a point above max/2
    assert runs["procs"] == runs["serial"] == runs["dask"]
