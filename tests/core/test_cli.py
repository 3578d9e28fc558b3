"""Every CLI verb, with good and bad input, exit codes and messages."""

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from iclr24.cli import app

runner = CliRunner()
BIN = Path(sys.executable).parent


def invoke(*args, **kw):
    return runner.invoke(app, [str(a) for a in args], **kw)


# --- against the real catalogue -------------------------------------------------------------

def test_list_real_catalogue_json(tmp_path):
    res = invoke("list", "--json", "--store", tmp_path / "none.sqlite")
    assert res.exit_code == 0, res.output
    papers = json.loads(res.stdout)["papers"]
    assert len(papers) == 57
    assert len({p["slug"] for p in papers}) == 57
    assert {p["status"] for p in papers} <= {"implemented", "planned"}
    lcot = next(p for p in papers if p["slug"] == "lcot")
    assert lcot["status"] == "implemented"
    assert set(lcot["claims"]) == {"speedup", "fidelity", "classification"}
    # a planned paper lists no claims, an implemented one at least one (the fake catalogue's
    # tests cover planned papers once every real one has landed)
    for p in papers:
        assert (p["status"] == "planned") == (p["claims"] == []), p["slug"]
    assert not (tmp_path / "none.sqlite").exists(), "listing must not create a store"


def test_list_table_shows_all_papers():
    res = invoke("list")
    assert res.exit_code == 0
    assert "57 papers" in res.stdout and "nma_protein_diffusion" in res.stdout


def test_show_real_paper_json():
    res = invoke("show", "lcot", "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["slug"] == "lcot" and doc["status"] == "implemented"
    assert "lcot_distance" in doc["public_api"]


@pytest.mark.timeout(60)
def test_help_and_list_are_fast():
    """CPU time, not wall time, so a busy machine does not make the test flaky."""
    exe = str(BIN / "iclr24")
    for args in (["--help"], ["list"]):
        subprocess.run([exe, *args], capture_output=True, check=True)  # warm the disk cache
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run([exe, *args], capture_output=True, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        assert proc.returncode == 0, proc.stderr
        assert cpu < 1.0, f"iclr24 {' '.join(args)} took {cpu:.2f} s of CPU"
    code = "import sys, iclr24.cli; print(sorted(m for m in ('torch','jax','ot','numpy') " \
           "if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.strip() == "[]", "the CLI must not import heavy libraries at start-up"


# --- against the fake papers ----------------------------------------------------------------

def test_run_json_exit_codes_and_store(fake_registry, tmp_path):
    store = tmp_path / "r.sqlite"
    res = invoke("run", "alpha", "--scale", "smoke", "--seed", 7, "--store", store, "--json")
    assert res.exit_code == 1, res.output  # raises_claim errored
    doc = json.loads(res.stdout)
    got = {r["claim"]: r for r in doc["results"]}
    assert got["holds_claim"]["verdict"] == "holds"
    assert got["fails_claim"]["verdict"] == "fails"
    assert got["raises_claim"]["verdict"] == "error"
    assert got["scaled_claim"]["verdict"] == "holds"
    assert got["scaled_claim"]["metrics"] == {"n": 1.0, "seed": 7.0}
    for r in doc["results"]:
        assert set(r) >= {"paper", "claim", "scale", "seed", "verdict", "metrics",
                          "paper_reference", "duration_s"}
    assert got["holds_claim"]["paper_reference"]["numbers"] == {"ratio": 3.0}
    assert "deliberate failure" in got["raises_claim"]["error"]

    res = invoke("run", "alpha", "--claim", "holds_claim", "--claim", "fails_claim",
                 "--scale", "small", "--store", store)
    assert res.exit_code == 0, res.output  # a failing verdict is not an error
    res = invoke("run", "alpha", "--claim", "scaled_claim", "--store", store, "--json")
    (only,) = json.loads(res.stdout)["results"]
    assert only["scale"] == "small" and only["verdict"] == "fails"  # small rule: n >= 10


def test_claims_not_run_at_a_scale_are_left_out_and_named(fake_registry, tmp_path,
                                                           monkeypatch):
    real = fake_registry.papers

    def papers():  # alpha's holds_claim declared scales=("small", "full")
        out = real()
        for p in out:
            if p.slug == "alpha":
                p.claim_scales["holds_claim"] = ("small", "full")
        return out

    monkeypatch.setattr(fake_registry, "papers", papers)
    store = tmp_path / "r.sqlite"
    res = invoke("run", "alpha", "--scale", "smoke", "--store", store, "--json")
    assert "holds_claim" not in {r["claim"] for r in json.loads(res.stdout)["results"]}
    assert "not run at smoke" in res.stderr and "alpha.holds_claim" in res.stderr
    res = invoke("run", "alpha", "--claim", "holds_claim", "--scale", "smoke", "--store", store)
    assert res.exit_code == 2
    assert "not run at smoke: alpha.holds_claim (runs at small, full)" in res.stderr
    res = invoke("run", "alpha", "--claim", "holds_claim", "--scale", "small", "--store", store,
                 "--json")
    assert [r["verdict"] for r in json.loads(res.stdout)["results"]] == ["holds"]


def test_a_real_claim_too_heavy_for_smoke_is_refused_by_name():
    res = invoke("run", "zeropp", "--claim", "deepspeed_cross_check", "--scale", "smoke")
    assert res.exit_code == 2 and "runs at small, full" in res.stderr


def test_run_is_deterministic_for_a_seed(fake_registry, tmp_path):
    def noise(seed):
        res = invoke("run", "alpha", "--claim", "holds_claim", "--seed", seed,
                     "--store", tmp_path / "r.sqlite", "--json")
        return json.loads(res.stdout)["results"][0]["metrics"]["noise"]

    assert noise(3) == noise(3)
    assert noise(3) != noise(4)


@pytest.mark.parametrize("args,message", [
    (["run", "nosuch"], "unknown paper 'nosuch'; valid slugs: alpha, beta"),
    (["run", "alpha", "--claim", "nosuch"], "no selected paper has claim(s) nosuch"),
    (["run", "beta"], "planned, not implemented"),
    (["run", "all", "alpha"], "cannot be combined"),
    (["show", "nosuch"], "unknown paper 'nosuch'"),
])
def test_bad_usage_exits_2(fake_registry, tmp_path, args, message):
    res = invoke(*args, "--store", tmp_path / "r.sqlite") if args[0] == "run" else invoke(*args)
    assert res.exit_code == 2
    assert message in res.stderr


def test_bad_scale_exits_2(fake_registry):
    res = invoke("run", "alpha", "--scale", "huge")
    assert res.exit_code == 2
    assert "huge" in res.output and "smoke" in res.output


def test_unwritable_store_exits_2(fake_registry, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = invoke("run", "alpha", "--store", blocker / "sub" / "r.sqlite")
    assert res.exit_code == 2
    assert "cannot create the store's folder" in res.stderr


def test_store_from_environment(fake_registry, tmp_path):
    store = tmp_path / "env.sqlite"
    res = invoke("run", "alpha", "--claim", "fails_claim", env={"ICLR24_STORE": str(store)})
    assert res.exit_code == 0
    assert store.exists()


def test_list_and_show_with_results(fake_registry, tmp_path):
    store = tmp_path / "r.sqlite"
    invoke("run", "alpha", "--scale", "smoke", "--store", store)
    res = invoke("list", "--json", "--store", store)
    alpha = json.loads(res.stdout)["papers"][0]
    assert alpha["status"] == "implemented"
    assert alpha["claims"] == ["holds_claim", "fails_claim", "raises_claim", "scaled_claim",
                               "estimate_claim"]
    # smoke runs are checks beside the headline, never the headline
    assert {x["smoke"]["status"] for x in alpha["results"]} == {"ran", "error"}
    assert {x["headline"]["verdict"] for x in alpha["results"]} == {"not measured"}
    res = invoke("show", "alpha", "--store", store)
    assert res.exit_code == 0
    assert "double" in res.stdout and "holds_claim" in res.stdout
    doc = json.loads(invoke("show", "alpha", "--json", "--store", store).stdout)
    assert doc["public_api"] == ["double"] and len(doc["local_runs"]) == 5
    res = invoke("show", "beta")
    assert res.exit_code == 0 and "Planned" in res.stdout


def test_report_files(fake_registry, tmp_path):
    store = tmp_path / "r.sqlite"
    invoke("run", "alpha", "--scale", "smoke", "--store", store)
    out = tmp_path / "report"
    res = invoke("report", "--out", out, "--store", store)
    assert res.exit_code == 0, res.output
    md = (out / "report.md").read_text()
    html = (out / "papers" / "alpha.html").read_text()
    invoke("run", "alpha", "--claim", "holds_claim", "--scale", "small", "--store", store)
    res = invoke("report", "--out", out, "--store", store)
    md = (out / "report.md").read_text()
    html = (out / "papers" / "alpha.html").read_text()
    png = out / "figures" / "alpha__holds_claim__small.png"
    assert png.read_bytes().startswith(b"\x89PNG")
    assert "| ratio | 2 | 3 |" in md  # ours beside the paper's number
    assert "smoke here: error" in md and "per_size" in md
    assert "deliberate failure" in html  # the smoke check's traceback
    assert "../figures/alpha__holds_claim__small.png" in html
    assert "beta" in md and (out / "papers" / "beta.html").is_file()  # planned papers too


def test_report_without_store_and_unwritable_out(fake_registry, tmp_path):
    res = invoke("report", "--out", tmp_path / "rep", "--store", tmp_path / "missing.sqlite")
    assert res.exit_code == 0
    assert "0 ran, 0 errors, 7 not run" in (tmp_path / "rep" / "report.md").read_text()
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = invoke("report", "--out", blocker / "rep")
    assert res.exit_code == 2 and "cannot write the report" in res.stderr


def test_import_failure_becomes_error_records(fake_registry, tmp_path, monkeypatch):
    monkeypatch.setattr(fake_registry, "PAPERS_PACKAGE", "no_such_package_anywhere")
    res = invoke("run", "alpha", "--claim", "holds_claim", "--store", tmp_path / "r.sqlite",
                 "--json")
    assert res.exit_code == 1
    (rec,) = json.loads(res.stdout)["results"]
    assert rec["verdict"] == "error" and "failed to import" in rec["error"]


def test_estimates_in_json_show_and_report(fake_registry, tmp_path, monkeypatch):
    from rich.console import Console

    from iclr24 import cli

    monkeypatch.setattr(cli, "out", Console(width=250))  # the show table on one line per row
    store = tmp_path / "r.sqlite"
    res = invoke("run", "alpha", "--claim", "estimate_claim", "--store", store, "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    (rec,) = doc["results"]
    assert rec["verdict"] == "inconclusive" and doc["counts"]["inconclusive"] == 1
    gain = rec["metrics"]["gain"]
    assert gain["low"] < 0 < gain["high"] and gain["n"] == 5 and gain["confidence"] == 0.95
    res = invoke("show", "alpha", "--store", store)
    assert "inconclusive (small, local)" in res.stdout and "(n=5)" in res.stdout
    assert "interval straddles the boundary of `gain > 0`" in res.stdout
    res = invoke("run", "alpha", "--claim", "estimate_claim", "--store", store)
    assert "1 inconclusive" in res.stdout
    invoke("report", "--out", tmp_path / "rep", "--store", store)
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "| gain | 0.1 [" in md and "(n=5) | 0.01 |" in md
    assert "1 inconclusive" in md and "## Durations" in md and "- why: interval straddles" in md
    assert 'class="badge inconclusive"' in (tmp_path / "rep" / "index.html").read_text()


def test_run_names_the_slowest_claims_and_budget_breaches(fake_registry, tmp_path,
                                                          monkeypatch):
    from iclr24 import cli

    res = invoke("run", "alpha", "--scale", "smoke", "--store", tmp_path / "r.sqlite")
    assert "slowest: alpha." in res.stderr and "over the smoke budget" not in res.stderr
    monkeypatch.setattr(cli, "SMOKE_PAPER_CPU_S", -1.0)
    res = invoke("run", "alpha", "--scale", "smoke", "--store", tmp_path / "r.sqlite")
    assert "over the smoke budget of -1 s of CPU per paper: alpha" in res.stderr
