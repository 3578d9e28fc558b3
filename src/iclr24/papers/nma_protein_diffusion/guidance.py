"""Analytic guidance of a frozen backbone DDPM: normal-mode (dynamics) and motif (structure).

Paper Sec. 3.3 and the official ``eigenconditioner.py`` / ``structconditioner.py`` /
``genie_mod.py``. At a reverse step t (counting down) with conditioning active (t < cond_frac T,
the final part of the trajectory):

1. eps_hat from the frozen denoiser at x_t; Tweedie's clean estimate
   x0_hat = (x_t - sqrt(1 - abar_t) eps_hat) / sqrt(abar_t);
2. a loss on x0_hat: L_dyn of the lowest non-trivial ANM mode on the motif residues
   (:class:`NormalModeGuidance`), or the L1 distance of the motif to the target motif
   superposed onto it (:class:`MotifGuidance`);
3. g = -grad_{x_t} loss, back-propagated through the eigendecomposition, x0_hat *and* the
   denoiser (``through_denoiser=False`` treats d x0_hat / d x_t as 1 / sqrt(abar_t), a cheaper
   variant that is a deviation from the paper);
4. the update delta = (1 - alpha_t) * gs * s(alpha_t) * g with its centre of mass removed,
   s(alpha_t) = alpha_t for the dynamics guidance (the official ``gs_time_scaling``; issue 38:
   it was missing, a <= 1.6% change over the conditioned half of a cosine schedule);
   several guidances add their updates;
5. x_t <- x_t + delta, then the usual ancestral step with noise scale eta *using the noise
   estimate of step 1* (as Genie's sampler does): in the kit's terms the posterior mean moves by
   delta / sqrt(alpha_t), the coefficient of x_t in mean = (x_t - beta_t eps_hat /
   sqrt(1 - abar_t)) / sqrt(alpha_t).

:class:`MotifGuidance` scales its guidance by sqrt(1.5 - alpha_t) (the official
``gs_time_scaling`` of the structure conditioner) and, like the official code, superposes the
target motif onto the current estimate before the L1 loss; we re-superpose at every step and
treat the superposition as a constant (the official code re-superposes every sixth step).

Robustness (pitfalls of the eigenvector derivative, not in the official code): a structure
whose x0_hat is not finite, whose x0_hat network does not have exactly six zero modes, whose
modes 6 and 7 are nearly degenerate (lambda_7 - lambda_6 <= gap_tol * lambda_6, where
1 / (lambda_7 - lambda_6) blows the gradient up) or whose gradient is not finite gets no update
at that step. Each guidance counts the structure-steps it was active on (``attempted``) and
those it skipped (``skipped``), and :func:`guided_ddpm_sample` warns
(:class:`GuidanceSkippedWarning`) when a run skipped any, with both counts: a guidance that
skips most of its steps is (nearly) off. ``max_grad_norm`` optionally clips each structure's
gradient.

Units: guidances see the diffusion's coordinates; ``angstrom_per_unit`` converts x0_hat to
Angstrom for the elastic network and the target motif (Genie works in Angstrom: 1.0).

Real scale: Genie (aqlaboratory/genie, not on PyPI, weights "scope_l_256") is out of reach
here; wrapped as ``model(x_t, t) -> eps_hat`` it would plug into :func:`guided_ddpm_sample`
unchanged.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence

import torch

from iclr24.kits.diffusion import GaussianDiffusion, com_free_noise, remove_com

from .dynamics_loss import dynamics_loss
from .elastic_network import (
    FORCE_FIELDS,
    RIGID_MODES,
    _check_residue_idx,
    anm_hessian,
    count_zero_modes,
)
from .superposition import superpose

__all__ = ["GuidanceSkippedWarning", "MotifGuidance", "NormalModeGuidance",
           "guided_ddpm_sample"]

Denoiser = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class GuidanceSkippedWarning(UserWarning):
    """A guided sampling run skipped some of its guidance updates (see the module docstring)."""


def _positive(name: str, value: object, allow_zero: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < 0 or (not allow_zero and value == 0):
        kind = "non-negative" if allow_zero else "positive"
        raise ValueError(f"{name} must be a finite {kind} number, got {value!r}")
    return float(value)


class _TweedieGuidance:
    """Shared steps 1, 3 and 4: x0_hat with its graph to x_t, the gradient, the update."""

    def __init__(self, residue_idx: object, scale: float, cond_frac: float,
                 through_denoiser: bool, max_grad_norm: float | None,
                 angstrom_per_unit: float) -> None:
        self.residue_idx = _check_residue_idx(residue_idx, None, "residue_idx")
        self.scale = _positive("scale", scale)
        if isinstance(cond_frac, bool) or not isinstance(cond_frac, (int, float)) \
                or not 0 <= cond_frac <= 1:
            raise ValueError(f"cond_frac must be a number in [0, 1], got {cond_frac!r}")
        self.cond_frac = float(cond_frac)
        if not isinstance(through_denoiser, bool):
            raise TypeError(f"through_denoiser must be a bool, got {through_denoiser!r}")
        self.through_denoiser = through_denoiser
        self.max_grad_norm = None if max_grad_norm is None else \
            _positive("max_grad_norm", max_grad_norm, allow_zero=False)
        self.angstrom_per_unit = _positive("angstrom_per_unit", angstrom_per_unit,
                                           allow_zero=False)
        self.skipped = 0  # structure-steps with no update (see the module docstring)
        self.attempted = 0  # structure-steps with the guidance active
        self.last_loss: torch.Tensor | None = None

    def check_length(self, n_res: int) -> None:
        """Raise ValueError if a motif residue lies outside a chain of ``n_res`` residues."""
        _check_residue_idx(self.residue_idx, n_res, "residue_idx")

    def active(self, t: int, steps: int) -> bool:
        """Conditioning is on in the final cond_frac of the trajectory: t < cond_frac * T."""
        return t < self.cond_frac * steps

    def _losses(self, x0_angstrom: torch.Tensor, t: int, steps: int
                ) -> tuple[torch.Tensor, torch.Tensor]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _time_scale(self, alpha: float) -> float:
        return 1.0

    def __call__(self, x_t: torch.Tensor, t: int, denoiser: Denoiser,
                 diffusion: GaussianDiffusion) -> torch.Tensor:
        """The update delta (B, N, 3) for x_t (B, N, 3) at step t (zeros when inactive)."""
        if not isinstance(diffusion, GaussianDiffusion):
            raise TypeError(f"diffusion must be a GaussianDiffusion, got "
                            f"{type(diffusion).__name__}")
        if not isinstance(x_t, torch.Tensor) or x_t.dim() != 3 or x_t.shape[-1] != 3:
            raise ValueError(f"x_t must have shape (B, N, 3), got "
                             f"{getattr(x_t, 'shape', type(x_t).__name__)}")
        self.check_length(x_t.shape[1])
        if not self.active(t, diffusion.T) or self.scale == 0:
            return torch.zeros_like(x_t)
        abar = float(diffusion.abar[t])
        alpha = float(diffusion.alphas[t])
        tt = torch.full((x_t.shape[0],), t, dtype=torch.long, device=x_t.device)
        with torch.enable_grad():
            xt = x_t.detach().requires_grad_(True)
            if self.through_denoiser:
                out = denoiser(xt, tt)
                x0 = out if diffusion.predict == "x0" else diffusion.x0_from_eps(xt, t, out)
            else:  # deviation: stop-gradient through the network, d x0_hat / d x_t = 1/sqrt(abar)
                with torch.no_grad():
                    out = denoiser(xt, tt)
                    x0_const = out if diffusion.predict == "x0" else \
                        diffusion.x0_from_eps(xt, t, out)
                x0 = x0_const + (xt - xt.detach()) / math.sqrt(abar)
            # a non-finite x0_hat (a diverging denoiser) has no elastic network: skipped
            finite_x0 = torch.isfinite(x0.detach()).flatten(1).all(1)
            losses = torch.full((x_t.shape[0],), math.nan, dtype=torch.float64,
                                device=x_t.device)
            valid = torch.zeros(x_t.shape[0], dtype=torch.bool, device=x_t.device)
            grad = None
            if bool(finite_x0.any()):
                sub_losses, sub_valid = self._losses(x0[finite_x0] * self.angstrom_per_unit, t,
                                                     diffusion.T)
                total = torch.where(sub_valid, sub_losses, torch.zeros_like(sub_losses)).sum()
                (grad,) = torch.autograd.grad(total, xt, allow_unused=True)
                losses[finite_x0] = sub_losses.detach().to(losses.dtype)
                valid[finite_x0] = sub_valid
        if grad is None:
            grad = torch.zeros_like(x_t)
        g = -grad.detach()  # g = -grad_{x_t} loss
        finite = torch.isfinite(g).flatten(1).all(1)
        ok = valid & finite
        self.attempted += int(ok.numel())
        self.skipped += int((~ok).sum())
        g = torch.where(ok[:, None, None], g, torch.zeros_like(g))
        if self.max_grad_norm is not None:
            norms = g.flatten(1).norm(dim=1).clamp_min(1e-30)
            g = g * (self.max_grad_norm / norms).clamp(max=1.0)[:, None, None]
        self.last_loss = losses
        delta = (1 - alpha) * self.scale * self._time_scale(alpha) * g  # (1 - a_t) gs s(a_t) g
        return remove_com(delta.to(x_t.dtype))


class NormalModeGuidance(_TweedieGuidance):
    """Guide the lowest non-trivial ANM mode on chosen residues towards a target pattern.

    target_disp: (n_m, 3) displacements of the target's mode on its motif (any sign/scale).
    residue_idx: (n_m,) residues of the generated chain that carry the condition.
    scale:       the guidance scale gs (official default 3000 for Genie in Angstrom), times
                 alpha_t as in the official code.
    cond_frac:   conditioning runs while t < cond_frac * T (official default 0.5).
    amp_weight:  weight of the amplitude term in L_dyn (2).
    cutoff, force: the elastic network (13 A, Hinsen). mode_index: 6 (0-based).
    Call: ``guidance(x_t (B, N, 3), t, denoiser, diffusion) -> delta (B, N, 3)``.
    """

    def __init__(self, target_disp: torch.Tensor, residue_idx: object, scale: float = 3000.0,
                 cond_frac: float = 0.5, *, amp_weight: float = 2.0, cutoff: float = 13.0,
                 force: str = "hinsen", mode_index: int = RIGID_MODES,
                 through_denoiser: bool = True, max_grad_norm: float | None = None,
                 angstrom_per_unit: float = 1.0, gap_tol: float = 1e-6,
                 zero_tol: float = 1e-12) -> None:
        super().__init__(residue_idx, scale, cond_frac, through_denoiser, max_grad_norm,
                         angstrom_per_unit)
        if not isinstance(target_disp, torch.Tensor) or target_disp.dim() != 2 \
                or target_disp.shape[1] != 3:
            raise ValueError(f"target_disp must be a tensor of shape (n_m, 3), got "
                             f"{getattr(target_disp, 'shape', type(target_disp).__name__)}")
        if target_disp.shape[0] != self.residue_idx.numel():
            raise ValueError(f"target_disp has {target_disp.shape[0]} rows but residue_idx "
                             f"names {self.residue_idx.numel()} residues")
        if force not in FORCE_FIELDS:
            raise ValueError(f"force must be one of {FORCE_FIELDS}, got {force!r}")
        if isinstance(mode_index, bool) or not isinstance(mode_index, int) \
                or mode_index < RIGID_MODES:
            raise ValueError(f"mode_index must be an int >= {RIGID_MODES} (a non-trivial mode), "
                             f"got {mode_index!r}")
        self.target_disp = target_disp.detach().to(torch.float64)
        self.amp_weight = _positive("amp_weight", amp_weight)
        self.cutoff = _positive("cutoff", cutoff, allow_zero=False)
        self.force, self.mode_index = force, mode_index
        self.gap_tol = _positive("gap_tol", gap_tol)
        self.zero_tol = _positive("zero_tol", zero_tol)

    def _time_scale(self, alpha: float) -> float:
        return alpha  # official gs_time_scaling(a) = a of the eigenconditioner

    def _losses(self, x0_angstrom: torch.Tensor, t: int, steps: int
                ) -> tuple[torch.Tensor, torch.Tensor]:
        h = anm_hessian(x0_angstrom, cutoff=self.cutoff, force=self.force)
        vals, vecs = torch.linalg.eigh(h)
        lam = vals.detach()
        k = self.mode_index
        valid = (count_zero_modes(lam, self.zero_tol) == RIGID_MODES) & \
            (lam[:, k + 1] - lam[:, k] > self.gap_tol * lam[:, k].abs())
        n = x0_angstrom.shape[1]
        disp = vecs[:, :, k].reshape(-1, n, 3)[:, self.residue_idx.to(vecs.device)]
        return dynamics_loss(disp, self.target_disp.to(disp.device), self.amp_weight), valid


class MotifGuidance(_TweedieGuidance):
    """Guide the motif residues of x0_hat towards a target motif structure (scaffolding).

    target_pos:  (n_m, 3) motif coordinates in Angstrom (any frame: superposed at each step).
    residue_idx: (n_m,) residues of the generated chain that carry the motif.
    scale:       gs (official default 2000), times sqrt(1.5 - alpha_t) as in the official code.
    Call: ``guidance(x_t (B, N, 3), t, denoiser, diffusion) -> delta (B, N, 3)``.
    """

    def __init__(self, target_pos: torch.Tensor, residue_idx: object, scale: float = 2000.0,
                 cond_frac: float = 0.5, *, through_denoiser: bool = True,
                 max_grad_norm: float | None = None, angstrom_per_unit: float = 1.0) -> None:
        super().__init__(residue_idx, scale, cond_frac, through_denoiser, max_grad_norm,
                         angstrom_per_unit)
        if not isinstance(target_pos, torch.Tensor) or target_pos.dim() != 2 \
                or target_pos.shape[1] != 3:
            raise ValueError(f"target_pos must be a tensor of shape (n_m, 3), got "
                             f"{getattr(target_pos, 'shape', type(target_pos).__name__)}")
        if target_pos.shape[0] != self.residue_idx.numel():
            raise ValueError(f"target_pos has {target_pos.shape[0]} rows but residue_idx "
                             f"names {self.residue_idx.numel()} residues")
        if target_pos.shape[0] < 3:
            raise ValueError("a motif needs at least 3 residues to be superposed")
        self.target_pos = target_pos.detach().to(torch.float64)

    def _time_scale(self, alpha: float) -> float:
        return math.sqrt(1.5 - alpha)  # official gs_time_scaling of the structure conditioner

    def _losses(self, x0_angstrom: torch.Tensor, t: int, steps: int
                ) -> tuple[torch.Tensor, torch.Tensor]:
        motif = x0_angstrom[:, self.residue_idx.to(x0_angstrom.device)].to(torch.float64)
        ref = self.target_pos.to(motif.device).expand_as(motif)
        aligned = superpose(ref, motif.detach())  # target superposed onto the estimate, fixed
        losses = (motif - aligned).abs().mean((-1, -2))  # L1(motif(x0_hat), aligned target)
        return losses, torch.ones(losses.shape, dtype=torch.bool, device=losses.device)


def guided_ddpm_sample(model: Denoiser, diffusion: GaussianDiffusion,
                       guidances: Sequence[_TweedieGuidance], shape: tuple[int, int, int], *,
                       eta: float = 0.4, generator: torch.Generator | None = None,
                       x_T: torch.Tensor | None = None,
                       progress: Callable[[float, str], None] | None = None) -> torch.Tensor:
    """Ancestral sampling of Calpha traces (B, N, 3) with analytic guidance, COM-free noise.

    model:     frozen denoiser ``model(x_t, t)`` (eps or x0, as ``diffusion.predict`` says).
    diffusion: the kit's :class:`~iclr24.kits.diffusion.GaussianDiffusion` (Genie: cosine,
               sigma_t^2 = beta_t, i.e. ``variance="beta"``).
    guidances: :class:`NormalModeGuidance` / :class:`MotifGuidance` objects (may be empty:
               the unconditional sampler). eta: noise scale (official 0.4).
    Warns (:class:`GuidanceSkippedWarning`) when a guidance skipped updates during the run,
    saying how many of the structure-steps it was active on.
    """
    if not isinstance(diffusion, GaussianDiffusion):
        raise TypeError(f"diffusion must be a GaussianDiffusion, got {type(diffusion).__name__}")
    if len(shape) != 3 or shape[2] != 3 or any(isinstance(s, bool) or not isinstance(s, int)
                                               or s < 1 for s in shape):
        raise ValueError(f"shape must be (B, N, 3) positive ints, got {shape!r}")
    guidances = list(guidances)
    for g in guidances:
        if not isinstance(g, _TweedieGuidance):
            raise TypeError(f"guidances must be NormalModeGuidance / MotifGuidance objects, got "
                            f"{type(g).__name__}")
        g.check_length(shape[1])

    def hook(mean: torch.Tensor, t: int, var: torch.Tensor, x0: torch.Tensor,
             xt: torch.Tensor) -> torch.Tensor:
        if not guidances:
            return mean
        delta = sum(g(xt, t, model, diffusion) for g in guidances)  # joint conditioning sums
        return mean + delta / math.sqrt(float(diffusion.alphas[t]))  # x_t += delta, eps fixed

    before = [(g.skipped, g.attempted) for g in guidances]
    with torch.no_grad():
        x = diffusion.sample(model, shape, generator=generator, eta=eta, mean_hook=hook,
                             noise_fn=com_free_noise, x_T=x_T, progress=progress)
    for g, (skipped, attempted) in zip(guidances, before):
        skipped, attempted = g.skipped - skipped, g.attempted - attempted
        if skipped:
            warnings.warn(f"{type(g).__name__} skipped {skipped} of the {attempted} "
                          f"structure-steps it was active on (x0 estimate not finite, its "
                          f"elastic network not rigid, modes 6/7 degenerate, or a non-finite "
                          f"gradient): those steps got no guidance update",
                          GuidanceSkippedWarning, stacklevel=2)
    return x
