"""The learned dynamics: an ensemble of probabilistic MLPs (COPlanner §4 / MBPO; the official
code uses mbrl-lib's ``GaussianMLP``), with the ensemble uncertainty UP-MPC reads.

Each member k maps the normalised input x = (s, a) to a Gaussian over the normalised target
y = (Δs, r) = (s' − s, r):

    μ_k(x), log σ²_k(x) = MLP_k(x),   log σ² soft-clamped into [min_logvar, max_logvar]
    L = Σ_k mean_n [ (y − μ_k)² e^{−log σ²_k} + log σ²_k ] + 0.01 (Σ max_logvar − Σ min_logvar)

(Gaussian NLL with mbrl-lib's learned log-variance bounds), SiLU activations, Adam with weight
decay, a bootstrap resample of the training rows per member, a held-out validation split
(ratio 0.2) and early stopping after ``patience`` epochs without a > 1 % improvement, keeping
each member's best-validation weights (mbrl-lib's ``ModelTrainer``).

Uncertainty (official ``sample_1d_ensemble``): draw one sample per member
ŷ_k = μ_k + σ_k ε_k and u(s, a) = mean over output dimensions of std_k(ŷ_k); the next state
that continues a rollout is the sample of one uniformly random member per row (TS1).

Differences from the official code, on purpose:
- u is computed in normalised target units (targets are standardised with the training-set
  mean/std; the official code takes stds of raw outputs, where large-scale state dimensions
  dominate);
- ``noise="shared"`` (default) uses the same ε for every member in a row (common random
  numbers), so u measures the members' disagreement, which is how the paper describes it, and
  identical members give u = 0; ``noise="independent"`` is the official draw (u then also carries
  the aleatoric σ of agreeing members);
- no elites: all members are used for propagation and uncertainty (the official code also
  takes u over all members), and the ensemble is small (5 × 3 × 64 in the claims; mbrl-lib:
  7 × 4 × 200 with 5 elites).
"""

from __future__ import annotations

import math
from itertools import pairwise
from typing import Literal

import numpy as np
import torch
from torch import nn

from iclr24.kits.reinforcement import TransitionBuffer

__all__ = ["GaussianEnsemble"]


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive int; got {value!r}")
    return int(value)


class _EnsembleLinear(nn.Module):
    """K independent linear layers applied as one batched matmul: (K, n, in) -> (K, n, out)."""

    def __init__(self, k: int, d_in: int, d_out: int) -> None:
        super().__init__()
        bound = 1.0 / math.sqrt(d_in)
        self.weight = nn.Parameter(torch.empty(k, d_in, d_out).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.zeros(k, 1, d_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.bias, x, self.weight)


class GaussianEnsemble(nn.Module):
    """K Gaussian MLPs over (Δs, r) given (s, a).

    obs_dim, act_dim: sizes of s and a; n_members: K; hidden, n_layers: width and number of
    hidden layers of each member; noise: "shared" or "independent" sampling noise (module
    docstring). Call ``fit`` before ``sample``.
    """

    def __init__(self, obs_dim: int, act_dim: int, n_members: int = 5, hidden: int = 200,
                 n_layers: int = 4, *, noise: Literal["shared", "independent"] = "shared") -> None:
        super().__init__()
        self.obs_dim = _positive_int("obs_dim", obs_dim)
        self.act_dim = _positive_int("act_dim", act_dim)
        self.n_members = _positive_int("n_members", n_members)
        if self.n_members < 2:
            raise ValueError(f"n_members must be >= 2 (the uncertainty is a std across members); "
                             f"got {n_members}")
        hidden = _positive_int("hidden", hidden)
        n_layers = _positive_int("n_layers", n_layers)
        if noise not in ("shared", "independent"):
            raise ValueError(f"noise must be 'shared' or 'independent'; got {noise!r}")
        self.noise = noise
        d_in, self.out_dim = self.obs_dim + self.act_dim, self.obs_dim + 1
        dims = [d_in] + [hidden] * n_layers
        self.layers = nn.ModuleList(_EnsembleLinear(self.n_members, a, b)
                                    for a, b in pairwise(dims))
        self.head = _EnsembleLinear(self.n_members, hidden, 2 * self.out_dim)
        self.max_logvar = nn.Parameter(torch.full((1, 1, self.out_dim), 0.5))
        self.min_logvar = nn.Parameter(torch.full((1, 1, self.out_dim), -10.0))
        for name, dim in (("in", d_in), ("out", self.out_dim)):
            self.register_buffer(f"{name}_mean", torch.zeros(dim))
            self.register_buffer(f"{name}_std", torch.ones(dim))
        self.fitted = False

    # -- the network -------------------------------------------------------------------
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x: normalised inputs (K, n, d_in) or (n, d_in) (shared by all members) ->
        (mean, logvar), each (K, n, obs_dim + 1), in normalised target units."""
        h = x.expand(self.n_members, *x.shape) if x.dim() == 2 else x
        for layer in self.layers:
            h = nn.functional.silu(layer(h))
        mean, logvar = self.head(h).chunk(2, dim=-1)
        logvar = self.max_logvar - nn.functional.softplus(self.max_logvar - logvar)  # soft clamp
        logvar = self.min_logvar + nn.functional.softplus(logvar - self.min_logvar)
        return mean, logvar

    def _inputs(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        return (torch.cat([obs, act], dim=-1) - self.in_mean) / self.in_std

    # -- training ----------------------------------------------------------------------
    def fit(self, buffer: TransitionBuffer, *, generator: torch.Generator, lr: float = 1e-3,
            weight_decay: float = 1e-5, batch_size: int = 256, validation_ratio: float = 0.2,
            patience: int = 5, max_epochs: int = 50) -> dict[str, float]:
        """Fit on every transition in ``buffer`` (targets Δs = s' − s and r); returns
        {"epochs", "train_nll", "val_mse"} (val_mse: mean over members of the best holdout MSE in
        normalised units)."""
        if not isinstance(buffer, TransitionBuffer):
            raise TypeError(f"buffer must be a TransitionBuffer; got {type(buffer).__name__}")
        if buffer.obs_dim != self.obs_dim or buffer.act_dim != self.act_dim:
            raise ValueError(f"buffer holds (obs_dim, act_dim) = ({buffer.obs_dim}, "
                             f"{buffer.act_dim}); the model expects ({self.obs_dim}, "
                             f"{self.act_dim})")
        if not 0 <= validation_ratio < 1:
            raise ValueError(f"validation_ratio must be in [0, 1); got {validation_ratio}")
        batch_size = _positive_int("batch_size", batch_size)
        patience = _positive_int("patience", patience)
        max_epochs = _positive_int("max_epochs", max_epochs)
        data = buffer.all()
        n = data.obs.shape[0]
        if n < 2:
            raise ValueError(f"need at least 2 transitions to fit the model; got {n}")
        device = self.in_mean.device
        x = torch.cat([data.obs, data.actions], dim=-1).to(device)
        y = torch.cat([data.next_obs - data.obs, data.rewards[:, None]], dim=-1).to(device)
        perm = torch.randperm(n, generator=generator)
        n_val = int(n * validation_ratio) if n * validation_ratio >= 1 else 0
        val_idx, tr_idx = perm[:n_val], perm[n_val:]
        # input/output normalisation from the training split (double precision, as mbrl-lib)
        xd, yd = x[tr_idx].double(), y[tr_idx].double()
        self.in_mean.copy_(xd.mean(0).float())
        self.in_std.copy_(xd.std(0, unbiased=False).clamp_min(1e-6).float())
        self.out_mean.copy_(yd.mean(0).float())
        self.out_std.copy_(yd.std(0, unbiased=False).clamp_min(1e-6).float())
        xn, yn = (x - self.in_mean) / self.in_std, (y - self.out_mean) / self.out_std
        x_tr, y_tr = xn[tr_idx], yn[tr_idx]
        x_val, y_val = (xn[val_idx], yn[val_idx]) if n_val else (x_tr, y_tr)
        n_tr, k = x_tr.shape[0], self.n_members
        opt = torch.optim.Adam(self.parameters(), lr=lr, weight_decay=weight_decay)
        best = torch.full((k,), float("inf"))
        best_state = {name: p.detach().clone() for name, p in self.named_parameters()}
        stale, epochs, train_nll = 0, 0, float("nan")
        for epoch in range(max_epochs):
            boot = torch.randint(0, n_tr, (k, n_tr), generator=generator)  # bootstrap per member
            losses = []
            for start in range(0, n_tr, batch_size):
                idx = boot[:, start:start + batch_size]
                mean, logvar = self(x_tr[idx])
                nll = ((mean - y_tr[idx]) ** 2 * torch.exp(-logvar) + logvar).mean((1, 2)).sum()
                loss = nll + 0.01 * (self.max_logvar.sum() - self.min_logvar.sum())
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(float(nll.detach()) / k)
            train_nll, epochs = float(np.mean(losses)), epoch + 1
            with torch.no_grad():
                val = ((self(x_val)[0] - y_val) ** 2).mean((1, 2))  # per-member MSE
            improved = val < best * 0.99  # > 1 % better than this member's best
            if improved.any():
                for name, p in self.named_parameters():
                    if p.shape[0] == k and name.startswith(("layers", "head")):
                        best_state[name][improved] = p.detach()[improved]
                    else:
                        best_state[name] = p.detach().clone()
                best = torch.where(improved, val, best)
                stale = 0
            else:
                stale += 1
                if stale >= patience:
                    break
        with torch.no_grad():
            for name, p in self.named_parameters():
                p.copy_(best_state[name])
        self.fitted = True
        return {"epochs": float(epochs), "train_nll": train_nll, "val_mse": float(best.mean())}

    # -- prediction --------------------------------------------------------------------
    def sample(self, obs: torch.Tensor, act: torch.Tensor,
               generator: torch.Generator | None = None
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """obs (n, obs_dim), act (n, act_dim) -> (next_obs (n, obs_dim), reward (n,),
        uncertainty (n,)): one sample per member, u = mean_d std_k ŷ_k, and the next state and
        reward of one uniformly random member per row (TS1)."""
        if not self.fitted:
            raise RuntimeError("call fit before sample")
        if obs.dim() != 2 or obs.shape[1] != self.obs_dim:
            raise ValueError(f"obs must have shape (n, {self.obs_dim}); got {tuple(obs.shape)}")
        if act.shape != (obs.shape[0], self.act_dim):
            raise ValueError(f"act must have shape ({obs.shape[0]}, {self.act_dim}); got "
                             f"{tuple(act.shape)}")
        for name, x in (("obs", obs), ("act", act)):
            if not bool(torch.isfinite(x).all()):
                raise ValueError(f"{name} must be finite; got NaN or infinite entries")
        with torch.no_grad():
            mean, logvar = self(self._inputs(obs, act))
            k, n, d = mean.shape
            shape = (1, n, d) if self.noise == "shared" else (k, n, d)
            eps = torch.randn(shape, generator=generator, device=mean.device, dtype=mean.dtype)
            samples = mean + torch.exp(0.5 * logvar) * eps       # ŷ_k ~ N(μ_k, σ_k²)
            uncertainty = samples.std(dim=0).mean(dim=-1)          # u = mean_d std_k ŷ_k
            member = torch.randint(0, k, (n,), generator=generator, device=mean.device)
            y = samples[member, torch.arange(n, device=mean.device)] * self.out_std + self.out_mean
        return obs + y[:, :-1], y[:, -1], uncertainty
