"""DAEFR stage 2, the association stage (paper Sec. 3.2, Eq. 3-5; official
``DAEFR/models/association_stage.py``).

The HQ encoder sees the HQ image x_h, the LQ encoder its degraded copy x_l. Every spatial position
of every image's pre-quantisation features (after the 1x1 quant_conv) is a token; with the tokens
L2-normalised, Z_h, Z_l: (B*h*w, C),

    logits = exp(s) * Z_h Z_l^T                                    (Eq. 3, s learnable)
    L_assoc = ( CE(logits, diag) + CE(logits^T, diag) ) / 2        (Eq. 4-5)

s starts at log(1/0.07) and exp(s) is clamped at 100 as in CLIP (the official code leaves it
unclamped). Each branch keeps its own autoencoder loss (L1 + codebook/commitment here; the paper
adds LPIPS and a hinge GAN) and L_assoc is added with weight 1.

Digits have many identical background patches; as duplicate "negatives" they make the
contrastive task ill-posed, so :func:`content_token_mask` lets the loss drop the tokens whose HQ
patch is near-constant (a small-scale addition, not in the paper, which trains on faces).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from iclr24.kits.vector_quantization import VQAutoencoder

from .degradation import check_images

__all__ = ["AssociationConfig", "AssociationFit", "content_token_mask", "fit_association",
           "patch_association_loss", "token_retrieval_accuracy"]

CLIP_MAX_SCALE = 100.0
CLIP_INIT_LOG_SCALE = math.log(1 / 0.07)


def _tokens(z: torch.Tensor, name: str) -> torch.Tensor:
    if not isinstance(z, torch.Tensor) or not z.is_floating_point() or z.dim() != 4:
        raise ValueError(f"{name} must be a floating-point (B, C, H, W) tensor")
    return z.permute(0, 2, 3, 1).reshape(-1, z.shape[1])  # (B*H*W, C), image-major


def _select(z_hq: torch.Tensor, z_lq: torch.Tensor, mask: torch.Tensor | None
            ) -> tuple[torch.Tensor, torch.Tensor]:
    if z_hq.shape != z_lq.shape:
        raise ValueError(f"z_hq and z_lq must have the same shape, got {tuple(z_hq.shape)} and "
                         f"{tuple(z_lq.shape)}")
    h, low = _tokens(z_hq, "z_hq"), _tokens(z_lq, "z_lq")
    if mask is not None:
        b, _, hh, ww = z_hq.shape
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool \
                or tuple(mask.shape) != (b, hh, ww):
            raise ValueError(f"mask must be a bool tensor of shape {(b, hh, ww)}")
        keep = mask.reshape(-1)
        h, low = h[keep], low[keep]
    if h.shape[0] < 2:
        raise ValueError("need at least 2 tokens (after masking) to contrast")
    return F.normalize(h, dim=1), F.normalize(low, dim=1)


def patch_association_loss(z_hq: torch.Tensor, z_lq: torch.Tensor, logit_scale: torch.Tensor, *,
                           mask: torch.Tensor | None = None,
                           max_scale: float = CLIP_MAX_SCALE) -> torch.Tensor:
    """Symmetric patch-level contrastive loss between HQ and LQ features.

    z_hq, z_lq:  (B, C, H, W) pre-quantisation features of an image and its degraded copy.
    logit_scale: scalar tensor s; the logits are scaled by min(exp(s), max_scale).
    mask:        optional (B, H, W) bool; only these tokens take part (as anchors and negatives).
    Returns the scalar loss (Eq. 4-5).
    """
    if not isinstance(logit_scale, torch.Tensor) or logit_scale.numel() != 1:
        raise TypeError("logit_scale must be a one-element tensor (the log of the scale)")
    h, low = _select(z_hq, z_lq, mask)
    scale = logit_scale.reshape(()).exp().clamp(max=max_scale)  # exp(s), clamped as in CLIP
    logits = scale * h @ low.t()  # Eq. 3
    target = torch.arange(h.shape[0], device=h.device)
    return (F.cross_entropy(logits, target) + F.cross_entropy(logits.t(), target)) / 2  # Eq. 5


@torch.no_grad()
def token_retrieval_accuracy(z_hq: torch.Tensor, z_lq: torch.Tensor, *,
                             mask: torch.Tensor | None = None) -> float:
    """Fraction of LQ tokens whose nearest HQ token (cosine, among all tokens of the batch) is
    the one at the same position of the same image. z: (B, C, H, W); mask as in the loss."""
    h, low = _select(z_hq, z_lq, mask)
    nearest = (low @ h.t()).argmax(dim=1)
    return float((nearest == torch.arange(len(low), device=low.device)).float().mean())


def content_token_mask(x_hq: torch.Tensor, grid: tuple[int, int], threshold: float = 0.1
                       ) -> torch.Tensor:
    """(B, h, w) bool: True where the HQ image patch under the token varies by more than
    ``threshold`` (max - min over the patch, image scale [-1, 1]).

    x_hq: (B, C, H, W) with H, W multiples of the grid ``(h, w)``.
    """
    check_images(x_hq, "x_hq")
    gh, gw = grid
    if x_hq.shape[2] % gh or x_hq.shape[3] % gw:
        raise ValueError(f"image size {tuple(x_hq.shape[2:])} is not a multiple of grid {grid}")
    kh, kw = x_hq.shape[2] // gh, x_hq.shape[3] // gw
    hi = F.max_pool2d(x_hq, (kh, kw)).amax(dim=1)
    lo = -F.max_pool2d(-x_hq, (kh, kw)).amax(dim=1)
    return (hi - lo) > threshold


@dataclass(frozen=True)
class AssociationConfig:
    """Stage-2 training: both autoencoders' L1 + VQ losses + ``weight`` * L_assoc, Adam with
    taming's betas (0.5, 0.9). ``mask_threshold``: drop tokens whose HQ patch varies by less
    (``None``: keep every token, as the paper)."""

    steps: int = 300
    batch_size: int = 32
    lr: float = 1e-3
    weight: float = 1.0
    mask_threshold: float | None = 0.1

    def __post_init__(self) -> None:
        for arg in ("steps", "batch_size"):
            v = getattr(self, arg)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{arg} must be a positive int, got {v!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be positive, got {self.lr!r}")
        if not self.weight >= 0:
            raise ValueError(f"weight must be >= 0, got {self.weight!r}")


@dataclass
class AssociationFit:
    """Per-step history of :func:`fit_association` and the learnt scale exp(s)."""

    assoc: list[float] = field(default_factory=list)
    recon_hq: list[float] = field(default_factory=list)
    recon_lq: list[float] = field(default_factory=list)
    logit_scale: float = math.exp(CLIP_INIT_LOG_SCALE)


def fit_association(hq_ae: VQAutoencoder, lq_ae: VQAutoencoder, x_hq: torch.Tensor,
                    x_lq: torch.Tensor, cfg: AssociationConfig | None = None, *,
                    seed: int = 0) -> AssociationFit:
    """Associate two stage-1 autoencoders in place on pairs (x_hq[i], x_lq[i]), (N, C, H, W).

    Both encoders, codebooks and decoders train (each branch reconstructs its own input); the
    learnable log-scale s starts at log(1/0.07).
    """
    cfg = AssociationConfig() if cfg is None else cfg
    if not isinstance(cfg, AssociationConfig):
        raise TypeError(f"cfg must be an AssociationConfig, got {type(cfg).__name__}")
    for name, ae in (("hq_ae", hq_ae), ("lq_ae", lq_ae)):
        if not isinstance(ae, VQAutoencoder):
            raise TypeError(f"{name} must be a VQAutoencoder, got {type(ae).__name__}")
    check_images(x_hq, "x_hq")
    check_images(x_lq, "x_lq")
    if x_hq.shape != x_lq.shape:
        raise ValueError("x_hq and x_lq must be paired images of the same shape")
    hq_ae.requires_grad_(True).train()
    lq_ae.requires_grad_(True).train()
    s = nn.Parameter(torch.tensor(CLIP_INIT_LOG_SCALE, device=x_hq.device))
    opt = torch.optim.Adam([*hq_ae.parameters(), *lq_ae.parameters(), s], lr=cfg.lr,
                           betas=(0.5, 0.9))
    gen = torch.Generator(device=x_hq.device).manual_seed(seed)
    n, fit = len(x_hq), AssociationFit()
    grid = (x_hq.shape[2] // hq_ae.factor, x_hq.shape[3] // hq_ae.factor)
    for _ in range(cfg.steps):
        idx = torch.randint(0, n, (min(cfg.batch_size, n),), generator=gen, device=x_hq.device)
        xh, xl = x_hq[idx], x_lq[idx]
        zh, zl = hq_ae.encode(xh), lq_ae.encode(xl)
        oh, ol = hq_ae.quantize(zh), lq_ae.quantize(zl)
        rec_h = (hq_ae.decode(oh.quantized) - xh).abs().mean()
        rec_l = (lq_ae.decode(ol.quantized) - xl).abs().mean()
        mask = None if cfg.mask_threshold is None else content_token_mask(xh, grid,
                                                                          cfg.mask_threshold)
        assoc = patch_association_loss(zh, zl, s, mask=mask)
        loss = rec_h + oh.loss + rec_l + ol.loss + cfg.weight * assoc
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        fit.assoc.append(float(assoc.detach()))
        fit.recon_hq.append(float(rec_h.detach()))
        fit.recon_lq.append(float(rec_l.detach()))
    hq_ae.eval()
    lq_ae.eval()
    fit.logit_scale = float(s.detach().exp().clamp(max=CLIP_MAX_SCALE))
    return fit
