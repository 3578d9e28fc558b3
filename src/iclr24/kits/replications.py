"""Seeded replications: independent numpy generators per replication, optionally in parallel.

``spawn_generators(seed, n)`` derives n statistically independent generators from one seed with
``numpy.random.SeedSequence.spawn``; ``replicate(fn, n, seed, n_jobs)`` calls ``fn(rng, *args)``
once per generator, in order, with joblib. Because replication i always receives the i-th child
generator, results are identical for any number of workers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

__all__ = ["replicate", "spawn_generators"]

R = TypeVar("R")


def _check_count(n: Any, name: str) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"{name} must be a positive int, got {n!r}")
    return int(n)


def spawn_generators(seed: int | np.random.SeedSequence, n: int) -> list[np.random.Generator]:
    """n independent ``numpy.random.Generator`` s spawned from ``seed``."""
    n = _check_count(n, "n")
    if isinstance(seed, np.random.SeedSequence):
        seq = seed
    elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0:
        seq = np.random.SeedSequence(int(seed))
    else:
        raise ValueError(f"seed must be a non-negative int or a SeedSequence, got {seed!r}")
    return [np.random.default_rng(child) for child in seq.spawn(n)]


def replicate(fn: Callable[..., R], n_reps: int, seed: int, *args: Any, n_jobs: int = 1,
              **kwargs: Any) -> list[R]:
    """[fn(rng_0, *args, **kwargs), ..., fn(rng_{n-1}, ...)] with generators from
    :func:`spawn_generators`; ``n_jobs`` workers (joblib, processes) when > 1."""
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {fn!r}")
    n_jobs = _check_count(n_jobs, "n_jobs")
    rngs = spawn_generators(seed, n_reps)
    if n_jobs == 1:
        return [fn(rng, *args, **kwargs) for rng in rngs]
    from joblib import Parallel, delayed

    return list(Parallel(n_jobs=n_jobs)(delayed(fn)(rng, *args, **kwargs) for rng in rngs))
