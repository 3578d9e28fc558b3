"""Deviation gains, NashConv and the max-deviation-gain target (paper Sec. 4; official
``nfg_transformer/equilibria.py``).

For a product strategy sigma = (sigma_1, ..., sigma_N), player p's gain from deviating to a'

    g_p(a') = E_{s ~ sigma} [ G_p(a', s_{-p}) - G_p(s) ]

and NashConv is the largest incentive to deviate, reduced over players: the official loss takes
``max_p max_{a'} g_p(a')`` (``reduce="max"``); the usual NashConv sums the players' best gains
(``reduce="sum"``). Both are 0 exactly at a Nash equilibrium. With a joint mask the official
code counts a gain only where the joint action s is observed and a' appears in some observed
joint action; the same is done here.
"""

from __future__ import annotations

import torch

from .network import action_masks, check_game

__all__ = ["deviation_gains", "max_deviation_gain", "nash_conv"]

# Tolerance for "on the simplex": float32 softmax rows sum to 1 within ~1e-6; 1e-4 leaves room
# for float32 games of a few hundred actions while rejecting strategies that are not
# distributions (which would make NashConv meaningless, e.g. 614 for unnormalised scores).
_SIMPLEX_TOL = 1e-4


def _check_strategies(payoffs: torch.Tensor, strategies) -> list[torch.Tensor]:
    if not isinstance(strategies, (list, tuple)):
        raise TypeError("strategies must be a list of N tensors (B, T_p), got "
                        f"{type(strategies).__name__}")
    n, b, sizes = payoffs.shape[1], payoffs.shape[0], list(payoffs.shape[2:])
    if len(strategies) != n:
        raise ValueError(f"strategies has {len(strategies)} entries but payoffs has {n} players")
    for p, s in enumerate(strategies):
        if not isinstance(s, torch.Tensor) or tuple(s.shape) != (b, sizes[p]):
            shape = tuple(s.shape) if isinstance(s, torch.Tensor) else type(s).__name__
            raise ValueError(f"strategies[{p}] must be a tensor of shape {(b, sizes[p])}, "
                             f"got {shape}")
        if not s.is_floating_point():
            raise TypeError(f"strategies[{p}] must be a floating-point tensor, got {s.dtype}")
        if not bool(torch.isfinite(s).all()):
            raise ValueError(f"strategies[{p}] must be finite (found NaN or inf)")
        if bool((s.detach() < -_SIMPLEX_TOL).any()):
            raise ValueError(f"strategies[{p}] must be non-negative (a mixed strategy), min entry "
                             f"{float(s.min()):.3g}")
        err = float((s.detach().sum(dim=1) - 1).abs().max()) if s.shape[0] else 0.0
        if err > _SIMPLEX_TOL:
            raise ValueError(f"strategies[{p}] rows must sum to 1 (on the probability simplex), "
                             f"largest |sum - 1| = {err:.3g}")
    return list(strategies)


def _joint_probability(strategies: list[torch.Tensor]) -> torch.Tensor:
    """(B, T_1..T_N): sigma(s) = prod_p sigma_p(s_p)."""
    n = len(strategies)
    joint = None
    for p, s in enumerate(strategies):
        shape = [s.shape[0]] + [1] * n
        shape[1 + p] = s.shape[1]
        joint = s.reshape(shape) if joint is None else joint * s.reshape(shape)
    return joint


def deviation_gains(payoffs: torch.Tensor, strategies, mask: torch.Tensor | None = None
                    ) -> list[torch.Tensor]:
    """g_p(a') = E_{s~sigma}[G_p(a', s_{-p}) - G_p(s)] for every player p and deviation a'.

    payoffs: (B, N, T_1..T_N); strategies: list of N tensors (B, T_p), rows on the simplex;
    mask: optional (B, T_1..T_N) bool. Returns a list of N tensors (B, T_p).
    """
    mask = check_game(payoffs, mask)
    strategies = _check_strategies(payoffs, strategies)
    n = payoffs.shape[1]
    joint = _joint_probability(strategies) * mask.to(payoffs.dtype)  # sigma(s) [s observed]
    marginal = action_masks(mask)
    gains = []
    if not bool(torch.isfinite(payoffs).all()):  # the gains read unobserved deviations too
        raise ValueError("payoffs must be finite everywhere for deviation gains (found NaN or "
                         "inf)")
    for p in range(n):
        g = payoffs[:, p]
        others = tuple(1 + q for q in range(n) if q != p)
        # E_{s}[G_p(a', s_-p)] = sum_{s_-p} G_p(a', s_-p) sum_{s_p} sigma(s)
        sigma_minus = joint.sum(dim=1 + p, keepdim=True)
        deviate = (g * sigma_minus).sum(dim=others)  # (B, T_p)
        current = (g * joint).flatten(1).sum(dim=1, keepdim=True)  # E_s[G_p(s)]
        gains.append((deviate - current) * marginal[p].to(payoffs.dtype))
    return gains


def nash_conv(payoffs: torch.Tensor, strategies, mask: torch.Tensor | None = None,
              reduce: str = "max") -> torch.Tensor:
    """NashConv of a product strategy: ``max_p max_a' g_p(a')`` (``reduce="max"``, the official
    NE loss) or ``sum_p max_a' g_p(a')`` (``reduce="sum"``). Returns ``(B,)``."""
    if reduce not in ("max", "sum"):
        raise ValueError(f"reduce must be 'max' or 'sum', got {reduce!r}")
    best = torch.stack([g.max(dim=1).values for g in deviation_gains(payoffs, strategies, mask)],
                       dim=1)  # (B, N)
    return best.max(dim=1).values if reduce == "max" else best.sum(dim=1)


def max_deviation_gain(payoffs: torch.Tensor) -> torch.Tensor:
    """Per joint action s: ``max_p max_a' (G_p(a', s_{-p}) - G_p(s))`` (the supervised target of
    the official MAX_DEVIATION_GAIN task; 0 exactly at pure Nash equilibria).

    payoffs: (B, N, T_1..T_N) -> (B, T_1..T_N).
    """
    check_game(payoffs, None)
    n = payoffs.shape[1]
    best = []
    for p in range(n):
        g = payoffs[:, p]
        best.append(g.max(dim=1 + p, keepdim=True).values - g)  # best response to s_-p
    return torch.stack(best, dim=0).max(dim=0).values
