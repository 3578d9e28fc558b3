"""DiffCSP++ (paper Sec. 4, Alg. 1-2; official ``CSPDiffusion``) and the DiffCSP baseline.

Lattice: DDPM on the log coefficients k (6-d) with the shared Gaussian kit
(:class:`iclr24.kits.diffusion.GaussianDiffusion`, cosine schedule, eps prediction). The noise
is masked by the space group's constraint and every state is re-projected,

    k_t = P_G(sqrt(abar_t) k_0 + sqrt(1 - abar_t) m_G * eps),   loss |m_G * eps_hat - m_G * eps|^2.

Coordinates: wrapped-normal score matching on the Wyckoff anchors (:mod:`.wrapped_normal`).
Anchor noise is projected onto the site's free subspace, eps'_a = R_a^+ eps_a, propagated to
every atom of the orbit, eps_i = R_i eps'_{a(i)}, x_t = x_0 + sigma_t eps (mod 1); the network's
per-atom output s_i is mapped back, R_i^+ s_i, and regressed on the anchor's target
-grad log p_sigma(sigma_t eps'_a) / sqrt(lambda_t).

Sampling (predictor-corrector, t = T..1): a Langevin corrector on coordinates
(step gamma = step_lr / (lambda_t sigma_begin^2), noise sqrt(2 gamma)), then a predictor step:
reverse-SDE on coordinates (step sigma_t^2 - sigma_{t-1}^2) and the kit's ancestral DDPM step
on k (posterior variance, masked noise, re-projection). After each half step the back-projected
scores are averaged over each orbit (mean of R_i^+ s_i), applied to the anchor as R_i(mean), and
all atoms are regenerated from their anchors, f_i = R_i f_{a(i)} + t_i mod 1.

``DiffCSP`` is the same model with every constraint removed (the free P1 template: each atom
its own anchor with the identity op, mask 1, bias 0). The original DiffCSP diffuses the 3x3
lattice matrix instead of k; here both arms share the k representation so that they differ
only in the constraints.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from iclr24.kits.diffusion import GaussianDiffusion

from .crystal_batch import Crystal, CrystalBatch, collate
from .cspnet import CSPNet
from .lattice import LatticeLogBasis
from .wrapped_normal import WrappedNormalSchedule, wrapped_normal_noise_score
from .wyckoff import WyckoffTemplate

__all__ = ["DiffCSP", "DiffCSPPlusPlus", "fit"]


def _mean_by(x: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    out = torch.zeros(size, x.shape[1], dtype=x.dtype, device=x.device)
    out.index_add_(0, index, x)
    cnt = torch.zeros(size, dtype=x.dtype, device=x.device)
    cnt.index_add_(0, index, torch.ones_like(index, dtype=x.dtype))
    return out / cnt.clamp_min(1)[:, None]


def _matvec(m: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.einsum("nij,nj->ni", m, v)


class DiffCSPPlusPlus(nn.Module):
    """Space-group constrained crystal diffusion.

    net: a :class:`CSPNet`; steps: T; sigma_begin / sigma_end: the coordinates' wrapped-normal
    noise range; schedule: the lattice's beta schedule (kit name); cost_lattice / cost_coord:
    loss weights. Official defaults: T = 1000, sigma 0.005 - 0.5, cosine, weights 1 and 1.
    """

    constrained = True

    def __init__(self, net: CSPNet, steps: int = 1000, sigma_begin: float = 0.005,
                 sigma_end: float = 0.5, schedule: str = "cosine", cost_lattice: float = 1.0,
                 cost_coord: float = 1.0, clip_k0: float | None = None) -> None:
        super().__init__()
        if not isinstance(net, CSPNet):
            raise TypeError(f"net must be a CSPNet, got {type(net).__name__}")
        self.net = net
        self.steps = steps
        self.lattice_diffusion = GaussianDiffusion(schedule, steps, predict="eps")
        self.coord_schedule = WrappedNormalSchedule(steps, sigma_begin, sigma_end)
        self.basis = LatticeLogBasis()
        self.cost_lattice, self.cost_coord = float(cost_lattice), float(cost_coord)
        if clip_k0 is not None and not clip_k0 > 0:
            raise ValueError(f"clip_k0 must be positive or None, got {clip_k0!r}")
        self.clip_k0 = clip_k0

    # -- which constraints an arm uses ---------------------------------------------------
    def template_for(self, template: WyckoffTemplate) -> WyckoffTemplate:
        """The template this model conditions on (DiffCSP++: the crystal's own)."""
        return template

    # -- training -----------------------------------------------------------------------
    def loss(self, batch: CrystalBatch, generator: torch.Generator | None = None
             ) -> dict[str, torch.Tensor]:
        """{'loss', 'loss_lattice', 'loss_coord'} of one random step per crystal."""
        if batch.frac is None or batch.lattice is None:
            raise ValueError("batch must carry frac and lattice (build it with collate)")
        B, dev, dt = batch.num_crystals, batch.frac.device, batch.frac.dtype
        gen_dev = generator.device if generator is not None else dev
        t = torch.randint(1, self.steps + 1, (B,), generator=generator, device=gen_dev).to(dev)
        sg = batch.spacegroup
        k0 = self.basis.project(self.basis.to_k(batch.lattice), sg)
        eps_k = self.basis.project_noise(
            torch.randn(B, 6, generator=generator, device=gen_dev, dtype=dt).to(dev), sg)
        k_t = self.basis.project(self.lattice_diffusion.q_sample(k0, t - 1, eps_k), sg)

        sched = self.coord_schedule
        sig = sched.sigmas.to(dev, dt)[t][batch.node2graph][:, None]
        lam = sched.sigma_norm.to(dev, dt)[t][batch.node2graph][:, None]
        z = torch.randn(batch.frac.shape, generator=generator, device=gen_dev, dtype=dt).to(dev)
        z_anchor = _matvec(batch.ops_pinv[batch.anchors], z[batch.anchors])  # R_a^+ eps_a
        eps_x = _matvec(batch.ops[:, :3, :3], z_anchor)  # R_i eps'_a
        x_t = (batch.frac + sig * eps_x) % 1.0

        pred_k, pred_x = self.net(t, batch.atom_types, x_t, k_t, batch.edges, batch.node2graph)
        pred_k = self.basis.project_noise(pred_k, sg)
        target = wrapped_normal_noise_score(sig * z_anchor, sig) / lam.sqrt()
        loss_lattice = F.mse_loss(pred_k, eps_k)
        loss_coord = F.mse_loss(_matvec(batch.ops_pinv, pred_x), target)  # R_i^+ s_i vs target
        loss = self.cost_lattice * loss_lattice + self.cost_coord * loss_coord
        return {"loss": loss, "loss_lattice": loss_lattice, "loss_coord": loss_coord}

    # -- sampling -----------------------------------------------------------------------
    def _orbit_score(self, batch: CrystalBatch, pred: torch.Tensor) -> torch.Tensor:
        """R_i (mean over i's orbit of R_j^+ s_j): the symmetrised per-atom score."""
        proj = _matvec(batch.ops_pinv, pred)
        mean = _mean_by(proj, batch.anchors, proj.shape[0])[batch.anchors]
        return _matvec(batch.ops[:, :3, :3], mean)

    def _orbit_noise(self, batch: CrystalBatch, z: torch.Tensor) -> torch.Tensor:
        return _matvec(batch.ops[:, :3, :3], _matvec(batch.ops_pinv[batch.anchors],
                                                       z[batch.anchors]))

    @staticmethod
    def _regenerate(batch: CrystalBatch, x: torch.Tensor) -> torch.Tensor:
        """f_i = R_i f_{a(i)} + t_i mod 1."""
        return (_matvec(batch.ops[:, :3, :3], x[batch.anchors]) + batch.ops[:, :3, 3]) % 1.0

    @torch.no_grad()
    def sample_batch(self, batch: CrystalBatch, step_lr: float = 1e-5,
                     generator: torch.Generator | None = None,
                     progress: Callable[[float, str], None] | None = None
                     ) -> tuple[torch.Tensor, torch.Tensor]:
        """(k (B, 6), frac (N, 3)) for a batch of templates (frac/lattice unused)."""
        if not isinstance(step_lr, (int, float)) or step_lr < 0:
            raise ValueError(f"step_lr must be a non-negative number, got {step_lr!r}")
        B, N = batch.num_crystals, batch.atom_types.shape[0]
        dev, dt = batch.ops.device, batch.ops.dtype
        gdev = generator.device if generator is not None else dev

        def randn(*shape):
            return torch.randn(*shape, generator=generator, device=gdev, dtype=dt).to(dev)

        sg, diff, sched = batch.spacegroup, self.lattice_diffusion, self.coord_schedule
        sigmas, lams = sched.sigmas.to(dev, dt), sched.sigma_norm.to(dev, dt)
        k = self.basis.project(randn(B, 6), sg)
        x = self._regenerate(batch, torch.rand(N, 3, generator=generator, device=gdev,
                                               dtype=dt).to(dev))
        for i, t in enumerate(range(self.steps, 0, -1)):
            tt = torch.full((B,), t, dtype=torch.long, device=dev)
            sig, sig_prev, lam = sigmas[t], sigmas[t - 1], lams[t]
            # corrector: Langevin on coordinates at fixed k
            gamma = step_lr / (lam * sched.sigma_begin ** 2)
            z = self._orbit_noise(batch, randn(N, 3)) if t > 1 else torch.zeros_like(x)
            _, px = self.net(tt, batch.atom_types, x, k, batch.edges, batch.node2graph)
            score = self._orbit_score(batch, px * lam.sqrt())
            x = self._regenerate(batch, x - gamma * score + (2 * gamma).sqrt() * z)
            # predictor: ancestral DDPM on k, reverse SDE on coordinates
            pk, px = self.net(tt, batch.atom_types, x, k, batch.edges, batch.node2graph)
            step = diff.reverse_step(self.basis.project_noise(pk, sg), k, t - 1, self.clip_k0)
            k_noise = self.basis.project_noise(randn(B, 6), sg) if t > 1 else 0.0
            k_new = self.basis.project(step.mean + step.var.sqrt() * k_noise, sg)
            delta = sig ** 2 - sig_prev ** 2
            std = (sig_prev ** 2 * delta / sig ** 2).sqrt()
            z = self._orbit_noise(batch, randn(N, 3)) if t > 1 else torch.zeros_like(x)
            score = self._orbit_score(batch, px * lam.sqrt())
            x = self._regenerate(batch, x - delta * score + std * z)
            k = k_new
            if progress is not None:
                progress((i + 1) / self.steps, f"step {i + 1}/{self.steps}")
        return k, x

    def sample(self, templates: WyckoffTemplate | Sequence[WyckoffTemplate],
               compositions: Sequence[Any] | None = None, *, step_lr: float = 1e-5,
               generator: torch.Generator | None = None, batch_size: int = 256,
               progress: Callable[[float, str], None] | None = None) -> list[Crystal]:
        """One crystal per template (space group + Wyckoff positions + species), in the
        template's atom order. ``compositions`` (optional, one per template) are checked
        against the templates' multiplicities."""
        tpl = [templates] if isinstance(templates, WyckoffTemplate) else list(templates)
        if not tpl or not all(isinstance(t, WyckoffTemplate) for t in tpl):
            raise TypeError("templates must be a WyckoffTemplate or a non-empty sequence of "
                            "them")
        if compositions is not None:
            if len(compositions) != len(tpl):
                raise ValueError(f"compositions must hold one entry per template ({len(tpl)}),"
                                 f" got {len(compositions)}")
            for i, (t, c) in enumerate(zip(tpl, compositions)):
                t.check_composition(c, f"compositions[{i}]")
        return self._sample(tpl, step_lr, generator, batch_size, progress)

    def _sample(self, tpl: list[WyckoffTemplate], step_lr: float,
                generator: torch.Generator | None, batch_size: int,
                progress: Callable[[float, str], None] | None) -> list[Crystal]:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        p = next(self.net.parameters())
        out: list[Crystal] = []
        chunks = [tpl[i:i + batch_size] for i in range(0, len(tpl), batch_size)]
        for c, chunk in enumerate(chunks):
            cp = (None if progress is None else
                  (lambda f, m, c=c: progress((c + f) / len(chunks), m)))
            batch = CrystalBatch.from_templates(chunk, dtype=p.dtype, device=p.device)
            k, x = self.sample_batch(batch, step_lr, generator, cp)
            lat = self.basis.to_matrix(k.double()).cpu().numpy()
            xs = x.double().cpu().numpy()
            start = 0
            for b, t in enumerate(chunk):
                out.append(Crystal(t, xs[start:start + t.n_atoms], lat[b]))
                start += t.n_atoms
        return out


class DiffCSP(DiffCSPPlusPlus):
    """The unconstrained baseline: every crystal conditioned on its composition only (free P1
    template: all atoms free, the lattice's six coefficients free)."""

    constrained = False

    def template_for(self, template: WyckoffTemplate) -> WyckoffTemplate:
        return WyckoffTemplate.free(template.species)

    def sample(self, compositions: Sequence[Any], *, step_lr: float = 1e-5,
               generator: torch.Generator | None = None, batch_size: int = 256,
               progress: Callable[[float, str], None] | None = None) -> list[Crystal]:
        """One crystal per composition (mapping species -> count, or a list of species)."""
        if isinstance(compositions, (str, WyckoffTemplate)) or not isinstance(
                compositions, Sequence) or not compositions:
            raise TypeError("compositions must be a non-empty sequence of compositions")
        tpl = [WyckoffTemplate.free(c) for c in compositions]
        return self._sample(tpl, step_lr, generator, batch_size, progress)


def fit(model: DiffCSPPlusPlus, crystals: Sequence[Crystal], steps: int, *,
        batch_size: int = 32, lr: float = 1e-3, grad_clip: float | None = 0.5,
        generator: torch.Generator | None = None,
        progress: Callable[[float, str], None] | None = None) -> list[float]:
    """Adam on ``model.loss`` over random mini-batches of ``crystals`` (each conditioned on
    ``model.template_for`` its template); gradients clipped by value at ``grad_clip`` (official
    0.5). Returns the loss of every step."""
    if not crystals or not all(isinstance(c, Crystal) for c in crystals):
        raise TypeError("crystals must be a non-empty sequence of Crystal")
    for name, v in (("steps", steps), ("batch_size", batch_size)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    p = next(model.net.parameters())
    templates = [model.template_for(c.template) for c in crystals]
    opt = torch.optim.Adam(model.net.parameters(), lr=lr, foreach=True)
    seed = int(torch.randint(0, 2 ** 31 - 1, (1,), generator=generator).item())
    order = np.random.default_rng(seed)
    losses: list[float] = []
    model.train()
    for s in range(steps):
        idx = order.choice(len(crystals), size=min(batch_size, len(crystals)), replace=False)
        batch = collate([crystals[i] for i in idx], [templates[i] for i in idx],
                        dtype=p.dtype, device=p.device)
        out = model.loss(batch, generator)
        opt.zero_grad()
        out["loss"].backward()
        if grad_clip is not None:
            torch.nn.utils.clip_grad_value_(model.net.parameters(), grad_clip)
        opt.step()
        losses.append(float(out["loss"].detach()))
        if progress is not None and (s + 1) % 50 == 0:
            progress((s + 1) / steps, f"training step {s + 1}/{steps}")
    model.eval()
    return losses
