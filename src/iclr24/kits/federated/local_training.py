"""Client-side local training for PyTorch models on flat parameter vectors.

A client receives the global model as a flat vector ``x`` (shape (P,)), loads it into a module,
runs plain minibatch SGD (optionally with FedProx's proximal term ``mu/2 ||w - x||^2``) and
returns ``delta = w - x``. The data order comes from a ``torch.Generator`` seeded by the job's
:class:`~.simulation.FitConfig` seed, so runs are reproducible and compared strategies see the
same minibatches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch
from torch import nn
from torch.nn.utils import parameters_to_vector

from .datasets import check_labels
from .simulation import FitConfig
from .strategies import ClientUpdate

__all__ = [
    "TorchClient",
    "accuracy",
    "flatten_params",
    "load_flat_params",
    "local_sgd",
    "minibatch_indices",
]


def flatten_params(model: nn.Module) -> torch.Tensor:
    """The model's parameters as one detached flat vector (P,), in ``model.parameters()`` order."""
    return parameters_to_vector(model.parameters()).detach().clone()


def load_flat_params(model: nn.Module, flat: torch.Tensor) -> None:
    """Copy a flat vector (P,) into the model's parameters (shape-checked)."""
    expected = sum(p.numel() for p in model.parameters())
    if not isinstance(flat, torch.Tensor) or flat.ndim != 1 or flat.numel() != expected:
        raise ValueError(f"flat must be a 1-D tensor with {expected} entries (the model's "
                         f"parameter count), got shape {tuple(getattr(flat, 'shape', ()))}")
    # copy_ (not vector_to_parameters, which makes the parameters *views* of ``flat``, so that
    # in-place SGD would silently overwrite the caller's vector)
    with torch.no_grad():
        offset = 0
        for p in model.parameters():
            p.copy_(flat[offset:offset + p.numel()].view_as(p))
            offset += p.numel()


def minibatch_indices(n: int, batch_size: int, generator: torch.Generator, *,
                      epochs: int | None = None, steps: int | None = None
                      ) -> Iterator[torch.Tensor]:
    """Minibatch index tensors: ``epochs`` full shuffled passes, or ``steps`` batches drawn from
    consecutive shuffled passes (a new permutation each time a pass is exhausted)."""
    if n < 1:
        raise ValueError("a client needs at least one sample")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if (epochs is None) == (steps is None):
        raise ValueError("give exactly one of epochs or steps")
    if epochs is not None:
        if epochs < 0:
            raise ValueError(f"epochs must be >= 0, got {epochs}")
        for _ in range(epochs):
            perm = torch.randperm(n, generator=generator)
            yield from perm.split(batch_size)
        return
    assert steps is not None
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    perm = torch.randperm(n, generator=generator)
    pos = 0
    for _ in range(steps):
        if pos >= n:
            perm, pos = torch.randperm(n, generator=generator), 0
        yield perm[pos:pos + batch_size]
        pos += batch_size


LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def local_sgd(model: nn.Module, params: torch.Tensor, x: torch.Tensor, y: torch.Tensor, *,
              lr: float, batch_size: int, generator: torch.Generator,
              epochs: int | None = None, steps: int | None = None, prox_mu: float = 0.0,
              loss_fn: LossFn = nn.functional.cross_entropy) -> tuple[torch.Tensor, float]:
    """Plain SGD from ``params`` on (x, y); returns ``(delta (P,), mean training loss)``.

    x: (n, ...) inputs, y: (n,) targets. FedProx: the loss gains ``prox_mu/2 ||w - params||^2``.
    The module's parameters are overwritten (it is a scratch model shared by clients).
    """
    if lr <= 0:
        raise ValueError(f"lr must be > 0, got {lr}")
    if prox_mu < 0:
        raise ValueError(f"prox_mu must be >= 0, got {prox_mu}")
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"x and y disagree on the number of samples: {x.shape[0]} vs {y.shape[0]}")
    load_flat_params(model, params)
    plist = list(model.parameters())
    anchor = [p.detach().clone() for p in plist] if prox_mu > 0 else []
    model.train()
    losses = []
    for idx in minibatch_indices(x.shape[0], batch_size, generator, epochs=epochs, steps=steps):
        for p in plist:
            p.grad = None
        loss = loss_fn(model(x[idx]), y[idx])
        total = loss
        if prox_mu > 0:  # FedProx: + mu/2 ||w - w_global||^2
            total = total + 0.5 * prox_mu * sum((p - a).pow(2).sum()
                                                for p, a in zip(plist, anchor))
        total.backward()
        with torch.no_grad():
            for p in plist:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-lr)
        losses.append(float(loss.detach()))
    delta = flatten_params(model) - params.detach()
    return delta, (sum(losses) / len(losses) if losses else float("nan"))


class TorchClient:
    """A client holding (x, y) that trains a shared scratch ``model`` by :func:`local_sgd`.

    ``prox_mu`` in the job's options (FedProx) overrides the constructor's value. With
    ``num_classes`` the labels are checked to lie in [0, num_classes) (ValueError, instead of
    an IndexError from the loss at the first job).
    """

    def __init__(self, model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, lr: float,
                 batch_size: int, epochs: int | None = None, steps: int | None = None,
                 prox_mu: float = 0.0, loss_fn: LossFn = nn.functional.cross_entropy,
                 num_classes: int | None = None) -> None:
        if x.shape[0] == 0:
            raise ValueError("a client needs at least one sample")
        if x.shape[0] != y.shape[0]:
            raise ValueError(f"x has {x.shape[0]} rows but y has {y.shape[0]} targets")
        if x.is_floating_point() and not torch.isfinite(x).all():
            raise ValueError("x has NaN or inf features")
        if num_classes is not None:
            check_labels(y, num_classes)
        if (epochs is None) == (steps is None):
            raise ValueError("give exactly one of epochs or steps")
        self.model, self.x, self.y = model, x, y
        self.lr, self.batch_size, self.epochs, self.steps = lr, batch_size, epochs, steps
        self.prox_mu, self.loss_fn = prox_mu, loss_fn

    def fit(self, params: torch.Tensor, config: FitConfig) -> ClientUpdate:
        gen = torch.Generator().manual_seed(config.seed)
        mu = float(config.options.get("prox_mu", self.prox_mu))
        delta, loss = local_sgd(self.model, params, self.x, self.y, lr=self.lr,
                                batch_size=self.batch_size, generator=gen, epochs=self.epochs,
                                steps=self.steps, prox_mu=mu, loss_fn=self.loss_fn)
        n = self.x.shape[0] if self.epochs is not None else self.batch_size * int(self.steps or 0)
        return ClientUpdate(delta=delta, num_examples=int(self.x.shape[0]),
                            metrics={"loss": loss, "samples_seen": float(n)})


@torch.no_grad()
def accuracy(model: nn.Module, params: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> float:
    """Top-1 accuracy of ``model`` with parameters ``params`` (P,) on (x, y).

    Non-finite features or a length mismatch raise ValueError (a NaN row would otherwise just
    count as a wrong prediction)."""
    if x.shape[0] != y.shape[0] or x.shape[0] == 0:
        raise ValueError(f"x and y must hold the same positive number of rows, got {x.shape[0]} "
                         f"and {y.shape[0]}")
    if x.is_floating_point() and not torch.isfinite(x).all():
        raise ValueError("x has NaN or inf features; accuracy would be meaningless")
    load_flat_params(model, params)
    model.eval()
    return float((model(x).argmax(-1) == y).float().mean())
