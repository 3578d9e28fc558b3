"""The early-exit network of JEI-DNN (Regol, Chataoui & Coates, ICLR 2024, Sec. 3): a frozen
backbone of L blocks, an inference module (IM, a linear head) after each of the first L-1
blocks, the backbone's own head as the last exit, and per-exit inference costs.

Scaled down: the paper's backbones are T2T-ViT-7/14 fine-tuned on CIFAR-10/100, SVHN and
CIFAR-100-LT (out of reach on a CPU); here :func:`residual_mlp_backbone` builds residual MLP
blocks (LayerNorm -> Linear -> ReLU -> Linear, plus the skip) for 64-pixel digits. The protocol
is the paper's: the backbone is trained first, then frozen (kept in eval mode), and only IMs and
gates learn. Costs are counted analytically (multiply-adds), as the official code counts MACs
per exit; an exit's cost includes the IMs and gates evaluated on the way (``exit_overhead``).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import torch
from torch import nn

__all__ = ["EarlyExitNet", "ResidualMLPBlock", "residual_mlp_backbone"]


class ResidualMLPBlock(nn.Module):
    """``x + W2 relu(W1 LayerNorm(x))``; x: (B, width) -> (B, width). ``macs`` = 2 width^2."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, width)
        self.fc2 = nn.Linear(width, width)
        self.macs = 2 * width * width

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(torch.relu(self.fc1(self.norm(x))))


def residual_mlp_backbone(width: int, depth: int, num_classes: int,
                          generator: torch.Generator | None = None
                          ) -> tuple[list[nn.Module], nn.Module]:
    """``depth`` :class:`ResidualMLPBlock` s of ``width`` and a final ``LayerNorm -> Linear``
    head, initialised from ``generator`` (torch's default uniform bounds). Inputs must have
    ``width`` features (digits: 64)."""
    for name, v in (("width", width), ("depth", depth), ("num_classes", num_classes)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    blocks: list[nn.Module] = [ResidualMLPBlock(width) for _ in range(depth)]
    head = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, num_classes))
    if generator is not None:
        for m in [*blocks, head]:
            for lin in m.modules():
                if isinstance(lin, nn.Linear):
                    bound = 1.0 / lin.in_features ** 0.5
                    with torch.no_grad():
                        lin.weight.uniform_(-bound, bound, generator=generator)
                        lin.bias.uniform_(-bound, bound, generator=generator)
    return blocks, head


class EarlyExitNet(nn.Module):
    """A backbone with an inference module after each of its first L-1 blocks.

    blocks: L modules applied in sequence; exit_heads: L-1 IMs, ``exit_heads[l]`` reads the
    output of ``blocks[l]``; final_head: the backbone's head on ``blocks[-1]``'s output (exit
    L-1). block_costs: L non-negative costs (e.g. MACs) of the blocks; head_cost: the final
    head's. freeze_backbone: blocks and final head get ``requires_grad=False`` and stay in eval
    mode even under ``.train()`` (frozen normalisation statistics, as the paper trains IMs and
    gates on a frozen backbone).

    ``forward_all(x)`` -> list of L logits (B, C), one per exit. ``block_outputs(x)`` -> the L
    representations, which the trainer caches once since the backbone is frozen.
    """

    def __init__(self, blocks: Sequence[nn.Module], exit_heads: Sequence[nn.Module],
                 final_head: nn.Module, block_costs: Sequence[float], *,
                 head_cost: float = 0.0, freeze_backbone: bool = True) -> None:
        super().__init__()
        blocks, exit_heads = list(blocks), list(exit_heads)
        if len(blocks) < 2:
            raise ValueError(f"blocks must hold at least 2 modules, got {len(blocks)}")
        if len(exit_heads) != len(blocks) - 1:
            raise ValueError(f"exit_heads must hold len(blocks) - 1 = {len(blocks) - 1} IMs, "
                             f"got {len(exit_heads)}")
        for name, mods in (("blocks", blocks), ("exit_heads", exit_heads),
                           ("final_head", [final_head])):
            if not all(isinstance(m, nn.Module) for m in mods):
                raise TypeError(f"{name} must be torch.nn.Module instances")
        costs = [float(c) for c in block_costs]
        if len(costs) != len(blocks):
            raise ValueError(f"block_costs must hold one cost per block ({len(blocks)}), got "
                             f"{len(costs)}")
        if any(not c >= 0 for c in costs) or sum(costs) <= 0:
            raise ValueError(f"block_costs must be non-negative with a positive sum, got {costs}")
        if not float(head_cost) >= 0:
            raise ValueError(f"head_cost must be >= 0, got {head_cost!r}")
        self.blocks = nn.ModuleList(blocks)
        self.exit_heads = nn.ModuleList(exit_heads)
        self.final_head = final_head
        self.block_costs = tuple(costs)
        self.head_cost = float(head_cost)
        self.freeze_backbone = bool(freeze_backbone)
        if self.freeze_backbone:
            for p in [*self.blocks.parameters(), *self.final_head.parameters()]:
                p.requires_grad_(False)
            self.blocks.eval()
            self.final_head.eval()

    @property
    def num_exits(self) -> int:
        """L: the L-1 IMs plus the final head."""
        return len(self.blocks)

    def train(self, mode: bool = True) -> EarlyExitNet:
        super().train(mode)
        if self.freeze_backbone:  # frozen backbone: normalisation stays in eval mode
            self.blocks.eval()
            self.final_head.eval()
        return self

    def block_outputs(self, x: torch.Tensor) -> list[torch.Tensor]:
        """x: (B, d) -> L tensors (B, width), the output of each block."""
        outs = []
        for block in self.blocks:
            x = block(x)
            outs.append(x)
        return outs

    def heads_on(self, outputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """The L exit logits (B, C) from the L block outputs."""
        logits = [head(z) for head, z in zip(self.exit_heads, outputs[:-1])]
        return [*logits, self.final_head(outputs[-1])]

    def forward_all(self, x: torch.Tensor) -> list[torch.Tensor]:
        """x: (B, d) -> L logits (B, C): the IMs' and then the final head's."""
        return self.heads_on(self.block_outputs(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The backbone's own prediction (the last exit), (B, C)."""
        return self.forward_all(x)[-1]

    def exit_costs(self, exit_overhead: float | Sequence[float] = 0.0) -> torch.Tensor:
        """(L,) cost of leaving at each exit, in units of the plain backbone's cost (all blocks
        plus the final head = 1): c_l = (sum_{j<=l} block_j + sum_{j<=min(l, L-2)} overhead_j)
        / (sum_j block_j + head). ``exit_overhead``: the cost of one IM plus its exit decision
        (a number for every IM or L-1 numbers); a sample reaching the final head has paid all
        of them, so with overhead the last exit costs more than 1."""
        n_im = self.num_exits - 1
        over = [float(exit_overhead)] * n_im if isinstance(exit_overhead, numbers.Real) \
            else [float(o) for o in exit_overhead]
        if len(over) != n_im or any(not o >= 0 for o in over):
            raise ValueError(f"exit_overhead must be one non-negative number or {n_im} of them,"
                             f" got {exit_overhead!r}")
        blocks = torch.tensor(self.block_costs, dtype=torch.float64)
        paid = torch.cumsum(torch.tensor([*over, 0.0], dtype=torch.float64), 0)
        cum = torch.cumsum(blocks, 0) + paid
        cum[-1] = cum[-1] + self.head_cost
        return cum / (blocks.sum() + self.head_cost)
