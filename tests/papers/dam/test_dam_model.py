"""DAM module, robust scaling from the context only, the forecaster and the generator."""

import numpy as np
import pytest
import torch

from iclr24.kits.time_series import TimeSeries
from iclr24.papers.dam import (
    DAM,
    DAMForecaster,
    log_frequencies,
    robust_stats,
    synthetic_corpus,
    synthetic_series,
)

FREQS = log_frequencies(16, 1 / 12, 400.0)


def _ctx(b=3, n=40, seed=0):
    g = torch.Generator().manual_seed(seed)
    t = -torch.sort(torch.rand(b, n, generator=g) * 60, dim=-1, descending=True).values
    t[:, -1] = 0.0
    v = torch.sin(t * 0.7) + 0.1 * torch.randn(b, n, generator=g)
    return t, v


def test_robust_stats_use_the_context_only():
    v = torch.tensor([[1.0, 2.0, 3.0, 4.0, 100.0]])
    c, s = robust_stats(v)
    assert c.item() == pytest.approx(3.0) and s.item() == pytest.approx(2.0)
    mask = torch.tensor([[True, True, True, True, False]])
    c2, s2 = robust_stats(v, mask)
    assert c2.item() == pytest.approx(np.median([1, 2, 3, 4]))
    assert s2.item() == pytest.approx(np.subtract(*np.percentile([1, 2, 3, 4], [75, 25])))


def test_dam_starts_at_least_squares_and_is_affine_equivariant(one_torch_thread):
    torch.manual_seed(0)
    m = DAM(FREQS, d_model=16, n_layers=1, n_heads=2, ridge=1.0)
    t, v = _ctx()
    th = m(t, v, step=torch.full((3,), 1.0))
    assert th.shape == (3, 2 * len(FREQS) + 1)
    # zero-initialised head: theta is the ridge fit, mapped back to data units
    theta0, _center, scale, *_ = m.coefficients0(t, v, step=torch.full((3,), 1.0))
    assert torch.allclose(th[:, :-1], theta0[:, :-1] * scale[:, None], atol=1e-5)
    # after random head weights: f(a v + b) = a f(v) + b (robust scaling is from the context)
    torch.nn.init.normal_(m.head.weight, std=0.5)
    torch.nn.init.normal_(m.offset_head.weight, std=0.5)
    q = torch.linspace(0, 30, 7).expand(3, -1)
    y1 = m.predict(m(t, v), q)
    y2 = m.predict(m(t, 3.0 * v + 7.0), q)
    assert torch.allclose(y2, 3.0 * y1 + 7.0, atol=1e-3)


def test_dam_masks_padding_and_unresolvable_frequencies(one_torch_thread):
    torch.manual_seed(0)
    m = DAM(FREQS, d_model=16, n_layers=1, n_heads=2).eval()
    torch.nn.init.normal_(m.head.weight, std=0.5)
    t, v = _ctx(b=1)
    pad_t = torch.cat([t, torch.zeros(1, 5)], 1)
    pad_v = torch.cat([v, torch.full((1, 5), 1e6)], 1)
    mask = torch.cat([torch.ones(1, 40, dtype=torch.bool), torch.zeros(1, 5, dtype=torch.bool)], 1)
    step = torch.tensor([1.0])
    assert torch.allclose(m(t, v, step=step), m(pad_t, pad_v, mask, step), atol=1e-4)
    th = m(t, v, step=torch.tensor([2.0]))  # Nyquist 0.25 / day
    k = len(FREQS)
    high = torch.as_tensor(FREQS > 0.25)
    assert torch.all(th[0, :k][high] == 0) and torch.all(th[0, k:2 * k][high] == 0)


def test_dam_bad_input():
    m = DAM(FREQS, d_model=16, n_layers=1, n_heads=2)
    t, v = _ctx(b=1)
    with pytest.raises(ValueError, match="t_query contains NaN"):
        m.predict(m(t, v), torch.tensor([[0.0, float("nan")]]))
    with pytest.raises(ValueError, match=r"\(B, n\)"):
        m(t[0], v[0])
    with pytest.raises(ValueError, match="finite"):
        m(t, v.masked_fill(torch.arange(40) == 3, float("nan")))
    with pytest.raises(ValueError, match="divisible"):
        DAM(FREQS, d_model=10, n_heads=4)
    with pytest.raises(ValueError, match="positive frequencies"):
        DAM([0.0, 1.0])


def test_forecaster_fits_predicts_and_is_deterministic():
    train = synthetic_corpus(3, 0, length=400)
    kw = {"steps": 3, "batch_size": 4, "n_ctx": 32, "horizon": 24, "n_freqs": 12, "d_model": 16, "n_layers": 1,
              "n_heads": 2}
    f1 = DAMForecaster(**kw).fit(train)
    f2 = DAMForecaster(**kw).fit(train)
    s = synthetic_series(np.random.default_rng(5), length=300)
    q = s.times[-1] + s.step * np.arange(1, 11)
    p1, p2 = f1.predict(s, q, n_draws=2), f2.predict(s, q, n_draws=2)
    assert p1.shape == (10,) and np.all(np.isfinite(p1))
    assert np.array_equal(p1, p2)
    with pytest.raises(ValueError, match="times contains NaN"):
        f1.predict(s, np.array([np.nan]))
    # a history shorter than n_ctx (32) is read whole, as HSR samples what exists
    short = TimeSeries(np.arange(10.0), np.arange(10.0), 1.0)
    assert np.all(np.isfinite(f1.predict(short, [10.0, 11.0], n_draws=2)))
    with pytest.raises(ValueError, match="sampling must be"):
        DAMForecaster(sampling="uniform")
    with pytest.raises(ValueError, match="non-empty list"):
        DAMForecaster().fit([])


def test_synthetic_generator():
    a = synthetic_corpus(4, 3)
    b = synthetic_corpus(4, 3)
    assert all(np.array_equal(x.values, y.values) for x, y in zip(a, b))
    s = synthetic_series(np.random.default_rng(0), resolution=1 / 24, length=1000, missing=0.3)
    assert s.step == pytest.approx(1 / 24)
    assert 0.6 < len(s) / 1000 < 0.8  # ~30 % of the grid removed
    assert s.grid_index[-1] == 999  # the last point is kept
    full = synthetic_series(np.random.default_rng(0), resolution=1.0, length=500, missing=0.0)
    assert len(full) == 500 and np.allclose(np.diff(full.times), 1.0)
    with pytest.raises(TypeError, match="numpy Generator"):
        synthetic_series(0)


def test_standardised_and_holdout_mse():
    from iclr24.papers.dam import holdout_mse, standardised_mse

    assert standardised_mse([1.0, 3.0], [2.0, 3.0], np.array([0.0, 2.0])) == pytest.approx(0.5)
    s = TimeSeries(np.arange(20.0), np.arange(20.0) % 4, 1.0)
    perfect = holdout_mse([s], 5, 15, lambda h, fu: fu.values)
    assert perfect.tolist() == [0.0]
    seen = []
    holdout_mse([s], 5, 15, lambda h, fu: seen.append((len(h), len(fu))) or fu.values)
    assert seen == [(15, 5)]  # the forecaster never sees the horizon


def test_trivial_null_forecasts():
    from iclr24.papers.dam import mean_forecast, seasonal_naive_backtest

    weekly = np.tile([0.0, 1.0, 5.0, 2.0, 3.0, 9.0, 4.0], 30)  # period 7 on a daily grid
    s = TimeSeries(np.arange(weekly.size, dtype=float), weekly, 1.0)
    hist, fut = s.split(14)
    assert np.array_equal(seasonal_naive_backtest(hist, 14), fut.values)  # lag 7 chosen
    hourly = TimeSeries(np.arange(100) / 24, np.arange(100.0), 1 / 24)  # a ramp: lag 1 wins
    assert seasonal_naive_backtest(hourly, 5).tolist() == [99.0] * 5
    assert mean_forecast(hist, 3).tolist() == [np.mean(hist.values)] * 3
    with pytest.raises(ValueError, match="too short"):
        seasonal_naive_backtest(TimeSeries(np.arange(5.0), np.arange(5.0), 1.0), 5)
