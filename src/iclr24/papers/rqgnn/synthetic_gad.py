"""Synthetic graph-level anomaly detection data whose only class difference is spectral.

The paper's benchmarks (ten TUDataset anticancer screens: MCF-7, MOLT-4, PC-3, SW-620, NCI-H23,
OVCAR-8, P388, SF-295, SN12C, UACC257; tens of thousands of molecules, ~5-10% anomalous) are
downloaded at run time by PyG and ship in no wheel, so their numbers are out of reach here.
These graphs stand in for them: small connected graphs (Barabási–Albert with m = 2 or random
geometric graphs, from ``iclr24.kits.graphs``) with one-hot node "types" (like atom types).

- Normal graph: a smooth signal f = U[:, 1:4] c on the low eigenvectors of its normalised
  Laplacian (c ~ N(0, I)), cut into ``num_types`` equal-count bins by quantile -> one-hot types.
  Neighbours tend to share a type, so every type channel has a low Rayleigh quotient.
- Anomalous graph: generated the same way, then the types of a random ``shuffle_frac`` fraction
  of the nodes are permuted among those nodes (higher Rayleigh quotient).

Graph family, size, degree statistics and the type histogram have the same distribution in both
classes by construction; only how the types sit on the graph (their spectral energy) differs.
``shuffle_frac`` = 1 is easy; smaller fractions make the anomalies subtler.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

__all__ = ["make_spectral_gad"]

_SMOOTH_MODES = slice(1, 4)  # U[:, 1:4]: the three lowest non-trivial eigenvectors


def _smooth_types(laplacian: np.ndarray, num_types: int, rng: np.random.Generator) -> np.ndarray:
    """(n,) int types in 0..num_types-1 from a random smooth signal on ``laplacian`` (n, n)."""
    _, u = np.linalg.eigh(laplacian)
    f = u[:, _SMOOTH_MODES] @ rng.standard_normal(u[:, _SMOOTH_MODES].shape[1])  # f = U[:,1:4] c
    ranks = np.argsort(np.argsort(f, kind="stable"), kind="stable")
    return (ranks * num_types) // len(f)  # equal-count quantile bins


def _check(num_graphs: Any, anomaly_rate: Any, n_range: Any, num_types: Any,
           shuffle_frac: Any) -> tuple[int, int]:
    if isinstance(num_graphs, bool) or not isinstance(num_graphs, int) or num_graphs < 2:
        raise ValueError(f"num_graphs must be an int >= 2; got {num_graphs!r}")
    if isinstance(anomaly_rate, bool) or not isinstance(anomaly_rate, (int, float)) \
            or not 0.0 < anomaly_rate < 1.0:
        raise ValueError(f"anomaly_rate must be a number in (0, 1); got {anomaly_rate!r}")
    try:
        lo, hi = (int(v) for v in n_range)
    except (TypeError, ValueError):
        raise TypeError(f"n_range must be a pair of ints (min_nodes, max_nodes); got "
                        f"{n_range!r}") from None
    if not 5 <= lo <= hi:
        raise ValueError(f"n_range must satisfy 5 <= min_nodes <= max_nodes (a smooth signal "
                         f"needs four eigenvectors; an empty graph is refused); got {n_range!r}")
    if isinstance(num_types, bool) or not isinstance(num_types, int) or not 2 <= num_types <= lo:
        raise ValueError(f"num_types must be an int in 2..min_nodes={lo}; got {num_types!r}")
    if isinstance(shuffle_frac, bool) or not isinstance(shuffle_frac, (int, float)) \
            or not 0.0 <= shuffle_frac <= 1.0:
        raise ValueError(f"shuffle_frac must be a number in [0, 1]; got {shuffle_frac!r}")
    return lo, hi


@functools.lru_cache(maxsize=4)
def _base_graphs(num_graphs: int, anomaly_rate: float, lo: int, hi: int, num_types: int,
                 seed: int) -> tuple[tuple[np.ndarray, np.ndarray, int], ...]:
    """(edge_index (2, E), smooth types (n,), label) per graph; cached so that datasets that
    differ only in ``shuffle_frac`` share their graphs, smooth types and labels (and the cost)."""
    from iclr24.kits.graphs import barabasi_albert, normalized_laplacian, random_geometric, to_pyg

    rng = np.random.default_rng(seed)
    num_anomalous = min(max(1, round(anomaly_rate * num_graphs)), num_graphs - 1)
    labels = np.zeros(num_graphs, dtype=np.int64)
    labels[rng.choice(num_graphs, size=num_anomalous, replace=False)] = 1
    out = []
    for label in labels:
        n = int(rng.integers(lo, hi + 1))
        graph_seed = int(rng.integers(2**31))
        if rng.random() < 0.5:
            g = barabasi_albert(n, 2, seed=graph_seed)
        else:  # radius 1.5x the connectivity threshold sqrt(log n / (pi n))
            g = random_geometric(n, 1.5 * math.sqrt(math.log(n) / (math.pi * n)), seed=graph_seed)
        edge_index = to_pyg(g).edge_index
        types = _smooth_types(normalized_laplacian(edge_index, n), num_types, rng)
        out.append((edge_index.numpy(), types, int(label)))
    return tuple(out)


def make_spectral_gad(num_graphs: int, *, anomaly_rate: float = 0.1,
                      n_range: tuple[int, int] = (20, 40), num_types: int = 8,
                      shuffle_frac: float = 1.0, seed: int) -> list:
    """``num_graphs`` PyG ``Data`` graphs: ``x`` one-hot types (n, num_types), ``y`` (1,) with
    1 = anomalous (exactly round(anomaly_rate * num_graphs) of them, at least one) and 0 =
    normal, in random order. Same seed -> same graphs; for one seed, datasets with different
    ``shuffle_frac`` share the graphs, labels and normal types (only the anomalies' shuffles
    differ)."""
    lo, hi = _check(num_graphs, anomaly_rate, n_range, num_types, shuffle_frac)
    import torch
    from torch_geometric.data import Data

    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int; got {seed!r}")
    base = _base_graphs(num_graphs, float(anomaly_rate), lo, hi, num_types, int(seed))
    rng = np.random.default_rng((int(seed), 1))  # the anomalies' shuffles
    graphs = []
    for edge_index, smooth, label in base:
        n = len(smooth)
        types = smooth.copy()
        if label == 1:
            moved = rng.choice(n, size=round(shuffle_frac * n), replace=False)
            types[moved] = types[rng.permutation(moved)]  # same histogram, scrambled placement
        x = torch.nn.functional.one_hot(torch.as_tensor(types), num_types).float()
        graphs.append(Data(x=x, edge_index=torch.tensor(edge_index), num_nodes=n,
                           y=torch.tensor([label], dtype=torch.long)))
    return graphs
