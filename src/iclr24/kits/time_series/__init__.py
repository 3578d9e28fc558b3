"""Time-series kit: a series type on a real time axis, bundled real data, DLinear, MASE.

What is here
- :mod:`.series`: :class:`TimeSeries` (times in days, missing points kept as gaps) with grid,
  interpolation and train/test split helpers.
- :mod:`.datasets`: co2, sunspots, nile, elnino and macrodata from the statsmodels wheel (read
  from the installed package; never ``get_rdataset``, which downloads).
- :mod:`.dlinear`: :class:`DLinear` (moving-average decomposition + two linear maps) and a
  per-series :class:`DLinearForecaster`.
- :mod:`.metrics`: :func:`mase`, :func:`mse`, :func:`mae`, :func:`seasonal_naive`.

Usage::

    from iclr24.kits.time_series import DLinearForecaster, load_sunspots, mase, seasonal_naive
    hist, fut = load_sunspots().split(22)          # 287 years of history, 22 to forecast
    y = hist.interpolated()                        # regular grid (no gaps in sunspots)
    mase(fut.values, seasonal_naive(y, 22, m=11), y, m=11)
    f = DLinearForecaster(context=66, horizon=22).fit(y).predict(y[-66:])
"""

from .datasets import (
    DAYS_PER_YEAR,
    MACRODATA_COLUMNS,
    load_co2,
    load_elnino,
    load_macrodata,
    load_nile,
    load_sunspots,
)
from .dlinear import DLinear, DLinearForecaster, moving_average, sliding_windows
from .metrics import mae, mase, mse, seasonal_naive
from .series import TimeSeries, check_times_values

__all__ = [
    "DAYS_PER_YEAR",
    "MACRODATA_COLUMNS",
    "DLinear",
    "DLinearForecaster",
    "TimeSeries",
    "check_times_values",
    "load_co2",
    "load_elnino",
    "load_macrodata",
    "load_nile",
    "load_sunspots",
    "mae",
    "mase",
    "moving_average",
    "mse",
    "seasonal_naive",
    "sliding_windows",
]
