"""Which Monarch order is fastest for a transform size: the table behind ``order=None``.

The paper picks the order per FFT size from what fits the GPU's tensor cores and SRAM (p = 2 up
to 1K, p = 3 up to 32K, p = 4 beyond). A CPU has different trade-offs, so the table below was
*measured* on this project's CPU (2 cores shared with other jobs) with
:func:`.benchmark.measure_best_orders`::

    measure_best_orders([2**e for e in range(7, 22)], work=2**20, rounds=3, clock="thread")

i.e. the real-trick causal convolution (FFT size 2M, sequence length L = M) at fixed work
B·H·L = 2^20 float32 elements per call, orders 2/3/4 timed in interleaved rounds, median of the
calling thread's CPU time with one intra-op thread (the machine was heavily shared, and thread CPU
time is insensitive to being preempted). Measured milliseconds (order 2 / 3 / 4):

====== ================== ======
M      ms (p=2 / 3 / 4)   best
====== ================== ======
2^7    38 / 69 / 97       2
2^8    54 / 67 / 100      2
2^9    42 / 52 / 72       2
2^10   51 / 64 / 68       2
2^11   48 / 49 / 61       2
2^12   69 / 74 / 85       2
2^13   67 / 77 / 73       2
2^14   70 / 44 / 54       3
2^15   113 / 63 / 75      3
2^16   138 / 70 / 66      4
2^17   150 / 61 / 52      4
2^18   223 / 80 / 60      4
2^19   331 / 87 / 64      4
2^20   398 / 114 / 79     4
2^21   1186 / 217 / 181   4
====== ================== ======

A second measurement, the ``cpu_throughput`` claim at ``small`` scale (2 threads, wall clock,
B·H·L = 2^22, 5 interleaved rounds, machine load ~12–17 on 2 cores), agreed up to M = 2^13
but found p = 2 ahead at 2^14 and p = 3 ahead of p = 4 by ~10% from 2^15 to 2^20; under that
much contention two-thread runs pay a synchronisation cost per kernel (p = 4 launches more of
them), which the one-thread CPU-time measurement above does not see, so the table keeps the
latter. The claim reports the fastest order it measures beside the table's choice.

The cross-overs (p = 2 up to M = 2^13, p = 3 for 2^14–2^15, p = 4 from 2^16) are close to the
paper's GPU choices shifted by a factor of ~8: a CPU's BLAS runs a 64×64 or 128×128 complex
matmul efficiently, so larger factors stay profitable longer. Re-run the function on your own
machine and pass ``order=`` explicitly if your cross-overs differ.
"""

from __future__ import annotations

import math

__all__ = ["BEST_ORDER", "best_order"]

#: transform size M (power of two) -> fastest order measured (see the module docstring)
BEST_ORDER: dict[int, int] = {
    **{2**e: 2 for e in range(4, 14)},
    **{2**e: 3 for e in range(14, 16)},
    **{2**e: 4 for e in range(16, 23)},
}


def best_order(transform_size: int) -> int:
    """The measured fastest order for a complex transform of size ``transform_size`` (N/2 with
    the real trick, N without), capped at log2 of the size so every factor is >= 2."""
    if (isinstance(transform_size, bool) or not isinstance(transform_size, int)
            or transform_size < 4 or transform_size & (transform_size - 1)):
        raise ValueError(f"transform_size must be a power of two >= 4, got {transform_size!r}")
    order = BEST_ORDER.get(transform_size, 4 if transform_size > 2**22 else 2)
    return min(order, int(math.log2(transform_size)))
