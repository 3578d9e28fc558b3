"""pandas in and out: a ``pandas.Series`` with a ``DatetimeIndex`` <-> :class:`TimeSeries`.

DAM works on a real time axis in days (one frequency basis for every resolution), so a
date-indexed series becomes (days since 1970-01-01 UTC, value) pairs. NaN values are missing
points: they are dropped, which is how DAM reads irregular data (no interpolation). The
nominal ``step`` (days) is the index's frequency when it has one of fixed length, else the
median spacing of the observed timestamps (robust to gaps while fewer than half the points are
missing); pass ``step`` to override.

pandas is imported lazily: the rest of the paper does not need it.
"""

from __future__ import annotations

import numpy as np

from iclr24.kits.time_series import TimeSeries

__all__ = ["from_pandas", "is_pandas", "to_datetime_index", "to_days"]

_EPOCH = "1970-01-01"


def is_pandas(obj) -> bool:
    """True for pandas objects (checked without importing pandas)."""
    return type(obj).__module__.split(".")[0] == "pandas"


def _naive_utc(index):
    return index.tz_convert("UTC").tz_localize(None) if index.tz is not None else index


def to_days(index) -> np.ndarray:
    """A ``DatetimeIndex`` -> float64 days since 1970-01-01 (UTC for tz-aware indexes)."""
    import pandas as pd

    if not isinstance(index, pd.DatetimeIndex):
        raise TypeError(f"expected a pandas DatetimeIndex, got {type(index).__name__}")
    return np.asarray((_naive_utc(index) - pd.Timestamp(_EPOCH)) / pd.Timedelta(days=1),
                      dtype=np.float64)


def to_datetime_index(days, name: str | None = None):
    """Inverse of :func:`to_days`: days since 1970-01-01 -> a (naive, UTC) ``DatetimeIndex``."""
    import pandas as pd

    d = np.asarray(days, dtype=np.float64)
    return pd.DatetimeIndex(pd.Timestamp(_EPOCH) + pd.to_timedelta(d, unit="D"), name=name)


def _fixed_step_days(index) -> float | None:
    import pandas as pd

    freq = index.freq or (pd.infer_freq(index) if len(index) >= 3 else None)
    if freq is None:
        return None
    try:
        return pd.Timedelta(pd.tseries.frequencies.to_offset(freq)) / pd.Timedelta(days=1)
    except (ValueError, TypeError):  # calendar offsets (month, quarter, year) vary in length
        return None


def from_pandas(series, step: float | None = None, name: str | None = None) -> TimeSeries:
    """A ``pandas.Series`` indexed by a ``DatetimeIndex`` -> :class:`TimeSeries` (days).

    series: numeric values, index sorted increasing without duplicates; NaN = missing (dropped).
    step: nominal sampling interval in days (default: the index frequency, else the median
    spacing of the observed points). name: default ``series.name``."""
    import pandas as pd

    if isinstance(series, pd.DataFrame):
        if series.shape[1] != 1:
            raise ValueError("series: DAM is univariate; pass one column (a pandas Series), "
                             f"got a DataFrame with {series.shape[1]} columns")
        series = series.iloc[:, 0]
    if not isinstance(series, pd.Series):
        raise TypeError(f"series must be a pandas Series with a DatetimeIndex, got "
                        f"{type(series).__name__}")
    if not isinstance(series.index, pd.DatetimeIndex):
        raise TypeError("series must be indexed by a pandas DatetimeIndex, got "
                        f"{type(series.index).__name__}; use series.index = "
                        "pd.to_datetime(series.index)")
    if not pd.api.types.is_numeric_dtype(series.dtype):
        raise TypeError(f"series values must be numeric, got dtype {series.dtype}")
    if series.index.hasnans:
        raise ValueError("series: the DatetimeIndex contains NaT")
    if not (series.index.is_monotonic_increasing and series.index.is_unique):
        raise ValueError("series: the DatetimeIndex must be sorted increasing without "
                         "duplicates (use series.sort_index() and drop duplicates)")
    fixed = _fixed_step_days(series.index)
    observed = series.dropna()
    if len(observed) == 0:
        raise ValueError("series has no observed (non-NaN) values")
    t = to_days(observed.index)
    v = observed.to_numpy(dtype=np.float64)
    if step is None:
        step = fixed if fixed is not None else (
            float(np.median(np.diff(t))) if t.size > 1 else 1.0)
    label = name if name is not None else ("" if series.name is None else str(series.name))
    return TimeSeries(t, v, step, label)
