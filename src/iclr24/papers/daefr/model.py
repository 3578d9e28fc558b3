"""DAEFR stage 3 and inference (paper Sec. 3.3, Eq. 6-8; official ``DAEFR/models/daefr.py``).

Input: the LQ image only. The associated HQ and LQ encoders both encode it, cross-attention fuses
the two feature maps (queries from the LQ branch), and the CodeFormer-style transformer predicts
one HQ code index per position. Targets are the indices of the HQ image under the *stage-1* HQ
encoder and codebook (the prior), not under the associated encoder:

    L = CE(logits, idx_h) + 10 * || f_fused - e[idx_h] ||^2        (Eq. 8; MSE, not on logits)

Inference: argmax index per position -> stage-1 HQ codebook -> stage-1 HQ decoder. The prior
(codebook, decoder and the target encoder) is wrapped in :class:`~iclr24.kits.frozen_standins.Frozen`
and receives no gradient; only the two encoders, the fusion block and the predictor train, as in
the official optimizer.

With ``lq_ae=None`` and ``fusion=None`` the same class is the CodeFormer-style baseline: one
(HQ) encoder fine-tuned on LQ inputs, the same predictor and loss.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn

from iclr24.kits.frozen_standins import Frozen
from iclr24.kits.vector_quantization import VQAutoencoder

from .degradation import check_images
from .fusion import CrossAttentionFusion
from .predictor import CodePredictor

__all__ = ["DAEFR"]


class DAEFR(nn.Module):
    """Dual associated encoders + cross-attention fusion + code predictor over a frozen prior.

    hq_ae:       the (associated) HQ autoencoder; a trainable copy of its encoder is used.
    lq_ae:       the (associated) LQ autoencoder, or ``None`` for the single-encoder baseline.
    fusion:      a :class:`CrossAttentionFusion` (``None`` exactly when ``lq_ae`` is ``None``).
    predictor:   a :class:`CodePredictor` whose input width, positions and codes match the prior.
    prior:       the stage-1 HQ autoencoder: target encoder, codebook and decoder (frozen copy).
    feat_weight: weight of the feature MSE (10 in the paper).

    Images: (B, C, H, W) in [-1, 1]; logits (B, h*w, n_codes) with (h, w) = (H, W) / factor.
    """

    def __init__(self, hq_ae: VQAutoencoder, lq_ae: VQAutoencoder | None,
                 fusion: CrossAttentionFusion | None, predictor: CodePredictor, *,
                 prior: VQAutoencoder, feat_weight: float = 10.0) -> None:
        super().__init__()
        for name, ae in (("hq_ae", hq_ae), ("prior", prior)) + ((("lq_ae", lq_ae),) if lq_ae
                                                                  is not None else ()):
            if not isinstance(ae, VQAutoencoder):
                raise TypeError(f"{name} must be a VQAutoencoder, got {type(ae).__name__}")
        if (lq_ae is None) != (fusion is None):
            raise ValueError("lq_ae and fusion must both be given (DAEFR) or both be None "
                             "(single-encoder baseline)")
        if fusion is not None and not isinstance(fusion, CrossAttentionFusion):
            raise TypeError(f"fusion must be a CrossAttentionFusion, got {type(fusion).__name__}")
        if not isinstance(predictor, CodePredictor):
            raise TypeError(f"predictor must be a CodePredictor, got {type(predictor).__name__}")
        dims = {hq_ae.code_dim, prior.code_dim, predictor.in_dim}
        if lq_ae is not None:
            dims |= {lq_ae.code_dim, fusion.dim}
        if len(dims) != 1:
            raise ValueError(f"code dims of the autoencoders, fusion and predictor differ: {dims}")
        if predictor.n_codes != prior.quantizer.n_codes:
            raise ValueError(f"predictor.n_codes={predictor.n_codes} must equal the prior's "
                             f"{prior.quantizer.n_codes} codes")
        if not feat_weight >= 0:
            raise ValueError(f"feat_weight must be >= 0, got {feat_weight!r}")
        self.hq_encoder = copy.deepcopy(hq_ae.encoder).requires_grad_(True)
        self.lq_encoder = (None if lq_ae is None
                           else copy.deepcopy(lq_ae.encoder).requires_grad_(True))
        self.fusion, self.predictor = fusion, predictor
        self.prior = Frozen(copy.deepcopy(prior))
        self.feat_weight = float(feat_weight)
        self.in_ch, self.factor = prior.in_ch, prior.factor

    @property
    def dual(self) -> bool:
        """True for DAEFR (two encoders + fusion), False for the single-encoder baseline."""
        return self.lq_encoder is not None

    def _check(self, x: torch.Tensor, name: str) -> None:
        check_images(x, name)
        if x.shape[1] != self.in_ch:
            raise ValueError(f"{name} must have {self.in_ch} channels, got {x.shape[1]}")
        grid = x.shape[2] // self.factor * (x.shape[3] // self.factor)
        if x.shape[2] % self.factor or x.shape[3] % self.factor \
                or grid != self.predictor.n_positions:
            raise ValueError(f"{name} of size {tuple(x.shape[2:])} does not give the "
                             f"predictor's {self.predictor.n_positions} positions")

    def features(self, x_lq: torch.Tensor) -> torch.Tensor:
        """Fused features (B, C, h, w) of the LQ image (Eq. 6)."""
        self._check(x_lq, "x_lq")
        f_h = self.hq_encoder(x_lq)
        if not self.dual:
            return f_h
        return self.fusion(f_h, self.lq_encoder(x_lq))

    @torch.no_grad()
    def targets(self, x_hq: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Stage-1 HQ code indices (B, h, w) of ``x_hq`` and their code vectors (B, C, h, w)."""
        self._check(x_hq, "x_hq")
        prior = self.prior.part
        idx = prior.quantizer.nearest(prior.encode(x_hq))
        return idx, prior.quantizer.lookup(idx)

    def forward(self, x_lq: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(logits (B, h*w, n_codes), restored image (B, C, H, W)) for the LQ image."""
        logits = self.predictor(self.features(x_lq))
        return logits, self._decode(logits.argmax(dim=-1), x_lq.shape)

    def _decode(self, flat_idx: torch.Tensor, shape: torch.Size) -> torch.Tensor:
        h, w = shape[2] // self.factor, shape[3] // self.factor
        return self.prior.part.decode_indices(flat_idx.view(-1, h, w))

    @torch.no_grad()
    def predict_indices(self, x_lq: torch.Tensor) -> torch.Tensor:
        """Predicted HQ code indices (B, h, w)."""
        logits = self.predictor(self.features(x_lq))
        h, w = x_lq.shape[2] // self.factor, x_lq.shape[3] // self.factor
        return logits.argmax(dim=-1).view(-1, h, w)

    @torch.no_grad()
    def restore(self, x_lq: torch.Tensor) -> torch.Tensor:
        """Restored image (B, C, H, W): argmax codes -> stage-1 codebook -> stage-1 decoder."""
        return self.prior.part.decode_indices(self.predict_indices(x_lq))

    def loss(self, x_lq: torch.Tensor, x_hq: torch.Tensor) -> dict[str, torch.Tensor]:
        """{"loss", "ce", "feat_mse"} for a pair batch (Eq. 8)."""
        if x_lq.shape != x_hq.shape:
            raise ValueError(f"x_lq and x_hq must have the same shape, got {tuple(x_lq.shape)} "
                             f"and {tuple(x_hq.shape)}")
        idx, quant = self.targets(x_hq)
        return self.loss_from_targets(x_lq, idx, quant)

    def loss_from_targets(self, x_lq: torch.Tensor, idx: torch.Tensor, quant: torch.Tensor
                          ) -> dict[str, torch.Tensor]:
        """:meth:`loss` with the stage-1 targets of :meth:`targets` computed beforehand
        (idx: (B, h, w), quant: (B, C, h, w)); the training loop computes them once."""
        fused = self.features(x_lq)
        if idx.shape != (fused.shape[0], *fused.shape[2:]) or quant.shape != fused.shape:
            raise ValueError("idx and quant must be the targets of x_lq's HQ pair")
        logits = self.predictor(fused)
        ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), idx.reshape(-1))
        mse = F.mse_loss(fused, quant)  # features vs quantised HQ targets, not logits
        return {"loss": ce + self.feat_weight * mse, "ce": ce, "feat_mse": mse}
