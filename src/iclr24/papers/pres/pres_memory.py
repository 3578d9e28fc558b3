"""PRES prediction-correction around PyG's TGN memory (PRES Sec. 4.1, Algorithm 1).

Inside one temporal batch every event reads the memory as it was before the batch, so a node with
several pending events is updated from a stale state. PRES keeps a per-node model of memory
transitions (:class:`~.transition_stats.MemoryTransitionStats`) and, whenever the memory updater
writes a new state for node i,

    s_hat_i = s_i^prev + mu_i                          (prediction from the transition model)
    s_til_i = GRU(msg_i, s_i^prev)                     (the standard TGN update)
    s_i     = gamma * s_hat_i + (1 - gamma) * s_til_i  (correction / fusion)

and then records the observed change s_i - s_i^prev in the statistics. ``gamma`` weights the
prediction, as in the official code (default 0.9 there); it may be a learnable scalar.

How this maps onto :class:`torch_geometric.nn.models.TGNMemory`:

- ``forward(n_id)`` in training mode returns the memory after the pending (previous batch's)
  messages, fused as above, with gradient: that is the memory the embedding reads ("memory update
  at start"). In eval mode it returns the fusion of the memory before each node's latest update
  (the buffer ``prev_memory``) and the stored update (with ``store_fused=True``: the stored
  memory, fused when written).
- ``update_state(src, dst, t, msg)`` snapshots the memory of the batch's nodes, lets TGNMemory
  write its update, then updates the statistics with the fused change (and, only with
  ``store_fused=True``, writes the fused state back; see below).
- ``train(False)`` (TGNMemory flushes all pending messages when it leaves training) is fused
  the same way.

Only nodes that actually had pending messages are corrected and recorded (TGNMemory also runs its
GRU on nodes without messages, with a zero message; that is not a transition), and a node with no
recorded change yet takes the standard update (no prediction exists for it).

Placement (the default follows the official code, jwsu825/MDGNN_BS, ``model/mdgnn.py``): the
fused memory feeds only the embeddings of the current batch while the stored memory keeps
TGNMemory's own update, and the statistics record the fused change. ``store_fused=True`` is this
project's variant that writes the fused state into the memory (the prediction-correction then
iterates on its own output); measured at b = 1600 it was the worst of the variants tried (see
``claims.large_batch_ap``), so it is kept only as an option. Differences from the official code
that remain: the fusion there is applied to every node each batch with a globally min-max
rescaled increment; here only to nodes with pending messages, with exact per-node statistics.
The learnable gamma is gamma = sigmoid(theta) (kept in [0, 1]) initialised at the given gamma;
the official code learns an unconstrained scalar initialised at 0. The official code also min-max rescales the whole stored memory in place when
it computes its coherence term (``utils.normalize``); that side effect is not reproduced.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .transition_stats import MemoryTransitionStats

__all__ = ["PRESMemory", "pending_messages"]


def pending_messages(memory: nn.Module, n_id: Tensor) -> Tensor:
    """Bool mask (K,): which nodes of ``n_id`` have messages stored in the TGNMemory ``memory``
    that are not yet applied to their memory."""
    s_store, d_store = memory.msg_s_store, memory.msg_d_store
    flags = [s_store[i][0].numel() + d_store[i][0].numel() > 0 for i in n_id.tolist()]
    return torch.tensor(flags, dtype=torch.bool, device=n_id.device)


class PRESMemory(nn.Module):
    """PRES prediction-correction wrapped around a ``TGNMemory`` (same interface).

    Args:
        memory: a ``torch_geometric.nn.models.TGNMemory``.
        gamma: weight of the prediction in [0, 1]; 0 reproduces the wrapped memory exactly.
        learnable_gamma: learn gamma = sigmoid(theta) (then gamma must be in (0, 1)).
        store_fused: False (default, the official placement) fuses only what ``forward``
            returns; True also writes the fused state into the memory (this project's variant).

    ``forward(n_id) -> (memory (K, d), last_update (K,))``, ``update_state``, ``reset_state``
    and ``detach`` behave as TGNMemory's. ``stats`` holds the transition statistics (buffers).
    """

    def __init__(self, memory: nn.Module, gamma: float = 0.9, learnable_gamma: bool = False,
                 *, store_fused: bool = False) -> None:
        super().__init__()
        from torch_geometric.nn.models import TGNMemory

        if not isinstance(memory, TGNMemory):
            raise TypeError(f"memory must be a torch_geometric TGNMemory, got {type(memory).__name__}")
        if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) \
                or not 0.0 <= float(gamma) <= 1.0:
            raise ValueError(f"gamma must be a number in [0, 1], got {gamma!r}")
        if not isinstance(learnable_gamma, bool):
            raise TypeError(f"learnable_gamma must be a bool, got {learnable_gamma!r}")
        if not isinstance(store_fused, bool):
            raise TypeError(f"store_fused must be a bool, got {store_fused!r}")
        gamma = float(gamma)
        if learnable_gamma and gamma in (0.0, 1.0):
            raise ValueError("a learnable gamma = sigmoid(theta) needs an initial gamma in (0, 1), "
                             f"got {gamma}")
        self.base = memory
        self.stats = MemoryTransitionStats(memory.num_nodes, memory.memory_dim,
                                           dtype=memory.memory.dtype)
        self.learnable_gamma = learnable_gamma
        self.store_fused = store_fused
        if not store_fused:
            self.register_buffer("prev_memory", torch.zeros_like(memory.memory))
        if learnable_gamma:
            self.gamma_logit = nn.Parameter(torch.tensor([math.log(gamma / (1.0 - gamma))],
                                                         dtype=memory.memory.dtype))
        else:
            self._gamma = gamma

    @property
    def num_nodes(self) -> int:
        return self.base.num_nodes

    @property
    def memory_dim(self) -> int:
        return self.base.memory_dim

    @property
    def time_enc(self) -> nn.Module:
        return self.base.time_enc

    @property
    def gamma(self) -> Tensor | float:
        """The fusion weight (a (1,) tensor with gradient when learnable, else a float)."""
        if self.learnable_gamma:
            return torch.sigmoid(self.gamma_logit)
        return self._gamma

    def _check_ids(self, ids: Tensor, name: str) -> None:
        if not isinstance(ids, Tensor) or ids.dtype != torch.long:
            raise TypeError(f"{name} must be a LongTensor of node ids")
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.num_nodes):
            raise ValueError(f"{name} holds node ids in [{int(ids.min())}, {int(ids.max())}] but "
                             f"the memory has {self.num_nodes} nodes (ids 0..{self.num_nodes - 1})")

    def pending(self, n_id: Tensor) -> Tensor:
        """Bool mask (K,): which nodes of ``n_id`` have stored messages not yet in their memory."""
        self._check_ids(n_id, "n_id")
        return pending_messages(self.base, n_id)

    def fuse(self, n_id: Tensor, prev: Tensor, updated: Tensor, mask: Tensor) -> Tensor:
        """gamma * (prev + mu) + (1 - gamma) * updated where ``mask`` and the node has history,
        ``updated`` elsewhere. prev, updated: (K, d); mask: (K,) bool."""
        have_history = mask & (self.stats.count[n_id] > 0)
        if not bool(have_history.any()):
            return updated
        gamma = self.gamma
        predicted = self.stats.predict(n_id, prev)  # s_hat = s_prev + mu
        fused = gamma * predicted + (1.0 - gamma) * updated  # s = gamma s_hat + (1 - gamma) s_til
        return torch.where(have_history[:, None], fused, updated)

    def _correct_stored(self, n_id: Tensor, prev: Tensor, mask: Tensor) -> None:
        """Fuse the states TGNMemory just wrote for n_id (store them, or with store_fused=False
        remember the previous states) and record the observed changes."""
        fused = self.fuse(n_id, prev, self.base.memory[n_id], mask)
        if self.store_fused:
            self.base.memory[n_id] = fused
        else:
            self.prev_memory[n_id[mask]] = prev[mask]
        self.stats.update(n_id[mask], (fused.detach() - prev)[mask])  # delta = s - s_prev

    def forward(self, n_id: Tensor) -> tuple[Tensor, Tensor]:
        """Memory (K, d) and last update times (K,) of nodes n_id (K,), corrected by PRES."""
        self._check_ids(n_id, "n_id")
        if not self.training:
            memory, last_update = self.base(n_id)
            if self.store_fused:
                return memory, last_update
            everyone = torch.ones(n_id.numel(), dtype=torch.bool, device=n_id.device)
            return self.fuse(n_id, self.prev_memory[n_id], memory, everyone), last_update
        prev = self.base.memory[n_id].detach()
        mask = self.pending(n_id)
        updated, last_update = self.base(n_id)
        return self.fuse(n_id, prev, updated, mask), last_update

    def update_state(self, src: Tensor, dst: Tensor, t: Tensor, raw_msg: Tensor) -> None:
        """Store the events (src, dst, t, raw_msg) and update the memory as TGNMemory does, with
        the prediction-correction applied to every state it writes."""
        self._check_ids(src, "src")
        self._check_ids(dst, "dst")
        n_id = torch.cat([src, dst]).unique()
        prev = self.base.memory[n_id].detach().clone()
        if self.training:
            mask = self.pending(n_id)  # TGNMemory applies the previous messages, then stores
        else:
            mask = torch.ones(n_id.numel(), dtype=torch.bool, device=n_id.device)
        self.base.update_state(src, dst, t, raw_msg)
        self._correct_stored(n_id, prev, mask)

    def train(self, mode: bool = True) -> PRESMemory:
        flushing = self.base.training and not mode
        if flushing:
            all_nodes = torch.arange(self.num_nodes, device=self.base.memory.device)
            prev = self.base.memory.detach().clone()
            mask = self.pending(all_nodes)
        super().train(mode)  # TGNMemory flushes its pending messages into the memory here
        if flushing:
            self._correct_stored(all_nodes, prev, mask)
        return self

    def reset_state(self, *, statistics: bool = True) -> None:
        """Zero the memory (and, by default, the transition statistics)."""
        self.base.reset_state()
        if not self.store_fused:
            self.prev_memory.zero_()
        if statistics:
            self.stats.reset_state()

    def detach(self) -> None:
        """Detach the stored memory from the autograd graph (after each batch)."""
        self.base.detach()
