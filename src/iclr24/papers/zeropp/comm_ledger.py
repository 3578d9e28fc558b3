"""A byte ledger: every message a rank sends, by phase and by link type (intra / cross node).

ZeRO++'s headline is a communication-volume reduction, so every byte the engine moves passes
through :meth:`CommLedger.record` (called by :class:`~.transport.Communicator` on each send).
Counting happens on the sender (egress), and payloads are the exact ``uint8`` wire bytes:
quantization scales and padding are included.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from .topology import Topology

__all__ = ["CROSS", "INTRA", "CommLedger"]

INTRA = "intra_node"
CROSS = "cross_node"


class CommLedger:
    """Bytes sent, keyed by (phase, link, sending node)."""

    def __init__(self, topology: Topology) -> None:
        if not isinstance(topology, Topology):
            raise TypeError(f"topology must be a Topology, got {type(topology).__name__}")
        self.topology = topology
        self._bytes: dict[tuple[str, str, int], int] = defaultdict(int)
        self._messages: dict[tuple[str, str, int], int] = defaultdict(int)

    def record(self, phase: str, src: int, dst: int, nbytes: int) -> None:
        """One message of ``nbytes`` from global rank ``src`` to ``dst`` during ``phase``."""
        if nbytes < 0:
            raise ValueError(f"nbytes must be >= 0, got {nbytes}")
        link = CROSS if self.topology.is_cross_node(src, dst) else INTRA
        key = (phase, link, self.topology.node_of(src))
        self._bytes[key] += int(nbytes)
        self._messages[key] += 1

    def reset(self) -> None:
        self._bytes.clear()
        self._messages.clear()

    def total(self, phase: str | None = None, link: str | None = None,
              node: int | None = None) -> int:
        """Bytes sent, summed over everything that matches the given filters."""
        if link not in (None, INTRA, CROSS):
            raise ValueError(f"link must be {INTRA!r}, {CROSS!r} or None, got {link!r}")
        return sum(v for (p, lk, nd), v in self._bytes.items()
                   if (phase is None or p == phase) and (link is None or lk == link)
                   and (node is None or nd == node))

    def messages(self, phase: str | None = None, link: str | None = None) -> int:
        return sum(v for (p, lk, _), v in self._messages.items()
                   if (phase is None or p == phase) and (link is None or lk == link))

    def egress_per_node(self, link: str = CROSS, phase: str | None = None) -> list[int]:
        """Bytes leaving each node over ``link`` (index = node id)."""
        return [self.total(phase, link, node) for node in range(self.topology.num_nodes)]

    def phases(self) -> list[str]:
        return sorted({p for p, _, _ in self._bytes})

    def rows(self) -> list[dict[str, object]]:
        """One row per (phase, link): bytes and message counts, for tables."""
        keys = sorted({(p, lk) for p, lk, _ in self._bytes})
        return [{"phase": p, "link": lk, "bytes": self.total(p, lk),
                 "messages": self.messages(p, lk)} for p, lk in keys]

    def snapshot(self) -> dict[str, dict[tuple[str, str, int], int]]:
        """A picklable copy of the counters (what a worker process sends back)."""
        return {"bytes": dict(self._bytes), "messages": dict(self._messages)}

    def absorb(self, snapshot: dict[str, dict[tuple[str, str, int], int]]) -> None:
        """Add another ledger's :meth:`snapshot` (used to merge per-process ledgers)."""
        for key, value in snapshot["bytes"].items():
            self._bytes[tuple(key)] += int(value)  # type: ignore[index]
        for key, value in snapshot["messages"].items():
            self._messages[tuple(key)] += int(value)  # type: ignore[index]

    @classmethod
    def merged(cls, ledgers: Iterable[CommLedger]) -> CommLedger:
        ledgers = list(ledgers)
        if not ledgers:
            raise ValueError("ledgers must not be empty")
        out = cls(ledgers[0].topology)
        for ledger in ledgers:
            out.absorb(ledger.snapshot())
        return out
