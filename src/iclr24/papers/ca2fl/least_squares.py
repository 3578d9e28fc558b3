"""The convex test bed of the CA²FL reproduction: federated least squares with two clusters.

Client i holds (A_i, b_i) with ``b_i = A_i w_i* + noise`` and ``w_i* = w* + zeta u_{c(i)}``,
where c(i) in {0, 1} is the client's cluster and ``u_0 = -u_1`` (unit norm), so ``zeta`` is the
heterogeneity. The global objective is the average of the client losses
``f_i(w) = ||A_i w - b_i||^2 / (2 n_i)``; its minimiser has the closed form
``x* = (sum_i A_i^T A_i / n_i)^{-1} sum_i A_i^T b_i / n_i``.

Cluster 0 is made fast and cluster 1 slow (the claim's delay law), so FedBuff's buffer is
dominated by cluster 0 and its fixed point drifts toward cluster 0's optimum; CA²FL's caches keep
the slow cluster's latest updates in every step. Clients run K full-batch gradient steps (the
convex problem is deterministic, so the measured error is bias + staleness, not noise).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from iclr24.kits.federated import ClientUpdate, FitConfig

__all__ = ["LeastSquaresClient", "LeastSquaresProblem", "make_least_squares"]


@dataclass(frozen=True)
class LeastSquaresProblem:
    """A: (N, n, d) designs, b: (N, n) targets, cluster: (N,) in {0,1}, x_star: (d,) minimiser."""

    A: torch.Tensor
    b: torch.Tensor
    cluster: np.ndarray
    x_star: torch.Tensor

    @property
    def num_clients(self) -> int:
        return int(self.A.shape[0])

    def global_loss(self, w: torch.Tensor) -> float:
        """(1/N) sum_i ||A_i w - b_i||^2 / (2 n)."""
        r = torch.einsum("knd,d->kn", self.A, w) - self.b
        return float(0.5 * r.pow(2).mean(1).mean())


def make_least_squares(num_clients: int = 40, dim: int = 20, samples_per_client: int = 50,
                       zeta: float = 1.0, noise: float = 0.1, *, seed: int = 0
                       ) -> LeastSquaresProblem:
    """Draw the two-cluster problem; the first half of the clients is cluster 0."""
    if num_clients < 2 or dim < 1 or samples_per_client < 1:
        raise ValueError("need num_clients >= 2, dim >= 1, samples_per_client >= 1")
    if zeta < 0 or noise < 0:
        raise ValueError("zeta and noise must be >= 0")
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(dim)
    u = rng.standard_normal(dim)
    u /= np.linalg.norm(u)
    cluster = (np.arange(num_clients) >= num_clients // 2).astype(np.int64)
    A = rng.standard_normal((num_clients, samples_per_client, dim))
    w_i = w[None, :] + zeta * np.where(cluster[:, None] == 0, u[None, :], -u[None, :])
    b = np.einsum("knd,kd->kn", A, w_i) + noise * rng.standard_normal((num_clients,
                                                                       samples_per_client))
    H = np.einsum("knd,kne->de", A, A) / samples_per_client  # sum_i A_i^T A_i / n
    g = np.einsum("knd,kn->d", A, b) / samples_per_client  # sum_i A_i^T b_i / n
    x_star = np.linalg.solve(H, g)
    return LeastSquaresProblem(torch.as_tensor(A), torch.as_tensor(b), cluster,
                               torch.as_tensor(x_star))


class LeastSquaresClient:
    """Client i: ``K`` full-batch gradient steps on f_i from the received model (lr eta_l)."""

    def __init__(self, problem: LeastSquaresProblem, index: int, local_steps: int = 5,
                 lr: float = 0.1) -> None:
        if not 0 <= index < problem.num_clients:
            raise ValueError(f"index must be in [0, {problem.num_clients}), got {index}")
        if local_steps < 1 or lr <= 0:
            raise ValueError("local_steps must be >= 1 and lr > 0")
        self.A = problem.A[index]
        self.b = problem.b[index]
        self.AtA = self.A.T @ self.A / self.A.shape[0]
        self.Atb = self.A.T @ self.b / self.A.shape[0]
        self.local_steps, self.lr = local_steps, lr

    def fit(self, params: torch.Tensor, config: FitConfig) -> ClientUpdate:
        w = params.clone()
        for _ in range(self.local_steps):
            w = w - self.lr * (self.AtA @ w - self.Atb)  # grad f_i = A^T (A w - b) / n
        return ClientUpdate(delta=w - params, num_examples=int(self.A.shape[0]))
