"""Parallel and distributed execution: --jobs workers and the Ray executor give the records
a sequential run gives; a dying worker becomes an error record; Ctrl-C stops the workers."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from iclr24.cli import app
from iclr24.executors import ClaimTask, LocalPool, thread_env
from iclr24.store import ResultStore

HERE = Path(__file__).resolve().parent
runner = CliRunner()

pytestmark = pytest.mark.serial  # spawns processes that want the machine's cores


def run_alpha(tmp_path, *extra, name="r.sqlite"):
    res = runner.invoke(app, ["run", "alpha", "--scale", "smoke", "--seed", "3", "--store",
                              str(tmp_path / name), "--json", *extra])
    return res, json.loads(res.stdout)


def comparable(results):
    """What must be equal between executors: everything but timings and start times."""
    keep = ("paper", "claim", "scale", "seed", "verdict", "metrics", "rule", "paper_reference")
    return sorted(([r[k] for k in keep] for r in results), key=lambda r: r[1])


@pytest.mark.timeout(240)
def test_jobs_2_equals_jobs_1_record_for_record(fake_registry, tmp_path):
    res1, seq = run_alpha(tmp_path, "--jobs", "1", name="one.sqlite")
    res2, par = run_alpha(tmp_path, "--jobs", "2", name="two.sqlite")
    assert res1.exit_code == res2.exit_code == 1  # raises_claim errors in both
    assert comparable(par["results"]) == comparable(seq["results"])
    assert par["counts"] == seq["counts"] == {"holds": 2, "fails": 1, "inconclusive": 1,
                                               "error": 1}
    stored = ResultStore(tmp_path / "two.sqlite").records()
    assert len(stored) == 5 and all(r.cpu_s is not None for r in stored)
    fig = next(r for r in stored if r.claim == "holds_claim").figure_png
    assert fig.startswith(b"\x89PNG")
    est = next(r for r in par["results"] if r["claim"] == "estimate_claim")
    assert set(est["metrics"]["gain"]) >= {"value", "low", "high", "n", "confidence"}


@pytest.mark.timeout(240)
def test_a_worker_killed_by_sigkill_is_an_error_record_and_the_run_goes_on(
        fake_registry, tmp_path, monkeypatch):
    monkeypatch.setenv("ALPHA_SIGKILL", "1")  # estimate_claim kills its own worker
    res, doc = run_alpha(tmp_path, "--jobs", "2")
    assert res.exit_code == 1
    got = {r["claim"]: r for r in doc["results"]}
    assert len(got) == 5
    assert got["estimate_claim"]["verdict"] == "error"
    assert "SIGKILL" in got["estimate_claim"]["error"]
    assert got["holds_claim"]["verdict"] == "holds" and got["scaled_claim"]["verdict"] == "holds"


@pytest.mark.timeout(240)
def test_a_claim_may_start_processes_inside_a_worker(fake_registry, tmp_path, monkeypatch):
    monkeypatch.setenv("ALPHA_CHILD", "1")  # estimate_claim spawns a child process
    _, doc = run_alpha(tmp_path, "--jobs", "2", "--claim", "estimate_claim")
    (rec,) = doc["results"]
    assert rec["verdict"] == "inconclusive", rec["error"]


def test_bad_jobs_and_executor_are_usage_errors(fake_registry, tmp_path):
    for args, message in ((["--jobs", "0"], "--jobs must be a positive integer or 'auto'"),
                          (["--jobs", "many"], "--jobs must be a positive integer"),
                          (["--executor", "slurm"], "--executor must be 'local' or 'ray'"),
                          (["--address", "x:1"], "--address is for --executor ray")):
        res = runner.invoke(app, ["run", "alpha", "--store", str(tmp_path / "r.sqlite"), *args])
        assert res.exit_code == 2 and message in res.stderr, res.output


def test_thread_budget_is_divided_between_workers():
    assert LocalPool(jobs=2, cores=2).threads_per_worker == 1
    assert LocalPool(jobs=2, cores=8).threads_per_worker == 4
    assert LocalPool(jobs=3, cores=2).threads_per_worker == 1
    env = thread_env(1)
    assert env["OMP_NUM_THREADS"] == "1" and "intra_op_parallelism_threads=1" in env["XLA_FLAGS"]
    assert "XLA_FLAGS" not in thread_env(4)
    with pytest.raises(ValueError, match="jobs must be a positive int"):
        LocalPool(jobs=0)


def test_resources_come_from_the_source_without_importing(fake_registry):
    import textwrap

    from iclr24.registry import _claims_from_source

    src = HERE / "fakepapers" / "alpha" / "claims.py"
    names, resources, docs, scales, _ = _claims_from_source(src)
    assert "estimate_claim" in names and resources == {} and scales == {}
    assert docs["estimate_claim"].startswith("Five replicates around zero")
    tmp = HERE.parent.parent / ".pytest_cache" / "res_claims.py"
    tmp.parent.mkdir(exist_ok=True)
    tmp.write_text(textwrap.dedent("""
        @claim(rule="x > 0", paper="p", resources={"cpus": 2, "gpus": {"full": 1}},
               scales=("small", "FULL"), against="a baseline")
        def big(scale, seed): ...
    """))
    assert _claims_from_source(tmp) == (("big",), {"big": {"cpus": 2, "gpus": {"full": 1}}},
                                        {"big": ""}, {"big": ("small", "full")},
                                        {"big": "a baseline"})


@pytest.mark.timeout(240)
def test_pool_respects_cpu_resources():
    """A claim asking for 2 CPUs of a 2-slot pool runs alone: it starts only when the other
    running claim has finished."""
    from iclr24.executors import RegistryLocation

    FAKE = HERE / "fakepapers"
    location = RegistryLocation(str(FAKE), str(FAKE / "catalog.toml"), "fakepapers")
    tasks = [ClaimTask("alpha", "fails_claim", "smoke", 0, cpus=1, location=location, index=0),
             ClaimTask("alpha", "scaled_claim", "smoke", 0, cpus=2, location=location, index=1),
             ClaimTask("alpha", "holds_claim", "smoke", 0, cpus=1, location=location, index=2)]
    events = []
    LocalPool(jobs=2, cores=2).run(
        tasks, on_record=lambda t, r: events.append(("end", t.claim, r.verdict)),
        on_progress=lambda *a: None, on_start=lambda t: events.append(("start", t.claim)))
    starts = [e[1] for e in events if e[0] == "start"]
    assert starts[:2] == ["fails_claim", "holds_claim"]  # the 2-CPU claim waits
    big = events.index(("start", "scaled_claim"))
    assert ("end", "fails_claim", "fails") in events[:big]
    assert ("end", "holds_claim", "holds") in events[:big]
    assert sum(e[0] == "end" for e in events) == 3


@pytest.mark.timeout(180)
def test_ctrl_c_stops_the_workers_and_keeps_what_finished(tmp_path):
    path = tmp_path / "r.sqlite"
    env = dict(os.environ, ALPHA_SLEEP="60")
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "fake_cli.py"), "run", "alpha", "--scale", "smoke",
         "--jobs", "2", "--store", str(path)], env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # see test_store
    deadline = time.time() + 120
    while time.time() < deadline:
        if path.exists() and len(ResultStore(path).records()) >= 4:
            break
        time.sleep(0.3)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    store = ResultStore(path)
    assert store.integrity_ok()
    assert sorted(r.claim for r in store.records()) == [
        "estimate_claim", "fails_claim", "holds_claim", "raises_claim"]


@pytest.mark.timeout(300)
def test_ray_on_a_local_instance_equals_the_sequential_run(fake_registry, tmp_path):
    ray = pytest.importorskip("ray")
    _, seq = run_alpha(tmp_path, name="seq.sqlite")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        res, got = run_alpha(tmp_path, "--executor", "ray", name="ray.sqlite")
    finally:
        ray.shutdown()
    assert res.exit_code == 1, res.output
    assert comparable(got["results"]) == comparable(seq["results"])
    assert len(ResultStore(tmp_path / "ray.sqlite").records()) == 5
