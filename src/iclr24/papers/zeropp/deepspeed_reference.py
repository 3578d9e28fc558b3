"""DeepSpeed as an independent reference for the byte ledger (ZeRO-3 and hpZ on CPU).

Our ledger counts the payloads our own engine hands to ``isend``, priced by the same codecs as
the volume formula, so agreeing with the formula says little on its own. DeepSpeed (>= 0.19,
``DS_ACCELERATOR=cpu``, gloo) runs ZeRO stage 3 and hpZ (``zero_hpz_partition_size``) on CPU;
qwZ and qgZ raise "not implemented on CPU backend" there, so only ZeRO-3 and hpZ can be
checked. :func:`deepspeed_step_job` trains the same model on the same ranks for a few steps
and records every ``torch.distributed`` collective DeepSpeed issues (op, process group,
bytes in/out) in forward, backward and the optimizer step; :func:`ring_cross_node_egress`
turns those calls into bytes leaving each simulated node, with the ring schedule our
transport uses (rank i sends to the next rank of the group's ring: an all-gather of chunk s
over p ranks sends (p - 1) s per rank, a reduce-scatter of an input of p s elements also
(p - 1) s). The comparison therefore checks *which* collectives run, over *which* groups,
with *how many* bytes, against what our engine sent; it does not measure gloo's own wire
traffic.

Settings that make the comparison exact on a tiny model: ``stage3_max_reuse_distance=0``
(else backward skips the re-gather of parameters still resident), ``stage3_prefetch_bucket_size
=0``, ``stage3_param_persistence_threshold=0`` (else small parameters are never partitioned),
bf16 (2 bytes per element, as our fp16 wire format), SGD with
``zero_allow_untested_optimizer``. DeepSpeed's shared-memory op (used only by its inference
all-reduce) is not built: compiling it costs a g++ run per machine and a killed build leaves
a stale lock that blocks every later start.

Needs the ``deepspeed`` extra (``pip install -e '.[deepspeed]'``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from .topology import Topology

__all__ = [
    "CollectiveRecord",
    "deepspeed_available",
    "deepspeed_config",
    "deepspeed_step_job",
    "ledger_phase",
    "max_relative_difference",
    "record_collectives",
    "ring_cross_node_egress",
]

_RECORDED_OPS = ("all_gather_into_tensor", "reduce_scatter_tensor", "all_reduce", "broadcast",
                 "all_gather", "reduce_scatter", "all_to_all_single", "all_to_all", "reduce")


def deepspeed_available() -> bool:
    """Whether DeepSpeed can be imported (the ``deepspeed`` extra is installed)."""
    import importlib.util

    return importlib.util.find_spec("deepspeed") is not None


@dataclass(frozen=True)
class CollectiveRecord:
    """One collective call on one rank: ``op`` (torch.distributed name), ``phase``
    ("forward" | "backward" | "step"), the global ranks of its group, bytes of its input and
    output tensors."""

    rank: int
    op: str
    phase: str
    group: tuple[int, ...]
    in_bytes: int
    out_bytes: int


class _Recorder:
    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.phase = "setup"
        self.records: list[CollectiveRecord] = []


def _nbytes(x: Any) -> int:
    if isinstance(x, torch.Tensor):
        return x.numel() * x.element_size()
    if isinstance(x, (list, tuple)):
        return sum(_nbytes(t) for t in x)
    return 0


@contextlib.contextmanager
def record_collectives(rank: int) -> Iterator[_Recorder]:
    """Wrap ``torch.distributed``'s collectives (module and ``distributed_c10d`` names) so
    every call is appended to the yielded recorder's ``records``; set ``recorder.phase``
    between stages. Restores the originals on exit."""
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d

    recorder = _Recorder(rank)
    saved: list[tuple[Any, str, Any]] = []

    def wrap(name: str, fn: Any) -> Any:
        def recorded(*args: Any, **kwargs: Any) -> Any:
            group = kwargs.get("group")
            if group is None:
                group = next((a for a in args if isinstance(a, dist.ProcessGroup)), None)
            ranks = tuple(dist.get_process_group_ranks(group)) if group is not None else \
                tuple(range(dist.get_world_size()))
            tensors = [a for a in args if isinstance(a, (torch.Tensor, list, tuple))]
            tensors += [v for k, v in kwargs.items() if k != "group"
                        and isinstance(v, (torch.Tensor, list, tuple))]
            out_b = _nbytes(tensors[0]) if tensors else 0
            in_b = _nbytes(tensors[1]) if len(tensors) > 1 else out_b
            recorder.records.append(CollectiveRecord(rank, name, recorder.phase, ranks, in_b,
                                                     out_b))
            return fn(*args, **kwargs)

        return recorded

    for name in _RECORDED_OPS:
        original = getattr(c10d, name, None)
        if original is None:
            continue
        wrapped = wrap(name, original)
        for module in (c10d, dist):
            if getattr(module, name, None) is original:
                saved.append((module, name, original))
                setattr(module, name, wrapped)
    try:
        yield recorder
    finally:
        for module, name, original in saved:
            setattr(module, name, original)


def deepspeed_config(hpz: bool, micro_batch: int, lr: float = 0.01, nodes: int = 2,
                     world_size: int = 4) -> dict[str, Any]:
    """The DeepSpeed config of the comparison: ZeRO-3 (bf16, SGD), hpZ when ``hpz``."""
    zero: dict[str, Any] = {"stage": 3, "stage3_max_reuse_distance": 0,
                            "stage3_prefetch_bucket_size": 0,
                            "stage3_param_persistence_threshold": 0,
                            "contiguous_gradients": False, "overlap_comm": False}
    if hpz:
        zero["zero_hpz_partition_size"] = world_size // nodes  # ranks per node
    return {"train_micro_batch_size_per_gpu": micro_batch, "gradient_accumulation_steps": 1,
            "optimizer": {"type": "SGD", "params": {"lr": lr}}, "bf16": {"enabled": True},
            "zero_optimization": zero, "zero_allow_untested_optimizer": True,
            "wall_clock_breakdown": False}


def deepspeed_step_job(comm: Any, layer_sizes: Sequence[int],
                       init_state: dict[str, torch.Tensor],
                       batch: tuple[torch.Tensor, torch.Tensor], hpz_flags: Sequence[bool],
                       steps: int = 2) -> list[list[CollectiveRecord]]:
    """On every rank (launched by :func:`~.launcher.launch`, which already joined the gloo
    group): for each flag in ``hpz_flags`` train the MLP ``layer_sizes`` from ``init_state``
    with DeepSpeed ZeRO-3 (hpZ if the flag is set) for ``steps`` steps on this rank's slice of
    ``batch``; return the collectives of the last step per configuration."""
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    import importlib
    import sys

    import deepspeed
    import torch.nn.functional as F

    importlib.import_module("deepspeed.comm.torch")
    # ``deepspeed.comm.torch`` as an attribute is the torch package (re-exported); patch the
    # module itself so its backend skips the g++ build of the inference-only shm op
    sys.modules["deepspeed.comm.torch"].build_shm_op = lambda: None
    from .training_runs import mlp_from_state

    x, y = batch
    b = len(y) // comm.world_size
    mine = slice(comm.rank * b, (comm.rank + 1) * b)
    out = []
    with record_collectives(comm.rank) as rec:
        # DeepSpeed's backend binds the all-gather / reduce-scatter functions when it starts:
        # start it inside the recorder so it binds the recording wrappers
        deepspeed.init_distributed(dist_backend="gloo")
        for hpz in hpz_flags:
            model = mlp_from_state(layer_sizes, init_state)
            cfg = deepspeed_config(hpz, b, nodes=comm.topology.num_nodes,
                                   world_size=comm.world_size)
            engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                              config=cfg)
            for _ in range(steps):
                rec.records.clear()
                rec.phase = "forward"
                loss = F.cross_entropy(engine(x[mine].bfloat16()).float(), y[mine])
                rec.phase = "backward"
                engine.backward(loss)
                rec.phase = "step"
                engine.step()
            rec.phase = "setup"
            out.append(list(rec.records))
            engine.destroy()
    return out


def ledger_phase(record: CollectiveRecord) -> str | None:
    """The byte ledger's phase name for a DeepSpeed collective: a forward all-gather is
    ``fwd_allgather``, a backward one ``bwd_allgather``, a reduce-scatter ``grad_reduce``;
    anything else (a few bytes of bookkeeping) is None."""
    if record.op == "all_gather_into_tensor":
        return {"forward": "fwd_allgather", "backward": "bwd_allgather"}.get(record.phase)
    if record.op == "reduce_scatter_tensor":
        return "grad_reduce"
    return None


def ring_cross_node_egress(records: Sequence[CollectiveRecord], topology: Topology
                           ) -> dict[str, list[int]]:
    """Bytes leaving each node per ledger phase (:func:`ledger_phase`), from every rank's
    records, under the ring schedule: in a group of p ranks (in group order) rank i sends to
    the next one; an all-gather with an output of p s bytes and a reduce-scatter with an input
    of p s bytes each send (p - 1) s bytes per rank. Returns {phase: [node 0, node 1, ...]}."""
    if not isinstance(topology, Topology):
        raise TypeError(f"topology must be a Topology, got {type(topology).__name__}")
    egress = {ph: [0] * topology.num_nodes
              for ph in ("fwd_allgather", "bwd_allgather", "grad_reduce")}
    for r in records:
        phase = ledger_phase(r)
        p = len(r.group)
        if phase is None or p < 2:
            continue
        if r.rank not in r.group:
            raise ValueError(f"record of rank {r.rank} names a group {r.group} without it")
        total = r.out_bytes if r.op == "all_gather_into_tensor" else r.in_bytes
        if total % p:
            raise ValueError(f"{r.op} of {total} bytes does not split over {p} ranks")
        nxt = r.group[(r.group.index(r.rank) + 1) % p]
        if topology.is_cross_node(r.rank, nxt):
            egress[phase][topology.node_of(r.rank)] += (p - 1) * (total // p)
    return egress


def max_relative_difference(ours: dict[str, Sequence[int]],
                            reference: dict[str, Sequence[int]]) -> float:
    """max over phases and nodes of |ours - reference| / (reference bytes of that node summed
    over phases): 0 when both ledgers agree byte for byte. Both map phase -> bytes per node."""
    if set(ours) != set(reference):
        raise ValueError(f"phases differ: {sorted(ours)} vs {sorted(reference)}")
    nodes = {len(v) for v in [*ours.values(), *reference.values()]}
    if len(nodes) != 1:
        raise ValueError("every phase needs one number per node on both sides")
    n = nodes.pop()
    totals = [sum(reference[ph][i] for ph in reference) for i in range(n)]
    if min(totals) <= 0:
        raise ValueError("the reference sends no cross-node bytes from some node")
    return max(abs(ours[ph][i] - reference[ph][i]) / totals[i] for ph in ours for i in range(n))
