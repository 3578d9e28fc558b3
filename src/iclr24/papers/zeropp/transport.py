"""Point-to-point message rounds between ranks, over torch.distributed or over threads.

All of the engine's collectives are rounds of point-to-point messages: in one round a rank
posts its sends and its receives, then waits for all of them. Writing collectives this way (instead
of calling ``all_gather`` / ``reduce_scatter``) has two purposes: every byte and its link is known
exactly (the :class:`~.comm_ledger.CommLedger` records each send), and the same algorithm runs on
two transports:

* :class:`DistTransport` -- ``torch.distributed.isend/irecv`` (gloo on CPU here; NCCL on GPUs),
  every wait bounded by a timeout so a crashed peer raises instead of hanging;
* :class:`ThreadTransport` -- virtual ranks as threads of one process sharing a mailbox (the
  single-process simulator, :func:`~.simulator.run_simulated`). It moves the very same payloads,
  so byte counts and numbers match a real multi-process run.

:class:`Communicator` is what the engine holds: this rank, the topology, a transport and a ledger.
"""

from __future__ import annotations

import queue
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import timedelta

import torch

from .comm_ledger import CommLedger
from .topology import Topology

__all__ = [
    "CollectiveTimeout",
    "Communicator",
    "DistTransport",
    "ThreadMailbox",
    "ThreadTransport",
    "Transport",
]


class CollectiveTimeout(RuntimeError):
    """A message did not arrive in time: usually a peer crashed or diverged."""


class Transport(ABC):
    """Moves uint8 payloads between global ranks, one round at a time."""

    rank: int
    timeout_s: float

    @abstractmethod
    def exchange(self, sends: Sequence[tuple[int, torch.Tensor]],
                 recvs: Sequence[tuple[int, int]]) -> list[torch.Tensor]:
        """Post ``sends`` (dst, payload) and ``recvs`` (src, nbytes); return received payloads."""


def _check_payload(payload: torch.Tensor) -> torch.Tensor:
    if not isinstance(payload, torch.Tensor) or payload.dtype != torch.uint8 or payload.dim() != 1:
        raise TypeError("payloads must be 1-D uint8 tensors")
    return payload.contiguous()


class DistTransport(Transport):
    """torch.distributed point-to-point (requires an initialized default process group)."""

    def __init__(self, timeout_s: float = 60.0, device: torch.device | str = "cpu") -> None:
        import torch.distributed as dist

        if not dist.is_available() or not dist.is_initialized():
            raise RuntimeError("DistTransport needs torch.distributed.init_process_group first "
                               "(see iclr24.papers.zeropp.launch)")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self._dist = dist
        self.rank = dist.get_rank()
        self.timeout_s = float(timeout_s)
        self.device = torch.device(device)  # "cuda" for NCCL: payloads must live on the GPU

    def exchange(self, sends, recvs):
        dist = self._dist
        works = []
        for dst, payload in sends:
            payload = _check_payload(payload).to(self.device)
            if payload.numel():
                works.append((dst, "send to", dist.isend(payload, dst)))
        buffers = []
        for src, nbytes in recvs:
            buf = torch.empty(nbytes, dtype=torch.uint8, device=self.device)
            buffers.append(buf)
            if nbytes:
                works.append((src, "receive from", dist.irecv(buf, src)))
        timeout = timedelta(seconds=self.timeout_s)
        for peer, what, work in works:
            try:
                ok = work.wait(timeout)
            except RuntimeError as exc:  # gloo raises on timeout or on a closed connection
                raise CollectiveTimeout(f"rank {self.rank}: {what} rank {peer} failed or timed "
                                        f"out after {self.timeout_s:.0f}s ({exc})") from exc
            if ok is False:
                raise CollectiveTimeout(f"rank {self.rank}: {what} rank {peer} timed out after "
                                        f"{self.timeout_s:.0f}s")
        return buffers


class ThreadMailbox:
    """Shared in-process queues, one per (src, dst) pair, plus an abort flag."""

    def __init__(self, world_size: int) -> None:
        self.world_size = world_size
        self._queues = {(s, d): queue.Queue() for s in range(world_size)
                        for d in range(world_size)}
        self.aborted = threading.Event()

    def put(self, src: int, dst: int, payload: torch.Tensor) -> None:
        self._queues[(src, dst)].put(payload.clone())  # the sender may reuse its buffer

    def get(self, src: int, dst: int, timeout_s: float) -> torch.Tensor:
        deadline = time.monotonic() + timeout_s
        q = self._queues[(src, dst)]
        while True:
            if self.aborted.is_set():
                raise CollectiveTimeout(f"rank {dst}: aborted while waiting for rank {src} "
                                        "(another virtual rank failed)")
            try:
                return q.get(timeout=0.05)
            except queue.Empty:
                if time.monotonic() > deadline:
                    raise CollectiveTimeout(f"rank {dst}: nothing from rank {src} within "
                                            f"{timeout_s:.0f}s") from None


class ThreadTransport(Transport):
    """A virtual rank of the single-process simulator."""

    def __init__(self, rank: int, mailbox: ThreadMailbox, timeout_s: float = 60.0) -> None:
        self.rank = rank
        self.mailbox = mailbox
        self.timeout_s = float(timeout_s)

    def exchange(self, sends, recvs):
        for dst, payload in sends:
            self.mailbox.put(self.rank, dst, _check_payload(payload))
        out = []
        for src, nbytes in recvs:
            payload = self.mailbox.get(src, self.rank, self.timeout_s)
            if payload.numel() != nbytes:
                raise RuntimeError(f"rank {self.rank}: expected {nbytes} bytes from rank {src}, "
                                   f"got {payload.numel()} (ranks out of step)")
            out.append(payload)
        return out


class Communicator:
    """This rank's view of the job: rank, topology, transport, and the byte ledger.

    Every message goes through :meth:`exchange`, which records its bytes under ``phase``.
    """

    def __init__(self, rank: int, topology: Topology, transport: Transport,
                 ledger: CommLedger | None = None) -> None:
        if not isinstance(topology, Topology):
            raise TypeError(f"topology must be a Topology, got {type(topology).__name__}")
        topology._check(rank)
        if not isinstance(transport, Transport):
            raise TypeError(f"transport must be a Transport, got {type(transport).__name__}")
        self.rank = rank
        self.topology = topology
        self.transport = transport
        self.ledger = ledger if ledger is not None else CommLedger(topology)

    @property
    def world_size(self) -> int:
        return self.topology.world_size

    def exchange(self, phase: str, sends: Sequence[tuple[int, torch.Tensor]],
                 recvs: Sequence[tuple[int, int]]) -> list[torch.Tensor]:
        """One round of point-to-point messages; bytes are recorded per send under ``phase``."""
        for dst, payload in sends:
            if dst == self.rank:
                raise ValueError(f"rank {self.rank} cannot send to itself")
            self.ledger.record(phase, self.rank, dst, payload.numel())
        return self.transport.exchange(sends, recvs)
