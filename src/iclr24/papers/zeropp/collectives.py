"""The collectives of ZeRO-3 and ZeRO++, written as rounds of point-to-point messages.

* :func:`ring_all_gather` -- ZeRO-3's weight all-gather. In a ring over k ranks every payload is
  forwarded k-1 times, so each rank (and, with node-major order, each node's one outgoing
  cross-node link) sends ``(k-1)/k`` of the gathered bytes: the ``(N-1)/N * M`` of the paper's
  volume analysis. Payloads are forwarded as they are, so a quantized shard is quantized exactly
  once (qwZ) however many hops it travels.
* :func:`ring_reduce_scatter` -- ZeRO-3's gradient reduce-scatter: partial sums hop around the
  ring, decoded to fp32, summed, re-encoded (fp16) at every hop.
* :func:`all_to_all` -- direct exchange of one chunk per peer (qgZ's building block).
* :func:`quantized_all_gather` -- qwZ: block-quantize the shard, ring all-gather, dequantize.
* :func:`hierarchical_all_to_all_reduce` -- qgZ (ZeRO++ §3.3): reorder slices, quantize,
  intra-node all-to-all, dequantize + sum, requantize, inter-node all-to-all, dequantize + sum,
  divide by N once. Quantizing a ring reduce-scatter instead would requantize at every one of
  the N-1 hops; the two-hop scheme quantizes twice whatever N is.

Every function is called by all ranks of the group with matching arguments (SPMD). ``ranks`` lists
global ranks in group order and must contain ``comm.rank``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .topology import Topology
from .transport import Communicator
from .wire_format import BlockQuantCodec, CastCodec, WireCodec

__all__ = [
    "all_to_all",
    "hierarchical_all_to_all_reduce",
    "qgz_slice_order",
    "quantized_all_gather",
    "reference_reduce_scatter",
    "ring_all_gather",
    "ring_reduce_scatter",
]


def _position(comm: Communicator, ranks: Sequence[int]) -> int:
    ranks = list(ranks)
    if comm.rank not in ranks:
        raise ValueError(f"ranks {ranks} must contain this rank ({comm.rank})")
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"ranks must be distinct, got {ranks}")
    return ranks.index(comm.rank)


def ring_all_gather(comm: Communicator, payload: torch.Tensor, ranks: Sequence[int],
                    phase: str) -> list[torch.Tensor]:
    """Gather one equal-sized uint8 payload from every rank in ``ranks`` (ring, k-1 rounds).

    Returns the k payloads in ``ranks`` order (this rank's own at its position).
    """
    p, k = _position(comm, ranks), len(ranks)
    out: list[torch.Tensor | None] = [None] * k
    out[p] = payload
    nxt, prv = ranks[(p + 1) % k], ranks[(p - 1) % k]
    for step in range(k - 1):
        send_idx, recv_idx = (p - step) % k, (p - step - 1) % k  # forward what arrived last round
        (out[recv_idx],) = comm.exchange(phase, [(nxt, out[send_idx])],
                                         [(prv, payload.numel())])
    return out  # type: ignore[return-value]


def ring_reduce_scatter(comm: Communicator, x: torch.Tensor, ranks: Sequence[int],
                        codec: WireCodec, phase: str) -> torch.Tensor:
    """Sum ``x`` over ``ranks`` and return this rank's chunk (chunk i belongs to ``ranks[i]``).

    x: (k * chunk,) float, the same length on every rank. Partial sums travel as ``codec``
    payloads and are accumulated in fp32. Returns (chunk,) float32, the *sum* (not the mean).
    """
    p, k = _position(comm, ranks), len(ranks)
    if x.dim() != 1 or x.numel() % k:
        raise ValueError(f"x must be 1-D with a length divisible by {k}, got shape "
                         f"{tuple(x.shape)}")
    chunk = x.numel() // k
    parts = x.detach().to(torch.float32).view(k, chunk)
    nxt, prv = ranks[(p + 1) % k], ranks[(p - 1) % k]
    acc = parts[(p - 1) % k].clone()  # the chunk this rank starts passing along
    for step in range(k - 1):
        (payload,) = comm.exchange(phase, [(nxt, codec.encode(acc))],
                                   [(prv, codec.nbytes(chunk))])
        recv_idx = (p - step - 2) % k
        acc = codec.decode(payload, chunk) + parts[recv_idx]  # partial sum + own contribution
    return acc  # chunk p after k-1 hops holds all k contributions


def all_to_all(comm: Communicator, payloads: Sequence[torch.Tensor], ranks: Sequence[int],
               recv_nbytes: int, phase: str) -> list[torch.Tensor | None]:
    """Send ``payloads[i]`` to ``ranks[i]``; return what each rank sent us (None at our place)."""
    p, k = _position(comm, ranks), len(ranks)
    if len(payloads) != k:
        raise ValueError(f"need one payload per rank ({k}), got {len(payloads)}")
    peers = [i for i in range(k) if i != p]
    received = comm.exchange(phase, [(ranks[i], payloads[i]) for i in peers],
                             [(ranks[i], recv_nbytes) for i in peers])
    out: list[torch.Tensor | None] = [None] * k
    for i, payload in zip(peers, received):
        out[i] = payload
    return out


def quantized_all_gather(comm: Communicator, shard: torch.Tensor, ranks: Sequence[int],
                         bits: int = 8, block_size: int = 2048,
                         phase: str = "weight_allgather") -> torch.Tensor:
    """qwZ: block-quantize ``shard`` to ``bits``, ring all-gather the bytes, dequantize.

    shard: (S,) float, the same S on every rank. Returns (k * S,) float32, shards in ranks order.
    """
    codec = BlockQuantCodec(bits, block_size)
    numel = shard.numel()
    payloads = ring_all_gather(comm, codec.encode(shard), ranks, phase)
    return torch.cat([codec.decode(pl, numel) for pl in payloads])


def qgz_slice_order(topology: Topology) -> list[int]:
    """Tensor-slice reordering for qgZ: slice order (local index j major, node k minor).

    The flat gradient is split into N slices, slice r belonging to global rank r. After the
    reordering, the n slices destined for local index j (one per node) are contiguous, so the
    intra-node all-to-all sends one contiguous chunk per local peer, and after the inter-node
    all-to-all each rank ends with exactly its own slice.
    """
    g, n = topology.ranks_per_node, topology.num_nodes
    return [node * g + j for j in range(g) for node in range(n)]


def hierarchical_all_to_all_reduce(comm: Communicator, grad: torch.Tensor,
                                   bits: int | None = 4, block_size: int = 2048,
                                   phase: str = "grad_reduce") -> torch.Tensor:
    """qgZ: the mean over all N ranks of ``grad``, returning this rank's slice.

    grad: (N * S,) float, slice r = elements [r*S, (r+1)*S) belongs to global rank r.
    Returns (S,) float32 = (1/N) * sum_ranks grad[rank*S:(rank+1)*S] up to quantization error.
    ``bits=None`` sends exact fp32 (to test the data movement without quantization).
    Only what leaves a rank is quantized; a rank's own chunk stays in fp32.
    """
    topo = comm.topology
    n_ranks, g, n = topo.world_size, topo.ranks_per_node, topo.num_nodes
    if grad.dim() != 1 or grad.numel() % n_ranks:
        raise ValueError(f"grad must be 1-D with a length divisible by world_size={n_ranks}, got "
                         f"shape {tuple(grad.shape)}")
    codec: WireCodec = CastCodec(torch.float32) if bits is None else BlockQuantCodec(bits,
                                                                                     block_size)
    s = grad.numel() // n_ranks
    slices = grad.detach().to(torch.float32).view(n_ranks, s)
    # 1. slice reordering: chunk j = slices of ranks (node 0, j), (node 1, j), ... contiguous
    chunks = slices[qgz_slice_order(topo)].view(g, n * s)
    # 2. intra-node all-to-all of quantized chunks; dequantize and sum in fp32 (local order)
    intra = topo.intra_ranks(comm.rank)
    me_local = topo.local_rank(comm.rank)
    sent = [codec.encode(chunks[j]) if j != me_local else torch.empty(0, dtype=torch.uint8,
                                                                        device=grad.device)
            for j in range(g)]
    got = all_to_all(comm, sent, intra, codec.nbytes(n * s), phase)
    partial = torch.zeros(n * s, device=grad.device)
    for j in range(g):  # fixed order => deterministic sums
        partial += chunks[me_local] if j == me_local else codec.decode(got[j], n * s)
    # 3. requantize the node's partial sums; inter-node all-to-all among equal local indices
    node_parts = partial.view(n, s)  # row k = partial sum for rank (node k, local me_local)
    inter = topo.inter_ranks(comm.rank)
    me_node = topo.node_of(comm.rank)
    sent = [codec.encode(node_parts[k]) if k != me_node else torch.empty(0, dtype=torch.uint8,
                                                                        device=grad.device)
            for k in range(n)]
    got = all_to_all(comm, sent, inter, codec.nbytes(s), phase)
    total = torch.zeros(s, device=grad.device)
    for k in range(n):
        total += node_parts[me_node] if k == me_node else codec.decode(got[k], s)
    return total / n_ranks  # average exactly once: mean over all N ranks


def reference_reduce_scatter(grads: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Exact fp64 reduce-scatter-mean over a list of per-rank tensors (the test oracle)."""
    stacked = torch.stack([g.detach().to(torch.float64).reshape(-1) for g in grads])
    mean = stacked.mean(dim=0)
    return [c.to(torch.float32) for c in mean.chunk(len(grads))]
