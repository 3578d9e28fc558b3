"""Time-series kit: series validation, statsmodels loaders offline, DLinear, MASE, seasonal naive."""

import socket

import numpy as np
import pytest
import torch

from iclr24.kits.time_series import (
    DLinear,
    DLinearForecaster,
    TimeSeries,
    load_co2,
    load_elnino,
    load_macrodata,
    load_nile,
    load_sunspots,
    mase,
    moving_average,
    mse,
    seasonal_naive,
    sliding_windows,
)


def test_timeseries_rejects_bad_input():
    with pytest.raises(ValueError, match="strictly increasing"):
        TimeSeries(np.array([0.0, 2.0, 1.0]), np.zeros(3), 1.0)
    with pytest.raises(ValueError, match="times must be finite"):
        TimeSeries(np.array([0.0, np.nan]), np.zeros(2), 1.0)
    with pytest.raises(ValueError, match="values must be finite"):
        TimeSeries(np.array([0.0, 1.0]), np.array([1.0, np.nan]), 1.0)
    with pytest.raises(ValueError, match="empty"):
        TimeSeries(np.array([]), np.array([]), 1.0)
    with pytest.raises(ValueError, match="step"):
        TimeSeries(np.array([0.0]), np.array([1.0]), 0.0)


def test_grid_interpolation_and_split():
    s = TimeSeries(np.array([0.0, 1.0, 3.0, 4.0]), np.array([0.0, 1.0, 3.0, 4.0]), 1.0)
    gt, gv = s.to_grid()
    assert np.array_equal(gt, [0, 1, 2, 3, 4]) and np.isnan(gv[2])
    assert np.allclose(s.interpolated(), [0, 1, 2, 3, 4])
    h, f = s.split(2)
    assert np.array_equal(h.times, [0.0, 1.0]) and np.array_equal(f.times, [3.0, 4.0])
    with pytest.raises(ValueError, match="empty history"):
        s.split(5)


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_loaders_work_offline(no_network):
    co2 = load_co2()
    assert co2.step == 7.0 and len(co2) == 2284 - 59  # the 59 NaN weeks are gaps
    assert np.all(np.diff(co2.times) >= 7) and np.any(np.diff(co2.times) > 7)
    assert np.all(np.isfinite(co2.values))
    sun = load_sunspots()
    assert len(sun) == 309 and np.allclose(np.diff(sun.times), 365.25)
    assert len(load_nile()) == 100
    el = load_elnino()
    assert len(el) == 61 * 12 and np.all(np.diff(el.times) > 27)
    gdp = load_macrodata("realgdp")
    assert len(gdp) == 203 and np.allclose(np.diff(gdp.times), 91.3125)
    with pytest.raises(ValueError, match="column must be one of"):
        load_macrodata("gdp")


def test_moving_average_and_shapes():
    x = torch.arange(10.0)[None]
    ma = moving_average(x, 3)
    assert ma.shape == (1, 10)
    assert torch.allclose(ma[0, 1:-1], x[0, 1:-1])  # a line is its own centred average
    assert ma[0, 0] == pytest.approx((0 + 0 + 1) / 3)  # edge repeated
    with pytest.raises(ValueError, match="odd"):
        moving_average(x, 4)
    m = DLinear(24, 8)
    assert m(torch.randn(5, 24)).shape == (5, 8)
    with pytest.raises(ValueError, match=r"shape \(batch, 24\)"):
        m(torch.randn(5, 23))
    with pytest.raises(ValueError, match="context must be a positive int"):
        DLinear(0, 8)


def test_dlinear_extrapolates_a_linear_trend(one_torch_thread):
    t = np.arange(400, dtype=np.float64)
    y = 0.3 * t + 5.0
    f = DLinearForecaster(context=48, horizon=12, steps=1500, lr=1e-2, seed=0).fit(y[:300])
    pred = f.predict(y[300 - 48:300])
    assert np.max(np.abs(pred - y[300:312])) < 0.05 * 0.3 * 12 + 0.5


def test_sliding_windows():
    x, y = sliding_windows(np.arange(6.0), 3, 2)
    assert x.tolist() == [[0, 1, 2], [1, 2, 3]] and y.tolist() == [[3, 4], [4, 5]]
    with pytest.raises(ValueError, match="too short"):
        sliding_windows(np.arange(4.0), 3, 2)


def test_mase_hand_computed():
    train = np.array([1.0, 3.0, 2.0, 4.0])
    # m=1: in-sample naive MAE = (2 + 1 + 2) / 3 = 5/3; forecast MAE = (1 + 1) / 2 = 1
    assert mase([5.0, 5.0], [4.0, 6.0], train, m=1) == pytest.approx(3 / 5)
    # m=2: |2-1|, |4-3| -> 1; forecast MAE 1
    assert mase([5.0, 5.0], [4.0, 6.0], train, m=2) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="constant"):
        mase([1.0], [1.0], [2.0, 2.0, 2.0], m=1)
    with pytest.raises(ValueError, match="finite"):
        mase([np.nan], [1.0], train)
    assert mse([1.0, 2.0], [1.0, 4.0]) == pytest.approx(2.0)


def test_seasonal_naive():
    h = np.array([1.0, 2.0, 3.0, 10.0, 20.0, 30.0])
    assert seasonal_naive(h, 5, m=3).tolist() == [10, 20, 30, 10, 20]
    assert seasonal_naive(h, 2, m=1).tolist() == [30, 30]
    with pytest.raises(ValueError, match="m \\(seasonal period"):
        seasonal_naive(h, 2, m=0)
