"""Dense references for the Rayleigh quotient (paper Sec. 3), used to check
:func:`rayleigh_quotient` and by the ``rayleigh_identity`` claim.

- :func:`dense_spectral_energy`: sum_k lambda_k x_hat_k^2 / sum_k x_hat_k^2 with
  L = U diag(lambda) U^T from ``numpy.linalg.eigh`` of the dense normalised Laplacian and
  x_hat = U^T x (the paper's "accumulated spectral energy"), and diag(X^T L X) with scipy's
  ``csgraph.laplacian(A, normed=True)``, the official code's unnormalised quantity.
- :func:`edge_case_graphs`: graphs that exercise the corner cases (isolated nodes, a zero channel,
  real-valued features) next to spectral-GAD graphs.

O(n^3) per graph (the kit's dense size guard applies); for checks, not for training.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .synthetic_gad import make_spectral_gad

__all__ = ["dense_spectral_energy", "edge_case_graphs"]


def dense_spectral_energy(graph: Any) -> tuple[np.ndarray, np.ndarray]:
    """For one PyG graph with ``x`` (n, d) and undirected ``edge_index``: the (d,) spectral
    energy sum_k lambda_k x_hat_k^2 / sum_k x_hat_k^2 (0 for a zero channel) and the (d,)
    diag(X^T L X) of the official code, both float64."""
    from scipy.sparse.csgraph import laplacian

    from iclr24.kits.graphs import dense_adjacency, normalized_laplacian

    x = getattr(graph, "x", None)
    if x is None or x.dim() != 2 or x.shape[0] != graph.num_nodes:
        raise ValueError(f"graph.x must have shape (num_nodes={graph.num_nodes}, d); got "
                         f"{tuple(getattr(x, 'shape', ()))}")
    lam, u = np.linalg.eigh(normalized_laplacian(graph.edge_index, graph.num_nodes))
    xn = x.detach().cpu().numpy().astype(np.float64)
    x_hat2 = (u.T @ xn) ** 2  # x_hat = U^T x
    energy = x_hat2.sum(axis=0)
    spectral = np.divide((lam[:, None] * x_hat2).sum(axis=0), energy,
                         out=np.zeros_like(energy), where=energy > 0)
    lap_code = laplacian(dense_adjacency(graph.edge_index, graph.num_nodes), normed=True)
    return spectral, np.einsum("ij,ik,kj->j", xn, lap_code, xn)  # diag(X^T L X)


def edge_case_graphs(num: int, *, seed: int) -> list:
    """``num`` kit-family graphs (random trees, grids, rings of cliques) with 0-3 isolated nodes
    appended, 5 Gaussian feature channels of which channel 2 is zero, followed by ``num``
    spectral-GAD graphs (one-hot types, shuffle_frac 0.5, labels set): 2 * num graphs."""
    if isinstance(num, bool) or not isinstance(num, int) or num < 2:
        raise ValueError(f"num must be an int >= 2; got {num!r}")
    import torch

    from iclr24.kits.graphs import grid, random_tree, ring_of_cliques, to_pyg

    rng = np.random.default_rng(seed)
    out = []
    for i in range(num):
        kind = i % 3
        if kind == 0:
            g = random_tree(int(rng.integers(5, 30)), seed=seed + i)
        elif kind == 1:
            g = grid(int(rng.integers(2, 6)), int(rng.integers(2, 6)), seed=seed + i)
        else:
            g = ring_of_cliques(int(rng.integers(2, 5)), int(rng.integers(2, 5)), seed=seed + i)
        n = g.number_of_nodes()
        g.add_nodes_from(range(n, n + int(rng.integers(0, 4))))  # isolated nodes
        x = rng.standard_normal((g.number_of_nodes(), 5))
        x[:, 2] = 0.0  # a channel absent from the graph
        out.append(to_pyg(g, x=torch.as_tensor(x, dtype=torch.float32)))
    return out + make_spectral_gad(num, shuffle_frac=0.5, seed=seed)
