"""Horizontal data partitioners for federated simulations: Dirichlet label skew and IID.

Dirichlet label skew (Hsu et al. 2019, the split FedImpro and CA²FL use): for every class c draw
client proportions ``p_c ~ Dir(alpha · 1_K)`` and cut that class's (shuffled) indices at the
cumulative proportions. Small ``alpha`` gives each client a few dominant classes; large ``alpha``
tends to IID. As in ``flwr-datasets``' ``DirichletPartitioner`` (whose semantics we mirror without
depending on it), the whole draw is repeated until every client holds at least
``min_partition_size`` samples; after ``max_attempts`` failures a ``ValueError`` explains what to
relax. Vertical (feature) splits live with VertiBench, not here.

Everything is a pure function of its arguments and ``seed``: the same seed gives the same
partition on every machine (numpy's PCG64 stream), so compared methods see identical clients.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["check_partitions", "dirichlet_label_partition", "iid_partition",
           "partition_class_counts"]


def _as_labels(labels: Sequence[int] | np.ndarray) -> np.ndarray:
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise ValueError(f"labels must be a 1-D array of class ids, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError("labels must not be empty")
    if not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise TypeError(f"labels must be integer class ids, got dtype {arr.dtype}")
    if arr.min() < 0:
        raise ValueError("labels must be non-negative class ids")
    return arr.astype(np.int64)


def _check_num_clients(num_clients: int, n: int) -> None:
    if not isinstance(num_clients, (int, np.integer)) or isinstance(num_clients, bool):
        raise TypeError(f"num_clients must be an int, got {num_clients!r}")
    if num_clients < 1:
        raise ValueError(f"num_clients must be >= 1, got {num_clients}")
    if num_clients > n:
        raise ValueError(f"num_clients ({num_clients}) must not exceed the number of samples ({n}):"
                         " every client needs at least one sample")


def iid_partition(num_samples: int, num_clients: int, *, seed: int = 0) -> list[np.ndarray]:
    """Shuffle ``range(num_samples)`` and cut it into ``num_clients`` near-equal parts.

    Returns a list of ``num_clients`` int64 index arrays (sizes differ by at most one) that
    together cover every sample exactly once.
    """
    if not isinstance(num_samples, (int, np.integer)) or num_samples < 1:
        raise ValueError(f"num_samples must be a positive int, got {num_samples!r}")
    _check_num_clients(num_clients, int(num_samples))
    rng = np.random.default_rng(seed)
    perm = rng.permutation(int(num_samples))
    return [np.sort(part).astype(np.int64) for part in np.array_split(perm, int(num_clients))]


def dirichlet_label_partition(
    labels: Sequence[int] | np.ndarray,
    num_clients: int,
    alpha: float | Sequence[float],
    *,
    min_partition_size: int = 1,
    max_attempts: int = 100,
    seed: int = 0,
) -> list[np.ndarray]:
    """Dirichlet label-skew partition of sample indices over ``num_clients`` clients.

    labels: (n,) integer class ids. alpha: the Dirichlet concentration (> 0), a scalar or one
    value per client. Returns ``num_clients`` sorted int64 index arrays, disjoint, covering all n
    samples, each of size >= ``min_partition_size``. Deterministic in ``seed``.

    Raises ValueError for alpha <= 0, more clients than samples, ``min_partition_size ·
    num_clients > n``, or when ``max_attempts`` draws all leave some client too small.
    """
    y = _as_labels(labels)
    n = y.size
    _check_num_clients(num_clients, n)
    k = int(num_clients)
    alpha_vec = np.asarray(alpha, dtype=np.float64)
    if alpha_vec.ndim == 0:
        alpha_vec = np.full(k, float(alpha_vec))
    if alpha_vec.shape != (k,):
        raise ValueError(f"alpha must be a scalar or have one value per client ({k}), "
                         f"got shape {alpha_vec.shape}")
    if not np.all(np.isfinite(alpha_vec)) or np.any(alpha_vec <= 0):
        raise ValueError(f"alpha must be > 0 (Dirichlet concentration), got {alpha!r}")
    if not isinstance(min_partition_size, (int, np.integer)) or min_partition_size < 0:
        raise ValueError(f"min_partition_size must be a non-negative int, got {min_partition_size!r}")
    if min_partition_size * k > n:
        raise ValueError(f"min_partition_size ({min_partition_size}) x num_clients ({k}) exceeds "
                         f"the number of samples ({n})")
    if not isinstance(max_attempts, (int, np.integer)) or max_attempts < 1:
        raise ValueError(f"max_attempts must be a positive int, got {max_attempts!r}")

    rng = np.random.default_rng(seed)
    classes = np.unique(y)
    smallest = -1
    for _ in range(int(max_attempts)):
        parts: list[list[np.ndarray]] = [[] for _ in range(k)]
        for c in classes:
            idx = np.flatnonzero(y == c)
            rng.shuffle(idx)
            p = rng.dirichlet(alpha_vec)  # p_c ~ Dir(alpha): this class's share per client
            cuts = (np.cumsum(p)[:-1] * idx.size).astype(np.int64)
            for client, chunk in enumerate(np.split(idx, cuts)):
                parts[client].append(chunk)
        out = [np.sort(np.concatenate(p)).astype(np.int64) for p in parts]
        smallest = min(o.size for o in out)
        if smallest >= min_partition_size:
            return out
    raise ValueError(
        f"could not draw a Dirichlet(alpha={alpha!r}) partition over {k} clients with every client "
        f"holding >= {min_partition_size} samples in {max_attempts} attempts (last smallest: "
        f"{smallest}); raise alpha, lower min_partition_size or num_clients, or raise max_attempts")


def partition_class_counts(labels: Sequence[int] | np.ndarray, partitions: Sequence[np.ndarray],
                           num_classes: int | None = None) -> np.ndarray:
    """(num_clients, num_classes) matrix of how many samples of each class each client holds."""
    y = _as_labels(labels)
    c = int(y.max()) + 1 if num_classes is None else int(num_classes)
    if c <= int(y.max()):
        raise ValueError(f"num_classes ({c}) must exceed the largest label ({int(y.max())})")
    return np.stack([np.bincount(y[np.asarray(p, dtype=np.int64)], minlength=c)
                     for p in partitions]).astype(np.int64)


def check_partitions(partitions: Sequence[np.ndarray | Sequence[int]], num_samples: int
                     ) -> list[np.ndarray]:
    """Validate client index arrays into a dataset of ``num_samples`` rows.

    Each must be a non-empty 1-D array of integer indices in [0, num_samples), and no index
    may appear twice (within a client or across clients: a sample held by two clients would be
    counted twice by FedAvg's weights and the class statistics). Returns them as int64 arrays;
    raises ValueError naming the first offending client.
    """
    if len(partitions) == 0:
        raise ValueError("partitions must hold at least one client's indices")
    out: list[np.ndarray] = []
    seen = np.full(int(num_samples), -1, dtype=np.int64)
    for k, part in enumerate(partitions):
        arr = np.asarray(part)
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError(f"partitions[{k}] must be a non-empty 1-D index array, got shape "
                             f"{arr.shape}")
        if not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(f"partitions[{k}] must hold integer indices, got dtype {arr.dtype}")
        arr = arr.astype(np.int64)
        if arr.min() < 0 or arr.max() >= num_samples:
            raise ValueError(f"partitions[{k}] has indices outside [0, {num_samples})")
        uniq, cnt = np.unique(arr, return_counts=True)
        if np.any(cnt > 1):
            raise ValueError(f"partitions[{k}] repeats sample index {int(uniq[cnt > 1][0])}")
        clash = seen[uniq] >= 0
        if clash.any():
            i = int(uniq[clash][0])
            raise ValueError(f"sample index {i} is held by clients {int(seen[i])} and {k}; "
                             "partitions must be disjoint")
        seen[uniq] = k
        out.append(arr)
    return out
