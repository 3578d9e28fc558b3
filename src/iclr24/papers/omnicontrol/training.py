"""Training and sampling of the base denoiser and of OmniControl (official ``training_loop``,
``training_losses``, ``p_sample_loop`` with classifier-free guidance).

- :func:`train_denoiser`: MDM's diffusion loss, MSE on x_0 at a uniform step, AdamW; the label
  is dropped with p = cond_drop for classifier-free guidance.
- :func:`train_realism_branch`: the same loss for :class:`~.networks.ControlledMDM` with only
  the branch trainable, hints drawn as the official ``random_mask_train`` (one joint, a uniform
  number of keyframes), and (``guide_inputs``, default on as in the official code) x_t guided
  towards the hint before the model sees it.
- :func:`sample_motions`: ancestral sampling through :class:`iclr24.kits.diffusion.
  GaussianDiffusion` with classifier-free guidance (out_u + s (out_c - out_u), the official
  scale 2.5), spatial guidance once on the combined posterior mean via the kit's ``mean_hook``.

Scaled down: AdamW at lr 5e-4 for a few thousand steps (MDM: 1e-4 for 600K steps).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from iclr24.kits.diffusion import GaussianDiffusion

from .control_signals import GlobalStatistics, branch_input, random_hints
from .networks import ControlledMDM, MotionDenoiser
from .spatial_guidance import SpatialGuidance, check_hint

__all__ = ["sample_motions", "train_denoiser", "train_realism_branch"]

Progress = Callable[[float, str], None]


def _batches(n: int, batch: int, steps: int, generator: torch.Generator):
    for _ in range(steps):
        yield torch.randint(n, (batch,), generator=generator)


def train_denoiser(model: MotionDenoiser, diffusion: GaussianDiffusion, x0: torch.Tensor,
                   labels: torch.Tensor, *, steps: int, batch: int = 64, lr: float = 5e-4,
                   generator: torch.Generator,
                   progress: Progress | None = None) -> list[float]:
    """Train ``model`` on normalised motions ``x0`` (M, N, D) with ``labels`` (M,); returns the
    loss per step."""
    if diffusion.predict != "x0":
        raise ValueError("MDM predicts x_0: use GaussianDiffusion(..., predict='x0')")
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("model has no trainable parameter (a base frozen by ControlledMDM?)")
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    model.train()
    losses = []
    for i, idx in enumerate(_batches(x0.shape[0], batch, steps, generator)):
        y = labels[idx]
        loss = diffusion.loss(lambda xt, t, y=y: model(xt, t, y, generator=generator), x0[idx],
                              generator=generator)             # E || x_0 - G(x_t, t, y) ||^2
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        if progress is not None and (i + 1) % 50 == 0:
            progress((i + 1) / steps, f"base denoiser step {i + 1}/{steps}")
    model.eval()
    return losses


def train_realism_branch(model: ControlledMDM, diffusion: GaussianDiffusion, x0: torch.Tensor,
                         labels: torch.Tensor, positions: torch.Tensor,
                         stats: GlobalStatistics, guidance: SpatialGuidance, *, steps: int,
                         batch: int = 64, lr: float = 5e-4, guide_inputs: bool = True,
                         joints: tuple[int, ...] | None = None,
                         branch_positions: torch.Tensor | None = None,
                         generator: torch.Generator,
                         progress: Progress | None = None) -> list[float]:
    """Train the branch of ``model`` (base frozen) on normalised ``x0`` (M, N, D), ``labels``
    (M,) and global ``positions`` (M, N, J, 3) from which hints are drawn; returns the losses.
    ``guide_inputs``: the official training-time guidance of x_t (tau 0.5, K 20 / 100).
    ``branch_positions`` (M, N, J, 3), default ``positions``: where the hint the *branch* sees
    is read (same keyframes and joint); the training-time guidance always uses ``positions``.
    Another motion's positions here give the null arm of the claims: a branch trained as long,
    on the same data, with a hint that carries no information about the motion."""
    if diffusion.predict != "x0":
        raise ValueError("MDM predicts x_0: use GaussianDiffusion(..., predict='x0')")
    if branch_positions is None:
        branch_positions = positions
    elif not isinstance(branch_positions, torch.Tensor) or \
            branch_positions.shape != positions.shape:
        raise ValueError(f"branch_positions must be a tensor shaped like positions "
                         f"{tuple(positions.shape)}, got "
                         f"{tuple(getattr(branch_positions, 'shape', ()))}")
    params = [p for p in model.branch.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    model.train()
    t_switch = max(1, round(diffusion.T * 20 / 1000))     # official: t < 20 of T = 1000
    losses = []
    for i, idx in enumerate(_batches(x0.shape[0], batch, steps, generator)):
        hint, mask = random_hints(positions[idx], generator, joints=joints)
        seen = branch_positions[idx] * mask[..., None].to(hint.dtype)   # = hint by default
        cond_hint, frames = branch_input(seen, mask, stats)
        t = diffusion.timesteps(batch, generator)
        noise = torch.randn(x0[idx].shape, generator=generator)
        xt = diffusion.q_sample(x0[idx], t, noise)
        if guide_inputs:
            var = diffusion.posterior_var[t].to(xt.dtype)
            xt = guidance.guide_training_input(xt, t, var, hint, mask, t_switch=t_switch)
        out = model(xt, t, labels[idx], cond_hint, frames, generator=generator)
        loss = ((out - x0[idx]) ** 2).mean()                   # MDM's loss, branch trainable
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        if progress is not None and (i + 1) % 50 == 0:
            progress((i + 1) / steps, f"realism branch step {i + 1}/{steps}")
    model.eval()
    return losses


@torch.no_grad()
def sample_motions(model: MotionDenoiser | ControlledMDM, diffusion: GaussianDiffusion,
                   labels: torch.Tensor, n_frames: int, *, generator: torch.Generator,
                   cfg_scale: float = 2.5, guidance: SpatialGuidance | None = None,
                   hint: torch.Tensor | None = None, mask: torch.Tensor | None = None,
                   stats: GlobalStatistics | None = None,
                   progress: Progress | None = None) -> torch.Tensor:
    """Normalised motions (B, N, D) for ``labels`` (B,).

    model: the base (hints unused by the network) or a ControlledMDM (needs ``stats`` to
    normalise the hint for its branch). guidance: spatial guidance of the posterior mean (needs
    hint and mask). cfg_scale: classifier-free guidance scale (1 = conditional only).
    """
    b = labels.shape[0]
    shape = (b, n_frames, (model.base if isinstance(model, ControlledMDM) else model).n_feats)
    controlled = isinstance(model, ControlledMDM)
    if (guidance is not None or controlled) and (hint is None or mask is None):
        raise ValueError("spatial guidance and the realism branch need hint and mask")
    if hint is not None or mask is not None:
        if hint is None or mask is None:
            raise ValueError("give both hint and mask, or neither")
        check_hint(hint, mask, b, n_frames, (shape[-1] - 4) // 3 + 1)  # D = 4 + 3 (J - 1)
    if controlled:
        if stats is None:
            raise ValueError("a ControlledMDM needs stats (GlobalStatistics) for its hint input")
        cond_hint, frames = branch_input(hint, mask, stats)

    def net(x: torch.Tensor, t: torch.Tensor, uncond: bool) -> torch.Tensor:
        if controlled:
            return model(x, t, labels, cond_hint, frames, uncond=uncond)
        return model(x, t, labels, uncond=uncond)

    def denoiser(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        out = net(x, t, False)
        if cfg_scale == 1.0:
            return out
        out_u = net(x, t, True)
        return out_u + cfg_scale * (out - out_u)               # classifier-free guidance

    hook = guidance.mean_hook(hint, mask) if guidance is not None else None
    model.eval()
    return diffusion.sample(denoiser, shape, generator=generator, mean_hook=hook,
                            progress=progress)
