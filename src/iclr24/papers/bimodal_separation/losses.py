"""The three training losses of the bi-modal separator (paper Sec. 3, Eq. for L_total;
official ``main.py`` NetWrapper.forward and ``models/criterion.py``).

- :func:`loss_weight`: w = clamp(log1p(|reference magnitude|), 1e-3, 10);
- :func:`weighted_l1`: mean(w * |pred - target|) (official ``L1Loss``);
- unsupervised mix-and-separate: sum_n WL1(|M_hat_n|, |M_n|; w from |MoM|) (in the separator);
- :func:`consistency_reconstruction_loss`: WL1(sum_k a_{n,k} |S_hat_{n,k}|, |M_n|; w from |M_n|);
- :func:`bimodal_contrastive_loss`: InfoNCE of audio-to-text logits (frozen CLAP scale x cosine)
  with targets on the diagonal.

Total: L = 0.5 * L_cnt + lambda_rec * (L_cns + L_unsup), lambda_rec = 5.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

__all__ = ["bimodal_contrastive_loss", "consistency_reconstruction_loss", "loss_weight",
           "weighted_l1"]


def loss_weight(reference_mag: torch.Tensor) -> torch.Tensor:
    """w = clamp(log1p(|reference|), 1e-3, 10), the official loss attention weights."""
    return torch.clamp(torch.log1p(reference_mag), 1e-3, 10)


def weighted_l1(pred_mag: torch.Tensor, target_mag: torch.Tensor,
                weight: torch.Tensor) -> torch.Tensor:
    """mean(weight * |pred - target|) over all elements (shapes broadcast)."""
    if pred_mag.shape != target_mag.shape:
        raise ValueError(f"pred_mag and target_mag must have the same shape, got "
                         f"{tuple(pred_mag.shape)} and {tuple(target_mag.shape)}")
    return torch.mean(weight * torch.abs(pred_mag - target_mag))


def consistency_reconstruction_loss(source_mags: torch.Tensor, presence: torch.Tensor,
                                    mixture_mag: torch.Tensor) -> torch.Tensor:
    """L_cns for one mixture slot n over a batch.

    source_mags: (B, K, F, T) predicted |S_hat_{n,k}| (each from the mixture of mixtures with
    phrase k); presence: (B, K) weights a_{n,k} (0 or a 1/count share for padded or repeated
    phrases); mixture_mag: (B, F, T) the target |M_n|, which also gives the weights.
    """
    if source_mags.dim() != 4 or presence.shape != source_mags.shape[:2] \
            or mixture_mag.shape != (source_mags.shape[0], *source_mags.shape[2:]):
        raise ValueError(f"expected source_mags (B, K, F, T), presence (B, K), mixture_mag "
                         f"(B, F, T); got {tuple(source_mags.shape)}, {tuple(presence.shape)}, "
                         f"{tuple(mixture_mag.shape)}")
    recon = (presence[:, :, None, None] * source_mags).sum(dim=1)  # sum_k a_{n,k} |S_hat_{n,k}|
    return weighted_l1(recon, mixture_mag, loss_weight(mixture_mag))


def bimodal_contrastive_loss(audio_emb: torch.Tensor, text_emb: torch.Tensor,
                             logit_scale: float, valid: torch.Tensor | None = None
                             ) -> torch.Tensor:
    """InfoNCE of audio-to-text logits with diagonal targets (official ``contrastive_loss``).

    audio_emb, text_emb: (N, D) unit rows (row i: the predicted source for phrase i and the
    phrase's embedding); logit_scale: the frozen CLAP temperature; valid: optional (N,) bool
    selecting the rows (and columns) that take part (padding phrases excluded).
    logits = logit_scale * a @ t^T; loss = CE(logits, arange(N)).
    """
    if audio_emb.dim() != 2 or audio_emb.shape != text_emb.shape:
        raise ValueError(f"audio_emb and text_emb must both be (N, D), got "
                         f"{tuple(audio_emb.shape)} and {tuple(text_emb.shape)}")
    if valid is not None:
        if valid.shape != audio_emb.shape[:1] or valid.dtype != torch.bool:
            raise ValueError(f"valid must be a bool tensor of shape ({audio_emb.shape[0]},)")
        audio_emb, text_emb = audio_emb[valid], text_emb[valid]
    logits = logit_scale * audio_emb @ text_emb.T
    return F.cross_entropy(logits, torch.arange(logits.shape[0], device=logits.device))
