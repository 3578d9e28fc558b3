"""The diffeomorphic deformer and its fitting loop (Le et al., ICLR 2024, Sec. 3.3; CortexODE).

Every template vertex follows the neural ODE dx/dt = F_theta(x(t), t), t in [0, 1], x(0) = the
template vertex; the faces are kept, so the output mesh is (x(1), F). The flow of a Lipschitz
field is a diffeomorphism, which discourages self-intersections; the integration is fixed-step
(``torchdiffeq.odeint``, Euler with step 0.1 as CortexODE), so folds remain possible and are
measured (SIF), not assumed away.

What differs from the paper: F_theta sees only (x, t). The paper (as CortexODE) also feeds image
features cube-sampled from the MRI volume around x and trains one network over many subjects;
here one field is fitted per target (a registration problem), which keeps the mechanism that
the paper's comparison is about - the same ODE and optimiser, only the loss changes - at CPU size.
Regularisers of the base model are not added (none in any arm).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np
import torch
from torch import nn

from .distances import chamfer_distance, sliced_wasserstein
from .measures import check_mesh, mesh_to_measure, sample_surface

__all__ = ["LOSSES", "FitHistory", "NeuralODEDeformer", "VelocityField", "fit_deformation"]

LOSSES = ("sw_varifold", "sw_centroid", "sw_samples", "chamfer")


class VelocityField(nn.Module):
    """F_theta(x, t): (n, 3), scalar t -> (n, 3). MLP (x, t) in R^4 -> hidden x ``depth`` -> R^3
    with softplus activations; the last layer is zero-initialised, so the initial flow is the
    identity map. ``generator`` makes the hidden layers' (PyTorch-default uniform) init explicit."""

    def __init__(self, hidden: int = 128, depth: int = 3, generator: torch.Generator | None = None):
        super().__init__()
        if not isinstance(hidden, int) or hidden < 1 or not isinstance(depth, int) or depth < 1:
            raise ValueError(f"hidden and depth must be positive ints, got {hidden!r}, {depth!r}")
        dims = [4] + [hidden] * depth
        self.hidden_layers = nn.ModuleList(nn.Linear(i, o) for i, o in pairwise(dims))
        self.out = nn.Linear(hidden, 3)
        with torch.no_grad():
            for lin in self.hidden_layers:
                bound = 1.0 / math.sqrt(lin.in_features)  # PyTorch's default Linear init range
                lin.weight.uniform_(-bound, bound, generator=generator)
                lin.bias.uniform_(-bound, bound, generator=generator)
            self.out.weight.zero_()
            self.out.bias.zero_()
        self.act = nn.Softplus()

    def forward(self, x: torch.Tensor, t: torch.Tensor | float) -> torch.Tensor:
        t_col = torch.as_tensor(t, dtype=x.dtype, device=x.device).reshape(1, 1)
        t_col = t_col.expand(x.shape[0], 1)
        h = torch.cat([x, t_col], dim=1)
        for lin in self.hidden_layers:
            h = self.act(lin(h))
        return self.out(h)


class NeuralODEDeformer(nn.Module):
    """x(1) = x(0) + int_0^1 F_theta(x(t), t) dt with ``torchdiffeq.odeint`` (fixed step).

    ``forward(verts (n, 3)) -> verts_T (n, 3)``. ``method``: "euler" or "rk4";
    ``step_size`` 0.1 gives 10 steps on [0, 1]."""

    def __init__(self, field: VelocityField | None = None, method: str = "euler",
                 step_size: float = 0.1):
        super().__init__()
        if method not in ("euler", "rk4"):
            raise ValueError(f"method must be 'euler' or 'rk4', got {method!r}")
        if not 0.0 < step_size <= 1.0:
            raise ValueError(f"step_size must be in (0, 1], got {step_size!r}")
        self.field = field if field is not None else VelocityField()
        self.method, self.step_size = method, float(step_size)

    def forward(self, verts: torch.Tensor) -> torch.Tensor:
        from torchdiffeq import odeint

        if not isinstance(verts, torch.Tensor) or verts.ndim != 2 or verts.shape[1] != 3:
            raise ValueError(f"verts must be a tensor of shape (n, 3), got "
                             f"{getattr(verts, 'shape', type(verts).__name__)}")
        ts = torch.tensor([0.0, 1.0], dtype=verts.dtype, device=verts.device)
        traj = odeint(lambda t, x: self.field(x, t), verts, ts, method=self.method,
                      options={"step_size": self.step_size})  # dx/dt = F_theta(x, t)
        return traj[-1]


@dataclass
class FitHistory:
    """Per-step training loss of :func:`fit_deformation` and the fitted deformer."""

    loss: list[float] = field(default_factory=list)
    model: NeuralODEDeformer | None = None


def _as_mesh(mesh, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    if not (isinstance(mesh, tuple | list) and len(mesh) == 2):
        raise TypeError(f"{name} must be a (verts (n, 3), faces (f, 3)) pair")
    if isinstance(mesh[0], torch.Tensor):
        verts = mesh[0].detach().float()
    else:
        verts = torch.as_tensor(np.asarray(mesh[0], dtype=np.float32))
    return check_mesh(verts, torch.as_tensor(np.asarray(mesh[1])))


def fit_deformation(template, target, loss: str = "sw_varifold", steps: int = 600,
                    lr: float = 1e-3, seed: int = 0, n_samples: int = 2000,
                    n_projections: int = 100, normal_scale: float = 1.0, hidden: int = 128,
                    method: str = "euler", step_size: float = 0.1,
                    checkpoints: Sequence[int] = (),
                    on_checkpoint: Callable[[int, torch.Tensor], None] | None = None
                    ) -> tuple[tuple[torch.Tensor, torch.Tensor], FitHistory]:
    """Fit a :class:`NeuralODEDeformer` that moves ``template`` onto ``target`` with Adam.

    ``template``/``target``: (verts (n, 3), faces (f, 3)) pairs (numpy or torch). ``loss``:
    - "sw_varifold": SW_2 between the varifold measures (centroid, lambda normal; area weights),
    - "sw_centroid": SW_2 between the area-weighted centroid measures,
    - "sw_samples": SW_2 between ``n_samples`` fresh surface samples of each mesh,
    - "chamfer": Chamfer distance between ``n_samples`` fresh surface samples of each mesh.
    Projections and samples are redrawn every step from one ``torch.Generator(seed)``; the model
    init uses the same seed, so arms differ only in the loss.
    ``checkpoints``: step counts (0 < k < ``steps``) after which ``on_checkpoint(k, verts_k)``
    is called with the deformed vertices at that point of training (no gradient), e.g. to
    evaluate convergence; the random stream is not touched, so the fit is unchanged.
    Returns ((verts_T, faces), history)."""
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    if not isinstance(steps, int) or steps < 0:
        raise ValueError(f"steps must be a non-negative int, got {steps!r}")
    if not lr > 0:
        raise ValueError(f"lr must be positive, got {lr!r}")
    checkpoints = sorted({int(k) for k in checkpoints})
    if checkpoints and not 0 < checkpoints[0] <= checkpoints[-1] < max(steps, 1):
        raise ValueError(f"checkpoints must lie in 1..steps-1 = 1..{steps - 1}, got {checkpoints}")
    if checkpoints and on_checkpoint is None:
        raise ValueError("checkpoints were given but on_checkpoint is None")
    v0, f0 = _as_mesh(template, "template")
    vt, ft = _as_mesh(target, "target")
    gen = torch.Generator().manual_seed(seed)
    model = NeuralODEDeformer(VelocityField(hidden, generator=gen), method, step_size)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    kind = {"sw_varifold": "varifold", "sw_centroid": "centroid"}.get(loss)
    if kind is not None:
        y, b = mesh_to_measure(vt, ft, kind, normal_scale=normal_scale)
    history = FitHistory(model=model)
    for step in range(steps):
        if step in checkpoints:
            with torch.no_grad():
                on_checkpoint(step, model(v0))
        opt.zero_grad()
        v = model(v0)
        if kind is not None:
            x, a = mesh_to_measure(v, f0, kind, normal_scale=normal_scale)
            value = sliced_wasserstein(x, y, a, b, n_projections, generator=gen)
        else:
            x, _ = sample_surface(v, f0, n_samples, gen)
            y_s, _ = sample_surface(vt, ft, n_samples, gen)
            value = (sliced_wasserstein(x, y_s, n_projections=n_projections, generator=gen)
                     if loss == "sw_samples" else chamfer_distance(x, y_s))
        value.backward()
        opt.step()
        history.loss.append(float(value.detach()))
    with torch.no_grad():
        v_final = model(v0)
    return (v_final, f0), history
