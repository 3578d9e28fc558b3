"""DLinear (Zeng, Chen, Zhang, Xu: "Are Transformers Effective for Time Series Forecasting?",
AAAI 2023): a moving-average decomposition and two linear maps from the look-back window to the
horizon, trained per dataset with MSE and Adam.

    trend  = AvgPool_k(x)   (ends padded by repeating the first/last value)
    season = x - trend
    y_hat  = W_s season + b_s + W_t trend + b_t                 (the "shared" variant)

The official defaults are kept: moving-average kernel 25, one weight pair shared by all
channels (univariate here), MSE loss, Adam. Series are standardised with the mean and standard
deviation of the training part (as the LTSF benchmarks do) and forecasts are mapped back.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

__all__ = ["DLinear", "DLinearForecaster", "moving_average", "sliding_windows"]


def moving_average(x: torch.Tensor, kernel_size: int) -> torch.Tensor:
    """Centred moving average along the last axis, ends padded by edge repetition (as DLinear).

    x: (..., L) -> (..., L). ``kernel_size`` must be odd so the output keeps length L."""
    if kernel_size < 1 or kernel_size % 2 == 0:
        raise ValueError(f"kernel_size must be a positive odd int, got {kernel_size!r}")
    pad = (kernel_size - 1) // 2
    front = x[..., :1].expand(*x.shape[:-1], pad)
    back = x[..., -1:].expand(*x.shape[:-1], pad)
    padded = torch.cat([front, x, back], dim=-1)
    return padded.unfold(-1, kernel_size, 1).mean(dim=-1)


class DLinear(nn.Module):
    """x: (batch, context) -> (batch, horizon)."""

    def __init__(self, context: int, horizon: int, kernel_size: int = 25) -> None:
        super().__init__()
        for name, v in (("context", context), ("horizon", horizon)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        self.context, self.horizon, self.kernel_size = context, horizon, kernel_size
        moving_average(torch.zeros(1, 1), kernel_size)  # validates kernel_size
        self.seasonal = nn.Linear(context, horizon)
        self.trend = nn.Linear(context, horizon)
        # official init: each output starts as the window mean of its component
        for layer in (self.seasonal, self.trend):
            nn.init.constant_(layer.weight, 1.0 / context)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim != 2 or x.shape[-1] != self.context:
            raise ValueError(f"x must have shape (batch, {self.context}), got {tuple(x.shape)}")
        trend = moving_average(x, self.kernel_size)
        return self.seasonal(x - trend) + self.trend(trend)  # y = W_s s + W_t t (+ biases)


def sliding_windows(values: np.ndarray, context: int, horizon: int) -> tuple[np.ndarray, np.ndarray]:
    """All (window, target) pairs of a regular series: (n, context), (n, horizon)."""
    v = np.asarray(values, dtype=np.float64)
    n = v.size - context - horizon + 1
    if n < 1:
        raise ValueError(f"series of length {v.size} is too short for context {context} + "
                         f"horizon {horizon}")
    idx = np.arange(n)[:, None]
    return v[idx + np.arange(context)], v[idx + context + np.arange(horizon)]


@dataclass
class DLinearForecaster:
    """Fit DLinear on one regular series (its own sliding windows) and forecast from its end.

    ``fit(values)``: values (n,) regular, no NaN (interpolate gaps first).
    ``predict(window)``: the last ``context`` values -> (horizon,) forecast.
    """

    context: int = 336
    horizon: int = 96
    kernel_size: int = 25
    steps: int = 300
    batch_size: int = 32
    lr: float = 5e-3
    seed: int = 0

    def fit(self, values) -> DLinearForecaster:
        v = np.asarray(values, dtype=np.float64)
        if v.ndim != 1 or not np.all(np.isfinite(v)):
            raise ValueError("values must be a 1-D finite array (interpolate missing points)")
        self.mean_, self.std_ = float(v.mean()), float(v.std()) or 1.0
        x, y = sliding_windows((v - self.mean_) / self.std_, self.context, self.horizon)
        from iclr24.kits.threads import torch_threads

        with torch_threads(1):  # a tiny linear model: extra threads only spin
            return self._fit(x, y)

    def _fit(self, x: np.ndarray, y: np.ndarray) -> DLinearForecaster:
        gen = torch.Generator().manual_seed(self.seed)
        torch.manual_seed(self.seed)
        self.model_ = DLinear(self.context, self.horizon, self.kernel_size).double()
        opt = torch.optim.Adam(self.model_.parameters(), lr=self.lr)
        xt, yt = torch.from_numpy(x), torch.from_numpy(y)
        for _ in range(self.steps):
            idx = torch.randint(0, xt.shape[0], (min(self.batch_size, xt.shape[0]),),
                                generator=gen)
            loss = torch.mean((self.model_(xt[idx]) - yt[idx]) ** 2)  # MSE, as the paper
            opt.zero_grad()
            loss.backward()
            opt.step()
        return self

    def predict(self, window) -> np.ndarray:
        if not hasattr(self, "model_"):
            raise RuntimeError("call fit() before predict()")
        w = np.asarray(window, dtype=np.float64)
        if w.shape != (self.context,) or not np.all(np.isfinite(w)):
            raise ValueError(f"window must be a finite array of shape ({self.context},), "
                             f"got {w.shape}")
        with torch.no_grad():
            z = self.model_(torch.from_numpy((w - self.mean_) / self.std_)[None])[0].numpy()
        return z * self.std_ + self.mean_
