"""SelfHDR's masks and stage losses (Sec. 3.2-3.3; official models/selfhdr1_model.py and
selfhdr2_model.py).

- Stage 1 (structure network S): ``M_1 = 1 - [mean_c |T(Y_color) Lambda - T(H_2) Lambda| >=
  5/255]`` drops pixels where the color component disagrees with the well-exposed reference
  (ghosts); ``L_expand = L1(T(S) M_1, T(Y_color) M_1)``, ``L_preserve = 4 L1(T(S) Lambda,
  T(H_2) Lambda)``.
- Stage 2 (final network F): ``M_2 = 1 - [mean_c |T(Y_color) - T(Y_stru)| >= 10/255]``;
  ``L_color = L1(T(F) M_2, T(Y_color) M_2)`` plus a perceptual loss between T(F) and T(Y_stru)
  with weight 1.

Thresholds are on the tone-mapped scale, averaged over channels; the tent Lambda comes from the
reference LDR; the L1 terms average over *all* pixels (masked-out ones count as zeros), as the
official ``nn.L1Loss`` does.

What differs. The paper's structure loss is VGG-19 (relu3_2, relu4_2, 2 x relu5_2, / 4) on the
tone-mapped images; VGG weights cannot be downloaded here, so the default ``perceptual`` is a
stand-in, :func:`gradient_ssim_loss` (L1 between image gradients plus 1 - SSIM, on T(.)); pass
any ``perceptual(t_pred, t_target) -> scalar`` (e.g. a VGG-19 feature loss) to use the paper's.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .hdr_imaging import MU, mu_tonemap, tent_weight

__all__ = [
    "Perceptual",
    "color_mask",
    "expansion_mask",
    "gradient_ssim_loss",
    "selfhdr_stage1_loss",
    "selfhdr_stage2_loss",
    "structure_masks",
]

Perceptual = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

STAGE1_THRESHOLD = 5 / 255
STAGE2_THRESHOLD = 10 / 255
PRESERVE_WEIGHT = 4.0
STRUCTURE_WEIGHT = 1.0


def _check_images(**named: torch.Tensor) -> None:
    shape = None
    for name, x in named.items():
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name} must be a torch tensor, got {type(x).__name__}")
        if x.ndim != 4 or x.shape[1] != 3:
            raise ValueError(f"{name} must have shape (B, 3, H, W), got {tuple(x.shape)}")
        if shape is not None and x.shape != shape:
            raise ValueError(f"{name} has shape {tuple(x.shape)}, expected {tuple(shape)}")
        shape = x.shape


def expansion_mask(y_color: torch.Tensor, ldr_ref: torch.Tensor, hdr_ref: torch.Tensor,
                   threshold: float = STAGE1_THRESHOLD, mu: float = MU) -> torch.Tensor:
    """M_1 (B, 1, H, W): 1 where Y_color agrees with the reference, weighted by Lambda(I_2), to
    within ``threshold`` on the tone-mapped scale (channel mean), 0 elsewhere."""
    _check_images(y_color=y_color, ldr_ref=ldr_ref, hdr_ref=hdr_ref)
    lam = tent_weight(ldr_ref)
    diff = (mu_tonemap(y_color, mu) * lam - mu_tonemap(hdr_ref, mu) * lam).abs().mean(1, True)
    return 1.0 - (diff >= threshold).to(y_color.dtype)  # M_1 = 1 - [mean_c |.| >= 5/255]


def color_mask(y_color: torch.Tensor, y_stru: torch.Tensor, threshold: float = STAGE2_THRESHOLD,
               mu: float = MU) -> torch.Tensor:
    """M_2 (B, 1, H, W): 1 where the color and structure components agree to within
    ``threshold`` on the tone-mapped scale (channel mean), 0 elsewhere."""
    _check_images(y_color=y_color, y_stru=y_stru)
    diff = (mu_tonemap(y_color, mu) - mu_tonemap(y_stru, mu)).abs().mean(1, True)
    return 1.0 - (diff >= threshold).to(y_color.dtype)  # M_2 = 1 - [mean_c |.| >= 10/255]


def structure_masks(y_color: torch.Tensor, ldr_ref: torch.Tensor, hdr_ref: torch.Tensor,
                    y_stru: torch.Tensor | None = None, mu: float = MU
                    ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Both masks: (M_1, M_2), each (B, 1, H, W); M_2 is None until Y_stru exists."""
    m1 = expansion_mask(y_color, ldr_ref, hdr_ref, mu=mu)
    return m1, (None if y_stru is None else color_mask(y_color, y_stru, mu=mu))


def selfhdr_stage1_loss(s_out: torch.Tensor, y_color: torch.Tensor, ldr_ref: torch.Tensor,
                        hdr_ref: torch.Tensor, preserve_weight: float = PRESERVE_WEIGHT,
                        mu: float = MU) -> torch.Tensor:
    """L_S = L_expand + 4 L_preserve for the structure network's output ``s_out``.

    All (B, 3, H, W): s_out and y_color linear HDR, ldr_ref the reference LDR I_2, hdr_ref its
    linearisation H_2. Returns a scalar."""
    _check_images(s_out=s_out, y_color=y_color, ldr_ref=ldr_ref, hdr_ref=hdr_ref)
    m1 = expansion_mask(y_color, ldr_ref, hdr_ref, mu=mu)
    lam = tent_weight(ldr_ref)
    t_s = mu_tonemap(s_out, mu)
    expand = (t_s * m1 - mu_tonemap(y_color, mu) * m1).abs().mean()  # L1(T(S)M_1, T(Y_color)M_1)
    preserve = (t_s * lam - mu_tonemap(hdr_ref, mu) * lam).abs().mean()  # L1(T(S)L, T(H_2)L)
    return expand + preserve_weight * preserve


def gradient_ssim_loss(t_pred: torch.Tensor, t_target: torch.Tensor) -> torch.Tensor:
    """The stand-in structure loss on tone-mapped images (B, 3, H, W): mean |grad T(F) -
    grad T(Y_stru)| (Sobel, kornia) + (1 - SSIM) (kornia, 5x5 window)."""
    import kornia

    g = (kornia.filters.spatial_gradient(t_pred) - kornia.filters.spatial_gradient(t_target))
    ssim = kornia.metrics.ssim(t_pred, t_target, window_size=5, max_val=1.0).mean()
    return g.abs().mean() + (1.0 - ssim)


def selfhdr_stage2_loss(f_out: torch.Tensor, y_color: torch.Tensor, y_stru: torch.Tensor,
                        perceptual: Perceptual | None = gradient_ssim_loss,
                        structure_weight: float = STRUCTURE_WEIGHT, mu: float = MU
                        ) -> torch.Tensor:
    """L_F = L_color + 1 * L_stru for the final network's output ``f_out``.

    All (B, 3, H, W) linear HDR; ``y_stru`` must be a fixed label (no gradient).
    ``perceptual(T(F), T(Y_stru))``: the structure loss (VGG-19 in the paper; stand-in
    default); None drops it. Returns a scalar."""
    _check_images(f_out=f_out, y_color=y_color, y_stru=y_stru)
    if y_stru.requires_grad:
        raise ValueError("y_stru must be a fixed label computed once with S frozen "
                         "(it requires grad)")
    if perceptual is not None and not callable(perceptual):
        raise TypeError(f"perceptual must be callable or None, got {type(perceptual).__name__}")
    m2 = color_mask(y_color, y_stru, mu=mu)
    t_f, t_stru = mu_tonemap(f_out, mu), mu_tonemap(y_stru, mu)
    loss = (t_f * m2 - mu_tonemap(y_color, mu) * m2).abs().mean()  # L1(T(F)M_2, T(Y_color)M_2)
    if perceptual is not None:
        loss = loss + structure_weight * perceptual(t_f, t_stru)  # + 1 * L_stru
    return loss
