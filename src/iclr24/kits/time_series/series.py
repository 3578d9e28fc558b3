"""A univariate series on a real time axis (days), with missing points simply absent.

Forecasters that share a frequency basis across datasets (DAM) need one time unit for all of
them, so every series here carries its timestamps in days. A missing observation is not a NaN
in the value array but a gap in the time axis; :meth:`TimeSeries.to_grid` and
:meth:`TimeSeries.interpolated` turn it back into the regular grid that grid-based baselines
(DLinear, seasonal naive, ETS) need.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["TimeSeries", "check_times_values"]


def check_times_values(times, values, *, name: str = "series") -> tuple[np.ndarray, np.ndarray]:
    """Validate a (times, values) pair: 1-D, same length, non-empty, finite, times strictly
    increasing. Returns float64 copies; raises ``ValueError`` naming what is wrong."""
    try:
        t = np.asarray(times, dtype=np.float64)
        v = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: times and values must be numeric arrays") from None
    if t.ndim != 1 or v.ndim != 1:
        raise ValueError(f"{name}: times and values must be 1-D, got shapes {t.shape}, {v.shape}")
    if t.size != v.size:
        raise ValueError(f"{name}: times ({t.size}) and values ({v.size}) differ in length")
    if t.size == 0:
        raise ValueError(f"{name}: the series is empty (no observations)")
    if not np.all(np.isfinite(t)):
        raise ValueError(f"{name}: times must be finite (found NaN or inf)")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name}: values must be finite; drop missing points instead of "
                         "storing NaN (a gap in times is a missing value)")
    if t.size > 1 and not np.all(np.diff(t) > 0):
        raise ValueError(f"{name}: times must be strictly increasing (sorted, no duplicates)")
    return t.copy(), v.copy()


@dataclass(frozen=True)
class TimeSeries:
    """Observed pairs (t_i, v_i); ``times`` in days, strictly increasing; ``step`` is the nominal
    sampling interval in days (the grid the series would have without gaps).

    times, values: (n,) float64. ``name`` is free text (e.g. ``"co2"``).
    """

    times: np.ndarray
    values: np.ndarray
    step: float
    name: str = ""

    def __post_init__(self) -> None:
        t, v = check_times_values(self.times, self.values, name=self.name or "TimeSeries")
        if isinstance(self.step, bool) or not np.isfinite(self.step) or self.step <= 0:
            raise ValueError(f"step must be a positive number of days, got {self.step!r}")
        object.__setattr__(self, "times", t)
        object.__setattr__(self, "values", v)
        object.__setattr__(self, "step", float(self.step))

    def __len__(self) -> int:
        return int(self.times.size)

    @property
    def grid_index(self) -> np.ndarray:
        """Integer position of every observation on the nominal grid (0 = first observation)."""
        return np.rint((self.times - self.times[0]) / self.step).astype(np.int64)

    def to_grid(self) -> tuple[np.ndarray, np.ndarray]:
        """(grid_times, grid_values) on the regular grid from the first to the last observation,
        NaN where a point is missing."""
        idx = self.grid_index
        n = int(idx[-1]) + 1
        grid_t = self.times[0] + self.step * np.arange(n)
        grid_v = np.full(n, np.nan)
        grid_v[idx] = self.values
        return grid_t, grid_v

    def interpolated(self) -> np.ndarray:
        """Values on the regular grid with gaps filled by linear interpolation in time (what a
        grid-based baseline is given when points are missing)."""
        grid_t, _ = self.to_grid()
        return np.interp(grid_t, self.times, self.values)

    def split(self, n_test: int) -> tuple[TimeSeries, TimeSeries]:
        """(history, future): the last ``n_test`` grid steps go to ``future``."""
        if isinstance(n_test, bool) or not isinstance(n_test, (int, np.integer)) or n_test < 1:
            raise ValueError(f"n_test must be a positive int, got {n_test!r}")
        idx = self.grid_index
        cut = idx[-1] - n_test  # last grid position kept in the history
        head, tail = idx <= cut, idx > cut
        if not head.any() or not tail.any():
            raise ValueError(f"n_test={n_test} leaves an empty history or future "
                             f"(series spans {idx[-1] + 1} grid steps)")
        mk = lambda m: TimeSeries(self.times[m], self.values[m], self.step, self.name)
        return mk(head), mk(tail)

    def drop(self, keep: np.ndarray) -> TimeSeries:
        """The series restricted to the points where ``keep`` (bool, (n,)) is true."""
        keep = np.asarray(keep, dtype=bool)
        if keep.shape != self.times.shape:
            raise ValueError(f"keep must have shape {self.times.shape}, got {keep.shape}")
        return TimeSeries(self.times[keep], self.values[keep], self.step, self.name)
