import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from iclr24.papers.diffusion_theory import GaussianMixture, alpha_bars, li_schedule


@pytest.mark.parametrize("T", [25, 100, 1600])
def test_schedule_formula_and_guarantees(T):
    b = li_schedule(T)
    rate = 6 * math.log(T) / T
    assert b[0] == pytest.approx(T ** -2.0)
    assert b[1] == pytest.approx(rate * b[0] * (1 + rate))
    assert b.max() == pytest.approx(rate)  # capped at c1 log T / T
    assert np.all(np.diff(b[1:]) >= 0)  # beta_2 = rate * beta_1 * (1 + rate) < beta_1
    assert alpha_bars(b)[-1] < 1e-4
    assert alpha_bars(b)[0] == pytest.approx(1 - b[0])


@pytest.mark.parametrize("kwargs, match", [
    ({"T": 3}, "betas must be < 1"),              # 6 log 3 / 3 > 1
    ({"T": 100, "c0": 2.0, "c1": 2.5}, "alpha_bar_T"),  # not enough noise at T
    ({"T": 1}, "T must"),
    ({"T": 100, "c0": -1.0}, "c0"),
])
def test_schedule_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        li_schedule(**kwargs)


def _mixture_2d():
    return GaussianMixture([0.4, 0.6], [[-1.0, 0.5], [2.0, -1.0]],
                           [[[0.3, 0.1], [0.1, 0.2]], [[0.5, -0.2], [-0.2, 0.4]]])


@given(st.floats(0.0, 1.0), st.integers(0, 1000))
def test_score_matches_finite_differences_of_log_density(ab, seed):
    gm = _mixture_2d()
    x = np.random.default_rng(seed).normal(size=(5, 2)) * 2
    q = gm.noised(ab)
    h = 1e-5
    fd = np.stack([(q.log_prob(x + h * e) - q.log_prob(x - h * e)) / (2 * h)
                   for e in np.eye(2)], axis=1)
    np.testing.assert_allclose(gm.score(x, ab), fd, rtol=1e-5, atol=1e-5)


def test_score_1d_far_tail_no_underflow():
    gm = GaussianMixture([0.3, 0.7], [-2.0, 1.5], [0.25 ** 2, 0.5 ** 2])
    x = np.array([[-40.0], [40.0]])
    s = gm.score(x, 1 - 1e-6)
    assert np.all(np.isfinite(s))
    # far in the tails the wide component (mean 1.5, variance 0.25) dominates
    assert s[0, 0] == pytest.approx(-(-40 - 1.5) / 0.25, rel=1e-4)
    assert s[1, 0] == pytest.approx(-(40 - 1.5) / 0.25, rel=1e-4)


def test_noised_closed_form_and_limits():
    gm = _mixture_2d()
    q = gm.noised(0.3)
    np.testing.assert_allclose(q.means, np.sqrt(0.3) * gm.means)
    np.testing.assert_allclose(q.covs, 0.3 * gm.covs + 0.7 * np.eye(2))
    z = gm.noised(0.0)
    np.testing.assert_allclose(z.covs, np.broadcast_to(np.eye(2), (2, 2, 2)))
    x = gm.sample(200_000, np.random.default_rng(0))
    y = np.sqrt(0.3) * x + np.sqrt(0.7) * np.random.default_rng(1).normal(size=x.shape)
    mean = (q.weights[:, None] * q.means).sum(0)
    np.testing.assert_allclose(y.mean(0), mean, atol=0.01)


def test_pdf_integrates_to_one_1d():
    gm = GaussianMixture([0.3, 0.7], [-2.0, 1.5], [0.0625, 0.25])
    x = np.linspace(-10, 10, 20001)
    assert np.trapezoid(gm.pdf(x), x) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("args, match", [
    (([0.5, 0.6], [0.0, 1.0], [1.0, 1.0]), "sum to 1"),
    (([0.5, 0.5], [0.0, 1.0], [1.0, -1.0]), "positive definite"),
    (([1.0], [[0.0, 0.0]], [[[1.0, 2.0], [2.0, 1.0]]]), "positive definite"),
    (([0.5, 0.5], [0.0, 1.0], [1.0]), "covs must have shape"),
    (([-0.5, 1.5], [0.0, 1.0], [1.0, 1.0]), "positive"),
])
def test_mixture_errors(args, match):
    with pytest.raises(ValueError, match=match):
        GaussianMixture(*args)


def test_alpha_bar_out_of_range():
    with pytest.raises(ValueError, match="alpha_bar"):
        GaussianMixture([1.0], [0.0], [1.0]).noised(1.5)
