"""The paper's communication-volume analysis (ZeRO++ §3, Table 1), exact for our collectives.

Per training step, in units of M (bytes of the model in the communication dtype, fp16 in the
paper), the bytes that leave one node over cross-node links:

=========================  ===================================  =============================
collective                 ZeRO-3                               ZeRO++
=========================  ===================================  =============================
forward weight all-gather  (N-1)/N                              (N-1)/N * b_w/16   (qwZ)
backward weight all-gather (N-1)/N                              0                  (hpZ)
gradient averaging         (N-1)/N  (ring reduce-scatter)       (n-1)/n * b_g/16   (qgZ)
=========================  ===================================  =============================

With b_w = 8, b_g = 4 and large N, n: 3M -> 0.5M + 0 + 0.25M = 0.75M, the paper's 4x. Rings are
laid out node-major, so each node has exactly one outgoing cross-node edge and a ring collective
over N ranks carries (N-1) messages of M/N across it; qgZ's inter-node all-to-all sends (n-1)/n
of each rank's M/G partial sums. :func:`cross_node_volume` is this closed form (scales and
padding neglected, as in the paper); :func:`predicted_cross_node_bytes` adds them back and
predicts the ledger to the byte.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .topology import Topology
from .wire_format import BlockQuantCodec, CastCodec

__all__ = ["cross_node_volume", "predicted_cross_node_bytes"]


def cross_node_volume(world_size: int, ranks_per_node: int, quantized_weights: int | None = None,
                      hpz: bool = False, quantized_gradients: int | None = None,
                      comm_bits: int = 16) -> dict[str, float]:
    """Cross-node bytes per step leaving each node, in units of M (closed form).

    Returns {"fwd_allgather", "bwd_allgather", "grad_reduce", "total"}.
    """
    topo = Topology(world_size, ranks_per_node)
    if comm_bits not in (16, 32):
        raise ValueError(f"comm_bits must be 16 or 32, got {comm_bits}")
    big_n, n = topo.world_size, topo.num_nodes
    if n == 1:
        return {"fwd_allgather": 0.0, "bwd_allgather": 0.0, "grad_reduce": 0.0, "total": 0.0}
    ring = (big_n - 1) / big_n                       # (N-1)/N per ring collective
    w = quantized_weights / comm_bits if quantized_weights else 1.0
    fwd = ring * w                                    # qwZ: b_w/16 of the fp16 bytes
    bwd = 0.0 if hpz else ring * w                    # hpZ: backward gather stays in the node
    grad = ((n - 1) / n * quantized_gradients / comm_bits if quantized_gradients
            else ring)                                # qgZ: only M/G per rank crosses, at b_g
    return {"fwd_allgather": fwd, "bwd_allgather": bwd, "grad_reduce": grad,
            "total": fwd + bwd + grad}


def predicted_cross_node_bytes(shard_numels: Sequence[int], topology: Topology,
                               quantized_weights: int | None = None, hpz: bool = False,
                               quantized_gradients: int | None = None, block_size: int = 2048,
                               comm_dtype: torch.dtype = torch.float16,
                               gradient_block_sizes: Sequence[int] | None = None
                               ) -> dict[str, int]:
    """Exact cross-node egress bytes of one node for one training step of the engine.

    shard_numels: S of every unit (each unit is gathered once forward, once backward, and its
    gradient reduced once). Includes quantization scales and padding. gradient_block_sizes: the
    qgZ block of each unit (``unit.grad_block_size``); None = ``block_size`` for every unit.
    """
    big_n, g, n = topology.world_size, topology.ranks_per_node, topology.num_nodes
    if n == 1:
        return {"fwd_allgather": 0, "bwd_allgather": 0, "grad_reduce": 0, "total": 0}
    wcodec = (BlockQuantCodec(quantized_weights, block_size, comm_dtype) if quantized_weights
              else CastCodec(comm_dtype))
    fwd = bwd = grad = 0
    gblocks = list(gradient_block_sizes) if gradient_block_sizes is not None else \
        [block_size] * len(shard_numels)
    if len(gblocks) != len(shard_numels):
        raise ValueError("gradient_block_sizes must have one entry per unit")
    for s, gblock in zip(shard_numels, gblocks):
        fwd += (big_n - 1) * wcodec.nbytes(s)
        bwd += 0 if hpz else (big_n - 1) * wcodec.nbytes(s)
        if quantized_gradients:
            grad += g * (n - 1) * BlockQuantCodec(quantized_gradients, gblock).nbytes(s)
        else:
            grad += (big_n - 1) * CastCodec(comm_dtype).nbytes(s)
    return {"fwd_allgather": fwd, "bwd_allgather": bwd, "grad_reduce": grad,
            "total": fwd + bwd + grad}
