"""FedImpro's shared feature distribution: a class-conditional diagonal Gaussian per class.

Paper: Tang et al., "FedImpro: Measuring and Improving Client Update in Federated Learning",
ICLR 2024, Sec. 4 (feature estimation and sharing); official code
``trainers/FeatureSynthesisModels/GaussianSynthesisLabel.py`` and ``trainers/spliter.py``.

- :class:`ClassGaussianBank` holds mu, sigma in R^{C x D}; initialised as in the official code
  (mu ~ U(0, 1) entrywise, sigma = sigma_max); ``update(z, y)`` folds a batch of detached real
  features into the per-class running estimate and clips sigma <= sigma_max; ``sample(B)`` draws
  a class-balanced synthetic batch of ``(B // C + 1)`` rows per class.
- :func:`aggregate_class_gaussians`: the server's estimate over clients with per-class weights
  ``pi_{k,c} = n_{k,c} / sum_j n_{j,c}`` and the law of total variance
  ``sigma_c^2 = sum_k pi sigma_{k,c}^2 + sum_k pi (mu_{k,c} - mu_c)^2`` (averaging sigma, or
  skipping the between-client term, would be wrong).
- :func:`privatize`: Gaussian noise on the uploaded mu and sigma (the paper's privacy knob), sigma
  clamped at >= 0 afterwards.

Running-estimate weight (``ema``): the paper intends omega = n_c(batch) / N_c with N_c a nominal
per-class count (``ema="count"``, our default). The official code computes omega from the size of
the class-mean *vector* (= D, larger than N_c), so omega = 1 and the local statistics are simply
the last batch's; ``ema="official"`` reproduces that for parity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
import torch

from iclr24.kits.federated import check_labels

__all__ = ["ClassGaussianBank", "aggregate_class_gaussians", "privatize"]

BankState = dict[str, torch.Tensor]


def _as_tensor(a: torch.Tensor | np.ndarray, name: str) -> torch.Tensor:
    if isinstance(a, np.ndarray):
        a = torch.from_numpy(a)
    if not isinstance(a, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor or numpy array, got {type(a).__name__}")
    return a


class ClassGaussianBank:
    """Per-class diagonal Gaussians N(mu_c, diag sigma_c^2) over D-dimensional features.

    num_classes: C; dim: D; sigma_max: per-dimension cap on sigma (official default 0.1);
    nominal_count: N_c in omega = n_c / N_c (required for ``ema="count"``); generator: seeds the
    U(0, 1) initialisation of mu.
    """

    def __init__(self, num_classes: int, dim: int, sigma_max: float = 0.1, *,
                 nominal_count: float | None = None,
                 ema: Literal["count", "official"] = "count",
                 generator: torch.Generator | None = None,
                 dtype: torch.dtype = torch.float32) -> None:
        if not isinstance(num_classes, int) or num_classes < 1:
            raise ValueError(f"num_classes must be a positive int, got {num_classes!r}")
        if not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim must be a positive int, got {dim!r}")
        if not sigma_max > 0:
            raise ValueError(f"sigma_max must be > 0, got {sigma_max}")
        if ema not in ("count", "official"):
            raise ValueError(f"ema must be 'count' or 'official', got {ema!r}")
        if ema == "count" and (nominal_count is None or not nominal_count > 0):
            raise ValueError("ema='count' needs nominal_count > 0 (N_c in omega = n_c / N_c)")
        self.num_classes, self.dim = num_classes, dim
        self.sigma_max = float(sigma_max)
        self.nominal_count = None if nominal_count is None else float(nominal_count)
        self.ema = ema
        self.mean = torch.rand(num_classes, dim, generator=generator, dtype=dtype)  # mu ~ U(0,1)
        self.std = torch.full((num_classes, dim), self.sigma_max, dtype=dtype)  # sigma = s_max

    # -- state
    def state_dict(self) -> BankState:
        """{"mean": (C, D), "std": (C, D)} copies."""
        return {"mean": self.mean.clone(), "std": self.std.clone()}

    def load_state_dict(self, state: Mapping[str, torch.Tensor | np.ndarray]) -> None:
        """Load {"mean", "std"} of shape (C, D) (e.g. the server's aggregate)."""
        for key in ("mean", "std"):
            if key not in state:
                raise ValueError(f"bank state needs key {key!r}; got {sorted(state)}")
            v = _as_tensor(state[key], f"state[{key!r}]")
            if tuple(v.shape) != (self.num_classes, self.dim):
                raise ValueError(f"state[{key!r}] has shape {tuple(v.shape)}, expected "
                                 f"{(self.num_classes, self.dim)}")
        self.mean = _as_tensor(state["mean"], "mean").to(self.mean.dtype).clone()
        self.std = _as_tensor(state["std"], "std").to(self.std.dtype).clone()

    # -- local estimate
    @torch.no_grad()
    def update(self, z: torch.Tensor, y: torch.Tensor) -> None:
        """Fold a batch of real features z: (B, D) with labels y: (B,) into the estimate.

        Per class c present: mu_c <- (1-w) mu_c + w mean(z[y=c]); sigma_c <- (1-w) sigma_c +
        w std(z[y=c]) (skipped for a single sample, whose std is undefined); sigma <= sigma_max.
        """
        if z.ndim != 2 or z.shape[1] != self.dim:
            raise ValueError(f"z must have shape (B, {self.dim}), got {tuple(z.shape)}")
        if y.shape != (z.shape[0],):
            raise ValueError(f"y must have shape ({z.shape[0]},), got {tuple(y.shape)}")
        check_labels(y, self.num_classes)
        z = z.detach().to(self.mean.dtype)
        onehot = torch.nn.functional.one_hot(y.long(), self.num_classes).to(z.dtype)  # (B, C)
        n = onehot.sum(0)  # n_c in this batch
        s1 = onehot.T @ z
        s2 = onehot.T @ (z * z)
        present = n > 0
        batch_mean = s1 / n.clamp_min(1)[:, None]
        var = (s2 - n[:, None] * batch_mean**2) / (n - 1).clamp_min(1)[:, None]  # unbiased
        batch_std = var.clamp_min(0).sqrt()
        if self.ema == "official":
            w = present.to(z.dtype)  # omega = 1 (the official code's effective weight)
        else:
            w = torch.clamp(n / self.nominal_count, max=1.0) * present  # omega = n_c / N_c
        self.mean = (1 - w[:, None]) * self.mean + w[:, None] * batch_mean
        ws = w * (n > 1)  # std of one sample is NaN in the official code: skipped
        self.std = (1 - ws[:, None]) * self.std + ws[:, None] * batch_std
        self.std = self.std.clamp(max=self.sigma_max)  # sigma <= sigma_max elementwise

    # -- synthesis
    @torch.no_grad()
    def sample(self, batch_size: int, generator: torch.Generator | None = None
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """Class-balanced synthetic batch: ``r = batch_size // C + 1`` rows per class.

        Returns (z_hat: (C r, D), y_hat: (C r,) int64), z_hat ~ N(mu_y, diag sigma_y^2), detached.
        """
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        r = batch_size // self.num_classes + 1
        y_hat = torch.arange(self.num_classes).repeat_interleave(r)
        eps = torch.randn(y_hat.numel(), self.dim, generator=generator, dtype=self.mean.dtype)
        return self.mean[y_hat] + self.std[y_hat] * eps, y_hat


def aggregate_class_gaussians(states: Sequence[Mapping[str, torch.Tensor | np.ndarray]],
                              class_counts: torch.Tensor | np.ndarray | Sequence[Sequence[int]]
                              ) -> BankState:
    """Server aggregation of K clients' per-class Gaussians (law of total variance).

    states: K dicts {"mean": (C, D), "std": (C, D)}; class_counts: (K, C) samples of class c at
    client k. Weights pi_{k,c} = n_{k,c} / sum_j n_{j,c} (a class nobody holds gets uniform
    weights). Returns {"mean": (C, D), "std": (C, D)}.
    """
    if len(states) == 0:
        raise ValueError("states must hold at least one client's statistics")
    means = torch.stack([_as_tensor(s["mean"], "mean").to(torch.float64) for s in states])
    stds = torch.stack([_as_tensor(s["std"], "std").to(torch.float64) for s in states])
    if means.shape != stds.shape or means.ndim != 3:
        raise ValueError("every state needs 'mean' and 'std' of the same shape (C, D)")
    k, c, _ = means.shape
    counts = torch.as_tensor(np.asarray(class_counts), dtype=torch.float64)
    if counts.shape != (k, c):
        raise ValueError(f"class_counts must have shape (num_clients={k}, num_classes={c}), "
                         f"got {tuple(counts.shape)}")
    if (counts < 0).any():
        raise ValueError("class_counts must be non-negative")
    total = counts.sum(0, keepdim=True)
    pi = torch.where(total > 0, counts / total.clamp_min(1e-300), torch.full_like(counts, 1 / k))
    mu = (pi[:, :, None] * means).sum(0)  # mu_c = sum_k pi_kc mu_kc
    var = (pi[:, :, None] * stds**2).sum(0) \
        + (pi[:, :, None] * (means - mu) ** 2).sum(0)  # within + between-client variance
    out_dtype = _as_tensor(states[0]["mean"], "mean").dtype
    return {"mean": mu.to(out_dtype), "std": var.sqrt().to(out_dtype)}


def privatize(state: Mapping[str, torch.Tensor], noise_std: float,
              generator: torch.Generator | None = None) -> BankState:
    """Add N(0, s^2) noise to the uploaded mu and sigma (s = ``noise_std``); clamp sigma >= 0."""
    if noise_std < 0:
        raise ValueError(f"noise_std must be >= 0, got {noise_std}")
    mean, std = state["mean"], state["std"]
    if noise_std == 0:
        return {"mean": mean.clone(), "std": std.clone()}
    noisy_mean = mean + noise_std * torch.randn(mean.shape, generator=generator, dtype=mean.dtype)
    noisy_std = std + noise_std * torch.randn(std.shape, generator=generator, dtype=std.dtype)
    return {"mean": noisy_mean, "std": noisy_std.clamp_min(0.0)}
