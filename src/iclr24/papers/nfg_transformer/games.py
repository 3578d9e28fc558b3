"""Game distributions used for training and testing (official ``nfg_transformer/games.py``).

- :func:`l2_invariant_games`: G ~ N(0, 1), then per player p centre along p's own action axis
  (removes the part of G_p that does not change p's incentives) and scale to unit variance
  (Frobenius norm / sqrt(size) = 1). Used for equilibrium solving and deviation gains.
- :func:`disc_games`: empirical DISC games (2-player, symmetric): latents u, v ~ N(0, 1)^{T x L},
  each shifted by one scalar ~ U(-1, 1); W = sigmoid(u v^T - v u^T); payoffs (W, 1 - W); a
  symmetric random mask of observed joint actions with keep probability ``keep_prob`` and (0, 0)
  always kept. Used for payoff prediction (inpainting).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["disc_games", "l2_invariant_games"]

_MIN_SCALE = 1e-12


def _check_generator(generator) -> None:
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got "
                        f"{type(generator).__name__}")


def _check_batch(batch) -> None:
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be a positive int, got {batch!r}")


def l2_invariant_games(batch: int, shape: Sequence[int],
                       generator: torch.Generator | None = None,
                       dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """``batch`` L2-invariant games with ``shape = (T_1, ..., T_N)`` actions, N >= 2.

    Returns ``(batch, N, T_1, ..., T_N)``."""
    _check_batch(batch)
    _check_generator(generator)
    shape = tuple(shape)
    if len(shape) < 2 or any(isinstance(t, bool) or not isinstance(t, int) or t < 1
                             for t in shape):
        raise ValueError(f"shape must list >= 2 positive ints (actions per player), got {shape}")
    n = len(shape)
    g = torch.randn((batch, n, *shape), generator=generator, dtype=dtype)
    out = []
    for p in range(n):
        gp = g[:, p]
        gp = gp - gp.mean(dim=1 + p, keepdim=True)  # centre along p's own action axis
        size = gp[0].numel()
        scale = gp.flatten(1).norm(dim=1).clamp_min(_MIN_SCALE) / size ** 0.5  # unit variance
        out.append(gp / scale.reshape(-1, *([1] * n)))
    return torch.stack(out, dim=1)


def disc_games(batch: int, n_strategies: int, latent_dim: int = 4, keep_prob: float = 0.5,
               generator: torch.Generator | None = None, dtype: torch.dtype = torch.float32
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch`` empirical DISC games with T = ``n_strategies``.

    Returns ``payoffs: (batch, 2, T, T)`` (win rates W and 1 - W) and
    ``mask: (batch, T, T)`` bool (symmetric, True = observed, (0, 0) always observed)."""
    _check_batch(batch)
    _check_generator(generator)
    for name, v in (("n_strategies", n_strategies), ("latent_dim", latent_dim)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if not 0.0 <= float(keep_prob) <= 1.0:
        raise ValueError(f"keep_prob must be in [0, 1], got {keep_prob!r}")
    t, d = n_strategies, latent_dim
    u = torch.randn((batch, t, d), generator=generator, dtype=dtype)
    v = torch.randn((batch, t, d), generator=generator, dtype=dtype)
    u = u + (2 * torch.rand((batch, 1, 1), generator=generator, dtype=dtype) - 1)
    v = v + (2 * torch.rand((batch, 1, 1), generator=generator, dtype=dtype) - 1)
    logit = u @ v.transpose(1, 2) - v @ u.transpose(1, 2)  # u_i.v_j - v_i.u_j (skew-symmetric)
    w = torch.sigmoid(logit)
    payoffs = torch.stack([w, 1 - w], dim=1)
    keep = torch.rand((batch, t, t), generator=generator) < keep_prob
    keep[:, 0, 0] = True
    lower = torch.tril(keep)
    mask = lower | lower.transpose(1, 2)  # (i, j) observed iff (j, i) observed
    return payoffs, mask
