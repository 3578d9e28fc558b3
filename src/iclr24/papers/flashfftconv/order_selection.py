"""Which Monarch order is fastest for an FFT size: the table behind ``order=None``.

The paper picks the order per FFT size from what fits the GPU's tensor cores and SRAM (p = 2 up
to 1K, p = 3 up to 32K, p = 4 beyond). A CPU has different trade-offs, so the table below was
*measured* on this project's CPU (2 cores shared with other jobs, load ~20) with
:func:`.benchmark.measure_best_orders`, one size per call::

    measure_best_orders([n], work=2**19, rounds=3, clock="thread")

i.e. the default convolution (folded-twiddle stages, two real sequences per complex transform of
size N, sequence length L = N/2) at fixed work B·H·L = 2^19 float32 elements per call, orders
2/3/4 timed in interleaved rounds, median of the calling thread's CPU time with one intra-op
thread (insensitive to being preempted on a busy machine). Measured milliseconds:

========= ====================== ======
N         ms (p=2 / 3 / 4)       best
========= ====================== ======
2^9       19.2 / 15.8 / 16.0     3
2^10      15.2 / 20.7 / 20.0     2
2^11      17.5 / 12.5 / 13.6     3
2^12      21.0 / 20.3 / 23.7     3
2^13      28.1 / 16.7 / 15.4     4
2^14      33.3 / 18.0 / 15.9     4
2^15      43.4 / 19.1 / 14.4     4
2^16      55.5 / 32.5 / 16.3     4
2^17      162 / 33.7 / 27.0      4
2^18      694 / 98.2 / 54.1      4
2^19      1952 / 251 / 79.2      4
2^20      3932 / 539 / 170       4
========= ====================== ======

Below 2^11 the orders are within the noise of each other (±20% between rounds); the table keeps
p = 2 there (fewest stages, the paper's choice) and switches to p = 3 at 2^11 and p = 4 at 2^13.
The earlier pipeline (half-size transforms with a Hermitian mirror gather, separate twiddle
passes) preferred p = 2 up to transform size 2^13; folding the twiddles into the stage matrices
makes every extra stage cheaper, so higher orders pay off sooner. Re-run the function on your
own machine and pass ``order=`` explicitly if your cross-overs differ.
"""

from __future__ import annotations

import math

__all__ = ["BEST_ORDER", "best_order"]

#: FFT size N (power of two) -> fastest order measured (see the module docstring)
BEST_ORDER: dict[int, int] = {
    **{2**e: 2 for e in range(4, 11)},
    **{2**e: 3 for e in range(11, 13)},
    **{2**e: 4 for e in range(13, 23)},
}


def best_order(transform_size: int) -> int:
    """The measured fastest order for a complex transform of size ``transform_size`` (the FFT
    size N, or the block size 2N′ of a partial convolution), capped at log2 of the size so
    every factor is >= 2."""
    if (isinstance(transform_size, bool) or not isinstance(transform_size, int)
            or transform_size < 4 or transform_size & (transform_size - 1)):
        raise ValueError(f"transform_size must be a power of two >= 4, got {transform_size!r}")
    order = BEST_ORDER.get(transform_size, 4 if transform_size > 2**22 else 2)
    return min(order, int(math.log2(transform_size)))
