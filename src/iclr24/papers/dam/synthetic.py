"""A seeded multi-domain generator of univariate series on a real time axis (days).

Stand-in for DAM's 25-dataset training corpus (several GB, not downloadable here). Each series:
- resolution from {15 min, 1 h, 1 day, 1 week}, 2 000-8 000 grid points;
- 0-3 seasonal components with real-time periods from {1, 7, 365.25} days (those spanning at
  least 2 samples) plus one random log-uniform period, random amplitudes and phases;
- a linear or piecewise-linear trend, AR(1) noise with phi in [0, 0.9], an optional level shift;
- 0-30 % of the points removed at random (irregular sampling; the last point is kept).
Held-out domains: the random period of training series avoids the band ``held_out_band``
(20-60 days by default); held-out series take their random period from inside it, so
transfer is tested on period sets never seen in training. Periods are drawn independently of
any basis frequencies.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclr24.kits.time_series import TimeSeries

__all__ = ["RESOLUTIONS", "SyntheticConfig", "synthetic_corpus", "synthetic_series"]

RESOLUTIONS = {"15min": 1 / 96, "1h": 1 / 24, "1d": 1.0, "1w": 7.0}


@dataclass(frozen=True)
class SyntheticConfig:
    resolutions: tuple[float, ...] = tuple(RESOLUTIONS.values())
    length: tuple[int, int] = (2000, 8000)
    calendar_periods: tuple[float, ...] = (1.0, 7.0, 365.25)
    held_out_band: tuple[float, float] = (20.0, 60.0)
    ar_phi: tuple[float, float] = (0.0, 0.9)
    noise: tuple[float, float] = (0.05, 0.4)  # stationary std of the AR noise
    missing: tuple[float, float] = (0.0, 0.3)
    level_shift_prob: float = 0.3


def _random_period(rng, step: float, n: int, band: tuple[float, float], held_out: bool):
    lo, hi = 4 * step, n * step / 3
    if held_out:
        lo, hi = max(lo, band[0]), min(hi, band[1])
        return float(np.exp(rng.uniform(np.log(lo), np.log(hi)))) if lo < hi else None
    for _ in range(100):  # log-uniform outside the held-out band
        p = float(np.exp(rng.uniform(np.log(lo), np.log(hi))))
        if not band[0] <= p <= band[1]:
            return p
    return None


def synthetic_series(rng: np.random.Generator, config: SyntheticConfig = SyntheticConfig(), *,
                     held_out: bool = False, resolution: float | None = None,
                     length: int | None = None, missing: float | None = None,
                     min_longest_period: int | None = None, name: str = "") -> TimeSeries:
    """One series. ``resolution`` (days), ``length`` (grid points) and ``missing`` (fraction
    removed) override the random draws; ``min_longest_period`` (samples) forces a component
    whose period spans more than that many samples (the calendar one if one qualifies)."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    step = float(rng.choice(config.resolutions)) if resolution is None else float(resolution)
    n = int(rng.integers(config.length[0], config.length[1] + 1)) if length is None else int(length)
    if step <= 0 or n < 8:
        raise ValueError(f"need resolution > 0 and length >= 8, got {step}, {n}")
    g = np.arange(n, dtype=np.float64)
    t = float(rng.uniform(0, 365.25)) + g * step  # days, random calendar start
    usable = [p for p in config.calendar_periods if p >= 2 * step]
    n_cal = int(rng.integers(0, min(3, len(usable)) + 1))
    periods = list(rng.choice(usable, size=n_cal, replace=False)) if n_cal else []
    extra = _random_period(rng, step, n, config.held_out_band, held_out)
    if extra is not None:
        periods.append(extra)
    if min_longest_period is not None and not any(p > min_longest_period * step for p in periods):
        long_cal = [p for p in config.calendar_periods if p > min_longest_period * step
                    and p < n * step / 2]
        periods.append(float(rng.choice(long_cal)) if long_cal
                       else float(min_longest_period * step * rng.uniform(1.5, 3.0)))
    y = np.zeros(n)
    for p in periods:
        amp, phase = rng.uniform(0.5, 2.0), rng.uniform(0, 2 * np.pi)
        y += amp * np.sin(2 * np.pi * t / p + phase)
    slope = rng.normal(0, 1.0) / n  # total drift ~ N(0, 1)
    trend = slope * g
    if rng.random() < 0.5:  # piecewise-linear: one change of slope
        k = int(rng.integers(n // 4, 3 * n // 4))
        trend += (rng.normal(0, 1.0) / n) * np.maximum(g - k, 0)
    y += trend
    if rng.random() < config.level_shift_prob:
        y += rng.normal(0, 1.0) * (g >= rng.integers(n // 10, n))
    phi = rng.uniform(*config.ar_phi)
    sd = rng.uniform(*config.noise)
    e = rng.normal(0, sd * np.sqrt(1 - phi ** 2), n)
    ar = np.empty(n)
    ar[0] = rng.normal(0, sd)
    for i in range(1, n):
        ar[i] = phi * ar[i - 1] + e[i]  # AR(1)
    y += ar
    y = y * rng.uniform(0.5, 20.0) + rng.normal(0, 50.0)  # arbitrary units and level
    frac = rng.uniform(*config.missing) if missing is None else float(missing)
    keep = rng.random(n) >= frac
    keep[-1] = True
    return TimeSeries(t[keep], y[keep], step, name or f"synthetic(step={step:g}d)")


def synthetic_corpus(n_series: int, seed: int, *, held_out: bool = False,
                     config: SyntheticConfig = SyntheticConfig(), **kwargs) -> list[TimeSeries]:
    """``n_series`` independent series from one seed (kwargs go to :func:`synthetic_series`)."""
    if isinstance(n_series, bool) or not isinstance(n_series, int) or n_series < 1:
        raise ValueError(f"n_series must be a positive int, got {n_series!r}")
    rng = np.random.default_rng(seed)
    return [synthetic_series(rng, config, held_out=held_out, **kwargs) for _ in range(n_series)]
