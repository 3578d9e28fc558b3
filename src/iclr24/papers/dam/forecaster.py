"""DAMForecaster: train one DAM across many series, forecast any series at any times.

Training follows the paper's recipe at toy size: for each example pick a series and a
forecast origin, read a context (HSR, or the last n_ctx points for the ablation), and regress
f(t) on standardised targets at future times up to ``horizon`` steps ahead (forecast) and at
the context times (backcast), with a Huber loss and Adam. Statistics for the standardisation
come from the context only. Several HSR draws can be averaged at inference (``n_draws``).

Scaled down from the paper: a few synthetic/bundled series instead of 25 datasets, a 32-wide
2-layer backbone and a few hundred to a thousand CPU steps instead of GPU training; no token
merging (ToMe).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from iclr24.kits.threads import torch_threads
from iclr24.kits.time_series import TimeSeries

from .basis import log_frequencies
from .model import DAM
from .pandas_adapter import from_pandas, is_pandas, to_days
from .sampling import hsr_sample, window_sample

__all__ = ["DAMConfig", "DAMForecaster"]


@dataclass(frozen=True)
class DAMConfig:
    """Hyper-parameters (paper values where known; the rest are the spec's laptop sizes)."""

    n_freqs: int = 64
    min_period: float | None = None  # days; default 2 x the finest training step (Nyquist)
    max_period: float | None = None  # days; default max_lookback x the coarsest step
    d_model: int = 32
    n_layers: int = 2
    n_heads: int = 4
    n_ctx: int = 128
    sigma: float = 256.0  # HSR scale, steps
    max_lookback: int = 4096  # steps
    sampling: str = "hsr"  # or "window": the last n_ctx points (ablation without HSR)
    horizon: int = 720  # training targets up to this many steps ahead
    n_targets: int = 64
    ridge: float = 10.0  # measured: 1e-3 makes the 129-column solve on 128 points explode
    huber_delta: float = 1.0
    steps: int = 1000
    batch_size: int = 16
    lr: float = 1e-3
    seed: int = 0


class DAMForecaster:
    """scikit-learn-like wrapper: ``fit(list_of_series)``, ``predict(series, times)``.

    Series are :class:`TimeSeries` (times in days) or pandas Series with a DatetimeIndex."""

    def __init__(self, config: DAMConfig | None = None, **overrides) -> None:
        cfg = config or DAMConfig()
        if overrides:
            cfg = DAMConfig(**{**cfg.__dict__, **overrides})
        if cfg.sampling not in ("hsr", "window"):
            raise ValueError(f"sampling must be 'hsr' or 'window', got {cfg.sampling!r}")
        for name in ("n_ctx", "steps", "batch_size", "horizon", "n_targets", "max_lookback"):
            v = getattr(cfg, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        self.config = cfg

    # --- context reading -------------------------------------------------------------
    def _context(self, times, values, step, rng):
        c = self.config
        back = (times[-1] - times) / step <= c.max_lookback
        t, v = times[back], values[back]
        n = min(c.n_ctx, t.size)
        if c.sampling == "hsr":
            return hsr_sample(t, v, n, c.sigma, rng, step=step)
        return window_sample(t, v, n)

    def _batch_context(self, contexts):
        n = self.config.n_ctx
        b = len(contexts)
        tt, vv = np.zeros((b, n), np.float32), np.zeros((b, n), np.float32)
        mask = np.zeros((b, n), bool)
        for i, (t, v) in enumerate(contexts):
            tt[i, :t.size], vv[i, :v.size], mask[i, :t.size] = t, v, True
        return torch.from_numpy(tt), torch.from_numpy(vv), torch.from_numpy(mask)

    @staticmethod
    def _check_series(series) -> list[TimeSeries]:
        if not isinstance(series, (list, tuple)) or not series:
            raise ValueError("series must be a non-empty list of TimeSeries (or pandas Series "
                             f"with a DatetimeIndex), got {type(series).__name__}")
        series = [from_pandas(s) if is_pandas(s) else s for s in series]
        if not all(isinstance(s, TimeSeries) for s in series):
            bad = next(type(s).__name__ for s in series if not isinstance(s, TimeSeries))
            raise TypeError("every element of series must be a TimeSeries or a pandas Series "
                            f"with a DatetimeIndex, got {bad}")
        if any(len(s) < 3 for s in series):
            raise ValueError("every training series needs at least 3 observed points")
        return series

    # --- training ------------------------------------------------------------------------
    def fit(self, series, progress=None) -> DAMForecaster:
        """Train on ``series``: a non-empty list of :class:`TimeSeries` or of pandas Series with
        a ``DatetimeIndex`` (converted by :func:`~.pandas_adapter.from_pandas`; NaN = missing),
        each with >= 3 observed points. Histories shorter than ``n_ctx`` are read whole."""
        series = self._check_series(series)
        with torch_threads(1):  # tiny model: extra threads only spin
            return self._fit(series, progress)

    def initialise(self, series) -> DAMForecaster:
        """Build the basis (from the series' resolutions) and the network *without training*
        (the same checks and conversions as :meth:`fit`). The head starts at zero, so this
        forecaster predicts the ridge least-squares fit theta_0 of each context (App. E's
        initialisation alone): the untrained null arm of the claims."""
        series = self._check_series(series)
        self._build(series)
        self.losses_ = []
        return self

    def _build(self, series):
        c = self.config
        steps = np.array([s.step for s in series])
        min_p = c.min_period or 2.0 * steps.min()
        max_p = c.max_period or c.max_lookback * steps.max()
        freqs = log_frequencies(c.n_freqs, min_p, max_p, finest_step=steps.min())
        torch.manual_seed(c.seed)
        self.model_ = DAM(freqs, c.d_model, c.n_layers, c.n_heads, ridge=c.ridge,
                          lookback_scale=float(c.max_lookback))

    def _fit(self, series, progress):
        c = self.config
        self._build(series)
        rng = np.random.default_rng(c.seed)
        opt = torch.optim.Adam(self.model_.parameters(), lr=c.lr)
        huber = torch.nn.HuberLoss(delta=c.huber_delta)
        self.losses_ = []
        for it in range(c.steps):
            ctxs, tq, yq, st = [], np.zeros((c.batch_size, c.n_targets), np.float32), \
                np.zeros((c.batch_size, c.n_targets), np.float32), np.zeros(c.batch_size)
            for i in range(c.batch_size):
                s = series[rng.integers(len(series))]
                o = int(rng.integers(min(c.n_ctx, len(s) - 2), len(s) - 1))  # origin index
                t_hist, v_hist = s.times[:o + 1], s.values[:o + 1]
                origin = t_hist[-1]
                t_c, v_c = self._context(t_hist, v_hist, s.step, rng)
                ctxs.append((t_c - origin, v_c))
                fut = (s.times > origin) & (s.times <= origin + c.horizon * s.step)
                idx = np.flatnonzero(fut)
                pick = rng.choice(idx, size=c.n_targets, replace=idx.size < c.n_targets)
                tq[i], yq[i], st[i] = s.times[pick] - origin, s.values[pick], s.step
            t_ctx, v_ctx, mask = self._batch_context(ctxs)
            step_t = torch.from_numpy(st.astype(np.float32))
            theta = self.model_(t_ctx, v_ctx, mask, step_t)
            _, center, scale, *_ = self.model_.coefficients0(t_ctx, v_ctx, mask, step_t)
            f_fut = self.model_.predict(theta, torch.from_numpy(tq))
            f_back = self.model_.predict(theta, t_ctx)
            c0, s0 = center[:, None], scale[:, None]
            loss = huber((f_fut - c0) / s0, (torch.from_numpy(yq) - c0) / s0)  # forecast
            loss = loss + huber(((f_back - c0) / s0)[mask], ((v_ctx - c0) / s0)[mask])  # backcast
            opt.zero_grad()
            loss.backward()
            opt.step()
            self.losses_.append(float(loss.detach()))
            if progress is not None and (it + 1) % max(1, c.steps // 20) == 0:
                progress((it + 1) / c.steps, f"DAM step {it + 1}/{c.steps}")
        return self

    # --- inference -----------------------------------------------------------------------
    def predict(self, series, times, n_draws: int = 1, seed: int = 0):
        """Forecast (or impute) ``series`` at ``times``.

        series: a :class:`TimeSeries` (any number >= 1 of observed points: a history shorter
          than ``n_ctx`` is read whole, as HSR samples whatever history exists), or a pandas
          Series with a ``DatetimeIndex`` (NaN = missing).
        times: (m,) query times in days on the axis of ``series.times`` (for a pandas series:
          days since 1970-01-01), or a pandas ``DatetimeIndex``.
        The context is read from the whole history (its last point is the origin); with HSR,
        ``n_draws`` contexts are drawn and their forecasts averaged.
        Returns (m,) float64, or a pandas Series indexed by ``times`` if it is a DatetimeIndex."""
        if not hasattr(self, "model_"):
            raise RuntimeError("call fit() before predict()")
        if is_pandas(series):
            series = from_pandas(series)
        if not isinstance(series, TimeSeries):
            raise TypeError("series must be a TimeSeries or a pandas Series with a "
                            f"DatetimeIndex, got {type(series).__name__}")
        index = times if is_pandas(times) else None
        if index is not None:
            q = to_days(index)  # raises TypeError unless a DatetimeIndex
        else:
            try:
                q = np.asarray(times, dtype=np.float64)
            except (TypeError, ValueError):
                raise TypeError("times must be numeric days or a pandas DatetimeIndex, got "
                                f"{type(times).__name__}") from None
        if q.ndim != 1 or q.size == 0:
            raise ValueError(f"times must be a non-empty 1-D array, got shape {q.shape}")
        if np.isnan(q).any():
            raise ValueError("times contains NaN; pass finite query times (days)")
        if isinstance(n_draws, bool) or not isinstance(n_draws, int) or n_draws < 1:
            raise ValueError(f"n_draws must be a positive int, got {n_draws!r}")
        rng = np.random.default_rng(seed)
        origin = series.times[-1]
        ctxs = []
        for _ in range(n_draws if self.config.sampling == "hsr" else 1):
            t_c, v_c = self._context(series.times, series.values, series.step, rng)
            ctxs.append((t_c - origin, v_c))
        t_ctx, v_ctx, mask = self._batch_context(ctxs)
        step = torch.full((len(ctxs),), float(series.step))
        with torch.no_grad(), torch_threads(1):
            theta = self.model_(t_ctx, v_ctx, mask, step)
            tq = torch.from_numpy((q - origin).astype(np.float32)).expand(len(ctxs), -1)
            out = self.model_.predict(theta, tq).double().mean(0).numpy()
        if index is not None:
            import pandas as pd

            return pd.Series(out, index=index, name=series.name or None)
        return out
