"""Convergence rates from experiments: a least-squares slope on log-log axes.

A rate experiment measures an error ``err`` at sizes ``x`` (steps T, samples n, ...) over
several replications. The rate is the slope of ``log median(err)`` against ``log x`` over a
stated fit window (pre-asymptotic sizes and floors are excluded by the window, never silently).
Its uncertainty comes from a bootstrap over replications: each resample redraws the replications
at every size independently, recomputes the medians and refits the slope; the interval is the
percentile interval of those slopes. With one replication per size the bootstrap has nothing to
resample and the interval collapses to the point slope (a deterministic experiment).

Used by the rate papers (diffusion_theory: TV against the number of steps; topk_moe: Voronoi
losses against the sample size).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["RateFit", "fit_rate", "plot_rate"]


@dataclass(frozen=True)
class RateFit:
    """A fitted log-log slope.

    slope, intercept: least squares of log(median err) = intercept + slope * log(x) over the
    window; low, high: bootstrap percentile interval of the slope (equal to the slope when
    every size has one replication); window: (x_min, x_max) actually used; x, medians: all sizes
    and the medians over replications (inside and outside the window); n_reps: replications per
    size (the smallest count); confidence: of the interval.
    """

    slope: float
    intercept: float
    low: float
    high: float
    window: tuple[float, float]
    x: tuple[float, ...]
    medians: tuple[float, ...]
    n_reps: int
    confidence: float

    def predict(self, x: Sequence[float] | float) -> np.ndarray:
        """The fitted power law intercept-exp times x**slope at ``x``."""
        return np.exp(self.intercept) * np.asarray(x, dtype=np.float64) ** self.slope


def _as_table(x: Sequence[float], errors) -> tuple[np.ndarray, list[np.ndarray]]:
    xs = np.asarray(x, dtype=np.float64)
    if xs.ndim != 1 or xs.size < 2:
        raise ValueError(f"x must be a 1-D sequence of at least 2 sizes, got shape {xs.shape}")
    if not np.all(np.isfinite(xs)) or np.any(xs <= 0):
        raise ValueError("x must hold finite positive sizes")
    if isinstance(errors, np.ndarray) and errors.ndim == 1:
        errors = errors[:, None]
    rows = [np.atleast_1d(np.asarray(e, dtype=np.float64)) for e in errors]
    if len(rows) != xs.size:
        raise ValueError(f"errors must have one row per size: {xs.size} sizes, {len(rows)} rows")
    for i, r in enumerate(rows):
        if r.ndim != 1 or r.size == 0:
            raise ValueError(f"errors row {i} must be a non-empty 1-D sequence of replications")
        if not np.all(np.isfinite(r)) or np.any(r <= 0):
            raise ValueError(f"errors row {i} must be finite and positive (log-log fit), "
                             f"got {r}")
    return xs, rows


def _slope(logx: np.ndarray, logy: np.ndarray) -> tuple[float, float]:
    slope, intercept = np.polyfit(logx, logy, 1)
    return float(slope), float(intercept)


def fit_rate(x: Sequence[float], errors, *, window: tuple[float, float] | None = None,
             n_boot: int = 2000, confidence: float = 0.95, seed: int = 0) -> RateFit:
    """Fit err ~ C x^slope on medians over replications.

    x: (m,) positive sizes; errors: (m, reps) array or a list of m sequences of replications
    (or an (m,) array for one replication per size); window: inclusive (x_min, x_max) of the
    sizes used by the fit (default: all), at least 2 of them; n_boot: bootstrap resamples.
    """
    xs, rows = _as_table(x, errors)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 1:
        raise ValueError(f"n_boot must be a positive int, got {n_boot!r}")
    lo, hi = (float(xs.min()), float(xs.max())) if window is None else map(float, window)
    inside = (xs >= lo) & (xs <= hi)
    if inside.sum() < 2:
        raise ValueError(f"window {window} keeps {int(inside.sum())} size(s); need at least 2")
    medians = np.array([np.median(r) for r in rows])
    logx = np.log(xs[inside])
    slope, intercept = _slope(logx, np.log(medians[inside]))
    used = [rows[i] for i in np.flatnonzero(inside)]
    if all(r.size == 1 for r in used):
        low = high = slope
    else:
        rng = np.random.default_rng(seed)
        boot = np.empty(n_boot)
        for b in range(n_boot):
            meds = [np.median(r[rng.integers(0, r.size, r.size)]) for r in used]
            boot[b] = _slope(logx, np.log(meds))[0]
        alpha = (1 - confidence) / 2
        low, high = (float(v) for v in np.quantile(boot, [alpha, 1 - alpha]))
        low, high = min(low, slope), max(high, slope)
    return RateFit(slope=slope, intercept=intercept, low=low, high=high,
                   window=(float(xs[inside].min()), float(xs[inside].max())),
                   x=tuple(float(v) for v in xs), medians=tuple(float(v) for v in medians),
                   n_reps=min(r.size for r in rows), confidence=float(confidence))


def plot_rate(ax, fit: RateFit, *, label: str = "", color=None, reference: float | None = None):
    """Draw medians (markers), the fitted line over its window and, optionally, a reference
    slope through the first point of the window (dashed) on a matplotlib ``ax`` (log-log)."""
    x = np.asarray(fit.x)
    med = np.asarray(fit.medians)
    pts = ax.loglog(x, med, "o", color=color,
                    label=f"{label} slope {fit.slope:.2f} [{fit.low:.2f}, {fit.high:.2f}]")
    color = pts[0].get_color()
    xw = x[(x >= fit.window[0]) & (x <= fit.window[1])]
    ax.loglog(xw, fit.predict(xw), "-", color=color)
    if reference is not None:
        y0 = fit.predict(xw[0])
        ax.loglog(xw, y0 * (xw / xw[0]) ** reference, "--", color=color, alpha=0.5,
                  label=f"slope {reference:g}")
    return ax
