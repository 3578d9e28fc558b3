"""Smoke runs of both claims (from an empty stand-in cache), with spies: the judge is never
called while images are generated and the evaluated models train on their split only; plus the
negative controls of both rules."""

import pytest
import torch

from iclr24.claims import Scale, seed_difference, seed_metric
from iclr24.papers.oracle_robustness import claims, digit_world
from iclr24.papers.oracle_robustness.claims import fmr_separates_training, oracle_preserves_labels


@pytest.fixture
def spies(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR24_CACHE", str(tmp_path))
    state = {"generating": False, "judge_calls": 0, "worlds": [], "trained_on": []}

    def during_generation(fn):
        def wrapped(*a, **k):
            state["generating"] = True
            try:
                return fn(*a, **k)
            finally:
                state["generating"] = False
        return wrapped

    for name in ("generate_oracle_bounded", "latent_attack", "foundation_model_robustness"):
        monkeypatch.setattr(claims, name, during_generation(getattr(claims, name)))
    real_call = digit_world.PixelSVCJudge.__call__

    def judge_call(self, x):
        assert not state["generating"], "the judge was called during generation"
        state["judge_calls"] += 1
        return real_call(self, x)

    monkeypatch.setattr(digit_world.PixelSVCJudge, "__call__", judge_call)
    real_build, real_train = claims.build_digit_world, digit_world.train_evaluated_model

    def build(*a, **k):
        world = real_build(*a, **k)
        state["worlds"].append(world)
        return world

    def train(kind, x, y, **k):
        state["trained_on"].append(x)
        return real_train(kind, x, y, **k)

    monkeypatch.setattr(claims, "build_digit_world", build)
    monkeypatch.setattr(digit_world, "train_evaluated_model", train)
    return state


def test_smoke_claims(spies, check_smoke_claim, one_torch_thread):
    m1 = check_smoke_claim(oracle_preserves_labels,
                           ["judge_gain", "acc_oracle", "judge_oracle", "judge_free", "acc_free",
                            "accept_oracle", "judge_filter", "judge_recon", "clean_acc",
                            "judge_gain_null", "judge_null", "acc_null", "accept_null"])
    m2 = check_smoke_claim(fmr_separates_training,
                           ["fmr_gap", "fmr_logreg", "fmr_mlp", "fmr_cnn_noise", "sa_mlp",
                            "accept_cnn_noise", "judge_logreg", "noise_acc_mlp",
                            "fmr_gap_plain_cnn", "fmr_cnn", "pa_over_sa_cnn_noise"])
    assert m1.figure is not None and m2.figure is not None
    assert spies["judge_calls"] > 0  # it did judge, after generation
    for world in spies["worlds"]:
        assert all(m is not world.judge for m in world.zoo.members)
    train_x = spies["worlds"][0].part("train")[0]
    assert len(spies["trained_on"]) == 5  # cnn, then logreg, mlp, cnn, cnn_noise
    assert all(torch.equal(x, train_x) for x in spies["trained_on"])
    for key in ("acc_oracle", "accept_oracle", "judge_oracle"):
        assert 0 <= m1.metrics[key] <= 1
    best_standard = max(m2.metrics["fmr_logreg"], m2.metrics["fmr_mlp"])
    assert m2.metrics["fmr_gap"] == pytest.approx(m2.metrics["fmr_cnn_noise"] - best_standard)
    assert m2.metrics["fmr_gap_plain_cnn"] == pytest.approx(m2.metrics["fmr_cnn"] - best_standard)
    for kind in ("logreg", "mlp", "cnn", "cnn_noise"):  # FMR is a rate now
        assert 0 <= m2.metrics[f"fmr_{kind}"] <= 1
    # negative controls from the null arms measured in this run: each null's numbers put in the
    # method's place never give `holds` (the rule fails, or the control catches the null)
    null1 = {"judge_gain": m1.metrics["judge_gain_null"], "acc_oracle": m1.metrics["acc_null"],
             "judge_gain_null": m1.metrics["judge_gain_null"], "acc_null": m1.metrics["acc_null"]}
    assert oracle_preserves_labels.verdict(null1, Scale.SMOKE) != "holds"
    null2 = {"fmr_gap": m2.metrics["fmr_gap_plain_cnn"],
             "fmr_gap_plain_cnn": m2.metrics["fmr_gap_plain_cnn"]}
    assert fmr_separates_training.verdict(null2, Scale.SMOKE) != "holds"


def test_oracle_rule_rejects_the_unconstrained_attack_as_method():
    """Negative control: the unconstrained attack passed as the method (same images in both
    arms) gives a zero judge gain; the rule must not hold, at either scale."""
    judge, acc = [0.30, 0.35, 0.32], [0.0, 0.02, 0.01]
    failing_null = {"judge_gain_null": 0.0, "acc_null": 0.9}  # the control is satisfied
    null = {"judge_gain": seed_difference(judge, judge), "acc_oracle": seed_metric(acc),
            **failing_null}
    assert oracle_preserves_labels.verdict(null, Scale.SMALL) == "fails"
    smoke = {"judge_gain": 0.0, "acc_oracle": 0.0, **failing_null}
    assert oracle_preserves_labels.verdict(smoke, Scale.SMOKE) == "fails"
    # key step removed the other way: no attack at all keeps labels but the model stays right
    no_attack = {"judge_gain": seed_difference([0.99, 0.98, 0.99], [0.3, 0.31, 0.29]),
                 "acc_oracle": seed_metric([0.95, 0.96, 0.97]), **failing_null}
    assert oracle_preserves_labels.verdict(no_attack, Scale.SMALL) == "fails"


def test_fmr_rule_rejects_standard_training_passed_as_robust():
    """Negative control: the 'robust' models replaced by the plain MLP give a zero gap."""
    mlp = [0.20, 0.25, 0.22]
    plain = {"fmr_gap_plain_cnn": 0.0}  # the control is satisfied
    null = {"fmr_gap": seed_difference(mlp, mlp), **plain}
    assert fmr_separates_training.verdict(null, Scale.SMALL) == "fails"
    noisy = {"fmr_gap": seed_difference([0.45, 0.20, 0.30], [0.20, 0.25, 0.22]), **plain}
    assert fmr_separates_training.verdict(noisy, Scale.SMALL) != "holds"
    assert fmr_separates_training.verdict({"fmr_gap": 0.0, **plain}, Scale.SMOKE) == "fails"


def test_control_makes_a_passing_null_inconclusive():
    """The controls read the null arms: a null arm that passes the rule turns a passing rule
    into `inconclusive`; a failing null leaves the rule's verdict."""
    good = {"judge_gain": 0.5, "acc_oracle": 0.2}
    assert oracle_preserves_labels.verdict(
        {**good, "judge_gain_null": 0.0, "acc_null": 0.2}, Scale.SMOKE) == "holds"
    assert oracle_preserves_labels.verdict(
        {**good, "judge_gain_null": 0.4, "acc_null": 0.3}, Scale.SMOKE) == "inconclusive"
    assert fmr_separates_training.verdict(
        {"fmr_gap": 0.3, "fmr_gap_plain_cnn": 0.0}, Scale.SMOKE) == "holds"
    assert fmr_separates_training.verdict(
        {"fmr_gap": 0.3, "fmr_gap_plain_cnn": 0.25}, Scale.SMOKE) == "inconclusive"

