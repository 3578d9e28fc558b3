"""Same-run baselines of the NfgTransformer claims.

Equilibrium solving (2-player):
- :class:`PayoffMLP`: a non-equivariant network (flattened payoffs -> hidden -> per-action
  logits), trained with the same NashConv loss; it sees actions by index, so relabelling actions
  changes its output.
- :func:`replicator_dynamics`: discrete-time two-population replicator dynamics (Euler steps of
  dx_i/dt = x_i (u_i - x.u)), batched, from the uniform strategy; a cheap classical reference.
- :func:`nashpy_equilibria`: one exact Nash equilibrium per game by Lemke-Howson (nashpy), the
  ground truth that validates the NashConv code (NashConv ~ 0 there).

Payoff prediction on DISC games (win rates W_ij, player 2 gets 1 - W_ij):
- :func:`fit_ratings`: Elo (W_ij ~ sigmoid(r_i - r_j)) and multidimensional Elo mElo-2k
  (W_ij ~ sigmoid(r_i - r_j + c_i^T Omega c_j), Omega the canonical rank-2k skew-symmetric
  matrix; Balduzzi et al. 2018), fitted per game by logistic regression (binary cross-entropy
  on the observed win rates), batched over games with Adam.
"""

from __future__ import annotations

import contextlib
import signal
import threading

import numpy as np
import torch
from torch import nn

__all__ = [
    "PayoffMLP",
    "fit_ratings",
    "nashpy_equilibria",
    "predict_ratings",
    "replicator_dynamics",
]


class PayoffMLP(nn.Module):
    """Flattened payoffs ``(B, 2, T_1, T_2)`` -> logits ``[(B, T_1), (B, T_2)]`` by a plain MLP
    (GELU hidden layers). Fixed game shape; not permutation-equivariant (the control)."""

    def __init__(self, shape: tuple[int, int], hidden: int = 256, n_layers: int = 2):
        super().__init__()
        t1, t2 = shape
        layers: list[nn.Module] = []
        width = 2 * t1 * t2
        for _ in range(n_layers):
            layers += [nn.Linear(width, hidden), nn.GELU()]
            width = hidden
        layers.append(nn.Linear(width, t1 + t2))
        self.net = nn.Sequential(*layers)
        self.shape = (t1, t2)

    def forward(self, payoffs: torch.Tensor) -> list[torch.Tensor]:
        if payoffs.ndim != 4 or tuple(payoffs.shape[1:]) != (2, *self.shape):
            raise ValueError(f"payoffs must have shape (B, 2, {self.shape[0]}, {self.shape[1]}), "
                             f"got {tuple(payoffs.shape)}")
        out = self.net(payoffs.flatten(1))
        return list(torch.split(out, list(self.shape), dim=1))


def replicator_dynamics(payoffs: torch.Tensor, steps: int = 200, step_size: float = 0.1
                        ) -> list[torch.Tensor]:
    """Two-population replicator dynamics from uniform play, ``steps`` Euler steps.

    payoffs: (B, 2, T_1, T_2) -> strategies [(B, T_1), (B, T_2)]."""
    if payoffs.ndim != 4 or payoffs.shape[1] != 2:
        raise ValueError(f"payoffs must have shape (B, 2, T_1, T_2), got {tuple(payoffs.shape)}")
    if steps < 0 or step_size <= 0:
        raise ValueError(f"need steps >= 0 and step_size > 0, got {steps}, {step_size}")
    a, b = payoffs[:, 0], payoffs[:, 1]
    x = payoffs.new_full(a.shape[:2], 1.0 / a.shape[1])
    y = payoffs.new_full((a.shape[0], a.shape[2]), 1.0 / a.shape[2])
    for _ in range(steps):
        ux = torch.einsum("bij,bj->bi", a, y)  # u_i = (A y)_i
        uy = torch.einsum("bij,bi->bj", b, x)  # u_j = (B^T x)_j
        x = x + step_size * x * (ux - (x * ux).sum(1, keepdim=True))  # x_i (u_i - x.u)
        y = y + step_size * y * (uy - (y * uy).sum(1, keepdim=True))
        x = x.clamp_min(0) / x.clamp_min(0).sum(1, keepdim=True)
        y = y.clamp_min(0) / y.clamp_min(0).sum(1, keepdim=True)
    return [x, y]


class _PivotTimeout(Exception):
    pass


@contextlib.contextmanager
def _time_limit(seconds: float):
    """Raise _PivotTimeout after ``seconds`` (SIGALRM; only in the main thread, else no limit)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield
        return

    def on_alarm(signum, frame):
        raise _PivotTimeout

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def nashpy_equilibria(payoffs: np.ndarray, time_limit_s: float = 2.0
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One Nash equilibrium per 2-player game by nashpy's Lemke-Howson (dropped label 0).

    payoffs: (B, 2, T_1, T_2) array. Returns ``(x: (B, T_1), y: (B, T_2), ok: (B,) bool)``;
    ``ok`` is False where Lemke-Howson returned no valid strategy or did not finish within
    ``time_limit_s`` seconds (its pivoting can cycle; the limit applies in the main thread)."""
    import warnings

    import nashpy

    payoffs = np.asarray(payoffs, dtype=np.float64)
    if payoffs.ndim != 4 or payoffs.shape[1] != 2:
        raise ValueError(f"payoffs must have shape (B, 2, T_1, T_2), got {payoffs.shape}")
    bsz, _, t1, t2 = payoffs.shape
    xs, ys, ok = np.full((bsz, t1), 1 / t1), np.full((bsz, t2), 1 / t2), np.zeros(bsz, bool)
    # L2-invariant games are centred (column sums of A, row sums of B are 0), which makes them
    # degenerate and can make Lemke-Howson cycle. Adding c(s_-p) to G_p (a constant per column
    # of A, per row of B) leaves every deviation gain, hence every equilibrium, unchanged and
    # restores genericity; the offsets are fixed pseudo-random numbers.
    rng = np.random.default_rng(0)
    for i in range(bsz):
        a = payoffs[i, 0] + rng.normal(size=(1, t2))
        b = payoffs[i, 1] + rng.normal(size=(t1, 1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                with _time_limit(time_limit_s):
                    x, y = nashpy.Game(a, b).lemke_howson(initial_dropped_label=0)
            except _PivotTimeout:  # nashpy's pivoting can cycle on near-degenerate games
                continue
        if (x.shape == (t1,) and y.shape == (t2,) and np.isfinite(x).all() and np.isfinite(y).all()
                and abs(x.sum() - 1) < 1e-6 and abs(y.sum() - 1) < 1e-6):
            xs[i], ys[i], ok[i] = x, y, True
    return xs, ys, ok


def _omega(k: int, dtype: torch.dtype) -> torch.Tensor:
    """Canonical rank-2k skew-symmetric matrix: sum_l e_{2l} e_{2l+1}^T - e_{2l+1} e_{2l}^T."""
    om = torch.zeros(2 * k, 2 * k, dtype=dtype)
    for i in range(k):
        om[2 * i, 2 * i + 1], om[2 * i + 1, 2 * i] = 1.0, -1.0
    return om


def predict_ratings(ratings: torch.Tensor, vectors: torch.Tensor | None) -> torch.Tensor:
    """Win-rate matrix (B, T, T) from ratings (B, T) and mElo vectors (B, T, 2k) or None."""
    logit = ratings[:, :, None] - ratings[:, None, :]  # r_i - r_j
    if vectors is not None:
        om = _omega(vectors.shape[-1] // 2, vectors.dtype).to(vectors.device)
        logit = logit + vectors @ om @ vectors.transpose(1, 2)  # c_i^T Omega c_j
    return torch.sigmoid(logit)


def fit_ratings(win_rates: torch.Tensor, mask: torch.Tensor, k: int = 0, steps: int = 500,
                lr: float = 0.05, generator: torch.Generator | None = None
                ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Fit Elo (``k = 0``) or mElo-2k ratings to observed win rates by logistic regression.

    win_rates: (B, T, T) in [0, 1]; mask: (B, T, T) bool (observed). Returns ratings (B, T) and
    vectors (B, T, 2k) (None for Elo). mElo vectors start small and random (``generator``), since
    zero is a saddle point of the bilinear term."""
    if win_rates.ndim != 3 or win_rates.shape[1] != win_rates.shape[2]:
        raise ValueError(f"win_rates must have shape (B, T, T), got {tuple(win_rates.shape)}")
    if tuple(mask.shape) != tuple(win_rates.shape) or mask.dtype != torch.bool:
        raise ValueError(f"mask must be a bool tensor of shape {tuple(win_rates.shape)}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ValueError(f"k must be a non-negative int, got {k!r}")
    bsz, t = win_rates.shape[:2]
    with torch.enable_grad():
        r = torch.zeros(bsz, t, dtype=win_rates.dtype, requires_grad=True)
        params = [r]
        c = None
        if k:
            c = (0.1 * torch.randn(bsz, t, 2 * k, generator=generator, dtype=win_rates.dtype)
                 ).requires_grad_(True)
            params.append(c)
        opt = torch.optim.Adam(params, lr=lr)
        w = mask.to(win_rates.dtype)
        denom = w.flatten(1).sum(1).clamp_min(1)
        for _ in range(steps):
            p = predict_ratings(r, c).clamp(1e-6, 1 - 1e-6)
            bce = -(win_rates * p.log() + (1 - win_rates) * (1 - p).log())
            loss = ((bce * w).flatten(1).sum(1) / denom).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return r.detach(), None if c is None else c.detach()


