"""The dynamics condition: sign- and scale-free features of one normal mode on the motif.

Paper Sec. 3.2 (official ``nma_diffusion_utils.py`` and ``eigenconditioner.py``). For the
displacements D (n_m, 3) of the conditioned mode on the motif residues:

- cosines C = all n_m^2 pairwise cosines between the residues' displacement directions; a
  residue that does not move (|D_i| = 0) counts as norm 1, as in the official code;
- amplitudes a = per-residue norms |D_i|, L2-normalised over the motif;
- L_dyn = L1(C_gen, C_target) + 2 L1(a_gen, a_target)  (mean absolute errors).

An eigenvector is defined up to sign and scale; both features are invariant to them (a global
sign flip flips every D_i, so each cosine and each norm stays put), so raw displacements are
never compared.
"""

from __future__ import annotations

import torch

__all__ = ["displacement_cosines", "dynamics_loss", "mode_overlap", "normalised_amplitudes"]


def _check_disp(d: torch.Tensor, name: str) -> None:
    if not isinstance(d, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of displacements, got "
                        f"{type(d).__name__}")
    if d.dim() < 2 or d.shape[-1] != 3 or d.shape[-2] < 2:
        raise ValueError(f"{name} must have shape (..., n_m, 3) with n_m >= 2 motif residues, "
                         f"got {tuple(d.shape)}")


def displacement_cosines(disp: torch.Tensor) -> torch.Tensor:
    """All pairwise cosines of the displacement directions: (..., n_m, 3) -> (..., n_m^2)."""
    _check_disp(disp, "disp")
    norms = disp.norm(dim=-1, keepdim=True)
    norms = torch.where(norms == 0, torch.ones_like(norms), norms)  # still rows stay zero
    unit = disp / norms
    cos = unit @ unit.transpose(-1, -2)  # C_ij = <D_i, D_j> / (|D_i| |D_j|)
    return cos.reshape(*cos.shape[:-2], -1)


def normalised_amplitudes(disp: torch.Tensor) -> torch.Tensor:
    """Per-residue amplitudes |D_i|, L2-normalised over the motif: (..., n_m, 3) -> (..., n_m)."""
    _check_disp(disp, "disp")
    return torch.nn.functional.normalize(disp.norm(dim=-1), p=2, dim=-1)  # a = |D| / ||(|D_i|)||


def dynamics_loss(disp_gen: torch.Tensor, disp_target: torch.Tensor,
                  amp_weight: float = 2.0) -> torch.Tensor:
    """L_dyn = mean|C_gen - C_target| + amp_weight * mean|a_gen - a_target| per structure.

    disp_gen: (..., n_m, 3); disp_target: (n_m, 3) or broadcastable to disp_gen.
    Returns (...,) (a 0-d tensor for a single structure).
    """
    _check_disp(disp_gen, "disp_gen")
    _check_disp(disp_target, "disp_target")
    if disp_target.shape[-2] != disp_gen.shape[-2]:
        raise ValueError(f"disp_target has {disp_target.shape[-2]} motif residues, disp_gen "
                         f"{disp_gen.shape[-2]}: they must describe the same residues")
    if isinstance(amp_weight, bool) or not isinstance(amp_weight, (int, float)) or amp_weight < 0:
        raise ValueError(f"amp_weight must be a non-negative number, got {amp_weight!r}")
    target = disp_target.to(disp_gen.dtype)
    loss_cos = (displacement_cosines(disp_gen) - displacement_cosines(target)).abs().mean(-1)
    loss_amp = (normalised_amplitudes(disp_gen) - normalised_amplitudes(target)).abs().mean(-1)
    return loss_cos + amp_weight * loss_amp  # L_dyn = L1(C) + 2 L1(a)


def mode_overlap(disp_gen: torch.Tensor, disp_target: torch.Tensor) -> torch.Tensor:
    """|cos| between the flattened motif displacements (a sign-free mode agreement in [0, 1]):
    (..., n_m, 3) and (n_m, 3) -> (...,). Reported beside L_dyn; it is not rotation-invariant
    (the two structures must share a frame, e.g. after superposing the motif)."""
    _check_disp(disp_gen, "disp_gen")
    _check_disp(disp_target, "disp_target")
    a = disp_gen.reshape(*disp_gen.shape[:-2], -1)
    b = disp_target.to(disp_gen.dtype).reshape(*disp_target.shape[:-2], -1)
    return (a * b).sum(-1).abs() / (a.norm(dim=-1) * b.norm(dim=-1)).clamp_min(1e-12)
