"""Same-run baselines of the NfgTransformer claims.

Equilibrium solving (2-player):
- :class:`PayoffMLP`: a non-equivariant network (flattened payoffs -> hidden -> per-action
  logits), trained with the same NashConv loss; it sees actions by index, so relabelling actions
  changes its output.
- :func:`replicator_dynamics`: discrete-time two-population replicator dynamics (Euler steps of
  dx_i/dt = x_i (u_i - x.u)), batched, from the uniform strategy; a cheap classical reference.
- :func:`nashpy_equilibria`: one exact Nash equilibrium per game (nashpy: Lemke-Howson, then the
  transposed game, then vertex enumeration), each verified by its NashConv; the ground truth
  that validates the NashConv code.

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
    "fit_ratings_cv",
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
        if not bool(torch.isfinite(payoffs).all()):
            raise ValueError("payoffs must be finite (found NaN or inf)")
        out = self.net(payoffs.flatten(1))
        return list(torch.split(out, list(self.shape), dim=1))


def replicator_dynamics(payoffs: torch.Tensor, steps: int = 200, step_size: float = 0.1
                        ) -> list[torch.Tensor]:
    """Two-population replicator dynamics from uniform play, ``steps`` Euler steps.

    payoffs: (B, 2, T_1, T_2) -> strategies [(B, T_1), (B, T_2)]."""
    if payoffs.ndim != 4 or payoffs.shape[1] != 2:
        raise ValueError(f"payoffs must have shape (B, 2, T_1, T_2), got {tuple(payoffs.shape)}")
    if payoffs.shape[0] < 1:
        raise ValueError("payoffs must hold at least one game (batch axis 0 is empty)")
    if not bool(torch.isfinite(payoffs).all()):
        raise ValueError("payoffs must be finite (found NaN or inf)")
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


def _as_mixed(v: np.ndarray, size: int) -> np.ndarray | None:
    """A returned strategy as a point of the simplex, or None when it is not one (wrong shape,
    non-finite, clearly negative, not summing to 1); round-off negatives are clipped."""
    v = np.asarray(v, dtype=np.float64)
    if v.shape != (size,) or not np.isfinite(v).all() or v.min() < -1e-9:
        return None
    v = np.clip(v, 0.0, None)
    if abs(v.sum() - 1) > 1e-6:
        return None
    return v / v.sum()


def _verified(payoffs: np.ndarray, x: np.ndarray, y: np.ndarray, tol: float) -> bool:
    """NashConv (sum form, the package's exact :func:`nash_conv`) of ``(x, y)`` <= ``tol``."""
    from .equilibria import nash_conv

    g = torch.from_numpy(payoffs[None])
    nc = nash_conv(g, [torch.from_numpy(x[None]), torch.from_numpy(y[None])], reduce="sum")
    return bool(nc[0] <= tol)


def nashpy_equilibria(payoffs: np.ndarray, time_limit_s: float = 2.0, tol: float = 1e-6,
                      return_methods: bool = False):
    """One *verified* Nash equilibrium per 2-player game with nashpy.

    payoffs: (B, 2, T_1, T_2) array. Returns ``(x: (B, T_1), y: (B, T_2), ok: (B,) bool)`` (and
    ``methods: list[str]`` with ``return_methods``: which solver gave the equilibrium, or
    ``"unsolved"``). Every candidate is checked with the package's exact :func:`nash_conv` (sum
    form, float64) and accepted only when NashConv <= ``tol``; the solvers are tried in turn:

    1. Lemke-Howson with every initial dropped label (``lh0``, ``lh1``, ...);
    2. Lemke-Howson on the transposed game (players swapped; ``lh_t0``, ...);
    3. vertex enumeration (``vertex``), which is exact but exponential in the worst case.

    The verification is needed: nashpy 0.0.43's Lemke-Howson returns a non-equilibrium (NashConv
    0.3-7) for every label on most games with T_1 > T_2 (30/30 random 6x4, 5x4, 6x3, 7x4 games),
    while the transposed game solves correctly. ``ok`` is False only where no solver returned a
    verified equilibrium within ``time_limit_s`` seconds per attempt (pivoting can cycle; the
    limit applies in the main thread); such games are reported as unsolved, never as solved."""
    import warnings

    import nashpy

    payoffs = np.asarray(payoffs, dtype=np.float64)
    if payoffs.ndim != 4 or payoffs.shape[1] != 2:
        raise ValueError(f"payoffs must have shape (B, 2, T_1, T_2), got {payoffs.shape}")
    if payoffs.shape[0] < 1:
        raise ValueError("payoffs must hold at least one game (batch axis 0 is empty)")
    if not np.isfinite(payoffs).all():
        raise ValueError("payoffs must be finite (found NaN or inf)")
    if not tol >= 0:
        raise ValueError(f"tol must be >= 0, got {tol!r}")
    bsz, _, t1, t2 = payoffs.shape
    xs, ys, ok = np.full((bsz, t1), 1 / t1), np.full((bsz, t2), 1 / t2), np.zeros(bsz, bool)
    methods = ["unsolved"] * bsz
    # L2-invariant games are centred (column sums of A, row sums of B are 0), which makes them
    # degenerate and can make Lemke-Howson cycle. Adding c(s_-p) to G_p (a constant per column
    # of A, per row of B) leaves every deviation gain, hence every equilibrium, unchanged and
    # restores genericity; the offsets are fixed pseudo-random numbers. Verification below uses
    # the original payoffs.
    rng = np.random.default_rng(0)

    def attempts(a: np.ndarray, b: np.ndarray):
        game = nashpy.Game(a, b)
        for label in range(t1 + t2):
            yield f"lh{label}", lambda label=label: game.lemke_howson(initial_dropped_label=label)
        swapped = nashpy.Game(b.T, a.T)
        for label in range(t1 + t2):
            yield f"lh_t{label}", lambda label=label: tuple(
                reversed(swapped.lemke_howson(initial_dropped_label=label)))
        yield "vertex", lambda: next(iter(game.vertex_enumeration()))

    for i in range(bsz):
        a = payoffs[i, 0] + rng.normal(size=(1, t2))
        b = payoffs[i, 1] + rng.normal(size=(t1, 1))
        for name, solve in attempts(a, b):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    with _time_limit(time_limit_s):
                        x, y = solve()
                except (_PivotTimeout, StopIteration, ValueError, IndexError,
                        np.linalg.LinAlgError):
                    continue
            x, y = _as_mixed(x, t1), _as_mixed(y, t2)
            if x is not None and y is not None and _verified(payoffs[i], x, y, tol):
                xs[i], ys[i], ok[i], methods[i] = x, y, True, name
                break
    return (xs, ys, ok, methods) if return_methods else (xs, ys, ok)


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
                lr: float = 0.05, generator: torch.Generator | None = None,
                l2: float | torch.Tensor = 0.0
                ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Fit Elo (``k = 0``) or mElo-2k ratings to observed win rates by logistic regression.

    win_rates: (B, T, T) in [0, 1]; mask: (B, T, T) bool (observed). Returns ratings (B, T) and
    vectors (B, T, 2k) (None for Elo). mElo vectors start small and random (``generator``), since
    zero is a saddle point of the bilinear term. ``l2`` (a float, or one value per game
    ``(B,)``) adds ``l2 * mean(r^2 + |c|^2)`` per game to the loss: the regularisation that keeps
    the 2k extra parameters per strategy from overfitting a few observed entries."""
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
        win_rates = win_rates.masked_fill(~mask, 0.5)  # unobserved entries never enter
        denom = w.flatten(1).sum(1).clamp_min(1)
        lam = torch.as_tensor(l2, dtype=win_rates.dtype).expand(bsz)
        for _ in range(steps):
            p = predict_ratings(r, c).clamp(1e-6, 1 - 1e-6)
            bce = -(win_rates * p.log() + (1 - win_rates) * (1 - p).log())
            per_game = (bce * w).flatten(1).sum(1) / denom
            penalty = r.square().mean(1)
            if c is not None:
                penalty = penalty + c.square().sum(2).mean(1)
            loss = (per_game + lam * penalty).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return r.detach(), None if c is None else c.detach()




L2_GRID = (0.0, 1e-3, 1e-2, 1e-1, 1.0)


def fit_ratings_cv(win_rates: torch.Tensor, mask: torch.Tensor, k: int = 0,
                   l2_grid: tuple[float, ...] = L2_GRID, holdout: float = 0.2,
                   steps: int = 500, lr: float = 0.05,
                   generator: torch.Generator | None = None
                   ) -> tuple[torch.Tensor, torch.Tensor | None, float]:
    """:func:`fit_ratings` with its L2 strength chosen per game by validation on the *observed*
    entries only: hold out a fraction ``holdout`` of the observed pairs {(i, j), (j, i)}, fit
    with every ``l2`` of ``l2_grid`` on the rest, pick the one with the lowest held-out squared
    error pooled over the batch of games, refit on all observed entries. The unobserved (test)
    entries are never seen. Returns ratings, vectors and the chosen ``l2`` (a float)."""
    if not 0.0 < holdout < 1.0:
        raise ValueError(f"holdout must be in (0, 1), got {holdout!r}")
    if not l2_grid or any(not v >= 0 for v in l2_grid):
        raise ValueError(f"l2_grid must be a non-empty list of values >= 0, got {l2_grid!r}")
    bsz, t = win_rates.shape[:2]
    upper = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
    draw = torch.rand((bsz, t, t), generator=generator) < holdout
    val_upper = draw & upper & mask
    val = val_upper | val_upper.transpose(1, 2)
    train = mask & ~val
    train[:, 0, 0] = True  # keep every game non-empty
    errs = []
    for lam in l2_grid:
        r, c = fit_ratings(win_rates, train, k=k, steps=steps, lr=lr, l2=lam,
                           generator=None if generator is None
                           else torch.Generator().manual_seed(int(generator.initial_seed())))
        se = (predict_ratings(r, c) - win_rates).square() * val
        errs.append(se.flatten(1).sum(1) / val.flatten(1).sum(1).clamp_min(1))
    # one strength for the whole batch (pooled validation error): a per-game choice from the
    # handful of held-out pairs of one game is mostly noise
    lam = float(l2_grid[int(torch.stack([e.mean() for e in errs]).argmin())])
    r, c = fit_ratings(win_rates, mask, k=k, steps=steps, lr=lr, l2=lam, generator=generator)
    return r, c, lam
