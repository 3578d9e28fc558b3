"""The evidence: verdict reasons, NaN -> inconclusive, controls with a null arm run in the
measurement, reference results (publish, read back, stale, malformed), and the headline that
every view shows (never a smoke verdict)."""

import json
import math
import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from iclr24 import provenance, published
from iclr24.claims import Estimate, Measurement, claim
from iclr24.cli import app
from iclr24.headline import choose, headlines, tally
from iclr24.store import _TABLE, Record, ResultStore

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def results(tmp_path, monkeypatch):
    """An empty reference-results folder for the test ($ICLR24_RESULTS)."""
    folder = tmp_path / "results"
    monkeypatch.setenv(published.ENV_VAR, str(folder))
    return folder


def _judge(rule, metrics, control=None, scale="small"):
    @claim(rule=rule, control=control, paper="p", against="a baseline")
    def c(scale, seed):
        return Measurement(metrics=metrics)

    return c.judge(metrics, scale)


# --- verdicts: reasons, non-finite metrics, controls ------------------------------------------

@pytest.mark.parametrize("value, word", [(math.nan, "NaN"), (math.inf, "infinite"),
                                         (-math.inf, "infinite")])
def test_a_non_finite_metric_is_inconclusive_with_its_reason(value, word):
    j = _judge("auroc > 0.5", {"auroc": value})
    assert j.verdict == "inconclusive" and j.reason == f"metric `auroc` is {word}"
    # never holds, even where the rest of the rule would decide on its own
    j = _judge("ok > 0 or auroc > 0.5", {"ok": 1.0, "auroc": value})
    assert j.verdict == "inconclusive" and "auroc" in j.reason
    # a metric the rule does not read does not matter
    assert _judge("ok > 0", {"ok": 1.0, "auroc": value}).verdict == "holds"


def test_an_estimate_with_a_nan_bound_and_a_callable_rule_reading_nan_are_inconclusive():
    e = Estimate(0.3, math.nan, 0.5, 3)
    j = _judge("d > 0", {"d": e})
    assert j.verdict == "inconclusive" and "non-finite low" in j.reason

    def rule(m):
        """auroc above chance"""
        return m["auroc"] > 0.5

    j = _judge(rule, {"auroc": math.nan, "other": 1.0})
    assert j.verdict == "inconclusive" and j.reason == "metric `auroc` is NaN"


def test_a_straddling_interval_names_the_comparison_and_the_estimate():
    d = Estimate(0.0041, -0.0063, 0.0145, 3)
    j = _judge("d > 0 and ok >= 1", {"d": d, "ok": 1.0})
    assert j.verdict == "inconclusive"
    assert j.reason.startswith("interval straddles the boundary of `d > 0`")
    assert "d = 0.0041 [" in j.reason and "(n=3)" in j.reason
    assert _judge("d > 0", {"d": Estimate(0.2, 0.1, 0.3, 3)}) == type(j)("holds", "")


def test_control_false_or_unknown_makes_the_verdict_inconclusive():
    m = {"gain": Estimate(1.0, 0.9, 1.1, 3), "null_gain": Estimate(0.5, 0.4, 0.6, 3)}
    j = _judge("gain > 0", m, control="null_gain <= 0")
    assert j.verdict == "inconclusive"
    assert j.reason == ("the test bed cannot tell: control `null_gain <= 0` is false; the rule "
                        "alone: holds")
    m["null_gain"] = Estimate(0.0, -0.1, 0.1, 3)
    j = _judge("gain > 0", m, control="null_gain <= 0")
    assert j.verdict == "inconclusive" and "is unknown (interval straddles" in j.reason
    m["null_gain"] = math.nan
    j = _judge("gain > 0", m, control="null_gain <= 0")
    assert j.verdict == "inconclusive" and "metric `null_gain` is NaN" in j.reason
    m["null_gain"] = Estimate(-0.5, -0.6, -0.4, 3)
    assert _judge("gain > 0", m, control="null_gain <= 0").verdict == "holds"
    # a control never turns a failure into a success: met, the rule decides
    m["gain"] = Estimate(-1.0, -1.1, -0.9, 3)
    assert _judge("gain > 0", m, control="null_gain <= 0").verdict == "fails"
    # per-scale controls fall back like rules
    per_scale = _judge("gain > 0", m, control={"small": "null_gain > 0"}, scale="full")
    assert per_scale.verdict == "inconclusive"


def test_malformed_controls_and_against_are_refused_at_decoration():
    from iclr24.claims import RuleError

    with pytest.raises(RuleError, match="not a valid expression"):
        claim(rule="x > 0", control="x >", paper="p")
    with pytest.raises(TypeError, match="control must be"):
        claim(rule="x > 0", control=3, paper="p")
    with pytest.raises(ValueError, match="against must say"):
        claim(rule="x > 0", paper="p", against="  ")


def test_a_null_arm_that_passes_the_main_rule_is_caught_by_the_control(fake_registry,
                                                                         monkeypatch):
    """The fake paper gamma measures its null arm in the same run: a test bed where the null
    passes `gain > 0` too gives inconclusive, never holds, at smoke and at small."""
    from iclr24.registry import get, select_claims
    from iclr24.runner import run_one

    paper = get("gamma")
    (controlled,) = select_claims(paper, ["controlled"])
    for scale in ("smoke", "small"):
        good = run_one(paper, controlled, scale, 0)
        assert good.verdict == "holds", good.reason
        monkeypatch.setenv("GAMMA_NULL_SHIFT", "0.5")  # the null arm now "gains" as well
        bad = run_one(paper, controlled, scale, 0)
        monkeypatch.delenv("GAMMA_NULL_SHIFT")
        assert controlled.verdict(bad.metrics, scale) != "holds"
        assert bad.verdict == "inconclusive" and "the test bed cannot tell" in bad.reason
        assert bad.control == "null_gain <= 0"
        # the rule alone would have passed the null: that is what the control is for
        assert "the rule alone: holds" in bad.reason


# --- reference results: publish, read back, stale, malformed ----------------------------------

def _small_records(fake_registry, monkeypatch):
    from iclr24.registry import get, select_claims
    from iclr24.runner import run_one

    monkeypatch.setenv("GAMMA_VALUE", "nan")
    gamma = get("gamma")
    alpha = get("alpha")
    recs = [run_one(gamma, c, "small", 0) for c in select_claims(gamma)]
    recs.append(run_one(alpha, select_claims(alpha, ["holds_claim"])[0], "small", 0))
    return recs


def _publish(recs):
    from iclr24.registry import get

    slugs = {r.paper for r in recs}
    return published.publish(recs, {s: provenance.code_hash(get(s).package_dir) for s in slugs},
                             {s: list(get(s).claim_names) for s in slugs})


def test_publish_then_read_back_record_for_record(fake_registry, monkeypatch, results):
    recs = _small_records(fake_registry, monkeypatch)
    paths = _publish(recs)
    assert sorted(p.name for p in paths) == ["alpha.jsonl", "gamma.jsonl"]
    back = {(r.paper, r.claim): r for r in published.load(figures=True)}
    assert len(back) == len(recs)
    for rec in recs:
        got = back[(rec.paper, rec.claim)]
        assert got.source == "reference"
        for attr in ("scale", "seed", "verdict", "reason", "rule", "control", "code_hash",
                     "git_commit", "started_at", "notes", "paper_reference", "tables",
                     "environment", "package_version"):
            assert getattr(got, attr) == getattr(rec, attr), attr
        assert got.duration_s == pytest.approx(rec.duration_s, abs=1e-3)
        assert got.cpu_s == pytest.approx(rec.cpu_s, abs=1e-3)
        assert got.metrics.keys() == rec.metrics.keys()
        for name, value in rec.metrics.items():
            if isinstance(value, Estimate):
                assert got.metrics[name] == value
            elif math.isnan(value):
                assert math.isnan(got.metrics[name])  # NaN is stored as null, read as NaN
            else:
                assert got.metrics[name] == value
        assert got.figure_png == rec.figure_png
    nan = back[("gamma", "not_finite")]
    assert nan.verdict == "inconclusive" and nan.reason == "metric `auroc` is NaN"
    ctl = back[("gamma", "controlled")]
    assert isinstance(ctl.metrics["gain"], Estimate) and ctl.metrics["gain"].n == 3
    env = ctl.environment
    assert {"python", "numpy", "cpu_model", "cores", "gpu"} <= set(env)
    # one line per claim and scale; publishing again replaces that line and keeps the others
    lines = (results / "gamma.jsonl").read_text().splitlines()
    assert [json.loads(x)["claim"] for x in lines] == ["controlled", "not_finite"]
    assert [json.loads(x)["n_seeds"] for x in lines] == [3, 1]
    monkeypatch.setenv("GAMMA_VALUE", "0.9")
    from iclr24.registry import get, select_claims
    from iclr24.runner import run_one

    again = run_one(get("gamma"), select_claims(get("gamma"), ["not_finite"])[0], "small", 1)
    _publish([again])
    lines2 = (results / "gamma.jsonl").read_text().splitlines()
    assert lines2[0] == lines[0] and json.loads(lines2[1])["verdict"] == "holds"


def test_publish_refuses_smoke_errors_and_changed_code(fake_registry, monkeypatch, results):
    from iclr24.registry import get, select_claims
    from iclr24.runner import run_one

    alpha = get("alpha")
    smoke = run_one(alpha, select_claims(alpha, ["holds_claim"])[0], "smoke", 0)
    with pytest.raises(published.PublishError, match="plumbing check"):
        _publish([smoke])
    error = run_one(alpha, select_claims(alpha, ["raises_claim"])[0], "small", 0)
    with pytest.raises(published.PublishError, match="raised"):
        _publish([error])
    good = run_one(alpha, select_claims(alpha, ["holds_claim"])[0], "small", 0)
    good.code_hash = "0" * 16
    with pytest.raises(published.PublishError, match="code changed"):
        _publish([good])
    assert not results.exists() or not list(results.glob("*.jsonl"))  # nothing half-written
    res = invoke("run", "alpha", "--scale", "smoke", "--publish")
    assert res.exit_code == 2 and "plumbing check" in res.output


def _copy_fake_papers(tmp_path, monkeypatch):
    """The fake papers in a temporary folder, the registry pointed there."""
    import sys

    from iclr24 import registry

    src = Path(__file__).resolve().parent / "fakepapers"
    root = tmp_path / "copy"
    shutil.copytree(src, root / "fakepapers", ignore=shutil.ignore_patterns("__pycache__"))
    for mod in [m for m in sys.modules if m == "fakepapers" or m.startswith("fakepapers.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setattr(registry, "PAPERS_DIR", root / "fakepapers")
    monkeypatch.setattr(registry, "CATALOG_PATH", root / "fakepapers" / "catalog.toml")
    monkeypatch.setattr(registry, "PAPERS_PACKAGE", "fakepapers")
    return root / "fakepapers"


def test_a_paper_file_edited_in_a_copy_makes_its_results_stale(tmp_path, monkeypatch, results):
    from iclr24.registry import get, papers, select_claims
    from iclr24.runner import run_one

    copy = _copy_fake_papers(tmp_path, monkeypatch)
    gamma = get("gamma")
    rec = run_one(gamma, select_claims(gamma, ["controlled"])[0], "small", 0)
    _publish([rec])
    h = headlines(papers(), [], published.load())[("gamma", "controlled")]
    assert (h.verdict, h.scale, h.stale, h.source) == ("holds", "small", False, "reference")
    with (copy / "gamma" / "__init__.py").open("a") as fh:
        fh.write("\n# an edit to the method\n")
    h = headlines(papers(), [], published.load())[("gamma", "controlled")]
    assert h.stale and h.verdict == "holds" and h.label == "holds (small, stale)"
    assert tally([h]) == {"holds": 0, "fails": 0, "inconclusive": 0, "stale": 1,
                          "not measured": 0}
    # the other paper's results do not depend on gamma's files
    assert provenance.code_hash(copy / "alpha") == provenance.code_hash(
        Path(__file__).resolve().parent / "fakepapers" / "alpha")
    res = invoke("list", "--json")
    doc = {p["slug"]: p for p in json.loads(res.stdout)["papers"]}
    (ctl,) = [r for r in doc["gamma"]["results"] if r["claim"] == "controlled"]
    assert ctl["headline"]["stale"] is True and ctl["headline"]["verdict"] == "holds"
    assert "1 stale" in json.loads(res.stdout)["summary"]


def test_the_code_hash_follows_the_kits_a_paper_imports(tmp_path, monkeypatch):
    """lcot imports the statistics kit through the claim contract, not the graph kit."""
    tree = tmp_path / "src"
    shutil.copytree(provenance.PACKAGE_DIR, tree / "iclr24",
                    ignore=shutil.ignore_patterns("__pycache__", "results"))
    monkeypatch.setattr(provenance, "SOURCE_ROOT", tree)
    monkeypatch.setattr(provenance, "PACKAGE_DIR", tree / "iclr24")
    lcot = tree / "iclr24" / "papers" / "lcot"
    files = {p.relative_to(tree).as_posix() for p in provenance.dependency_files(lcot)}
    assert {"iclr24/claims.py", "iclr24/kits/statistics.py", "iclr24/papers/lcot/claims.py"} \
        <= files
    assert not any(f.startswith("iclr24/kits/graphs") for f in files)
    before = provenance.code_hash(lcot)
    assert before == provenance.code_hash(provenance.PACKAGE_DIR / "papers" / "lcot")  # = tree
    with (tree / "iclr24" / "kits" / "graphs" / "__init__.py").open("a") as fh:
        fh.write("\n# unrelated\n")
    assert provenance.code_hash(lcot) == before
    with (tree / "iclr24" / "kits" / "statistics.py").open("a") as fh:
        fh.write("\n# the interval code changed\n")
    assert provenance.code_hash(lcot) != before


@pytest.mark.parametrize("line, message", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('{"format": 2}', "newer than this iclr24 reads"),
    ('{"format": 1, "paper": "alpha"}', "missing field(s) claim"),
])
def test_a_malformed_results_line_gives_a_clear_error_naming_file_and_line(
        fake_registry, monkeypatch, results, line, message):
    recs = _small_records(fake_registry, monkeypatch)
    _publish([r for r in recs if r.paper == "alpha"])
    path = results / "alpha.jsonl"
    path.write_text(path.read_text() + "\n" + line + "\n")
    with pytest.raises(published.ResultsFormatError) as info:
        published.load()
    assert str(info.value).startswith(f"{path}:3: ") and message in str(info.value)
    res = invoke("list")
    assert res.exit_code == 2 and f"{path}:3" in res.output.replace("\n", "")
    res = invoke("report", "--out", results.parent / "rep")
    assert res.exit_code == 2


def test_a_duplicate_or_misfiled_line_is_an_error(fake_registry, monkeypatch, results):
    recs = _small_records(fake_registry, monkeypatch)
    _publish([r for r in recs if r.paper == "alpha"])
    path = results / "alpha.jsonl"
    line = path.read_text().splitlines()[0]
    path.write_text(line + "\n" + line + "\n")
    with pytest.raises(published.ResultsFormatError, match=":2: a second line"):
        published.load()
    (results / "gamma.jsonl").write_text(line + "\n")
    path.unlink()
    with pytest.raises(published.ResultsFormatError, match="gamma.jsonl:1: a result of paper"):
        published.load()


# --- the headline ----------------------------------------------------------------------------

def _rec(claim_name, scale, verdict, started, code_hash="h", source="local", **kw):
    return Record(paper="alpha", claim=claim_name, scale=scale, seed=0, verdict=verdict,
                  metrics={"x": 1.0}, rule="x > 0", paper_reference={"text": "", "numbers": {}},
                  duration_s=1.0, started_at=started, code_hash=code_hash, source=source, **kw)


def test_headline_is_the_largest_scale_current_result_never_smoke():
    smoke = _rec("c", "smoke", "holds", "2026-01-03")
    small = _rec("c", "small", "fails", "2026-01-01", source="reference")
    full_old = _rec("c", "full", "holds", "2026-01-02", code_hash="old")
    h = choose("alpha", "c", [smoke, small, full_old], "h")
    assert (h.verdict, h.scale, h.stale, h.source) == ("fails", "small", False, "reference")
    assert h.smoke is smoke and h.smoke_status == "ran"
    assert choose("alpha", "c", [smoke], "h").verdict == "not measured"
    h = choose("alpha", "c", [smoke, full_old], "h")
    assert h.stale and h.scale == "full" and h.label == "holds (full, stale, local)"
    full = _rec("c", "full", "inconclusive", "2025-12-01", reason="why")
    h = choose("alpha", "c", [small, full], "h")
    assert (h.verdict, h.scale, h.reason) == ("inconclusive", "full", "why")
    newer = _rec("c", "small", "holds", "2026-02-01")
    assert choose("alpha", "c", [small, newer], "h").record is newer  # the user's newer run
    err = _rec("c", "small", "error", "2026-03-01")
    assert choose("alpha", "c", [small, err], "h").record is small
    migrated = _rec("c", "small", "holds", "2026-03-01", code_hash="")
    assert choose("alpha", "c", [migrated], "h").stale  # no hash: cannot be current


def test_list_show_and_report_headline_small_and_never_smoke(fake_registry, tmp_path,
                                                              monkeypatch, results):
    store = tmp_path / "r.sqlite"
    res = invoke("run", "alpha", "gamma", "--scale", "smoke", "--store", store)
    assert "claims ran at smoke here" in res.stdout
    lines = [x.split() for x in res.stdout.splitlines() if x.startswith(("alpha.", "gamma."))]
    assert len(lines) == 7 and {x[1] for x in lines} == {"ran", "error"}  # no smoke verdicts
    assert "0 holds · 0 fails · 0 inconclusive; 0 stale; 7 not yet measured" in res.stdout
    recs = _small_records(fake_registry, monkeypatch)
    _publish([r for r in recs if r.claim == "controlled"])
    doc = json.loads(invoke("list", "--json", "--store", store).stdout)
    gamma = {r["claim"]: r for p in doc["papers"] if p["slug"] == "gamma" for r in p["results"]}
    head = gamma["controlled"]["headline"]
    assert {"verdict", "scale", "stale", "reason"} <= set(head)
    assert (head["verdict"], head["scale"], head["stale"]) == ("holds", "small", False)
    assert head["source"] == "reference"
    assert gamma["controlled"]["smoke"]["status"] == "ran"
    nf = gamma["not_finite"]
    assert nf["headline"]["verdict"] == "not measured" and nf["headline"]["scale"] is None
    alpha = {r["claim"]: r for p in doc["papers"] if p["slug"] == "alpha" for r in p["results"]}
    assert alpha["raises_claim"]["smoke"]["status"] == "error"
    assert all(r["headline"]["verdict"] == "not measured" for r in alpha.values())
    shown = json.loads(invoke("show", "gamma", "--json", "--store", store).stdout)
    (ctl,) = [r for r in shown["results"] if r["claim"] == "controlled"]
    assert ctl["headline"]["metrics"]["gain"]["n"] == 3
    assert ctl["headline"]["control"] == "null_gain <= 0"
    from rich.console import Console

    from iclr24 import cli

    monkeypatch.setattr(cli, "out", Console(width=250))  # the show table on one line per row
    text = invoke("show", "gamma", "--store", store).stdout
    assert "holds (small)" in text and "not measured" in text

    out = tmp_path / "report"
    assert invoke("report", "--out", out, "--store", store).exit_code == 0
    index = (out / "index.html").read_text()
    assert "1 holds" in index and "6 not measured" in index and "5 ran" in index
    assert "controlled: holds (small)" in index
    # a smoke verdict is never a badge: alpha ran holds_claim at smoke ("holds" by its rule)
    assert "holds_claim: holds" not in index and "holds_claim: not measured" in index
    md = (out / "report.md").read_text()
    assert "### controlled: **holds (small)**; smoke here: ran" in md
    page = (out / "papers" / "gamma.html").read_text()
    assert "control:</strong> <code>null_gain &lt;= 0</code>" in page


def test_store_schema_2_gains_reason_control_and_code_hash(tmp_path):
    path = tmp_path / "v2.sqlite"
    store = ResultStore(path)
    store.add(_rec("c", "small", "holds", "2026-01-01"))
    with sqlite3.connect(path) as conn:  # make it look like a version-2 store
        v2 = "\n".join(line for line in _TABLE.format(name="v2").splitlines()
                       if not line.strip().startswith(("reason", "control", "code_hash")))
        conn.execute(v2.replace("environment     TEXT NOT NULL,", "environment TEXT NOT NULL"))
        cols = ", ".join(r[1] for r in conn.execute("PRAGMA table_info(v2)"))
        conn.execute(f"INSERT INTO v2 ({cols}) SELECT {cols} FROM results")
        conn.execute("DROP TABLE results")
        conn.execute("ALTER TABLE v2 RENAME TO results")
        conn.execute("PRAGMA user_version = 2")
    (rec,) = ResultStore(path).records()
    assert (rec.verdict, rec.reason, rec.control, rec.code_hash) == ("holds", "", "", "")
    new = _rec("c", "small", "inconclusive", "2026-01-02", reason="r", control="x > 1")
    ResultStore(path).add(new)
    got = ResultStore(path).records()[-1]
    assert (got.reason, got.control, got.code_hash) == ("r", "x > 1", "h")
