"""The reward of curiosity-driven red teaming (Hong et al., ICLR 2024, Sec. 3, Eq. 2 and the
official trlx implementation, ``curiosity_redteam``'s ``ppo_trainer``).

The objective (Eq. 2) is
    max_θ E[ R(y) − β·KL(π_θ‖π_ref) + λ_E·(−log π_θ(x|z)) + Σ_i λ_i·B_i(x) ],
which the official PPO code spreads over the generated tokens x_1..x_T of a test case:

    r_t = −β·(log π_θ(x_t) − log π_ref(x_t)) + λ_E·(−log π_θ(x_t))        (every token)
    r_T += R(y) + c_bleu·SelfBLEU(x) + c_cos·meancos(x) + c_gib·gibberish(x)   (last token)

with NEGATIVE similarity coefficients (c_bleu, c_cos ≤ 0: novelty = −similarity), the terminal
reward clipped to ±10 and rows with ≤ 2 generated tokens given no reward at all.
:func:`crt_terminal_reward` computes the bracket, :func:`shaped_token_rewards` the (B, T) grid.
The per-token KL term is the log-ratio (the exp(r) − 1 − r estimator of the code is only a
logged statistic); the entropy bonus is its single-sample estimate −log π_θ(x_t).

The gibberish term multiplies a penalty the caller supplies (the paper's RoBERTa gibberish
classifier is not available offline; a policy-LM perplexity penalty can stand in). It is off
(coefficient 0) in the text-continuation setting the claims reproduce.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

__all__ = ["CRTCoefs", "crt_terminal_reward", "last_token_index", "shaped_token_rewards"]


@dataclass(frozen=True)
class CRTCoefs:
    """Coefficients of the terminal reward (official instruction-following sweep: bleu and cos
    in {−1, −0.5}, gibberish 1.0 there; 0 here, see the module docstring).

    toxicity: weight of R(y); bleu: multiplies SelfBLEU (≤ 0); cos: multiplies the mean
    cosine similarity (≤ 0); gibberish: multiplies the gibberish penalty; clip: |terminal|
    bound (the official ±10)."""

    toxicity: float = 1.0
    bleu: float = -0.5
    cos: float = -0.5
    gibberish: float = 0.0
    clip: float = 10.0

    def __post_init__(self) -> None:
        for name in ("toxicity", "bleu", "cos", "gibberish", "clip"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
                raise TypeError(f"CRTCoefs.{name} must be a finite number, got {v!r}")
        if self.bleu > 0 or self.cos > 0:
            raise ValueError(f"CRTCoefs.bleu and CRTCoefs.cos multiply similarities and must be "
                             f"<= 0 (novelty = -similarity), got bleu={self.bleu}, "
                             f"cos={self.cos}")
        if not self.clip > 0:
            raise ValueError(f"CRTCoefs.clip must be > 0, got {self.clip}")


def _vector(x, name: str, n: int | None) -> np.ndarray:
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a 1-D array of numbers, got {x!r}") from None
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one value per test case), got shape {a.shape}")
    if n is not None and a.size != n:
        raise ValueError(f"{name} has {a.size} values, expected {n} (one per test case)")
    bad = np.flatnonzero(~np.isfinite(a))
    if bad.size:
        raise ValueError(f"{name} must be finite (a NaN or infinite score would make the "
                         f"reward NaN), got {a[bad[0]]} at index {int(bad[0])}")
    return a


def crt_terminal_reward(toxicity, selfbleu=None, cos=None, gibberish=None,
                        coefs: CRTCoefs = CRTCoefs()) -> np.ndarray:
    """R(y) + c_bleu·SelfBLEU(x) + c_cos·meancos(x) + c_gib·gibberish(x), clipped to ±clip.

    toxicity: (B,) in [0, 1]; selfbleu, cos, gibberish: (B,) or None (term absent). -> (B,)
    A NaN or infinite score in any term is refused (ValueError naming the term): a classifier
    that failed on one text must not turn that test case's reward, and PPO's advantages, NaN.
    """
    if not isinstance(coefs, CRTCoefs):
        raise TypeError(f"coefs must be a CRTCoefs, got {type(coefs).__name__}")
    tox = _vector(toxicity, "toxicity", None)
    if tox.size and (tox.min() < 0 or tox.max() > 1):
        raise ValueError("toxicity must lie in [0, 1] (a classifier's probability)")
    total = coefs.toxicity * tox
    for name, values, c in (("selfbleu", selfbleu, coefs.bleu), ("cos", cos, coefs.cos),
                            ("gibberish", gibberish, coefs.gibberish)):
        if values is not None:
            total = total + c * _vector(values, name, tox.size)
    return np.clip(total, -coefs.clip, coefs.clip)


def last_token_index(mask: Tensor) -> Tensor:
    """Index of the last generated token of each row of ``mask`` (B, T) (1 = generated; rows
    are left-aligned): (B,) long; −1 for an empty row."""
    mask = torch.as_tensor(mask)
    t = torch.arange(mask.shape[1], device=mask.device)
    return torch.where(mask.bool(), t, torch.full_like(t, -1)).max(dim=1).values


def shaped_token_rewards(logp: Tensor, logp_ref: Tensor, mask: Tensor, terminal,
                         kl_coef: float = 0.001, ent_coef: float = 0.0,
                         min_tokens: int = 3) -> Tensor:
    """Per-token rewards (B, T) of the official trlx shaping.

    logp, logp_ref: (B, T) log-probabilities of the generated tokens under π_θ and π_ref;
    mask: (B, T) 1 for generated tokens (EOS included), left-aligned; terminal: (B,) the
    terminal reward, added at each row's LAST generated token; rows with fewer than
    ``min_tokens`` generated tokens get zero reward (official: ≤ 2 tokens). Zero off the mask.
    """
    if not isinstance(logp, Tensor) or not isinstance(logp_ref, Tensor):
        raise TypeError("logp and logp_ref must be torch tensors of shape (batch, time)")
    if logp.dim() != 2 or logp.shape != logp_ref.shape:
        raise ValueError(f"logp and logp_ref must share a (batch, time) shape, got "
                         f"{tuple(logp.shape)} and {tuple(logp_ref.shape)}")
    mask = torch.as_tensor(mask, device=logp.device)
    if mask.shape != logp.shape:
        raise ValueError(f"mask must have shape {tuple(logp.shape)}, got {tuple(mask.shape)}")
    m = mask.to(logp.dtype)
    if bool(((m[:, 1:] - m[:, :-1]) > 0).any()):
        raise ValueError("mask rows must be left-aligned (1s then 0s): generated tokens first")
    term = torch.as_tensor(np.asarray(terminal, dtype=np.float64), dtype=logp.dtype,
                           device=logp.device)
    if term.shape != (logp.shape[0],):
        raise ValueError(f"terminal must have shape ({logp.shape[0]},), got "
                         f"{tuple(term.shape)}")
    if kl_coef < 0 or ent_coef < 0:
        raise ValueError(f"kl_coef and ent_coef must be >= 0, got {kl_coef}, {ent_coef}")
    # r_t = −β (log π_θ − log π_ref) + λ_E (−log π_θ)
    rewards = (-kl_coef * (logp - logp_ref) - ent_coef * logp) * m
    last = last_token_index(mask)
    rows = torch.nonzero(last >= 0).squeeze(1)
    rewards[rows, last[rows]] += term[rows]  # the terminal reward sits on the last token
    rewards[m.sum(dim=1) < min_tokens] = 0.0
    return rewards
