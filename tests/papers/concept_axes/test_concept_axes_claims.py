"""concept_axes claims: the rules and controls fed hand-made per-replicate numbers (holds /
fails / the test bed cannot tell), and the smoke runs with their null arms (measured in the
same run) put in the method's place."""

import pytest

from iclr24.claims import FAILS, HOLDS, INCONCLUSIVE, Scale, seed_difference, seed_metric
from iclr24.papers.concept_axes.claims import anchoring_disentangles, nuance_beyond_words


def _anchoring(ours, no_anchor, shuffled, true_words):
    """The metrics the anchoring rule and control read, built as the claim builds them."""
    return {"gain_vs_no_anchor": seed_difference(ours, no_anchor),
            "gain_shuffled_anchor": seed_difference(shuffled, no_anchor),
            "headroom_true_words": seed_difference(true_words, no_anchor),
            "success_true_words": seed_metric(true_words)}


NO_ANCHOR = [0.40, 0.37, 0.42]
GOOD = {"ours": [0.60, 0.58, 0.63], "no_anchor": NO_ANCHOR, "shuffled": [0.41, 0.36, 0.43],
        "true_words": [0.80, 0.78, 0.83]}


def test_anchoring_rule_and_control():
    judge = lambda **kw: anchoring_disentangles.verdict(_anchoring(**{**GOOD, **kw}), Scale.SMALL)
    assert judge() == HOLDS
    assert judge(ours=NO_ANCHOR) == FAILS  # the baseline passed off as the method
    assert judge(ours=[0.44, 0.42, 0.47]) == FAILS  # +5 points is not the +10 claimed
    # the stand-in ignores its captions (the old test bed): cannot tell
    assert judge(true_words=[0.05, 0.03, 0.04]) == INCONCLUSIVE
    # the true words leave no room for a 10-point gain over no-anchor: cannot tell
    assert judge(true_words=[0.45, 0.42, 0.47]) == INCONCLUSIVE
    # anchoring to shuffled answers "helps" as much: the gain is not the VQA's information
    assert judge(shuffled=[0.60, 0.57, 0.62]) == INCONCLUSIVE


def _nuance(ours, text_only, true_words, null):
    ratio = lambda a: seed_metric([x / t for x, t in zip(a, text_only)])
    return {"hue_error_ratio": ratio(ours), "hue_ratio_true_words": ratio(true_words),
            "hue_ratio_null": ratio(null)}


TEXT = [20.0, 22.0, 21.0]
NUANCE = {"ours": [9.0, 10.0, 9.5], "text_only": TEXT, "true_words": [6.0, 7.0, 6.5],
          "null": [85.0, 90.0, 88.0]}


def test_nuance_rule_and_control():
    judge = lambda **kw: nuance_beyond_words.verdict(_nuance(**{**NUANCE, **kw}), Scale.SMALL)
    assert judge() == HOLDS
    assert judge(ours=TEXT) == FAILS  # text-only words passed off as the method
    assert judge(ours=[16.0, 17.6, 16.8]) == FAILS  # 20% better is not the 30% claimed
    # fine words render no finer than coarse ones (the old test bed): cannot tell
    assert judge(true_words=[19.0, 22.0, 20.0]) == INCONCLUSIVE
    # an input-ignoring encoder passes too: cannot tell
    assert judge(null=[9.0, 9.5, 10.0]) == INCONCLUSIVE


@pytest.fixture(scope="module")
def smoke_cache(tmp_path_factory):
    """One empty cache for both smoke claims (they share the stand-ins, as in a real run)."""
    return tmp_path_factory.mktemp("cache")


def test_anchoring_smoke_with_shuffled_anchor_null(check_smoke_claim, monkeypatch, smoke_cache):
    monkeypatch.setenv("ICLR24_CACHE", str(smoke_cache))  # stand-ins trained from empty
    m = check_smoke_claim(anchoring_disentangles, [
        "success_ours", "success_no_anchor", "success_text_only", "success_true_words",
        "success_shuffled_anchor", "gain_vs_no_anchor", "gain_shuffled_anchor",
        "headroom_true_words", "lambda", "init_recon", "init_anchor"])
    assert m.metrics["lambda"] in (0.01, 0.1, 1.0)
    assert 0 <= m.metrics["success_ours"] <= 1
    assert {r["arm"] for r in m.tables["recomposition"]} >= {"no_anchor", "shuffled_anchor",
                                                             "text_only", "true_words"}
    # the null arm of this run (shuffled anchors) in the method's place
    null = {**m.metrics, "gain_vs_no_anchor": m.metrics["gain_shuffled_anchor"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert anchoring_disentangles.verdict(null, scale) != HOLDS
    assert any(p.name == "concept_axes-t2i" for p in smoke_cache.iterdir())


def test_nuance_smoke_with_input_ignoring_null(check_smoke_claim, monkeypatch, smoke_cache):
    monkeypatch.setenv("ICLR24_CACHE", str(smoke_cache))
    m = check_smoke_claim(nuance_beyond_words, [
        "hue_error_ratio", "hue_ratio_true_words", "hue_ratio_null", "hue_err_ours_deg",
        "hue_err_text_only_deg", "hue_err_true_words_deg", "hue_err_null_deg",
        "hue_err_probe_real_deg"])
    assert 0 <= m.metrics["hue_err_ours_deg"] <= 180
    null = {**m.metrics, "hue_error_ratio": m.metrics["hue_ratio_null"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert nuance_beyond_words.verdict(null, scale) != HOLDS
