"""History sampling: DAM's long-tailed History Sampling Regime (HSR) and the fixed-window
ablation ("no HSR": the last n_ctx points).

HSR draws ``n_ctx`` distinct past points with probability decreasing in their look-back
distance delta (in sampling steps of the series, delta = (t_last - t_i) / step), dense near
the present and heavy-tailed far back:

    p(delta) ∝ 1 / (1 + (delta / sigma)^2)          (a half-Cauchy profile, scale sigma)

normalised over the available points and sampled without replacement; the most recent point is
always kept. The exact HSR density and sigma of the paper (its Sec. 3 equation) could not be
retrieved here: the Cauchy form and ``sigma`` are the spec's recollection, kept as parameters.
"""

from __future__ import annotations

import numpy as np

from iclr24.kits.time_series import check_times_values

__all__ = ["hsr_probabilities", "hsr_sample", "window_sample"]


def _rng(generator) -> np.random.Generator:
    if isinstance(generator, np.random.Generator):
        return generator
    if isinstance(generator, (int, np.integer)) and not isinstance(generator, bool):
        return np.random.default_rng(int(generator))
    raise TypeError(f"generator must be a numpy Generator or an int seed, got {generator!r}")


def _check_n_ctx(n_ctx, n: int) -> int:
    if isinstance(n_ctx, bool) or not isinstance(n_ctx, (int, np.integer)) or n_ctx < 1:
        raise ValueError(f"n_ctx must be a positive int, got {n_ctx!r}")
    if n_ctx > n:
        raise ValueError(f"n_ctx={n_ctx} is larger than the history ({n} points); "
                         "pass a smaller n_ctx or a longer history")
    return int(n_ctx)


def hsr_probabilities(times, sigma: float, step: float | None = None) -> np.ndarray:
    """p_i ∝ 1 / (1 + (delta_i / sigma)^2) over the given past times (sums to 1).

    ``step`` (days) converts time distances to sampling steps; default: the median spacing."""
    t = np.asarray(times, dtype=np.float64)
    if not (np.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be a positive number of steps, got {sigma!r}")
    if step is None:
        step = float(np.median(np.diff(t))) if t.size > 1 else 1.0
    delta = (t[-1] - t) / step
    w = 1.0 / (1.0 + (delta / sigma) ** 2)  # the long-tailed HSR profile
    return w / w.sum()


def hsr_sample(times, values, n_ctx: int, sigma: float = 256.0, generator=0, *,
               step: float | None = None, max_lookback: float | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """Draw a long-tailed random context from a history.

    times, values: (n,) past observations, times strictly increasing (any unit, e.g. days).
    n_ctx: how many points to read (<= available history).
    sigma: HSR scale in sampling steps. ``max_lookback`` (steps) bounds how far back to look.
    Returns (t_ctx, v_ctx), each (n_ctx,), sorted by time; t_ctx[-1] is the last observation.
    """
    t, v = check_times_values(times, values, name="history")
    if max_lookback is not None:
        st = step if step is not None else (float(np.median(np.diff(t))) if t.size > 1 else 1.0)
        keep = (t[-1] - t) / st <= max_lookback
        t, v = t[keep], v[keep]
    n_ctx = _check_n_ctx(n_ctx, t.size)
    rng = _rng(generator)
    p = hsr_probabilities(t, sigma, step)[:-1]
    rest = np.empty(0, dtype=np.int64)
    if n_ctx > 1:
        rest = rng.choice(t.size - 1, size=n_ctx - 1, replace=False, p=p / p.sum())
    idx = np.sort(np.append(rest, t.size - 1))  # the most recent point is always read
    return t[idx], v[idx]


def window_sample(times, values, n_ctx: int) -> tuple[np.ndarray, np.ndarray]:
    """The ablation without HSR: the last ``n_ctx`` observed points."""
    t, v = check_times_values(times, values, name="history")
    n_ctx = _check_n_ctx(n_ctx, t.size)
    return t[-n_ctx:], v[-n_ctx:]
