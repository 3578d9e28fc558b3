
from iclr24.claims import Estimate, Scale
from iclr24.papers.concept_axes.claims import anchoring_disentangles, nuance_beyond_words


def _diff(a, b):
    return Estimate.difference(a, b, paired=True)


def test_anchoring_negative_control_baseline_as_method():
    """ours := no-anchor (the key step, the anchor, removed): the rule must not hold."""
    no_anchor = [0.41, 0.37, 0.45]
    metrics = {"gain_vs_no_anchor": _diff(no_anchor, no_anchor)}
    assert anchoring_disentangles.verdict(metrics, Scale.SMALL) != "holds"
    noisy = [0.43, 0.35, 0.46]  # a null method that differs only by noise
    metrics = {"gain_vs_no_anchor": _diff(noisy, no_anchor)}
    assert anchoring_disentangles.verdict(metrics, Scale.SMALL) != "holds"
    assert anchoring_disentangles.verdict({"gain_vs_no_anchor": 0.0}, Scale.SMOKE) == "fails"


def test_anchoring_rule_can_hold():
    metrics = {"gain_vs_no_anchor": _diff([0.6, 0.62, 0.58], [0.4, 0.41, 0.39])}
    assert anchoring_disentangles.verdict(metrics, Scale.SMALL) == "holds"


def test_nuance_negative_control_text_only_as_method():
    """ours := text-only words: the ratio is 1 and the rule must not hold."""
    ones = Estimate.mean_of([1.0, 1.0, 1.0])
    assert nuance_beyond_words.verdict({"hue_error_ratio": ones}, Scale.SMALL) != "holds"
    assert nuance_beyond_words.verdict({"hue_error_ratio": 1.0}, Scale.SMOKE) != "holds"
    # 20% better is not the 30% the claim asks for
    assert nuance_beyond_words.verdict(
        {"hue_error_ratio": Estimate.mean_of([0.79, 0.8, 0.81])}, Scale.SMALL) == "fails"
    assert nuance_beyond_words.verdict(
        {"hue_error_ratio": Estimate.mean_of([0.4, 0.45, 0.5])}, Scale.SMALL) == "holds"


def test_smoke_claims_run(check_smoke_claim, monkeypatch, tmp_path):
    monkeypatch.setenv("ICLR24_CACHE", str(tmp_path))  # stand-ins trained from an empty cache
    m = check_smoke_claim(anchoring_disentangles,
                          ["success_ours", "success_no_anchor", "success_text_only",
                           "gain_vs_no_anchor", "lambda", "init_recon", "init_anchor"])
    assert m.metrics["lambda"] in (0.01, 0.1, 1.0)
    assert 0 <= m.metrics["success_ours"] <= 1
    m = check_smoke_claim(nuance_beyond_words,
                          ["hue_error_ratio", "hue_err_ours_deg", "hue_err_text_only_deg"])
    assert 0 <= m.metrics["hue_err_ours_deg"] <= 180
    assert any(p.name == "concept_axes-t2i" for p in tmp_path.iterdir())
