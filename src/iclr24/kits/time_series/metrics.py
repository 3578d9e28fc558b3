"""Point-forecast errors and the seasonal-naive baseline.

MASE (Hyndman & Koehler 2006): mean absolute forecast error scaled by the in-sample mean
absolute error of the seasonal-naive forecast with period m,

    MASE = mean_h |y_{T+h} - yhat_{T+h}| / ( 1/(T-m) sum_{t=m+1}^{T} |y_t - y_{t-m}| ).
"""

from __future__ import annotations

import numpy as np

__all__ = ["mae", "mase", "mse", "seasonal_naive"]


def _finite_1d(x, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite (no NaN/inf)")
    return a


def _season(m) -> int:
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
        raise ValueError(f"m (seasonal period in steps) must be a positive int, got {m!r}")
    return int(m)


def mse(y_true, y_pred) -> float:
    a, b = _finite_1d(y_true, "y_true"), _finite_1d(y_pred, "y_pred")
    if a.shape != b.shape:
        raise ValueError(f"y_true {a.shape} and y_pred {b.shape} differ in shape")
    return float(np.mean((a - b) ** 2))


def mae(y_true, y_pred) -> float:
    a, b = _finite_1d(y_true, "y_true"), _finite_1d(y_pred, "y_pred")
    if a.shape != b.shape:
        raise ValueError(f"y_true {a.shape} and y_pred {b.shape} differ in shape")
    return float(np.mean(np.abs(a - b)))


def mase(y_true, y_pred, y_train, m: int = 1) -> float:
    """MASE of a forecast ``y_pred`` of ``y_true`` given the regular in-sample ``y_train``."""
    m = _season(m)
    train = _finite_1d(y_train, "y_train")
    if train.size <= m:
        raise ValueError(f"y_train needs more than m={m} points, got {train.size}")
    scale = np.mean(np.abs(train[m:] - train[:-m]))  # in-sample seasonal-naive MAE
    if scale == 0:
        raise ValueError("y_train is constant at lag m: MASE is undefined")
    return mae(y_true, y_pred) / float(scale)


def seasonal_naive(history, horizon: int, m: int = 1) -> np.ndarray:
    """yhat_{T+h} = y_{T+h-m*ceil(h/m)}: repeat the last full season. history: (T,) regular."""
    m = _season(m)
    h = _finite_1d(history, "history")
    if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 1:
        raise ValueError(f"horizon must be a positive int, got {horizon!r}")
    if h.size < m:
        raise ValueError(f"history needs at least m={m} points, got {h.size}")
    last = h[-m:]
    return last[np.arange(horizon) % m]
