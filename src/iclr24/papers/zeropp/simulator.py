"""The single-process simulator: N virtual ranks as threads exchanging the real payloads.

``run_simulated(fn, topology)`` calls ``fn(comm, *args)`` once per virtual rank, each in its own
thread with a :class:`~.transport.Communicator` over a shared in-memory mailbox. The engine and
the collectives do not know the difference: they run the same code, move the same bytes and
record them in the same ledger as in a real ``torch.distributed`` job, which is what makes the
simulator a faithful (and fast, and deterministic) stand-in for tests and smoke runs. Sums are
taken in a fixed rank order, never in arrival order, so results do not depend on thread timing.

The virtual ranks share the process's global torch RNG and thread pool: build the model once and
give each rank a ``copy.deepcopy`` (or seed a ``torch.Generator`` per rank), never call
``torch.manual_seed`` inside ``fn``. ``run_simulated`` sets torch to one intra-op thread while it
runs (restored afterwards).

If one virtual rank raises, the others are aborted (their pending receives raise) and the first
error is re-raised here with its rank.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch

from .collectives import hierarchical_all_to_all_reduce
from .comm_ledger import CommLedger
from .topology import Topology
from .transport import Communicator, ThreadMailbox, ThreadTransport

__all__ = ["SimulatedRankError", "run_simulated", "simulate_hierarchical_reduce"]


class SimulatedRankError(RuntimeError):
    """A virtual rank raised; ``rank`` says which."""

    def __init__(self, rank: int, exc: BaseException) -> None:
        super().__init__(f"virtual rank {rank} failed: {type(exc).__name__}: {exc}")
        self.rank = rank


def run_simulated(fn: Callable[..., Any], topology: Topology, args: Sequence[Any] = (),
                  timeout_s: float = 120.0) -> list[Any]:
    """Run ``fn(comm, *args)`` on every virtual rank of ``topology``; return results by rank.

    Each rank's ledger is ``comm.ledger``; merge them with :meth:`CommLedger.merged` if ``fn``
    returns them (or use ``comm.ledger.snapshot()``).
    """
    if not isinstance(topology, Topology):
        raise TypeError(f"topology must be a Topology, got {type(topology).__name__}")
    if not callable(fn):
        raise TypeError("fn must be callable as fn(comm, *args)")
    mailbox = ThreadMailbox(topology.world_size)
    results: list[Any] = [None] * topology.world_size
    errors: list[tuple[int, BaseException]] = []
    lock = threading.Lock()

    def worker(rank: int) -> None:
        comm = Communicator(rank, topology, ThreadTransport(rank, mailbox, timeout_s),
                            CommLedger(topology))
        try:
            results[rank] = fn(comm, *args)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            with lock:
                errors.append((rank, exc))
            mailbox.aborted.set()

    old_threads = torch.get_num_threads()
    torch.set_num_threads(1)  # N virtual ranks already share the cores; no nested parallelism
    threads = [threading.Thread(target=worker, args=(r,), name=f"zeropp-rank{r}", daemon=True)
               for r in range(topology.world_size)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout_s + 5.0)
    finally:
        torch.set_num_threads(old_threads)
    if any(t.is_alive() for t in threads):
        mailbox.aborted.set()
        raise TimeoutError(f"simulated job did not finish within {timeout_s:.0f}s")
    if errors:
        # report the root cause: prefer an error that is not another rank's abort
        from .transport import CollectiveTimeout

        errors.sort(key=lambda e: (isinstance(e[1], CollectiveTimeout), e[0]))
        rank, exc = errors[0]
        raise SimulatedRankError(rank, exc) from exc
    return results


def _reduce_worker(comm: Communicator, grads, bits, block_size):
    out = hierarchical_all_to_all_reduce(comm, grads[comm.rank], bits, block_size)
    return out, comm.ledger.snapshot()


def simulate_hierarchical_reduce(grads: Sequence[torch.Tensor], topology: Topology,
                                 bits: int | None = 4, block_size: int = 2048
                                 ) -> tuple[list[torch.Tensor], CommLedger]:
    """qgZ over virtual ranks: ``grads[r]`` is rank r's (N*S,) gradient.

    Returns each rank's averaged (S,) shard and the merged byte ledger.
    """
    if len(grads) != topology.world_size:
        raise ValueError(f"need one gradient per rank ({topology.world_size}), got {len(grads)}")
    outs = run_simulated(_reduce_worker, topology, (list(grads), bits, block_size))
    ledger = CommLedger(topology)
    for _, snap in outs:
        ledger.absorb(snap)
    return [o for o, _ in outs], ledger
