import numpy as np
import pytest

from iclr24.claims import FAILS, HOLDS, INCONCLUSIVE, Estimate
from iclr24.papers.sl2_positivity import (
    act_on_form,
    act_on_gram,
    predict_gram,
    random_sos_binary_forms,
    sample_sl2,
    train_gram_model,
)
from iclr24.papers.sl2_positivity.claims import augmentation_under_sl2, speedup_vs_sdp

VERDICTS = {HOLDS, FAILS, INCONCLUSIVE}


@pytest.mark.parametrize("c, keys", [
    (augmentation_under_sl2, {"error_gain_high", "cert_aug_high", "error_so2_high",
                              "cert_so2_high"}),
    (speedup_vs_sdp, {"speedup", "certification_rate"}),
])
def test_smoke_claims(c, keys, one_torch_thread):
    m = c("smoke", 0)
    assert keys <= set(m.metrics)
    assert c.verdict(m.metrics, "smoke") in VERDICTS


def test_model_outputs_satisfy_constraints_and_scale(one_torch_thread):
    from iclr24.papers.sl2_positivity import antidiagonal_sums

    rng = np.random.default_rng(0)
    P = random_sos_binary_forms(40, 3, rng)
    G = np.stack([np.eye(4)] * 40)                         # dummy targets: training runs
    model = train_gram_model(P, G, epochs=1, seed=0, hidden=(16,))
    Gh = predict_gram(model, P)
    np.testing.assert_allclose(antidiagonal_sums(Gh), P, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(predict_gram(model, 2 * P), 2 * Gh, rtol=1e-9)
    with pytest.raises(ValueError, match="G must have shape"):
        train_gram_model(P, G[:, :3, :3], epochs=1, seed=0)


def test_augmented_targets_are_consistent():
    from iclr24.papers.sl2_positivity.models import _augment

    rng = np.random.default_rng(1)
    P = random_sos_binary_forms(5, 3, rng)
    from iclr24.papers.sl2_positivity import antidiagonal_sums

    G = np.stack([np.diag([p[0], 0, 0, p[-1]]) for p in P])  # any G with matching corners
    P2, G2 = _augment(antidiagonal_sums(G), G, rng, 5.0)
    np.testing.assert_allclose(antidiagonal_sums(G2), P2, atol=1e-9)
    A = sample_sl2(1, (1, 2), rng)[0]
    np.testing.assert_allclose(antidiagonal_sums(act_on_gram(A, G[0])),
                               act_on_form(A, antidiagonal_sums(G[0])), atol=1e-9)


def test_negative_control_plain_mlp_passed_as_augmented():
    errs = np.array([0.8, 1.1, 0.9])
    est = Estimate.difference(errs, errs, paired=True)
    assert augmentation_under_sl2.verdict({"error_gain_high": est}, "small") != HOLDS


def test_negative_control_speed_without_valid_certificates():
    # fast but useless certificates (rate 0) must not pass
    assert speedup_vs_sdp.verdict({"speedup": 1e4, "certification_rate": 0.0},
                                  "small") != HOLDS
    assert speedup_vs_sdp.verdict({"speedup": 1.0, "certification_rate": 1.0},
                                  "small") != HOLDS
