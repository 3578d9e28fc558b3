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
- :func:`class_moments`: per-class count, mean and std of a batch of features (what ``update``
  folds in, and what the exact-statistics server of :mod:`.local_update` aggregates).

Bad statistics are refused, never absorbed (issue 38): NaN/inf features in ``update``, NaN/inf
or negative sigma in ``load_state_dict`` and ``aggregate_class_gaussians`` (a negative sigma
would silently turn positive when squared), a NaN/inf or negative noise level in ``privatize``.

Running-estimate weight (``ema``): the paper intends omega = n_c(batch) / N_c with N_c a nominal
per-class count (``ema="count"``, our default). The official code computes omega from the size of
the class-mean *vector* (= D, larger than N_c), so omega = 1 and the local statistics are simply
the last batch's; ``ema="official"`` reproduces that for parity.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
import torch

from iclr24.kits.federated import check_labels

__all__ = ["ClassGaussianBank", "aggregate_class_gaussians", "check_noise_std", "class_moments",
           "privatize"]

BankState = dict[str, torch.Tensor]


def _as_tensor(a: torch.Tensor | np.ndarray, name: str) -> torch.Tensor:
    if isinstance(a, np.ndarray):
        a = torch.from_numpy(a)
    if not isinstance(a, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor or numpy array, got {type(a).__name__}")
    return a


def _check_statistics(mean: torch.Tensor, std: torch.Tensor, name: str) -> None:
    """ValueError naming ``name`` unless mean is finite and std is finite and >= 0."""
    if not torch.isfinite(mean).all():
        raise ValueError(f"{name}['mean'] has NaN or inf entries")
    if not torch.isfinite(std).all():
        raise ValueError(f"{name}['std'] has NaN or inf entries")
    if (std < 0).any():
        raise ValueError(f"{name}['std'] must be >= 0 (a standard deviation), got minimum "
                         f"{float(std.min()):g}")


@torch.no_grad()
def class_moments(z: torch.Tensor, y: torch.Tensor, num_classes: int, *, unbiased: bool = True
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-class moments of features z: (B, D) with labels y: (B,) in [0, num_classes).

    Returns (n: (C,) counts, mean: (C, D), std: (C, D)). ``unbiased`` divides the variance by
    n_c - 1 (as ``torch.std``), else by n_c. A class absent from the batch gets mean 0 and
    std 0; with ``unbiased`` a class seen once gets std 0 (undefined: callers skip it).
    """
    if not isinstance(z, torch.Tensor) or z.ndim != 2:
        raise ValueError(f"z must be a (B, D) tensor, got {tuple(getattr(z, 'shape', ()))}")
    if not isinstance(y, torch.Tensor) or y.shape != (z.shape[0],):
        raise ValueError(f"y must have shape ({z.shape[0]},), got "
                         f"{tuple(getattr(y, 'shape', ()))}")
    if not torch.isfinite(z).all():
        raise ValueError("z has NaN or inf features; they would poison the class statistics")
    check_labels(y, num_classes)
    onehot = torch.nn.functional.one_hot(y.long(), num_classes).to(z.dtype)  # (B, C)
    n = onehot.sum(0)  # n_c
    mean = (onehot.T @ z) / n.clamp_min(1)[:, None]  # mean(z[y=c])
    sq_dev = onehot.T @ (z * z) - n[:, None] * mean**2  # sum over y=c of (z - mean)^2
    denom = (n - 1 if unbiased else n).clamp_min(1)[:, None]
    return n, mean, (sq_dev / denom).clamp_min(0).sqrt()


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
        """Load {"mean", "std"} of shape (C, D) (e.g. the server's aggregate); mean must be
        finite, std finite and >= 0."""
        for key in ("mean", "std"):
            if key not in state:
                raise ValueError(f"bank state needs key {key!r}; got {sorted(state)}")
            v = _as_tensor(state[key], f"state[{key!r}]")
            if tuple(v.shape) != (self.num_classes, self.dim):
                raise ValueError(f"state[{key!r}] has shape {tuple(v.shape)}, expected "
                                 f"{(self.num_classes, self.dim)}")
        mean = _as_tensor(state["mean"], "mean").to(self.mean.dtype).clone()
        std = _as_tensor(state["std"], "std").to(self.std.dtype).clone()
        _check_statistics(mean, std, "state")
        self.mean, self.std = mean, std

    # -- local estimate
    @torch.no_grad()
    def update(self, z: torch.Tensor, y: torch.Tensor) -> None:
        """Fold a batch of real features z: (B, D) with labels y: (B,) into the estimate.

        Per class c present: mu_c <- (1-w) mu_c + w mean(z[y=c]); sigma_c <- (1-w) sigma_c +
        w std(z[y=c]) (skipped for a single sample, whose std is undefined); sigma <= sigma_max.
        NaN or inf features raise ValueError (they would poison every later estimate).
        """
        if z.ndim != 2 or z.shape[1] != self.dim:
            raise ValueError(f"z must have shape (B, {self.dim}), got {tuple(z.shape)}")
        z = z.detach().to(self.mean.dtype)
        n, batch_mean, batch_std = class_moments(z, y, self.num_classes)  # unbiased std
        present = n > 0
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
    weights). Returns {"mean": (C, D), "std": (C, D)}. A NaN/inf mean or std, or a negative
    std (which squaring would silently turn positive), raises ValueError naming the state.
    """
    if len(states) == 0:
        raise ValueError("states must hold at least one client's statistics")
    for i, s in enumerate(states):
        if "mean" not in s or "std" not in s:
            raise ValueError(f"states[{i}] needs keys 'mean' and 'std'; got {sorted(s)}")
        _check_statistics(_as_tensor(s["mean"], f"states[{i}]['mean']"),
                          _as_tensor(s["std"], f"states[{i}]['std']"), f"states[{i}]")
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


def check_noise_std(noise_std: float) -> float:
    """``noise_std`` as a float; TypeError unless a real number, ValueError unless finite and
    >= 0 (NaN noise would turn every shared statistic into NaN)."""
    if isinstance(noise_std, bool) or not isinstance(noise_std, numbers.Real):
        raise TypeError(f"noise_std must be a real number, got {noise_std!r}")
    if not math.isfinite(noise_std) or noise_std < 0:
        raise ValueError(f"noise_std must be a finite number >= 0, got {noise_std}")
    return float(noise_std)


def privatize(state: Mapping[str, torch.Tensor], noise_std: float,
              generator: torch.Generator | None = None) -> BankState:
    """Add N(0, s^2) noise to the uploaded mu and sigma (s = ``noise_std``, a finite number
    >= 0); clamp sigma >= 0."""
    check_noise_std(noise_std)
    mean, std = state["mean"], state["std"]
    if noise_std == 0:
        return {"mean": mean.clone(), "std": std.clone()}
    noisy_mean = mean + noise_std * torch.randn(mean.shape, generator=generator, dtype=mean.dtype)
    noisy_std = std + noise_std * torch.randn(std.shape, generator=generator, dtype=std.dtype)
    return {"mean": noisy_mean, "std": noisy_std.clamp_min(0.0)}
