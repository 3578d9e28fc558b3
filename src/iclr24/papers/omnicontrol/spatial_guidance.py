"""OmniControl's spatial guidance (paper Sec. 3.2, Eq. 4-5) and the control-error metrics.

At every denoising step, after the model gives the posterior mean mu_t:

    G(mu_t, c) = sum_{n, j} m_nj || c_nj - R(mu_t)_nj ||_2          (L2 norm, not squared)
    repeat K times:  mu_t <- mu_t - tau * Sigma_t * grad_{mu_t} G

with Sigma_t the posterior variance floored at 0.01 (official ``min_variance``), tau = 20 / (max
over joints of the number of controlled frames) per sample, K = 10 while t >= t_switch and
K = 500 below (official: t_switch = 10 of T = 1000); the gradient of the first frame is zeroed
because sequences start at the origin (official). Only R runs in the loop, no network.

The official code also guides the noisy input x_t during training of the realism branch
(tau = 0.5, K = 20, or 100 when t < 20): :meth:`SpatialGuidance.guide_training_input`.

Hints are global positions (B, N, J, 3) in world units with a boolean mask (B, N, J); the
official code reads the mask off non-zero normalised hints, which drops a hint that equals the
mean exactly, so here the mask is explicit.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .motion import MotionRepresentation

__all__ = ["SpatialGuidance", "check_hint", "control_errors", "guidance_scale"]


def check_hint(hint: torch.Tensor, mask: torch.Tensor, batch: int, frames: int,
               n_joints: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Validate a hint (B, N, J, 3) and mask (B, N, J) against a motion of ``batch`` x
    ``frames`` frames and ``n_joints`` joints; every sample must control something."""
    if not isinstance(hint, torch.Tensor) or not isinstance(mask, torch.Tensor):
        raise TypeError("hint and mask must be torch tensors")
    if tuple(hint.shape) != (batch, frames, n_joints, 3):
        raise ValueError(f"hint must be (batch, frames, joints, 3) = "
                         f"{(batch, frames, n_joints, 3)} to match the motion, got "
                         f"{tuple(hint.shape)}")
    if tuple(mask.shape) != (batch, frames, n_joints):
        raise ValueError(f"mask must be (batch, frames, joints) = {(batch, frames, n_joints)} "
                         f"to match the motion, got {tuple(mask.shape)}")
    if mask.dtype != torch.bool:
        raise TypeError(f"mask must be a bool tensor, got {mask.dtype}")
    empty = ~mask.flatten(1).any(1)
    if torch.any(empty):
        rows = torch.nonzero(empty).flatten().tolist()
        raise ValueError(f"mask controls nothing in sample(s) {rows[:10]}: every sample needs at "
                         "least one controlled (frame, joint); drop the guidance for those")
    if not torch.isfinite(hint[mask]).all():
        raise ValueError("hint has non-finite positions where mask is set")
    return hint, mask


def guidance_scale(mask: torch.Tensor, tau_scale: float = 20.0) -> torch.Tensor:
    """tau per sample (B,): tau_scale / max over joints of the number of controlled frames."""
    keyframes = mask.sum(1).max(1).values                       # (B,) max_j sum_n m_nj
    return tau_scale / keyframes.to(torch.float64)


def control_errors(positions: torch.Tensor, hint: torch.Tensor,
                   mask: torch.Tensor) -> torch.Tensor:
    """Distances || R(x)_nj - c_nj || at the controlled (frame, joint) pairs, as a (B, N, J)
    tensor that is NaN where mask is False (use nanmean / the helpers below)."""
    d = torch.linalg.vector_norm(positions - hint, dim=-1)
    return torch.where(mask, d, torch.full_like(d, float("nan")))


class SpatialGuidance:
    """The analytic spatial guidance as a callable ``(mu, t, var, hint, mask) -> mu``.

    representation: the :class:`MotionRepresentation` (with the model's normalisation) whose R
                    maps the (normalised) mean to global positions.
    tau_scale, k_early, k_late, t_switch, min_var, zero_first_frame: the paper's defaults at
                    T = 1000; at a shorter chain scale ``t_switch`` with T (the claims use the
                    last 1% of steps, at least the final one).
    """

    def __init__(self, representation: MotionRepresentation, *, tau_scale: float = 20.0,
                 k_early: int = 10, k_late: int = 500, t_switch: int = 10,
                 min_var: float = 0.01, zero_first_frame: bool = True) -> None:
        if not isinstance(representation, MotionRepresentation):
            raise TypeError("representation must be a MotionRepresentation")
        for name, v in (("k_early", k_early), ("k_late", k_late), ("t_switch", t_switch)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{name} must be a non-negative int, got {v!r}")
        if not tau_scale > 0 or not min_var >= 0:
            raise ValueError("tau_scale must be > 0 and min_var >= 0")
        self.rep = representation
        self.tau_scale, self.k_early, self.k_late = float(tau_scale), k_early, k_late
        self.t_switch, self.min_var = t_switch, float(min_var)
        self.zero_first_frame = zero_first_frame

    def cost(self, x: torch.Tensor, hint: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """G per sample (B,): sum over controlled (n, j) of || c_nj - R(x)_nj ||_2."""
        pos = self.rep.to_global(x)
        d = torch.linalg.vector_norm(pos - hint.to(pos), dim=-1)         # (B, N, J)
        return (d * mask.to(d.dtype)).sum((1, 2))

    def gradient(self, x: torch.Tensor, hint: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """grad_x G (B, N, D), the first frame's zeroed if ``zero_first_frame``.

        dG/dR(x)_nj = m_nj (R(x)_nj - c_nj) / ||R(x)_nj - c_nj|| (0 at an exact hit), pulled
        back through R by :meth:`MotionRepresentation.cost_gradient` (equal to autograd of
        :meth:`cost`, tested, and several times cheaper in the K = 500 loop)."""
        with torch.no_grad():
            diff = self.rep.to_global(x) - hint.to(x)
            dist = torch.linalg.vector_norm(diff, dim=-1, keepdim=True)
            upstream = torch.where(mask[..., None] & (dist > 0), diff / dist.clamp_min(1e-30),
                                   torch.zeros_like(diff))
            grad = self.rep.cost_gradient(x, upstream)
        if self.zero_first_frame:
            grad[:, 0] = 0                       # sequences start at the origin (official)
        return grad

    def _descend(self, x: torch.Tensor, var: torch.Tensor, tau: torch.Tensor,
                 steps: torch.Tensor, hint: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """x <- x - tau * max(var, min_var) * grad G, ``steps[b]`` times for row b."""
        var = var.reshape(-1).to(x.dtype).expand(x.shape[0]).clamp_min(self.min_var)
        lr = (tau.to(x.dtype) * var)[:, None, None]
        for k in range(int(steps.max())):
            active = (steps > k).to(x.dtype)[:, None, None]
            x = x - active * lr * self.gradient(x, hint, mask)      # mu <- mu - tau Sigma grad G
        return x.detach()

    def __call__(self, mu: torch.Tensor, t: int, var: torch.Tensor | float, hint: torch.Tensor,
                 mask: torch.Tensor) -> torch.Tensor:
        """Guided posterior mean (B, N, D) at sampling step ``t`` (one t for the batch)."""
        mu = self.rep._check(mu, "mu")
        hint, mask = check_hint(hint, mask, mu.shape[0], mu.shape[1], self.rep.n_joints)
        var = torch.as_tensor(var, dtype=mu.dtype, device=mu.device)
        k = self.k_late if int(t) < self.t_switch else self.k_early
        steps = torch.full((mu.shape[0],), k, dtype=torch.long)
        tau = guidance_scale(mask, self.tau_scale).to(mu.device)
        return self._descend(mu, var, tau, steps, hint, mask)

    def mean_hook(self, hint: torch.Tensor, mask: torch.Tensor) -> Callable[..., torch.Tensor]:
        """A ``mean_hook`` for :meth:`iclr24.kits.diffusion.GaussianDiffusion.sample`."""
        def hook(mean: torch.Tensor, t: int, var: torch.Tensor, x0: torch.Tensor,
                 xt: torch.Tensor) -> torch.Tensor:
            return self(mean, t, var, hint, mask)

        return hook

    def guide_training_input(self, xt: torch.Tensor, t: torch.Tensor, var: torch.Tensor,
                             hint: torch.Tensor, mask: torch.Tensor, *, tau: float = 0.5,
                             k_early: int = 20, k_late: int = 100,
                             t_switch: int = 20) -> torch.Tensor:
        """The official training-time guidance of x_t (B, N, D) before the model sees it:
        tau = 0.5 fixed, K = 20 or 100 when t < t_switch (official 20 of 1000), per row's t
        (B,) and posterior variance var (B,) (floored at min_var)."""
        xt = self.rep._check(xt, "xt")
        hint, mask = check_hint(hint, mask, xt.shape[0], xt.shape[1], self.rep.n_joints)
        steps = torch.where(t.cpu() < t_switch, k_late, k_early)
        taus = torch.full((xt.shape[0],), float(tau), dtype=torch.float64, device=xt.device)
        return self._descend(xt, var, taus, steps, hint, mask)
