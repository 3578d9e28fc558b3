"""TGN for temporal link prediction, assembled from PyG parts as in PyG's ``examples/tgn.py``.

The memory is a :class:`torch_geometric.nn.models.TGNMemory` (``IdentityMessage``,
``LastAggregator``, GRU updater), optionally wrapped in :class:`~.pres_memory.PRESMemory`; the
embedding is one ``TransformerConv`` graph-attention layer (2 heads, dropout 0.1) over the
``LastNeighborLoader``'s most recent temporal neighbours, with edge features
[phi(t_last - t_e) || msg_e]; the link decoder is an MLP on [z_src, z_dst] (two linear maps
summed, ReLU, linear), the TGN paper's MergeLayer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .pres_memory import PRESMemory, pending_messages

__all__ = ["GraphAttentionEmbedding", "LinkPredictor", "TGNConfig", "TGNLinkModel"]


@dataclass(frozen=True)
class TGNConfig:
    """TGN sizes and optimiser settings; defaults are the official PRES/TGN code's
    (memory 172, time and embedding 100, 10 neighbours, 2 heads, dropout 0.1, Adam lr 1e-3,
    evaluation batches of 200 events)."""

    memory_dim: int = 172
    time_dim: int = 100
    embedding_dim: int = 100
    num_neighbors: int = 10
    heads: int = 2
    dropout: float = 0.1
    lr: float = 1e-3
    eval_batch_size: int = 200

    def __post_init__(self) -> None:
        for name in ("memory_dim", "time_dim", "embedding_dim", "num_neighbors", "heads",
                     "eval_batch_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"TGNConfig.{name} must be a positive int, got {v!r}")
        if self.embedding_dim % self.heads:
            raise ValueError(f"TGNConfig.embedding_dim ({self.embedding_dim}) must be divisible "
                             f"by heads ({self.heads})")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"TGNConfig.dropout must be in [0, 1), got {self.dropout!r}")
        if not 0 < self.lr < math.inf:
            raise ValueError(f"TGNConfig.lr must be a finite number > 0, got {self.lr!r}")


class GraphAttentionEmbedding(nn.Module):
    """z = TransformerConv(memory, temporal neighbours, edge_attr = [phi(dt) || msg]).

    forward(x (K, memory_dim), last_update (K,), edge_index (2, M), t (M,), msg (M, msg_dim))
    -> (K, embedding_dim)."""

    def __init__(self, in_channels: int, out_channels: int, msg_dim: int, time_enc: nn.Module,
                 *, heads: int = 2, dropout: float = 0.1) -> None:
        super().__init__()
        from torch_geometric.nn import TransformerConv

        self.time_enc = time_enc
        self.conv = TransformerConv(in_channels, out_channels // heads, heads=heads,
                                    dropout=dropout, edge_dim=msg_dim + time_enc.out_channels)

    def forward(self, x: Tensor, last_update: Tensor, edge_index: Tensor, t: Tensor,
                msg: Tensor) -> Tensor:
        rel_t = last_update[edge_index[0]] - t
        edge_attr = torch.cat([self.time_enc(rel_t.to(x.dtype)), msg], dim=-1)
        return self.conv(x, edge_index, edge_attr)


class LinkPredictor(nn.Module):
    """Logit of an edge (src, dst): lin(relu(lin_src(z_src) + lin_dst(z_dst))), (K, 1)."""

    def __init__(self, in_channels: int) -> None:
        super().__init__()
        self.lin_src = nn.Linear(in_channels, in_channels)
        self.lin_dst = nn.Linear(in_channels, in_channels)
        self.lin_final = nn.Linear(in_channels, 1)

    def forward(self, z_src: Tensor, z_dst: Tensor) -> Tensor:
        return self.lin_final((self.lin_src(z_src) + self.lin_dst(z_dst)).relu())


class TGNLinkModel(nn.Module):
    """Memory + attention embedding + link decoder + the temporal neighbour loader.

    Args:
        num_nodes: number of nodes N.
        msg_dim: edge feature dimension.
        config: sizes (:class:`TGNConfig`; default the official sizes).
        pres: None for plain TGN, else a dict of :class:`~.pres_memory.PRESMemory` arguments
            (``gamma``, ``learnable_gamma``, ``store_fused``).

    ``score(src, dst, neg_dst, t_all, msg_all)`` returns positive and negative logits (B,) and
    the memory read for the batch; ``observe(src, dst, t, msg)`` feeds the batch's events to the
    memory and the neighbour loader. ``reset_state()`` empties both (each epoch).
    """

    def __init__(self, num_nodes: int, msg_dim: int, config: TGNConfig | None = None, *,
                 pres: dict | None = None) -> None:
        super().__init__()
        from torch_geometric.nn.models import TGNMemory
        from torch_geometric.nn.models.tgn import IdentityMessage, LastAggregator

        config = TGNConfig() if config is None else config
        self.config = config
        self.num_nodes = num_nodes
        memory = TGNMemory(num_nodes, msg_dim, config.memory_dim, config.time_dim,
                           message_module=IdentityMessage(msg_dim, config.memory_dim,
                                                          config.time_dim),
                           aggregator_module=LastAggregator())
        self.memory = memory if pres is None else PRESMemory(memory, **pres)
        self.gnn = GraphAttentionEmbedding(config.memory_dim, config.embedding_dim, msg_dim,
                                           memory.time_enc, heads=config.heads,
                                           dropout=config.dropout)
        self.link_pred = LinkPredictor(config.embedding_dim)
        self._make_loader(torch.device("cpu"))

    def _device(self) -> torch.device:
        return self.link_pred.lin_final.weight.device

    def _make_loader(self, device: torch.device) -> None:
        from torch_geometric.nn.models.tgn import LastNeighborLoader

        self.neighbor_loader = LastNeighborLoader(self.num_nodes, size=self.config.num_neighbors,
                                                  device=device)
        self._assoc = torch.empty(self.num_nodes, dtype=torch.long, device=device)

    @property
    def uses_pres(self) -> bool:
        return isinstance(self.memory, PRESMemory)

    def reset_state(self) -> None:
        """Empty the memory (PRES statistics included) and the neighbour loader (rebuilt on the
        model's device if the model moved)."""
        self.memory.reset_state()
        if self._assoc.device != self._device():
            self._make_loader(self._device())
        self.neighbor_loader.reset_state()

    def score(self, src: Tensor, dst: Tensor, neg_dst: Tensor, t_all: Tensor, msg_all: Tensor,
              *, memory_change: bool = False) -> tuple[Tensor, Tensor, tuple[Tensor, Tensor]]:
        """Logits of (src, dst) and (src, neg_dst), each (B,), and ``(prev, new)``: for the nodes
        read whose memory the pending messages update, their stored memory and the memory the
        embedding saw, (P, d) each (computed only with ``memory_change=True``; else (0, d)).
        t_all, msg_all: times and features of all events (the loader's edge ids index them)."""
        n_id = torch.cat([src, dst, neg_dst]).unique()
        n_id, edge_index, e_id = self.neighbor_loader(n_id)
        self._assoc[n_id] = torch.arange(n_id.size(0), device=n_id.device)
        base = self.memory.base if self.uses_pres else self.memory
        mask = pending_messages(base, n_id) if memory_change else None
        prev = base.memory[n_id[mask] if memory_change else n_id[:0]].detach().clone()
        mem, last_update = self.memory(n_id)
        z = self.gnn(mem, last_update, edge_index, t_all[e_id], msg_all[e_id])
        z_src = z[self._assoc[src]]
        pos = self.link_pred(z_src, z[self._assoc[dst]]).view(-1)
        neg = self.link_pred(z_src, z[self._assoc[neg_dst]]).view(-1)
        return pos, neg, (prev, mem[mask] if memory_change else mem[:0])

    def observe(self, src: Tensor, dst: Tensor, t: Tensor, msg: Tensor) -> None:
        """Feed a batch of events to the memory and the temporal neighbour loader."""
        self.memory.update_state(src, dst, t, msg)
        self.neighbor_loader.insert(src, dst)
