import numpy as np
import pytest
from matplotlib.figure import Figure

from iclr24.kits.rates import fit_rate, plot_rate


def test_exact_power_law_recovers_slope_and_constant():
    x = np.array([10, 20, 40, 80, 160.0])
    fit = fit_rate(x, 3.0 * x ** -0.7)
    assert fit.slope == pytest.approx(-0.7, abs=1e-12)
    assert np.exp(fit.intercept) == pytest.approx(3.0)
    assert fit.low == fit.high == fit.slope
    assert fit.predict(20) == pytest.approx(3.0 * 20 ** -0.7)


def test_window_excludes_preasymptotic_sizes():
    x = np.array([1, 2, 4, 8, 16.0])
    err = x ** -1.0
    err[0] = 50.0  # a pre-asymptotic outlier
    assert fit_rate(x, err, window=(2, 16)).slope == pytest.approx(-1.0)
    assert fit_rate(x, err).slope < -1.5
    assert fit_rate(x, err, window=(2, 16)).window == (2.0, 16.0)


def test_medians_over_replications_and_bootstrap_interval_covers():
    rng = np.random.default_rng(0)
    x = np.array([100, 200, 400, 800, 1600.0])
    reps = x[:, None] ** -0.5 * np.exp(0.2 * rng.standard_normal((5, 30)))
    fit = fit_rate(x, reps, seed=1)
    assert fit.low < -0.5 < fit.high
    assert fit.high - fit.low < 0.3
    assert fit.medians == pytest.approx(tuple(np.median(reps, axis=1)))
    assert fit_rate(x, reps, seed=1) == fit  # reproducible
    assert fit.n_reps == 30


def test_ragged_replications():
    fit = fit_rate([1, 2, 4], [[1.0, 1.1], [0.5], [0.25, 0.26, 0.24]])
    assert fit.n_reps == 1
    assert fit.slope == pytest.approx(np.polyfit(np.log([1, 2, 4]),
                                                 np.log([1.05, 0.5, 0.25]), 1)[0])


@pytest.mark.parametrize("kwargs, match", [
    ({"x": [1.0], "errors": [1.0]}, "x must"),
    ({"x": [1, -2], "errors": [1.0, 2.0]}, "positive"),
    ({"x": [1, 2], "errors": [1.0, 0.0]}, "positive"),
    ({"x": [1, 2, 3], "errors": [1.0, 2.0]}, "one row per size"),
    ({"x": [1, 2, 3], "errors": [1.0, 2.0, 3.0], "window": (2.5, 9)}, "need at least 2"),
    ({"x": [1, 2], "errors": [1.0, 2.0], "n_boot": 0}, "n_boot"),
])
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        fit_rate(**kwargs)


def test_plot_draws_on_axes():
    fig = Figure()
    ax = fig.add_subplot()
    plot_rate(ax, fit_rate([1, 2, 4], [1.0, 0.5, 0.25]), label="a", reference=-1)
    assert len(ax.lines) == 3
