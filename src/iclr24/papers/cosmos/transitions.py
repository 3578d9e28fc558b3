"""Transition models over slots: Cosmos's neurosymbolic rule selection (paper Sec. 3.3) and the
two baselines, Aligned NPS and a GNN.

All three map slots ``s`` (B, K, D) and a per-entity action ``a`` (B, K, A) (the actor's row
holds the one-hot direction, other rows are zero; :class:`~.world_model.WorldModel` aligns the
action with the entities) to next slots (B, K, D). Every computation is shared over entities and
context is pooled by sums, so permuting the entities (and the action rows with them) permutes the
output: the scene prediction does not depend on the order the segmenter returned.

- :class:`NeurosymbolicTransition` (Cosmos): the *symbolic* encoding selects the rule. For each
  entity i a query q_i = MLP_q([lambda_i, lambda_actor, a_i, d]) (lambda = symbol vectors, d the
  action's direction) attends over learnable rule keys; a hard Gumbel-softmax (straight-through)
  picks one rule; the selected rule's MLP transforms the *neural* encoding:
  s_i' = s_i + MLP_{r_i}([s_i, s_actor, a_i, d]).
- :class:`AlignedNPS`: the same rule machinery with the query built from the neural slots instead
  of the symbols (= Cosmos without symbols).
- :class:`GNNTransition`: two rounds of dense message passing with the action (C-SWM-like), no
  symbols and no module selection.
- :class:`SymbolEmbedding`: label relaxation, one learnable vector per attribute value,
  concatenated in the canonical attribute order.

Differs from the paper: NPS (and Cosmos) select one primary slot per step and repeat
select-transform a few times; here every entity selects its own rule in one parallel step (the
world is one action on one actor, so one step covers it), with the actor's slot as the contextual
slot (the action alignment says who the actor is, so no attention over contextual slots is
needed).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch
from torch import nn

__all__ = ["AlignedNPS", "GNNTransition", "NeurosymbolicTransition", "SymbolEmbedding",
           "hard_select"]


def _positive(name: str, v: object) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ValueError(f"{name} must be a positive int, got {v!r}")
    return v


def _mlp(n_in: int, hidden: int, n_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                         nn.ReLU(), nn.Linear(hidden, n_out))


class SymbolEmbedding(nn.Module):
    """Label relaxation: labels (B, K, n_attributes) -> symbol vectors (B, K, n_attributes * dim).

    ``attribute_sizes``: number of values per attribute, in canonical attribute order (a mapping
    keeps its order). Each value owns a learnable ``dim``-vector; an entity's symbol vector is the
    concatenation of its attributes' vectors.
    """

    def __init__(self, attribute_sizes: Sequence[int] | Mapping[str, int], dim: int) -> None:
        super().__init__()
        sizes = list(attribute_sizes.values() if isinstance(attribute_sizes, Mapping)
                     else attribute_sizes)
        if not sizes:
            raise ValueError("attribute_sizes must name at least one attribute")
        for n in sizes:
            _positive("attribute size", n)
        self.dim = _positive("dim", dim)
        self.sizes = sizes
        self.tables = nn.ModuleList(nn.Embedding(n, dim) for n in sizes)

    @property
    def out_dim(self) -> int:
        return self.dim * len(self.sizes)

    def forward(self, labels: torch.Tensor) -> torch.Tensor:
        if labels.dtype not in (torch.int64, torch.int32) or labels.shape[-1] != len(self.sizes):
            raise ValueError(f"labels must be an integer tensor (..., {len(self.sizes)}), got "
                             f"{labels.dtype} {tuple(labels.shape)}")
        for i, n in enumerate(self.sizes):
            col = labels[..., i]
            if col.numel() and (int(col.min()) < 0 or int(col.max()) >= n):
                raise ValueError(f"labels of attribute {i} must be in [0, {n})")
        return torch.cat([t(labels[..., i]) for i, t in enumerate(self.tables)], dim=-1)


def hard_select(logits: torch.Tensor, *, training: bool, hard: bool = True, tau: float = 1.0,
                generator: torch.Generator | None = None) -> torch.Tensor:
    """Rule selection weights (..., R) from logits (..., R).

    Training: Gumbel-softmax with temperature ``tau``; ``hard`` makes it one-hot in the forward
    pass with the soft gradient (straight-through, as NPS). Evaluation: the argmax one-hot
    (``hard``) or the softmax. Noise comes from ``generator`` (reproducible).
    """
    if training:
        u = torch.rand(logits.shape, generator=generator, device=logits.device,
                       dtype=logits.dtype).clamp_(1e-10, 1.0 - 1e-7)
        soft = torch.softmax((logits - torch.log(-torch.log(u))) / tau, dim=-1)
    else:
        soft = torch.softmax(logits, dim=-1)
    if not hard:
        return soft
    one_hot = nn.functional.one_hot(soft.argmax(dim=-1), logits.shape[-1]).to(soft.dtype)
    return one_hot + soft - soft.detach()  # straight-through: forward one-hot, backward soft


def _actor_context(action: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The actor's row of x (B, K, F) -> (B, F): the action marks the actor (nonzero row)."""
    actor = (action.abs().sum(dim=-1) > 0).to(x.dtype)  # (B, K)
    return torch.einsum("bk,bkf->bf", actor, x)


def _check_inputs(slots: torch.Tensor, action: torch.Tensor, slot_dim: int,
                  action_dim: int) -> None:
    if slots.ndim != 3 or slots.shape[-1] != slot_dim:
        raise ValueError(f"slots must be (B, K, {slot_dim}), got {tuple(slots.shape)}")
    if action.shape != (*slots.shape[:2], action_dim):
        raise ValueError(f"action must be (B, K, {action_dim}) aligned with the slots, got "
                         f"{tuple(action.shape)}")


class _RuleTransition(nn.Module):
    """Shared machinery of NPS-style rule selection + rule application (see module docstring)."""

    uses_symbols = False

    def __init__(self, n_rules: int, slot_dim: int, selector_dim: int, action_dim: int,
                 hidden: int, key_dim: int, hard: bool, tau: float) -> None:
        super().__init__()
        self.n_rules = _positive("n_rules", n_rules)
        self.slot_dim = _positive("slot_dim", slot_dim)
        self.action_dim = _positive("action_dim", action_dim)
        _positive("hidden", hidden)
        self.key_dim = _positive("key_dim", key_dim)
        self.hard, self.tau = bool(hard), float(tau)
        # an MLP, not a linear map: "same color as the actor" is an equality between two parts
        # of the input, which no linear query can express
        self.query = _mlp(2 * selector_dim + 2 * action_dim, hidden, key_dim)
        self.rule_keys = nn.Parameter(torch.randn(n_rules, key_dim) / math.sqrt(key_dim))
        rule_in = 2 * slot_dim + 2 * action_dim
        # R rule MLPs evaluated together: weights (R, in, out)
        self.w1 = nn.Parameter(torch.randn(n_rules, rule_in, hidden) / math.sqrt(rule_in))
        self.b1 = nn.Parameter(torch.zeros(n_rules, hidden))
        self.w2 = nn.Parameter(torch.randn(n_rules, hidden, hidden) / math.sqrt(hidden))
        self.b2 = nn.Parameter(torch.zeros(n_rules, hidden))
        # small distinct outputs: rules start near the identity but differ, so that selection has
        # a gradient to follow from the first step (identical rules make every choice equal)
        self.w3 = nn.Parameter(0.1 * torch.randn(n_rules, hidden, slot_dim) / math.sqrt(hidden))
        self.b3 = nn.Parameter(torch.zeros(n_rules, slot_dim))

    def _select_and_apply(self, slots: torch.Tensor, action: torch.Tensor,
                          selector: torch.Tensor, generator: torch.Generator | None
                          ) -> tuple[torch.Tensor, torch.Tensor]:
        k = slots.shape[1]
        direction = action.sum(dim=1, keepdim=True).expand(-1, k, -1)      # d, (B, K, A)
        sel_actor = _actor_context(action, selector)[:, None].expand(-1, k, -1)
        q = self.query(torch.cat([selector, sel_actor, action, direction], dim=-1))
        logits = q @ self.rule_keys.T / math.sqrt(self.key_dim)          # <q_i, k_r> / sqrt(d)
        weights = hard_select(logits, training=self.training, hard=self.hard, tau=self.tau,
                              generator=generator)                      # (B, K, R)
        s_actor = _actor_context(action, slots)[:, None].expand(-1, k, -1)
        x = torch.cat([slots, s_actor, action, direction], dim=-1)       # rule input
        h = torch.relu(torch.einsum("bki,rih->bkrh", x, self.w1) + self.b1)
        h = torch.relu(torch.einsum("bkrh,rhg->bkrg", h, self.w2) + self.b2)
        out = torch.einsum("bkrh,rhd->bkrd", h, self.w3) + self.b3          # MLP_r(x_i)
        delta = torch.einsum("bkr,bkrd->bkd", weights, out)             # the selected rule
        return slots + delta, weights


class NeurosymbolicTransition(_RuleTransition):
    """Cosmos's transition: symbols select the rule, the rule transforms the neural slot.

    forward(slots (B, K, slot_dim), action (B, K, action_dim), symbols (B, K, symbol_dim))
    -> (next slots (B, K, slot_dim), selection weights (B, K, n_rules)).
    """

    uses_symbols = True

    def __init__(self, n_rules: int = 4, slot_dim: int = 32, symbol_dim: int = 16,
                 action_dim: int = 4, hard: bool = True, hidden: int = 64, key_dim: int = 16,
                 tau: float = 1.0) -> None:
        super().__init__(n_rules, slot_dim, _positive("symbol_dim", symbol_dim), action_dim,
                         hidden, key_dim, hard, tau)
        self.symbol_dim = symbol_dim

    def forward(self, slots: torch.Tensor, action: torch.Tensor, symbols: torch.Tensor,
                generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        _check_inputs(slots, action, self.slot_dim, self.action_dim)
        if symbols is None or symbols.shape != (*slots.shape[:2], self.symbol_dim):
            raise ValueError(f"symbols must be (B, K, {self.symbol_dim}), got "
                             f"{None if symbols is None else tuple(symbols.shape)}")
        return self._select_and_apply(slots, action, symbols, generator)


class AlignedNPS(_RuleTransition):
    """Aligned NPS: rule selection from the neural slots (Cosmos without symbols).

    forward(slots (B, K, slot_dim), action (B, K, action_dim)) -> (next slots, selection).
    """

    def __init__(self, n_rules: int = 4, slot_dim: int = 32, action_dim: int = 4,
                 hard: bool = True, hidden: int = 64, key_dim: int = 16, tau: float = 1.0) -> None:
        super().__init__(n_rules, slot_dim, slot_dim, action_dim, hidden, key_dim, hard, tau)

    def forward(self, slots: torch.Tensor, action: torch.Tensor, symbols: None = None,
                generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        _check_inputs(slots, action, self.slot_dim, self.action_dim)
        return self._select_and_apply(slots, action, slots, generator)


class GNNTransition(nn.Module):
    """Dense message passing with the action, ``rounds`` rounds (C-SWM / G-SWM style):

        e_ij = MLP_e([h_i, h_j, a_i, a_j])  (i != j),   h_i <- h_i + MLP_n([h_i, a_i, sum_j e_ij]).

    forward(slots (B, K, slot_dim), action (B, K, action_dim)) -> (next slots, None).
    """

    uses_symbols = False

    def __init__(self, slot_dim: int = 32, action_dim: int = 4, hidden: int = 64,
                 rounds: int = 2) -> None:
        super().__init__()
        self.slot_dim = _positive("slot_dim", slot_dim)
        self.action_dim = _positive("action_dim", action_dim)
        _positive("hidden", hidden)
        self.rounds = _positive("rounds", rounds)
        self.edge = nn.ModuleList(_mlp(2 * slot_dim + 2 * action_dim, hidden, hidden)
                                  for _ in range(rounds))
        self.node = nn.ModuleList(_mlp(slot_dim + action_dim + hidden, hidden, slot_dim)
                                  for _ in range(rounds))
        for node in self.node:  # start as the identity map, like the rule transitions
            nn.init.zeros_(node[-1].weight)
            nn.init.zeros_(node[-1].bias)

    def forward(self, slots: torch.Tensor, action: torch.Tensor, symbols: None = None,
                generator: torch.Generator | None = None) -> tuple[torch.Tensor, None]:
        _check_inputs(slots, action, self.slot_dim, self.action_dim)
        k = slots.shape[1]
        off_diag = 1.0 - torch.eye(k, dtype=slots.dtype, device=slots.device)
        h = slots
        for edge, node in zip(self.edge, self.node):
            hi = torch.cat([h, action], dim=-1)
            pair = torch.cat([hi[:, :, None].expand(-1, -1, k, -1),
                              hi[:, None, :].expand(-1, k, -1, -1)], dim=-1)
            messages = torch.einsum("bijh,ij->bih", edge(pair), off_diag)   # sum_{j != i} e_ij
            h = h + node(torch.cat([h, action, messages], dim=-1))
        return h, None
