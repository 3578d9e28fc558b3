"""Discrete Gaussian diffusion (DDPM) with the step split open for guidance.

Forward process, t = 0..T-1 indexing beta_1..beta_T, alpha_t = 1 - beta_t,
abar_t = prod_{s<=t} alpha_s (abar_{-1} = 1):

    q(x_t | x_0)         = N(sqrt(abar_t) x_0, (1 - abar_t) I)
    q(x_{t-1} | x_t, x_0) = N(c0_t x_0 + ct_t x_t, var_t),
        c0_t = beta_t sqrt(abar_{t-1}) / (1 - abar_t),
        ct_t = sqrt(alpha_t) (1 - abar_{t-1}) / (1 - abar_t),
        var_t = beta_t (1 - abar_{t-1}) / (1 - abar_t)                     (posterior variance)
    x_0 = (x_t - sqrt(1 - abar_t) eps) / sqrt(abar_t)                     (x0 <-> eps, Tweedie)

A denoiser predicts eps or x_0 (``predict``); one reverse step plugs its x_0 estimate into the
posterior mean, lets a *mean hook* edit that mean (OmniControl's spatial guidance acts exactly
here: after the model call, before the noise draw), then draws
x_{t-1} = mean + eta * sigma_t * z, with sigma_t^2 the posterior variance (``variance=
"posterior"``, DDPM's sigma_small; MDM and Genie) or beta_t (``"beta"``, DDPM's sigma_large) and
eta a noise scale (Genie's ``noise_scale``; 1 = ancestral DDPM). No noise is added at t = 0.
``noise_fn`` replaces the Gaussian draws (e.g. :func:`~.centre_of_mass.com_free_noise`), for
the forward process and the sampler alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from .schedules import beta_schedule

__all__ = ["GaussianDiffusion", "ReverseStep"]

Denoiser = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
MeanHook = Callable[..., torch.Tensor]
NoiseFn = Callable[[tuple[int, ...], torch.Generator | None], torch.Tensor]


@dataclass(frozen=True)
class ReverseStep:
    """The parts of one reverse step: the posterior ``mean`` and ``var`` (broadcastable to x)
    given the model's clean estimate ``x0``."""

    mean: torch.Tensor
    var: torch.Tensor
    x0: torch.Tensor


class GaussianDiffusion:
    """A T-step Gaussian diffusion over tensors of any shape (batch first).

    betas:    (T,) noise schedule, or a schedule name (``"linear"``, ``"cosine"``) with ``steps``.
    predict:  what the denoiser outputs: ``"eps"`` (the noise) or ``"x0"`` (the clean sample).
    variance: the sampler's sigma_t^2: ``"posterior"`` or ``"beta"``.
    """

    def __init__(self, betas: torch.Tensor | str, steps: int | None = None, *,
                 predict: str = "eps", variance: str = "posterior") -> None:
        if isinstance(betas, str):
            if steps is None:
                raise ValueError("steps is required with a schedule name")
            betas = beta_schedule(betas, steps)
        elif steps is not None and steps != len(betas):
            raise ValueError(f"steps={steps} disagrees with len(betas)={len(betas)}")
        b = torch.as_tensor(betas, dtype=torch.float64).flatten()
        if b.numel() < 1 or torch.any(b <= 0) or torch.any(b >= 1):
            raise ValueError("betas must be a non-empty sequence in (0, 1)")
        if predict not in ("eps", "x0"):
            raise ValueError(f"predict must be 'eps' or 'x0', got {predict!r}")
        if variance not in ("posterior", "beta"):
            raise ValueError(f"variance must be 'posterior' or 'beta', got {variance!r}")
        self.T, self.predict, self.variance = int(b.numel()), predict, variance
        self.betas = b
        self.alphas = 1 - b
        self.abar = torch.cumprod(self.alphas, 0)
        self.abar_prev = torch.cat([torch.ones(1, dtype=torch.float64), self.abar[:-1]])
        self.posterior_var = b * (1 - self.abar_prev) / (1 - self.abar)
        self.c0 = b * self.abar_prev.sqrt() / (1 - self.abar)
        self.ct = self.alphas.sqrt() * (1 - self.abar_prev) / (1 - self.abar)

    # -- helpers -------------------------------------------------------------------------
    def _t(self, t: torch.Tensor | int, x: torch.Tensor) -> torch.Tensor:
        tt = torch.as_tensor(t, dtype=torch.long).flatten()
        if tt.numel() == 1 and x.shape[0] != 1:
            tt = tt.expand(x.shape[0])
        if tt.numel() != x.shape[0]:
            raise ValueError(f"t must be an int or hold one step per batch row ({x.shape[0]}), "
                             f"got {tt.numel()}")
        if torch.any(tt < 0) or torch.any(tt >= self.T):
            raise ValueError(f"t must lie in [0, {self.T}), got {tt.min()}..{tt.max()}")
        return tt

    def _coef(self, table: torch.Tensor, t: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """table[t] shaped (B, 1, ..., 1) in x's dtype and device."""
        return table[t.cpu()].to(dtype=x.dtype, device=x.device).view(-1, *([1] * (x.dim() - 1)))

    def _noise(self, like: torch.Tensor, generator: torch.Generator | None,
               noise_fn: NoiseFn | None) -> torch.Tensor:
        if noise_fn is not None:
            z = noise_fn(tuple(like.shape), generator)
            if z.shape != like.shape:
                raise ValueError(f"noise_fn returned shape {tuple(z.shape)}, expected "
                                 f"{tuple(like.shape)}")
            return z.to(dtype=like.dtype, device=like.device)
        return torch.randn(like.shape, generator=generator, dtype=like.dtype,
                           device=generator.device if generator is not None else like.device
                           ).to(like.device)

    # -- forward process and conversions ------------------------------------------------
    def q_sample(self, x0: torch.Tensor, t: torch.Tensor | int,
                 noise: torch.Tensor) -> torch.Tensor:
        """x_t = sqrt(abar_t) x_0 + sqrt(1 - abar_t) noise."""
        if noise.shape != x0.shape:
            raise ValueError(f"noise must have x0's shape {tuple(x0.shape)}, got "
                             f"{tuple(noise.shape)}")
        tt = self._t(t, x0)
        return self._coef(self.abar.sqrt(), tt, x0) * x0 + \
            self._coef((1 - self.abar).sqrt(), tt, x0) * noise

    def x0_from_eps(self, xt: torch.Tensor, t: torch.Tensor | int,
                    eps: torch.Tensor) -> torch.Tensor:
        """x_0 = (x_t - sqrt(1 - abar_t) eps) / sqrt(abar_t)."""
        tt = self._t(t, xt)
        return (xt - self._coef((1 - self.abar).sqrt(), tt, xt) * eps) / \
            self._coef(self.abar.sqrt(), tt, xt)

    def eps_from_x0(self, xt: torch.Tensor, t: torch.Tensor | int,
                    x0: torch.Tensor) -> torch.Tensor:
        """eps = (x_t - sqrt(abar_t) x_0) / sqrt(1 - abar_t)."""
        tt = self._t(t, xt)
        return (xt - self._coef(self.abar.sqrt(), tt, xt) * x0) / \
            self._coef((1 - self.abar).sqrt(), tt, xt)

    def q_posterior(self, x0: torch.Tensor, xt: torch.Tensor,
                    t: torch.Tensor | int) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and variance of q(x_{t-1} | x_t, x_0) (variance shaped (B, 1, ..., 1))."""
        tt = self._t(t, xt)
        mean = self._coef(self.c0, tt, xt) * x0 + self._coef(self.ct, tt, xt) * xt
        return mean, self._coef(self.posterior_var, tt, xt)

    def sampler_var(self, t: torch.Tensor | int, like: torch.Tensor) -> torch.Tensor:
        """sigma_t^2 of the reverse step (posterior variance or beta_t), shaped to broadcast."""
        table = self.posterior_var if self.variance == "posterior" else self.betas
        return self._coef(table, self._t(t, like), like)

    # -- the reverse process -------------------------------------------------------------
    def reverse_step(self, model_out: torch.Tensor, xt: torch.Tensor, t: torch.Tensor | int,
                     clip_x0: float | None = None) -> ReverseStep:
        """Posterior mean and sampler variance from the denoiser's output at (x_t, t);
        ``clip_x0`` clamps the x_0 estimate to [-clip_x0, clip_x0] first (images)."""
        if model_out.shape != xt.shape:
            raise ValueError(f"the denoiser must return x_t's shape {tuple(xt.shape)}, got "
                             f"{tuple(model_out.shape)}")
        x0 = model_out if self.predict == "x0" else self.x0_from_eps(xt, t, model_out)
        if clip_x0 is not None:
            x0 = x0.clamp(-clip_x0, clip_x0)
        mean, _ = self.q_posterior(x0, xt, t)
        return ReverseStep(mean=mean, var=self.sampler_var(t, xt), x0=x0)

    def sample(self, model: Denoiser, shape: tuple[int, ...], *,
               generator: torch.Generator | None = None, eta: float = 1.0,
               mean_hook: MeanHook | None = None, noise_fn: NoiseFn | None = None,
               x_T: torch.Tensor | None = None, clip_x0: float | None = None,
               device: torch.device | str | None = None,
               progress: Callable[[float, str], None] | None = None) -> torch.Tensor:
        """Ancestral sampling from x_T ~ N(0, I) (or ``x_T``) down to x_0.

        model(x_t, t) -> eps or x_0 prediction, t a (B,) long tensor.
        mean_hook(mean, t=t, var=var, x0=x0, xt=x_t) -> the edited posterior mean (t an int),
        called after the model and before the noise draw of every step.
        eta: noise scale on sigma_t (0: the posterior-mean path, deterministic given x_T).
        """
        if not isinstance(eta, (int, float)) or isinstance(eta, bool) or eta < 0:
            raise ValueError(f"eta must be a non-negative number, got {eta!r}")
        if x_T is None:
            dev = device if device is not None else (generator.device if generator is not None
                                                      else "cpu")
            x = self._noise(torch.empty(shape, device=dev), generator, noise_fn)
        else:
            if tuple(x_T.shape) != tuple(shape):
                raise ValueError(f"x_T must have shape {tuple(shape)}, got {tuple(x_T.shape)}")
            x = x_T
        for i, t in enumerate(range(self.T - 1, -1, -1)):
            tt = torch.full((x.shape[0],), t, dtype=torch.long, device=x.device)
            step = self.reverse_step(model(x, tt), x, t, clip_x0)
            mean = step.mean
            if mean_hook is not None:
                mean = mean_hook(mean, t=t, var=step.var, x0=step.x0, xt=x)
                if mean.shape != x.shape:
                    raise ValueError(f"mean_hook must return shape {tuple(x.shape)}, got "
                                     f"{tuple(mean.shape)}")
            if t > 0 and eta > 0:
                x = mean + eta * step.var.sqrt() * self._noise(x, generator, noise_fn)
            else:
                x = mean
            if progress is not None:
                progress((i + 1) / self.T, f"denoising step {i + 1}/{self.T}")
        return x

    # -- training ------------------------------------------------------------------------
    def timesteps(self, batch: int, generator: torch.Generator | None = None,
                  device: torch.device | str | None = None) -> torch.Tensor:
        """(batch,) steps drawn uniformly from [0, T)."""
        dev = device if device is not None else (generator.device if generator is not None
                                                  else "cpu")
        return torch.randint(0, self.T, (batch,), generator=generator, device=dev)

    def loss(self, model: Denoiser, x0: torch.Tensor, *,
             generator: torch.Generator | None = None, noise_fn: NoiseFn | None = None,
             mask: torch.Tensor | None = None) -> torch.Tensor:
        """The simple DDPM loss: mean squared error of the model's target (eps or x_0) at a
        uniform random step; ``mask`` (broadcastable to x0, 1 = counts) restricts the mean."""
        t = self.timesteps(x0.shape[0], generator).to(x0.device)
        noise = self._noise(x0, generator, noise_fn)
        xt = self.q_sample(x0, t, noise)
        out = model(xt, t)
        if out.shape != x0.shape:
            raise ValueError(f"the denoiser must return x0's shape {tuple(x0.shape)}, got "
                             f"{tuple(out.shape)}")
        err = (out - (noise if self.predict == "eps" else x0)) ** 2
        if mask is None:
            return err.mean()
        m = torch.broadcast_to(mask.to(err.dtype), err.shape)
        return (err * m).sum() / m.sum().clamp_min(1)
