"""The paper's unsupervised step: an autoencoder with a cosine-similarity reconstruction loss
compresses each kernel to a tiny latent code, then the codes are clustered (k-means here).
Clusters are named by a rule, never by eye: a cluster is "identified" when the mean of its
(L2-normalised) kernels matches a DoG-family template with cosine >= tau.

The encoder sizes (k^2 -> 64 -> 16 -> latent), latent size 2 and the clustering method were not
retrieved from the paper; they are the spec's choices, kept as parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import torch
from torch import nn

from .matching import as_kernel_array, match_templates
from .templates import template_family

__all__ = [
    "ClusterResult",
    "KernelAutoencoder",
    "cluster_kernels",
    "cosine_loss",
    "name_clusters",
]


def cosine_loss(recon: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """mean(1 - cos(recon, target)) over rows (scale-invariant, sign-sensitive)."""
    return (1 - nn.functional.cosine_similarity(recon, target, dim=-1, eps=1e-8)).mean()


class KernelAutoencoder(nn.Module):
    """x: (N, k*k) -> (recon (N, k*k), z (N, latent_dim)). MLP k^2 -> 64 -> 16 -> latent."""

    def __init__(self, k: int = 7, latent_dim: int = 2, hidden=(64, 16)) -> None:
        super().__init__()
        if latent_dim < 1:
            raise ValueError(f"latent_dim must be >= 1, got {latent_dim!r}")
        dims = [k * k, *hidden, latent_dim]
        enc, dec = [], []
        for a, b in pairwise(dims):
            enc += [nn.Linear(a, b), nn.GELU()]
        for a, b in pairwise(dims[::-1]):
            dec += [nn.Linear(a, b), nn.GELU()]
        self.encoder = nn.Sequential(*enc[:-1])
        self.decoder = nn.Sequential(*dec[:-1])

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = self.encoder(x)
        return self.decoder(z), z


@dataclass(frozen=True)
class ClusterResult:
    """assignments (N,), centroids (n_clusters, k, k) = mean normalised kernel per cluster,
    latent (N, latent_dim), sizes (n_clusters,), final autoencoder loss."""

    assignments: np.ndarray
    centroids: np.ndarray
    latent: np.ndarray
    sizes: np.ndarray
    loss: float


def cluster_kernels(kernels, latent_dim: int = 2, n_clusters: int = 10, seed: int = 0,
                    steps: int = 1500, lr: float = 3e-3, min_norm: float = 1e-6
                    ) -> ClusterResult:
    """Train a :class:`KernelAutoencoder` (cosine loss, Adam, full batch) on the L2-normalised
    live kernels (N, k, k) and k-means (scikit-learn) their latent codes."""
    from sklearn.cluster import KMeans

    from iclr24.kits.threads import single_threaded, torch_threads

    k = as_kernel_array(kernels)
    flat = k.reshape(len(k), -1)
    norms = np.linalg.norm(flat, axis=1)
    live = flat[norms >= min_norm] / norms[norms >= min_norm, None]
    if isinstance(n_clusters, bool) or not isinstance(n_clusters, int) or n_clusters < 1:
        raise ValueError(f"n_clusters must be a positive int, got {n_clusters!r}")
    if len(live) < n_clusters:
        raise ValueError(f"need at least n_clusters={n_clusters} live kernels, got {len(live)}")
    torch.manual_seed(seed)
    ae = KernelAutoencoder(k.shape[1], latent_dim)
    x = torch.as_tensor(live, dtype=torch.float32)
    opt = torch.optim.Adam(ae.parameters(), lr=lr)
    with torch_threads(1):
        for _ in range(steps):
            recon, _ = ae(x)
            loss = cosine_loss(recon, x)
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            z = ae(x)[1].numpy().astype(np.float64)
    with single_threaded():  # 448 two-dimensional points: OpenMP threads would only spin
        km = KMeans(n_clusters=n_clusters, n_init=10, random_state=seed).fit(z)
    assign = km.labels_
    cents = np.stack([live[assign == c].mean(0) if np.any(assign == c) else np.zeros(live.shape[1])
                      for c in range(n_clusters)]).reshape(n_clusters, *k.shape[1:])
    return ClusterResult(assign, cents, z, np.bincount(assign, minlength=n_clusters),
                         float(loss.detach()))


def name_clusters(result: ClusterResult, templates, labels, tau: float = 0.8
                  ) -> list[dict]:
    """One row per cluster: size, best template label and family, cosine, matched (>= tau)."""
    m = match_templates(result.centroids, templates, tau, labels=labels)
    rows = []
    for c in range(len(result.centroids)):
        lab = None if m.dead[c] else labels[m.best[c]]
        rows.append({"cluster": c, "size": int(result.sizes[c]),
                     "best_template": lab, "family": None if lab is None else template_family(lab),
                     "cosine": float(m.scores[c]) if not m.dead[c] else float("nan"),
                     "matched": bool(m.identified[c])})
    return rows
