"""The results store: round trips, concurrent writers, interrupted runs, schema versioning."""

import math
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iclr24.store import SCHEMA_VERSION, Record, ResultStore, StoreError, default_path

HERE = Path(__file__).resolve().parent


def make_record(i: int = 0, **kw) -> Record:
    base = dict(paper="alpha", claim=f"c{i % 3}", scale="smoke", seed=i, verdict="holds",
                metrics={"x": float(i), "bad": math.nan}, rule="x >= 0",
                paper_reference={"text": "t", "numbers": {"x": 1.0}}, duration_s=0.1,
                started_at="2026-01-01T00:00:00+00:00", tables={"t": [{"a": 1}]},
                notes="n", figure_png=b"\x89PNG", environment={"python": "3.11"})
    base.update(kw)
    return Record(**base)


def test_round_trip(tmp_path):
    store = ResultStore(tmp_path / "r.sqlite")
    rec = make_record(4)
    rid = store.add(rec)
    (back,) = store.records()
    assert back.id == rid
    assert back.metrics["x"] == 4.0 and math.isnan(back.metrics["bad"])
    assert back.tables == {"t": [{"a": 1}]}
    assert back.figure_png == b"\x89PNG"
    assert back.paper_reference == {"text": "t", "numbers": {"x": 1.0}}
    assert back.to_json()["metrics"]["bad"] is None


def test_latest_keeps_newest_per_claim_and_scale(tmp_path):
    store = ResultStore(tmp_path / "r.sqlite")
    for i in range(6):
        store.add(make_record(i))
    store.add(make_record(9, claim="c0", scale="small"))
    latest = store.latest()
    assert [(r.claim, r.scale, r.seed) for r in latest] == [
        ("c0", "smoke", 3), ("c1", "smoke", 4), ("c2", "smoke", 5), ("c0", "small", 9)]
    assert len(store.records(claim="c0")) == 3
    assert store.records(paper="nobody") == []


def test_bad_verdict_rejected():
    with pytest.raises(ValueError, match="verdict must be one of"):
        make_record(verdict="maybe")


def test_unusable_paths(tmp_path):
    with pytest.raises(StoreError, match="is a directory"):
        ResultStore(tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="cannot create the store's folder"):
        ResultStore(blocker / "sub" / "r.sqlite")


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "r.sqlite"
    ResultStore(path)
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer than"):
        ResultStore(path)


def test_default_path_env(monkeypatch, tmp_path):
    monkeypatch.delenv("ICLR24_STORE", raising=False)
    assert default_path() == Path("runs/results.sqlite")
    monkeypatch.setenv("ICLR24_STORE", str(tmp_path / "x.sqlite"))
    assert default_path() == tmp_path / "x.sqlite"


WRITER = """
import sys
from iclr24.store import Record, ResultStore
store = ResultStore(sys.argv[1])
for i in range(int(sys.argv[3])):
    store.add(Record(paper=sys.argv[2], claim="c", scale="smoke", seed=i, verdict="holds",
                     metrics={"i": i}, rule="i >= 0", paper_reference={"text": "", "numbers": {}},
                     duration_s=0.0, started_at="now"))
"""


@pytest.mark.serial
def test_two_concurrent_writers_both_succeed(tmp_path):
    path = tmp_path / "r.sqlite"
    n = 150
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), name, str(n)])
             for name in ("p1", "p2")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    store = ResultStore(path)
    assert store.integrity_ok()
    for name in ("p1", "p2"):
        assert [r.seed for r in store.records(paper=name)] == list(range(n))


def _default_sigint() -> None:
    """A shell starts background jobs with SIGINT ignored and children inherit that; Python
    then installs no KeyboardInterrupt handler. Restore the default so Ctrl-C tests also pass
    when the suite itself runs in the background."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _cli(args, env_extra=None, **kw):
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.Popen([sys.executable, str(HERE / "fake_cli.py"), *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_sigint, **kw)


def _wait_for_records(path, count, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.exists():
            try:
                if len(ResultStore(path).records()) >= count:
                    return
            except StoreError:
                pass
        time.sleep(0.2)
    raise AssertionError(f"store never reached {count} records")


@pytest.mark.timeout(120)
@pytest.mark.serial
def test_ctrl_c_records_what_finished(tmp_path):
    path = tmp_path / "r.sqlite"
    # claims run in source order: holds, fails, raises, then scaled_claim sleeps for 60 s
    proc = _cli(["run", "alpha", "--scale", "smoke", "--store", str(path)],
                env_extra={"ALPHA_SLEEP": "60"})
    _wait_for_records(path, 3)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr
    store = ResultStore(path)
    assert store.integrity_ok()
    assert [r.claim for r in store.records()] == ["holds_claim", "fails_claim", "raises_claim"]


@pytest.mark.timeout(120)
@pytest.mark.serial
def test_killed_run_leaves_a_readable_store(tmp_path):
    path = tmp_path / "r.sqlite"
    proc = _cli(["run", "alpha", "--scale", "smoke", "--store", str(path)],
                env_extra={"ALPHA_SLEEP": "60"})
    _wait_for_records(path, 3)
    proc.kill()
    proc.wait(timeout=30)
    store = ResultStore(path)
    assert store.integrity_ok()
    assert len(store.records()) == 3
    # and the store keeps working after the crash
    store.add(make_record(1))
    assert len(store.records()) == 4


def test_version_1_store_is_migrated_in_place(tmp_path):
    """A store file written by the version-1 code (tests/core/data/store_v1.sqlite) opens,
    upgrades in one transaction and keeps every row; new verdicts and estimates then fit."""
    import shutil

    from iclr24.claims import Estimate

    path = tmp_path / "old.sqlite"
    shutil.copy(HERE / "data" / "store_v1.sqlite", path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
        before = conn.execute("SELECT * FROM results ORDER BY id").fetchall()
    store = ResultStore(path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
    old = store.records()
    assert [(r.id, r.claim, r.verdict) for r in old] == [
        (1, "holds_claim", "holds"), (2, "fails_claim", "fails"), (3, "raises_claim", "error")]
    assert len(old) == len(before)
    assert old[0].metrics == {"ratio": 2.0, "noise": 0.5} and old[0].figure_png == b"\x89PNG fake"
    assert old[0].tables == {"per_size": [{"n": 1, "t": 0.5}]} and old[0].notes == "A note."
    assert math.isnan(old[1].metrics["gap"]) and "deliberate" in old[2].error
    assert all(r.cpu_s is None for r in old)
    new_id = store.add(make_record(7, verdict="inconclusive", cpu_s=1.25,
                                   metrics={"d": Estimate(0.0041, -0.0063, 0.0145, 5)}))
    assert new_id == 4  # the id sequence continues after the migrated rows
    back = store.records()[-1]
    assert back.verdict == "inconclusive" and back.cpu_s == 1.25
    assert back.metrics["d"] == Estimate(0.0041, -0.0063, 0.0145, 5)
    assert store.integrity_ok()
    ResultStore(path)  # opening again is a no-op
    assert len(ResultStore(path).records()) == 4


def test_failed_migration_leaves_the_old_store_untouched(tmp_path, monkeypatch):
    import shutil

    from iclr24 import store as store_module

    path = tmp_path / "old.sqlite"
    shutil.copy(HERE / "data" / "store_v1.sqlite", path)
    monkeypatch.setattr(store_module, "_INDEX", "CREATE INDEX broken ON nowhere (x)")
    with pytest.raises(StoreError):
        ResultStore(path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM results").fetchone()[0] == 3


def test_estimates_round_trip_with_nan(tmp_path):
    from iclr24.claims import Estimate

    store = ResultStore(tmp_path / "r.sqlite")
    e = Estimate(math.nan, math.nan, math.nan, 2)
    store.add(make_record(1, metrics={"e": e, "x": 1.0}))
    (back,) = store.records()
    assert math.isnan(back.metrics["e"].value) and back.metrics["e"].n == 2
    assert back.to_json()["metrics"]["e"]["low"] is None
