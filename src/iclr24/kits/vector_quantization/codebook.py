"""A VQ-VAE codebook: nearest-code quantisation with the straight-through estimator.

For an encoder output z and codebook e_1..e_K (van den Oord et al. 2017; taming's VQGAN):

    k*(z) = argmin_k ||z - e_k||^2,        z_q = e_{k*}
    L_vq  = ||sg[z] - z_q||^2 + beta * ||z - sg[z_q]||^2     (codebook + commitment)
    z_st  = z + sg[z_q - z]                                   (straight-through gradient)

Small-scale training collapses codebooks easily, so the quantiser also keeps a usage count per
code, initialises the codebook from k-means of encoder outputs (scikit-learn's ``KMeans``) and
replaces codes unused since the last restart by random encoder outputs. Usage perplexity
exp(H(p)) (p: the codes' frequencies in a batch) says how many codes are effectively in use.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

__all__ = ["VQOutput", "VectorQuantizer", "code_perplexity"]


@dataclass(frozen=True)
class VQOutput:
    """What :meth:`VectorQuantizer.forward` returns.

    quantized:  straight-through quantised tensor, same shape as the input.
    indices:    code index per vector: (B, H, W) for a (B, C, H, W) input, (N,) for (N, C).
    loss:       scalar codebook + beta * commitment loss.
    perplexity: scalar usage perplexity of this batch (no gradient).
    """

    quantized: torch.Tensor
    indices: torch.Tensor
    loss: torch.Tensor
    perplexity: torch.Tensor


def code_perplexity(indices: torch.Tensor, n_codes: int) -> torch.Tensor:
    """exp of the entropy of the code frequencies in ``indices`` (1 = one code, K = uniform)."""
    if isinstance(n_codes, bool) or not isinstance(n_codes, int) or n_codes < 1:
        raise ValueError(f"n_codes must be a positive int, got {n_codes!r}")
    if indices.dtype not in (torch.int64, torch.int32) or indices.numel() == 0:
        raise ValueError("indices must be a non-empty integer tensor")
    flat = indices.reshape(-1).long()
    if flat.min() < 0 or flat.max() >= n_codes:
        raise ValueError(f"indices must lie in [0, {n_codes})")
    p = torch.bincount(flat, minlength=n_codes).double() / flat.numel()
    nz = p[p > 0]
    return torch.exp(-(nz * nz.log()).sum()).to(torch.float32)


class VectorQuantizer(nn.Module):
    """Codebook of ``n_codes`` vectors of size ``dim``.

    beta: commitment weight (0.25 in VQ-VAE and taming).
    Inputs are (B, dim, H, W) feature maps (channels first, as conv encoders give) or (N, dim)
    vectors.
    """

    def __init__(self, n_codes: int, dim: int, beta: float = 0.25) -> None:
        super().__init__()
        for arg, v in (("n_codes", n_codes), ("dim", dim)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{arg} must be a positive int, got {v!r}")
        if not isinstance(beta, (int, float)) or isinstance(beta, bool) or beta < 0:
            raise ValueError(f"beta must be a non-negative number, got {beta!r}")
        self.n_codes, self.dim, self.beta = n_codes, dim, float(beta)
        self.codebook = nn.Embedding(n_codes, dim)
        nn.init.uniform_(self.codebook.weight, -1.0 / n_codes, 1.0 / n_codes)  # taming's init
        self.register_buffer("usage", torch.zeros(n_codes))

    def _flatten(self, z: torch.Tensor) -> tuple[torch.Tensor, tuple[int, ...] | None]:
        if not isinstance(z, torch.Tensor) or not z.is_floating_point():
            raise TypeError("z must be a floating-point torch.Tensor")
        if z.dim() == 4 and z.shape[1] == self.dim:
            b, c, h, w = z.shape
            return z.permute(0, 2, 3, 1).reshape(-1, c), (b, h, w)
        if z.dim() == 2 and z.shape[1] == self.dim:
            return z, None
        raise ValueError(f"z must have shape (B, {self.dim}, H, W) or (N, {self.dim}), "
                         f"got {tuple(z.shape)}")

    def nearest(self, z: torch.Tensor) -> torch.Tensor:
        """Index of the nearest code (squared Euclidean) for every vector of ``z``."""
        flat, grid = self._flatten(z)
        e = self.codebook.weight
        d = (flat.pow(2).sum(1, keepdim=True) - 2 * flat @ e.t()
             + e.pow(2).sum(1)[None, :])  # ||z||^2 - 2 z.e + ||e||^2
        idx = d.argmin(dim=1)
        return idx if grid is None else idx.view(*grid)

    def lookup(self, indices: torch.Tensor) -> torch.Tensor:
        """Code vectors for ``indices``: (B, H, W) -> (B, dim, H, W); (N,) -> (N, dim)."""
        if indices.dtype not in (torch.int64, torch.int32):
            raise TypeError("indices must be an integer tensor")
        if indices.numel() and (indices.min() < 0 or indices.max() >= self.n_codes):
            raise ValueError(f"indices must lie in [0, {self.n_codes})")
        e = self.codebook(indices.long())
        return e.permute(0, 3, 1, 2).contiguous() if indices.dim() == 3 else e

    def forward(self, z: torch.Tensor) -> VQOutput:
        flat, grid = self._flatten(z)
        idx = self.nearest(flat)
        zq = self.codebook(idx)
        loss = (torch.mean((flat.detach() - zq) ** 2)
                + self.beta * torch.mean((flat - zq.detach()) ** 2))  # L_vq
        if self.training:
            with torch.no_grad():
                self.usage += torch.bincount(idx, minlength=self.n_codes).to(self.usage)
        zst = flat + (zq - flat).detach()  # straight-through
        if grid is not None:
            b, h, w = grid
            zst = zst.view(b, h, w, self.dim).permute(0, 3, 1, 2).contiguous()
            idx = idx.view(b, h, w)
        with torch.no_grad():
            ppl = code_perplexity(idx, self.n_codes)
        return VQOutput(zst, idx, loss, ppl)

    @torch.no_grad()
    def init_kmeans(self, z: torch.Tensor, seed: int = 0) -> None:
        """Set the codebook to the k-means centroids of the vectors in ``z`` (needs at least
        ``n_codes`` distinct vectors) and clear the usage counts."""
        from sklearn.cluster import KMeans

        flat, _ = self._flatten(z)
        x = flat.detach().cpu().double().numpy()
        if len(np.unique(x.round(8), axis=0)) < self.n_codes:
            raise ValueError(f"k-means init needs at least n_codes={self.n_codes} distinct "
                             f"vectors, got {len(np.unique(x.round(8), axis=0))}")
        km = KMeans(n_clusters=self.n_codes, n_init=1, random_state=seed).fit(x)
        self.codebook.weight.copy_(torch.as_tensor(km.cluster_centers_,
                                                   dtype=self.codebook.weight.dtype))
        self.usage.zero_()

    @torch.no_grad()
    def restart_dead_codes(self, z: torch.Tensor, generator: torch.Generator,
                           min_usage: float = 1.0) -> int:
        """Replace every code used fewer than ``min_usage`` times since the last restart by a
        vector of ``z`` drawn at random (with ``generator``, on z's device), reset the counts and
        return how many codes were replaced."""
        flat, _ = self._flatten(z)
        dead = torch.nonzero(self.usage < min_usage).flatten()
        if len(dead):
            pick = torch.randint(0, flat.shape[0], (len(dead),), generator=generator,
                                 device=generator.device).to(flat.device)
            self.codebook.weight[dead.to(self.codebook.weight.device)] = \
                flat.detach()[pick].to(self.codebook.weight)
        self.usage.zero_()
        return len(dead)
