"""Thread-count context managers for the small CPU workloads of the claims.

Tiny models run thousands of small ops: extra intra-op threads then only add OpenMP
spin-waiting (measured 5-25x slower on a busy 2-core machine), and one thread also fixes the
reduction order, so results do not depend on the process's default thread count.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["single_threaded", "torch_threads"]


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Temporarily run torch's CPU ops on ``n`` intra-op threads (restored afterwards)."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def single_threaded() -> Iterator[None]:
    """One torch thread and one BLAS/OpenMP thread (numpy, scipy, scikit-learn) at once."""
    from threadpoolctl import threadpool_limits

    with torch_threads(1), threadpool_limits(1):
        yield
