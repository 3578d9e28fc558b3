"""Forecast evaluation used by the claims: standardised MSE on a held-out horizon.

Long-horizon errors are reported on values standardised per series with the mean and standard
deviation of the history the forecaster may read (as the LTSF literature standardises per
dataset), so series in different units average meaningfully.

The trivial forecasts a sceptic compares against (null arms of the claims):
- :func:`mean_forecast`: the mean of the observed history, flat over the horizon;
- :func:`seasonal_naive_backtest`: seasonal naive y_{T+h} = y_{T+h-m ceil(h/m)} with the lag m
  chosen among {1 step, 1 day, 1 week} (those that fit) by a backtest on the history's own last
  ``horizon`` steps (no look at the future).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from iclr24.kits.time_series import TimeSeries

__all__ = ["holdout_mse", "mean_forecast", "seasonal_naive_backtest", "standardised_mse"]


def standardised_mse(y_true, y_pred, history: np.ndarray) -> float:
    """mean(((y_pred - y_true) / std(history))^2)."""
    sd = float(np.std(history)) or 1.0
    return float(np.mean(((np.asarray(y_pred) - np.asarray(y_true)) / sd) ** 2))


def holdout_mse(series: list[TimeSeries], horizon: int, lookback: int,
                forecast: Callable[[TimeSeries, TimeSeries], np.ndarray]) -> np.ndarray:
    """Split each series' last ``horizon`` steps off, call ``forecast(history, future)`` (which
    returns values at ``future.times``), and return one standardised MSE per series."""
    out = []
    for s in series:
        hist, fut = s.split(horizon)
        out.append(standardised_mse(fut.values, forecast(hist, fut), hist.values[-lookback:]))
    return np.array(out)


def mean_forecast(history: TimeSeries, n: int) -> np.ndarray:
    """The history mean repeated ``n`` times (it ignores the history's dynamics)."""
    return np.full(n, float(np.mean(history.values)))


def seasonal_naive_backtest(history: TimeSeries, horizon: int,
                            periods_days: tuple[float, ...] = (1.0, 7.0)) -> np.ndarray:
    """Seasonal-naive forecast of the next ``horizon`` grid steps of ``history`` (gaps filled
    by linear interpolation, as a grid method needs). Candidate lags: 1 step and each period in
    ``periods_days`` that is a whole number >= 2 of steps; the lag with the smallest MSE when
    forecasting the history's own last ``horizon`` steps from the part before them is used."""
    from iclr24.kits.time_series import seasonal_naive

    y = history.interpolated()
    lags = {1}
    for p in periods_days:
        m = round(p / history.step)
        if m >= 2 and abs(p / history.step - m) < 1e-6:  # a whole number of steps
            lags.add(m)
    lags = sorted(m for m in lags if m <= y.size - horizon)
    if not lags:
        raise ValueError(f"history of {y.size} steps is too short for a {horizon}-step backtest")
    head, tail = y[:-horizon], y[-horizon:]
    best = min(lags, key=lambda m: float(np.mean((seasonal_naive(head, horizon, m) - tail) ** 2)))
    return seasonal_naive(y, horizon, best)
