"""JEI-DNN's gating mechanism (Sec. 3.2-3.3 of the paper; official
``learnable_uncertainty_gate.py``, ``metrics_utils.compute_detached_uncertainty_metrics`` and
the exit loop of ``classifier_training_helper.py``).

Gate GM_l is a ``Linear(4 -> 1)`` on four statistics of softmax(IM_l logits), computed on
*detached* logits so no gate gradient reaches an IM: max probability, entropy, margin (top-1
minus top-2 probability) and the entropy of the squared-and-renormalised softmax
("entropy_pow"). g_l = sigmoid(gate logit). From the raw g's,

    P_l = max(0, min(g_l, 1 - sum_{j<l} g_j))            (probability of exiting at IM l)
    q_l = clip(P_l / prod_{j<l} (1 - q_j), 0, 1)         (conditional exit probability)

and a sample leaves at the first IM whose q_l >= 1/2 (deterministic) or whose Bernoulli(q_l)
fires (probabilistic); otherwise at the final head.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

__all__ = ["UncertaintyGate", "exit_probabilities", "gated_exit", "uncertainty_features"]


def uncertainty_features(logits: torch.Tensor) -> torch.Tensor:
    """logits: (B, C), C >= 2 -> (B, 4) detached [max prob, entropy, margin, entropy_pow]
    (entropies in nats; entropy_pow is the entropy of p^2 / sum p^2)."""
    if not isinstance(logits, torch.Tensor):
        raise TypeError(f"logits must be a torch.Tensor, got {type(logits).__name__}")
    if logits.ndim != 2 or logits.shape[1] < 2:
        raise ValueError(f"logits must be (B, C) with C >= 2, got shape {tuple(logits.shape)}")
    z = logits.detach()
    p = torch.softmax(z, dim=1)
    logp = torch.log_softmax(z, dim=1)
    top2 = torch.topk(p, 2, dim=1).values
    entropy = -(p * logp).sum(dim=1)                      # H(p) = -sum p log p
    pow_logp = torch.log_softmax(2 * z, dim=1)            # p^2 / sum p^2 = softmax(2 z)
    entropy_pow = -(pow_logp.exp() * pow_logp).sum(dim=1)
    margin = top2[:, 0] - top2[:, 1]
    return torch.stack([top2[:, 0], entropy, margin, entropy_pow], dim=1)


class UncertaintyGate(nn.Module):
    """``forward(logits: (B, C)) -> gate logit (B, 1)``: ``Linear(4, 1)`` on
    :func:`uncertainty_features` (no gradient flows back into ``logits``)."""

    def __init__(self, generator: torch.Generator | None = None) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 1)
        if generator is not None:
            with torch.no_grad():
                self.linear.weight.uniform_(-0.5, 0.5, generator=generator)
                self.linear.bias.uniform_(-0.5, 0.5, generator=generator)

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        return self.linear(uncertainty_features(logits))

    @staticmethod
    def flops(num_classes: int) -> int:
        """Operations per sample, as the official ``get_flops`` counts them: C (max) + C + 1
        (margin) + 2C (entropy) + 5C (entropy_pow) + 5 (the linear layer) = 9C + 6."""
        if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 2:
            raise ValueError(f"num_classes must be an int >= 2, got {num_classes!r}")
        return 9 * num_classes + 6


def exit_probabilities(g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """g: (B, L-1) sigmoid gate outputs -> (P, q), both (B, L-1): P_l the (clipped)
    probability of exiting at IM l, q_l the conditional exit probability (see module doc)."""
    if not isinstance(g, torch.Tensor) or g.ndim != 2:
        raise ValueError(f"g must be a (B, L-1) tensor, got {getattr(g, 'shape', g)!r}")
    if g.numel() and (g.min() < 0 or g.max() > 1):
        raise ValueError("g must hold probabilities in [0, 1] (sigmoid outputs)")
    before = torch.cumsum(g, dim=1) - g                           # sum_{j<l} g_j
    P = torch.clamp(torch.minimum(g, 1 - before), min=0)          # P_l = max(0, min(g_l, 1 - ...))
    qs, stay = [], torch.ones_like(g[:, 0])
    for l in range(g.shape[1]):
        q = torch.clamp(P[:, l] / stay, 0, 1)                     # q_l = P_l / prod_{j<l}(1 - q_j)
        qs.append(q)
        stay = stay * (1 - q)
    q = torch.stack(qs, dim=1) if qs else torch.zeros_like(g)
    # 0/0 only after a certain exit (q_j = 1) with no mass left (P_l = 0): q_l is moot; say 0
    return P, torch.nan_to_num(q, nan=0.0)


def gated_exit(exit_logits: Sequence[torch.Tensor], gates: Sequence[nn.Module], *,
               mode: str = "deterministic", generator: torch.Generator | None = None
               ) -> torch.Tensor:
    """Exit index (B,) in 0..L-1 for L exit logits (B, C) and L-1 gates: the first IM l whose
    q_l >= 0.5 (``"deterministic"``) or whose Bernoulli(q_l) draw fires (``"probabilistic"``,
    drawn from ``generator``); L-1 (the final head) when none does."""
    if mode not in ("deterministic", "probabilistic"):
        raise ValueError(f"mode must be 'deterministic' or 'probabilistic', got {mode!r}")
    if len(gates) != len(exit_logits) - 1:
        raise ValueError(f"need one gate per IM: {len(exit_logits) - 1} gates, got {len(gates)}")
    with torch.no_grad():
        g = torch.cat([torch.sigmoid(gate(z)) for gate, z in zip(gates, exit_logits[:-1])],
                      dim=1)
        _, q = exit_probabilities(g)
        if mode == "deterministic":
            fire = q >= 0.5
        else:
            fire = torch.rand(q.shape, generator=generator, dtype=q.dtype, device=q.device) < q
        fire = torch.cat([fire, torch.ones_like(fire[:, :1])], dim=1)   # the final head always
        return fire.to(torch.int64).argmax(dim=1)                     # first exit taken
