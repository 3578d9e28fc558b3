"""Forecast evaluation used by the claims: standardised MSE on a held-out horizon.

Long-horizon errors are reported on values standardised per series with the mean and standard
deviation of the history the forecaster may read (as the LTSF literature standardises per
dataset), so series in different units average meaningfully.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from iclr24.kits.time_series import TimeSeries

__all__ = ["holdout_mse", "standardised_mse"]


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
