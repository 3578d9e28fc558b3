"""Training loops of DAEFR's stage 1 (two codebooks) and stage 3 (fusion + code prediction);
stage 2 is :func:`~.association.fit_association`.

Stage 1 (paper Sec. 3.1): two identical VQ autoencoders, the HQ one trained on HQ images, the LQ
one on degraded images. The paper trains 512x512 VQGANs with L1 + LPIPS + codebook/commitment +
hinge GAN (adaptive weight, disc weight 0.8) and optional facial-component and ArcFace losses;
here the kit's :func:`~iclr24.kits.vector_quantization.fit_vq_autoencoder` trains L1 +
codebook/commitment only (no LPIPS, no GAN: a perceptual net needs downloaded weights and 16x16
digits need no adversarial sharpening), with k-means initialisation and dead-code restarts
against small-scale codebook collapse. Adam betas (0.5, 0.9) as taming.

Stage 3 (Sec. 3.3): :func:`fit_code_predictor` trains the encoders, the fusion block and the
predictor of a :class:`~.model.DAEFR` with its loss (CE + 10 MSE); the frozen prior is left out
of the optimiser.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from iclr24.kits.vector_quantization import VQAutoencoder, VQFit, fit_vq_autoencoder

from .degradation import check_images
from .model import DAEFR

__all__ = ["CodebookConfig", "PredictorConfig", "PredictorFit", "fit_code_predictor",
           "fit_codebook"]


def _positive_ints(obj: object, names: Sequence[str]) -> None:
    for arg in names:
        v = getattr(obj, arg)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{arg} must be a positive int, got {v!r}")


@dataclass(frozen=True)
class CodebookConfig:
    """Stage-1 autoencoder and its training (paper: ch 64, mult (1,2,2,4,4,8), 256-dim codes,
    1024 entries on 512x512; here 16x16 -> 4x4 latents). The codebook starts from k-means of
    the encodings of ``kmeans_images`` random training images."""

    ch: int = 32
    ch_mult: tuple[int, ...] = (1, 2, 2)
    code_dim: int = 32
    n_codes: int = 64
    beta: float = 0.25
    steps: int = 600
    batch_size: int = 64
    lr: float = 1e-3
    restart_every: int = 50
    kmeans_images: int = 512

    def __post_init__(self) -> None:
        _positive_ints(self, ("ch", "code_dim", "n_codes", "steps", "batch_size",
                              "kmeans_images"))
        if not self.lr > 0:
            raise ValueError(f"lr must be positive, got {self.lr!r}")

    def build(self, in_ch: int = 1) -> VQAutoencoder:
        """An untrained autoencoder of this architecture."""
        return VQAutoencoder(in_ch=in_ch, ch=self.ch, ch_mult=tuple(self.ch_mult),
                             code_dim=self.code_dim, n_codes=self.n_codes, beta=self.beta)


def fit_codebook(images: torch.Tensor, cfg: CodebookConfig | None = None, *, seed: int = 0
                 ) -> tuple[VQAutoencoder, VQFit]:
    """Build and train one stage-1 autoencoder on ``images`` (N, C, H, W) in [-1, 1] (HQ images
    for the HQ codebook, degraded ones for the LQ codebook). Returns (model in eval mode, history).
    """
    cfg = CodebookConfig() if cfg is None else cfg
    if not isinstance(cfg, CodebookConfig):
        raise TypeError(f"cfg must be a CodebookConfig, got {type(cfg).__name__}")
    check_images(images, "images")
    torch.manual_seed(seed)  # weight init
    model = cfg.build(images.shape[1]).to(images.device)
    gen = torch.Generator(device=images.device).manual_seed(seed)
    with torch.no_grad():  # k-means init on the encodings of the first kmeans_images images
        sub = images[torch.randperm(len(images), generator=gen, device=images.device)
                     [:cfg.kmeans_images]]
        model.quantizer.init_kmeans(model.encode(sub), seed=seed)
    fit = fit_vq_autoencoder(model, images, steps=cfg.steps, batch_size=cfg.batch_size,
                             lr=cfg.lr, seed=seed, kmeans_init=False,
                             restart_every=cfg.restart_every)
    return model, fit


@dataclass(frozen=True)
class PredictorConfig:
    """Stage-3 training: Adam (betas 0.5, 0.9 as the official taming-style optimiser)."""

    steps: int = 600
    batch_size: int = 64
    lr: float = 5e-4

    def __post_init__(self) -> None:
        _positive_ints(self, ("steps", "batch_size"))
        if not self.lr > 0:
            raise ValueError(f"lr must be positive, got {self.lr!r}")


@dataclass
class PredictorFit:
    """Per-step history of :func:`fit_code_predictor`."""

    ce: list[float] = field(default_factory=list)
    feat_mse: list[float] = field(default_factory=list)


def fit_code_predictor(model: DAEFR, x_lq: torch.Tensor, x_hq: torch.Tensor,
                       cfg: PredictorConfig | None = None, *, seed: int = 0) -> PredictorFit:
    """Train ``model`` in place on pairs (x_lq[i], x_hq[i]), (N, C, H, W); only parameters that
    take gradients (encoders, fusion, predictor; not the frozen prior) are optimised."""
    cfg = PredictorConfig() if cfg is None else cfg
    if not isinstance(cfg, PredictorConfig):
        raise TypeError(f"cfg must be a PredictorConfig, got {type(cfg).__name__}")
    if not isinstance(model, DAEFR):
        raise TypeError(f"model must be a DAEFR, got {type(model).__name__}")
    check_images(x_lq, "x_lq")
    check_images(x_hq, "x_hq")
    if x_lq.shape != x_hq.shape:
        raise ValueError("x_lq and x_hq must be paired images of the same shape")
    targets = [model.targets(chunk) for chunk in x_hq.split(256)]  # the prior is frozen
    idx_all = torch.cat([t[0] for t in targets])
    quant_all = torch.cat([t[1] for t in targets])
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=cfg.lr, betas=(0.5, 0.9))
    gen = torch.Generator(device=x_lq.device).manual_seed(seed)
    model.train()
    fit, n = PredictorFit(), len(x_lq)
    for _ in range(cfg.steps):
        idx = torch.randint(0, n, (min(cfg.batch_size, n),), generator=gen, device=x_lq.device)
        out = model.loss_from_targets(x_lq[idx], idx_all[idx], quant_all[idx])
        opt.zero_grad(set_to_none=True)
        out["loss"].backward()
        opt.step()
        fit.ce.append(float(out["ce"].detach()))
        fit.feat_mse.append(float(out["feat_mse"].detach()))
    model.eval()
    return fit
