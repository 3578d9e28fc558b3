"""Client-side local training for PyTorch models on flat state vectors.

A client receives the global model as a flat vector ``x`` (shape (P,)), loads it into a module,
runs plain minibatch SGD (optionally with FedProx's proximal term ``mu/2 ||w - x||^2``) and
returns ``delta = w - x``. The data order comes from a ``torch.Generator`` seeded by the job's
:class:`~.simulation.FitConfig` seed, so runs are reproducible and compared strategies see the
same minibatches.

What the vector holds (:func:`federated_state`): every parameter, then every persistent
floating-point buffer (BatchNorm's ``running_mean``/``running_var``), the floating part of the
``state_dict`` that FedAvg users send (Flower's PyTorch examples ship ``model.state_dict()``).
Buffers change during local training (train-mode forward passes), so they come back in
``delta`` and the server aggregates them with the parameters' rule; for FedAvg (server_lr 1)
that is the sample-weighted mean of the clients' running statistics. SGD and FedProx's
penalty act on the parameters only. For a model without floating buffers the vector is exactly
``parameters_to_vector(model.parameters())``, as before buffers were federated.

Integer buffers (BatchNorm's ``num_batches_tracked``) are *kept local*: they are not in the
vector, are never averaged, and :func:`load_flat_params` leaves them untouched, so each module
keeps counting its own batches. An average of counters is not a count (Flower's
``aggregate_arrayrecords`` would turn it into a float), and the counter only matters for
BatchNorm with ``momentum=None`` (cumulative average), where the local count is the one its
own updates were weighted by.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch
from torch import nn

from .datasets import check_labels
from .simulation import FitConfig
from .strategies import ClientUpdate

__all__ = [
    "TorchClient",
    "accuracy",
    "federated_state",
    "flatten_params",
    "load_flat_params",
    "local_sgd",
    "minibatch_indices",
]


def federated_state(model: nn.Module) -> list[tuple[str, torch.Tensor]]:
    """The named tensors a federated round moves, in flat-vector order.

    Every parameter in ``named_parameters()`` order (the order of ``parameters_to_vector``),
    then every persistent floating-point buffer in ``named_buffers()`` order (e.g. BatchNorm's
    ``running_mean``, ``running_var``). Names are ``state_dict`` keys. Integer/bool buffers
    (``num_batches_tracked``) stay local and non-persistent buffers (not in ``state_dict``) are
    not model state, so neither is listed. The tensors are the module's own (not copies).
    Raises TypeError for a non-module and ValueError when nothing is left to federate.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    persistent = model.state_dict(keep_vars=True).keys()
    entries = list(model.named_parameters())
    entries += [(name, buf) for name, buf in model.named_buffers()
                if name in persistent and buf.is_floating_point()]
    if not entries:
        raise ValueError(f"model ({type(model).__name__}) has no parameters or floating-point "
                         "buffers to federate")
    return entries


def flatten_params(model: nn.Module) -> torch.Tensor:
    """The model's federated state as one detached flat vector (P,): its parameters, then its
    floating-point buffers (:func:`federated_state`), in the first entry's dtype.

    Without floating buffers this equals ``parameters_to_vector(model.parameters())``."""
    entries = federated_state(model)
    dtype = entries[0][1].dtype
    return torch.cat([t.detach().reshape(-1).to(dtype) for _, t in entries])


def load_flat_params(model: nn.Module, flat: torch.Tensor) -> None:
    """Copy a flat vector (P,) into the model's parameters and floating-point buffers
    (:func:`federated_state` order, shape-checked); integer buffers are left as they are."""
    entries = federated_state(model)
    expected = sum(t.numel() for _, t in entries)
    if not isinstance(flat, torch.Tensor) or flat.ndim != 1 or flat.numel() != expected:
        raise ValueError(f"flat must be a 1-D tensor with {expected} entries (the model's "
                         "parameter count plus its floating-point buffer entries), got shape "
                         f"{tuple(getattr(flat, 'shape', ()))}")
    # copy_ (not vector_to_parameters, which makes the parameters *views* of ``flat``, so that
    # in-place SGD would silently overwrite the caller's vector)
    with torch.no_grad():
        offset = 0
        for _, t in entries:
            t.copy_(flat[offset:offset + t.numel()].view_as(t))
            offset += t.numel()


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

    params: (P,) the federated state (:func:`flatten_params`); x: (n, ...) inputs, y: (n,)
    targets. SGD updates the parameters; the train-mode forward passes update the floating
    buffers (BatchNorm running statistics), and ``delta`` covers both. FedProx: the loss gains
    ``prox_mu/2 ||w - params||^2`` over the parameters. The module's state is overwritten (it
    is a scratch model shared by clients; its integer buffers keep counting locally).
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
