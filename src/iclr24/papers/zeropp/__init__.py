"""ZeRO++: Extremely Efficient Collective Communication for Large Model Training (ICLR 2024).

Wang, Qin, Jacobs, Holmes, Rajbhandari, Ruwase, Yan, Yang, He (Microsoft DeepSpeed);
arXiv 2306.10209; official code in DeepSpeed (``deepspeed/runtime/zero/``).

**What the paper does.** ZeRO-3 shards parameters, gradients and optimizer state over all N
data-parallel ranks, and pays for it with three collectives per step -- a forward weight
all-gather, a backward weight all-gather and a gradient reduce-scatter, about 3M cross-node bytes
for a model of M fp16 bytes. ZeRO++ cuts each: **qwZ** all-gathers block-quantized int8 weights
(0.5M), **hpZ** keeps a secondary weight copy sharded inside each node so the backward all-gather
never leaves the node (0), and **qgZ** averages gradients with a two-hop (intra-node, then
inter-node) all-to-all of int4 blocks instead of a ring reduce-scatter (0.25M): 0.75M, 4x less.

**This package** is a readable, working implementation on ``torch.distributed`` (gloo on CPU,
tested here; the code is device-aware and moves CUDA payloads with ``backend="nccl"``, but no GPU
was available to exercise that path), plus a single-process simulator:

==========================================  ====================================================
paper                                       here
==========================================  ====================================================
ZeRO-3 engine, three switches (§2-3)        :class:`ZeroPPEngine`, :class:`ZeroPPConfig`
block quantization, int8/6/4/2 (§3.1)       :func:`block_quantize`, :func:`block_dequantize`,
                                            :class:`QuantizedTensor` (codes packed in uint8)
quantized weight all-gather, qwZ (§3.1)     :func:`quantized_all_gather`
hierarchical partition, hpZ (§3.2)          ``ZeroPPEngine(hpz=True)`` (secondary partition)
quantized all-to-all reduce, qgZ (§3.3)     :func:`hierarchical_all_to_all_reduce`,
                                            :func:`qgz_slice_order` (tensor slice reordering)
volume analysis (Table 1)                   :func:`cross_node_volume`,
                                            :func:`predicted_cross_node_bytes`
node layout                                 :class:`Topology` (node-major ranks)
byte accounting                             :class:`CommLedger` (by phase, intra/cross node)
multi-process jobs                          :func:`launch`, :func:`init_distributed`,
                                            ``python -m iclr24.papers.zeropp.launch``
single-process simulator                    :func:`run_simulated`
DeepSpeed as a reference (ZeRO-3, hpZ)      :func:`deepspeed_step_job`, :func:`record_collectives`,
                                            :func:`ring_cross_node_egress` (``[deepspeed]`` extra)
==========================================  ====================================================

Quick start (4 virtual ranks on 2 simulated nodes, no processes)::

    import copy, torch
    from iclr24.papers.zeropp import Topology, ZeroPPEngine, run_simulated

    template = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                                   torch.nn.Linear(256, 10))
    def job(comm):
        model = copy.deepcopy(template)
        engine = ZeroPPEngine(model, torch.optim.Adam(model.parameters(), lr=1e-3), comm,
                              quantized_weights=8, hpz=True, quantized_gradients=4)
        x, y = torch.randn(16, 64), torch.randint(0, 10, (16,))
        loss = torch.nn.functional.cross_entropy(engine(x), y)
        engine.backward(loss); engine.step()
        return comm.ledger.rows()
    rows = run_simulated(job, Topology(world_size=4, ranks_per_node=2))

For real processes, put ``job`` at module level and call ``launch(job, nproc=4, nodes=2)``, or
write a script that calls ``comm = init_distributed()`` and run
``python -m iclr24.papers.zeropp.launch --nproc 4 --nodes 2 script.py``.

**Use DeepSpeed at scale.** This engine is for reading, testing and small experiments: it has no
prefetching, no overlap of communication and compute, no fused CUDA quantization kernels, and it
recomputes each layer's forward in backward. To train real models with ZeRO++, use DeepSpeed's
ZeRO stage 3 with its ZeRO++ keys -- the three switches here map one to one::

    "zero_optimization": {"stage": 3,
                          "zero_quantized_weights": true,      # qwZ  (quantized_weights=8)
                          "zero_hpz_partition_size": 8,        # hpZ  (GPUs per node; hpz=True)
                          "zero_quantized_gradients": true}    # qgZ  (quantized_gradients=4)

(DeepSpeed's qwZ/qgZ kernels are CUDA-only; PyTorch FSDP has no equivalent of qwZ or qgZ.)

**What is scaled down.** Nodes are simulated (N = 4 ranks as 2 nodes x 2 on one machine; the
ledger decides what counts as cross-node), so throughput -- the paper's 2.16x at 384 GPUs -- is
not measured, only bytes and losses. The convergence check trains a 64-256-256-10 MLP on
scikit-learn's digits instead of 13B-30B GPT models. Choices that differ from DeepSpeed are
listed in :mod:`.engine` (per-layer flattening with padding instead of a 1-D/odd-size fallback;
a rank's own qgZ chunk is not quantized; symmetric 2-bit codes are ternary).
"""

from .analytic_volume import cross_node_volume, predicted_cross_node_bytes
from .block_quantization import (
    QuantizedTensor,
    block_dequantize,
    block_quantize,
    pack_codes,
    quantized_nbytes,
    relative_quantization_error,
    unpack_codes,
)
from .collectives import (
    all_to_all,
    hierarchical_all_to_all_reduce,
    qgz_slice_order,
    quantized_all_gather,
    reference_reduce_scatter,
    ring_all_gather,
    ring_reduce_scatter,
)
from .comm_ledger import CROSS, INTRA, CommLedger
from .deepspeed_reference import (
    CollectiveRecord,
    deepspeed_step_job,
    record_collectives,
    ring_cross_node_egress,
)
from .engine import ZeroPPConfig, ZeroPPEngine
from .launcher import RankFailedError, find_free_port, init_distributed, launch
from .simulator import SimulatedRankError, run_simulated, simulate_hierarchical_reduce
from .topology import Topology
from .transport import (
    CollectiveTimeout,
    Communicator,
    DistTransport,
    ThreadMailbox,
    ThreadTransport,
)
from .wire_format import BlockQuantCodec, CastCodec, WireCodec

__all__ = [
    "CROSS",
    "INTRA",
    "BlockQuantCodec",
    "CastCodec",
    "CollectiveRecord",
    "CollectiveTimeout",
    "CommLedger",
    "Communicator",
    "DistTransport",
    "QuantizedTensor",
    "RankFailedError",
    "SimulatedRankError",
    "ThreadMailbox",
    "ThreadTransport",
    "Topology",
    "WireCodec",
    "ZeroPPConfig",
    "ZeroPPEngine",
    "all_to_all",
    "block_dequantize",
    "block_quantize",
    "cross_node_volume",
    "deepspeed_step_job",
    "find_free_port",
    "hierarchical_all_to_all_reduce",
    "init_distributed",
    "launch",
    "pack_codes",
    "predicted_cross_node_bytes",
    "qgz_slice_order",
    "quantized_all_gather",
    "quantized_nbytes",
    "record_collectives",
    "reference_reduce_scatter",
    "relative_quantization_error",
    "ring_all_gather",
    "ring_cross_node_egress",
    "ring_reduce_scatter",
    "run_simulated",
    "simulate_hierarchical_reduce",
    "unpack_codes",
]
