"""The smoke claims run with their null arms (measured in the same run) put in the method's
place, and the rules and controls fed hand-made rows (holds / fails / the test bed cannot
tell)."""

import copy

import pytest

from iclr24.claims import FAILS, HOLDS, INCONCLUSIVE, Scale, evaluate_rule
from iclr24.papers.diffcsp_pp.claims import (
    _SMOKE,
    csp_match_rate,
    match_metrics,
    symmetry_metrics,
    symmetry_preserved,
)
from iclr24.papers.diffcsp_pp.experiment import ARMS, run_csp_experiment


@pytest.fixture(scope="module")
def private_cache(tmp_path_factory):
    """Both smoke claims share one empty cache (the first trains, the second reads it)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ICLR24_CACHE", str(tmp_path_factory.mktemp("diffcsp_pp_cache")))
        yield


def test_symmetry_smoke_and_diffcsp_null(private_cache, check_smoke_claim):
    m = check_smoke_claim(symmetry_preserved, [
        "valid_rate_pp", "valid_rate_diffcsp", "valid_rate_pp_untrained", "sym_rate_truth",
        "min_valid_pp", "min_valid_diffcsp"])
    assert m.metrics["sym_rate_truth"] == 1.0  # the detector finds every target's own group
    assert {r["prototype"] for r in m.tables["per_prototype"]} <= {
        "rocksalt", "cscl", "zincblende", "wurtzite", "nias", "rutile", "fluorite", "cdi2",
        "anatase", "perovskite"}
    run = run_csp_experiment(_SMOKE, 0)  # from the cache the claim filled
    for r in run["rows"]:
        for arm in ARMS:  # an invalid cell has no group; a valid one is never counted invalid
            assert r[f"valid_{arm}"] or r[f"sg_{arm}"] is None
    # the null arm of this claim, DiffCSP (no constraint), in the method's place
    null = copy.deepcopy(run)
    for r in null["rows"]:
        r["valid_diffcsp_pp"], r["sg_diffcsp_pp"] = r["valid_diffcsp"], r["sg_diffcsp"]
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert symmetry_preserved.verdict(symmetry_metrics([null]), scale) != HOLDS
        assert symmetry_preserved.verdict(symmetry_metrics([null] * 3), scale) != HOLDS


def test_match_smoke_and_untrained_null(private_cache, check_smoke_claim):
    m = check_smoke_claim(csp_match_rate, [
        "match_gain", "match_gain_untrained", "match_gain_vs_untrained", "match_rate_pp",
        "match_rate_diffcsp", "match_rate_pp_untrained", "match_rate_pp_retrieved",
        "match_gain_all", "match_gain_untrained_all", "retrieved_template_correct", "n_open"])
    assert 0 <= m.metrics["match_rate_pp"] <= 1 and m.metrics["n_open"] >= 1
    # the untrained network with the true template (the null arm of this run) in the method's
    # place never holds: either it fails the rule or, passing it, fails the control
    null = {**m.metrics, "match_gain": m.metrics["match_gain_untrained"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert csp_match_rate.verdict(null, scale) != HOLDS


def _row(i, n_open, hits=None, sym=None, valid=None, truth=True):
    """Test crystal i: open (template with free parameters) for i < n_open. ``hits[arm]`` is
    how many of the open crystals the arm matches (closed ones: DiffCSP++ arms always match,
    DiffCSP never); ``valid`` / ``sym``: how many crystals (from the first) an arm gets valid
    / keeps the group on."""
    is_open, hits = i < n_open, hits or {}
    row = {"prototype": "rutile" if is_open else "rocksalt", "free_parameters": 2 if is_open
           else 0, "target_spacegroup": 136 if is_open else 225,
           "retrieved_spacegroup": 136 if is_open else 225}
    row["truth_spacegroup"] = row["target_spacegroup"] if truth else None
    for arm in ARMS:
        if is_open:
            match = i < hits.get(arm, 0)
        else:
            match = arm != "diffcsp"
        row[f"rms_{arm}"] = 0.05 if match else None
        ok = valid is None or i < valid.get(arm, 10 ** 6)
        row[f"valid_{arm}"] = ok
        keeps = sym is None or i < sym.get(arm, 10 ** 6)
        row[f"sg_{arm}"] = (row["target_spacegroup"] if keeps else 2) if ok else None
    return row


def _runs(n=80, n_open=40, jitter=(0, 2, 4), **kw):
    """Three seeds' rows; the counts in ``hits`` / ``valid`` / ``sym`` move by ``jitter``."""
    out = []
    for j in jitter:
        shifted = {k: ({a: c + j for a, c in v.items()} if isinstance(v, dict) else v)
                   for k, v in kw.items()}
        out.append({"rows": [_row(i, n_open, **shifted) for i in range(n)]})
    return out


def test_match_rule_and_control():
    def judge(runs):
        return csp_match_rate.verdict(match_metrics(runs), Scale.SMALL)

    learned = {"diffcsp_pp": 30, "diffcsp": 4, "diffcsp_pp_untrained": 0}
    assert judge(_runs(hits=learned)) == HOLDS
    # the audit's case: every DiffCSP++ match, trained or not, is a template-determined cubic
    # prototype; the old rule (the whole test set) holds, the new one does not
    template_only = {"diffcsp_pp": 0, "diffcsp": 0, "diffcsp_pp_untrained": 0}
    m = match_metrics(_runs(hits=template_only))
    assert evaluate_rule("match_gain_all >= 0.1", m) is True
    assert csp_match_rate.verdict(m, Scale.SMALL) == FAILS
    # the untrained network also passes on the open templates: the test bed cannot tell
    untrained_too = {"diffcsp_pp": 30, "diffcsp": 4, "diffcsp_pp_untrained": 25}
    assert judge(_runs(hits=untrained_too)) == INCONCLUSIVE
    # no better than DiffCSP
    assert judge(_runs(hits={"diffcsp_pp": 5, "diffcsp": 5})) == FAILS


def test_symmetry_rule_and_control():
    def judge(runs):
        return symmetry_preserved.verdict(symmetry_metrics(runs), Scale.SMALL)

    assert judge(_runs(sym={"diffcsp": 20})) == HOLDS  # DiffCSP keeps 20-24 of 80
    # the audit's case: DiffCSP++ valid on only 20 of 80, every valid one symmetric; the old
    # metric (invalid = lost symmetry) read 0.25, the symmetry of the valid ones is 1.0
    mostly_invalid = _runs(valid={"diffcsp_pp": 20}, sym={"diffcsp": 20})
    m = symmetry_metrics(mostly_invalid)
    assert m["sym_rate_pp"].value == 1.0 and m["valid_rate_pp"].value == pytest.approx(0.275)
    assert judge(mostly_invalid) == HOLDS
    # DiffCSP keeps the group as often: fails
    assert judge(_runs(sym={"diffcsp_pp": 70, "diffcsp": 70})) == FAILS
    # too few valid predictions to read a rate, or a detector that misses the targets' own
    # groups: the test bed cannot tell
    assert judge(_runs(valid={"diffcsp_pp": 5}, sym={"diffcsp": 20})) == INCONCLUSIVE
    assert judge(_runs(sym={"diffcsp": 20}, truth=False)) == INCONCLUSIVE
