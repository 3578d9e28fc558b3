"""A small transformer denoiser of Calpha traces: the stand-in for Genie.

Genie (Lin & AlQuraishi 2023, aqlaboratory/genie) is an SE(3)-equivariant DDPM on Calpha
coordinates trained on SCOPe (T = 1000); the paper uses its "scope_l_256" weights frozen. Neither
those weights nor SCOPe are in reach here (no downloads, CPU only), so the claims train this
model on the procedural traces of :mod:`.backbones` and freeze it. Any callable
``model(x_t, t) -> eps_hat`` (a wrapper around Genie included) plugs into the guidance code.

Architecture: a pre-norm transformer over residues. A token is a linear map of the residue's
(noisy) coordinates plus a learned residue-index embedding plus a sinusoidal embedding of the
diffusion step; every head's attention logits get a learned bias for the signed sequence
separation j - i (clipped at +-16) and a learned function of |x_i - x_j| (Gaussian radial
basis), so the network sees both the chain and the geometry. The last layer maps each token to
a vector F, and the model returns the clean estimate

    x0_hat = sqrt(abar_t) x_t - sqrt(1 - abar_t) F                 (v-parameterisation)

(Salimans & Ho 2022; for unit-variance data it is Karras et al.'s preconditioning), centre of
mass removed (the process lives in the COM-free subspace). The noise estimate follows as
eps_hat = (x_t - sqrt(abar_t) x0_hat) / sqrt(1 - abar_t); predicting the noise directly (as
Genie does) made 50-200-step cosine chains diverge in their first steps here (1 / sqrt(alpha_t)
~ 30 amplifies the error), and predicting x0 without the skip term left the local geometry
unlearnt. :func:`v_loss` is the matching training loss, |F - F*|^2 = |x0_hat - x0|^2 /
(1 - abar_t). Unlike Genie's network it is not rotation-equivariant: the training loop rotates
every batch at random instead (a deviation: an equivariant GNN on all residue pairs cost ~10x
more CPU per step here).
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["CalphaDenoiser", "random_rotations", "v_loss"]


def _step_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device) / half)
    ang = t.to(torch.float32)[:, None] * freqs[None]
    return torch.cat([ang.sin(), ang.cos()], dim=-1)


def random_rotations(n: int, generator: torch.Generator | None = None,
                     dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """(n, 3, 3) rotation matrices, uniform on SO(3) (QR of a Gaussian, signs fixed)."""
    g = torch.randn((n, 3, 3), generator=generator, dtype=torch.float64)
    q, r = torch.linalg.qr(g)
    q = q * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1)).unsqueeze(-2)
    q[:, :, 0] *= torch.sign(torch.linalg.det(q)).unsqueeze(-1)  # det +1
    return q.to(dtype)


class _Block(nn.Module):
    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.ff = nn.Sequential(nn.Linear(hidden, 2 * hidden), nn.GELU(),
                                nn.Linear(2 * hidden, hidden))

    def forward(self, h: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        b, n, d = h.shape
        q, k, v = self.qkv(self.norm1(h)).view(b, n, 3, self.heads, d // self.heads) \
            .permute(2, 0, 3, 1, 4)
        att = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        h = h + self.out(att.transpose(1, 2).reshape(b, n, d))
        return h + self.ff(self.norm2(h))


class CalphaDenoiser(nn.Module):
    """x0_hat = model(x_t, t) for Calpha traces in the diffusion's units (``predict="x0"``).

    abar:    (T,) cumulative products of the diffusion's alphas (``diffusion.abar``).
    n_res:   chain length N (residue indices are embedded).
    hidden:  token width; layers: transformer blocks; heads: attention heads.
    n_rbf:   radial basis functions of pair distances on [0, rbf_max] (diffusion units).
    forward: x (B, N, 3), t (B,) long diffusion steps -> x0_hat (B, N, 3), COM-free.
    """

    def __init__(self, abar: torch.Tensor, n_res: int, hidden: int = 64, layers: int = 4,
                 heads: int = 4, n_rbf: int = 12, rbf_max: float = 2.4,
                 max_sep: int = 16) -> None:
        super().__init__()
        abar = torch.as_tensor(abar, dtype=torch.float64).flatten()
        if abar.numel() < 1 or torch.any(abar <= 0) or torch.any(abar >= 1):
            raise ValueError("abar must be a non-empty sequence in (0, 1)")
        self.register_buffer("abar", abar.float(), persistent=False)
        for name, v in (("n_res", n_res), ("hidden", hidden), ("layers", layers),
                        ("heads", heads), ("n_rbf", n_rbf), ("max_sep", max_sep)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if hidden % heads or hidden % 2:
            raise ValueError(f"hidden ({hidden}) must be even and divisible by heads ({heads})")
        if not rbf_max > 0:
            raise ValueError(f"rbf_max must be positive, got {rbf_max!r}")
        self.n_res, self.hidden, self.heads, self.max_sep = n_res, hidden, heads, max_sep
        self.coords = nn.Linear(3, hidden)
        self.residue = nn.Embedding(n_res, hidden)
        self.step = nn.Sequential(nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
        self.separation = nn.Embedding(2 * max_sep + 1, heads * layers)
        self.distance = nn.Linear(n_rbf, heads * layers, bias=False)
        self.blocks = nn.ModuleList(_Block(hidden, heads) for _ in range(layers))
        self.head = nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, 3))
        self.register_buffer("rbf_centres", torch.linspace(0.0, rbf_max, n_rbf),
                             persistent=False)
        self.rbf_width = rbf_max / max(n_rbf - 1, 1)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        if x.dim() != 3 or x.shape[1] != self.n_res or x.shape[2] != 3:
            raise ValueError(f"x must have shape (B, {self.n_res}, 3), got {tuple(x.shape)}")
        b, n, _ = x.shape
        t = torch.as_tensor(t, device=x.device).long().reshape(-1).expand(b)
        if int(t.min()) < 0 or int(t.max()) >= self.abar.numel():
            raise ValueError(f"t must lie in [0, {self.abar.numel()}), got {t.tolist()}")
        idx = torch.arange(n, device=x.device)
        h = self.coords(x) + self.residue(idx) + self.step(_step_embedding(t, self.hidden))[:, None]
        rel = (idx[None, :] - idx[:, None]).clamp(-self.max_sep, self.max_sep) + self.max_sep
        dist = ((x.unsqueeze(2) - x.unsqueeze(1)).pow(2).sum(-1) + 1e-8).sqrt()
        rbf = torch.exp(-((dist.unsqueeze(-1) - self.rbf_centres) / self.rbf_width) ** 2)
        bias = (self.separation(rel) + self.distance(rbf))  # (B, N, N, heads * layers)
        bias = bias.view(b, n, n, len(self.blocks), self.heads).permute(3, 0, 4, 1, 2)
        for block, layer_bias in zip(self.blocks, bias):
            h = block(h, layer_bias)
        f = self.head(h)
        ab = self.abar[t.cpu()].to(x.device)[:, None, None]
        x0 = ab.sqrt() * x - (1 - ab).sqrt() * f  # x0_hat = sqrt(abar) x_t - sqrt(1 - abar) F
        return x0 - x0.mean(dim=1, keepdim=True)


def v_loss(model: CalphaDenoiser, x0: torch.Tensor, generator: torch.Generator | None = None
           ) -> torch.Tensor:
    """|x0_hat - x0|^2 / (1 - abar_t) at a uniform random step, COM-free noise: x0 (B, N, 3)."""
    from iclr24.kits.diffusion import com_free_noise

    t = torch.randint(0, model.abar.numel(), (x0.shape[0],), generator=generator)
    ab = model.abar[t][:, None, None].to(x0)
    noise = com_free_noise(tuple(x0.shape), generator, dtype=x0.dtype)
    xt = ab.sqrt() * x0 + (1 - ab).sqrt() * noise  # q(x_t | x_0)
    return ((model(xt, t) - x0) ** 2 / (1 - ab)).mean()
