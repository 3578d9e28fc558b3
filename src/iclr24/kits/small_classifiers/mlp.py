"""A small MLP classifier and a seeded trainer, fast enough for dozens of models per claim.

The trainer follows the ``train_fn(X, y, rng) -> predict_proba`` protocol the attacks and
wrappers of this kit's papers take, so they can wrap any model (a scikit-learn estimator's
``fit(...).predict_proba`` works the same way). Training uses one torch generator seeded from the
given ``numpy.random.Generator`` (initialisation and mini-batch order), so the same rng state
gives the same model.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

__all__ = ["MLP", "MLPTrainer", "TrainedClassifier", "fit_classifier", "torch_generator"]


def torch_generator(rng: np.random.Generator | int) -> torch.Generator:
    """A CPU ``torch.Generator`` seeded from a numpy generator (one draw) or an int seed."""
    if isinstance(rng, np.random.Generator):
        seed = int(rng.integers(0, 2**62))
    elif isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        seed = int(rng)
    else:
        raise TypeError(f"rng must be a numpy Generator or an int seed, got {rng!r}")
    return torch.Generator().manual_seed(seed)


class MLP(nn.Module):
    """``in_dim -> hidden[0] -> ... -> out_dim`` with ReLU; ``forward(x: (B, in_dim)) -> logits
    (B, out_dim)``. ``features(x)`` returns the last hidden layer (B, hidden[-1])."""

    def __init__(self, in_dim: int, out_dim: int, hidden: Sequence[int] = (128,),
                 generator: torch.Generator | None = None) -> None:
        super().__init__()
        for name, v in (("in_dim", in_dim), ("out_dim", out_dim)):
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        hidden = tuple(int(h) for h in hidden)
        if any(h < 1 for h in hidden):
            raise ValueError(f"hidden sizes must be positive, got {hidden}")
        dims = (in_dim, *hidden)
        layers: list[nn.Module] = []
        for a, b in itertools.pairwise(dims):
            layers += [nn.Linear(a, b), nn.ReLU()]
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(dims[-1], out_dim)
        if generator is not None:  # seeded re-initialisation (torch's default init, own stream)
            for m in self.modules():
                if isinstance(m, nn.Linear):
                    bound = 1.0 / m.in_features ** 0.5
                    with torch.no_grad():
                        m.weight.uniform_(-bound, bound, generator=generator)
                        m.bias.uniform_(-bound, bound, generator=generator)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


def _as_training_data(X: np.ndarray, y: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    X = np.asarray(X)
    y = np.asarray(y)
    if X.ndim != 2 or X.shape[0] == 0:
        raise ValueError(f"X must be a non-empty 2-D array (n, d), got shape {X.shape}")
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
    if not np.issubdtype(y.dtype, np.integer) or y.min() < 0:
        raise ValueError("y must hold non-negative integer class labels")
    return torch.as_tensor(X, dtype=torch.float32), torch.as_tensor(y, dtype=torch.long)


def fit_classifier(model: nn.Module, X: np.ndarray, y: np.ndarray, *, epochs: int = 100,
                   lr: float = 1e-2, batch_size: int | None = None, weight_decay: float = 0.0,
                   generator: torch.Generator | None = None) -> nn.Module:
    """Train ``model`` in place with Adam on cross-entropy; ``batch_size=None`` is full batch.
    Mini-batch order is drawn from ``generator``. Returns the model (in eval mode)."""
    if not isinstance(epochs, int) or epochs < 0:
        raise ValueError(f"epochs must be a non-negative int, got {epochs!r}")
    if not lr > 0:
        raise ValueError(f"lr must be positive, got {lr!r}")
    if weight_decay < 0:
        raise ValueError(f"weight_decay must be >= 0, got {weight_decay!r}")
    Xt, yt = _as_training_data(X, y)
    n = Xt.shape[0]
    bs = n if batch_size is None else int(batch_size)
    if bs < 1:
        raise ValueError(f"batch_size must be a positive int or None, got {batch_size!r}")
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    for _ in range(epochs):
        order = torch.randperm(n, generator=generator) if bs < n else torch.arange(n)
        for start in range(0, n, bs):
            rows = order[start:start + bs]
            opt.zero_grad()
            loss_fn(model(Xt[rows]), yt[rows]).backward()
            opt.step()
    return model.eval()


class TrainedClassifier:
    """A trained torch classifier seen as numpy in, numpy out. Calling it is ``predict_proba``.

    predict_proba(X: (n, d)) -> (n, C) softmax probabilities; predict(X) -> (n,) labels;
    logits(X) -> (n, C); features(X) -> (n, hidden) when the model has ``features``.
    """

    def __init__(self, model: nn.Module) -> None:
        self.model = model.eval()

    def _run(self, fn, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (n, d), got shape {X.shape}")
        with torch.no_grad():
            return fn(torch.as_tensor(X, dtype=torch.float32)).numpy().astype(np.float64)

    def logits(self, X: np.ndarray) -> np.ndarray:
        return self._run(self.model, X)

    def features(self, X: np.ndarray) -> np.ndarray:
        return self._run(self.model.features, X)

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        return self._run(lambda t: torch.softmax(self.model(t), dim=1), X)

    def predict(self, X: np.ndarray) -> np.ndarray:
        return self.logits(X).argmax(axis=1)

    __call__ = predict_proba


@dataclass(frozen=True)
class MLPTrainer:
    """The ``train_fn(X, y, rng) -> predict_proba`` of this kit: a fresh :class:`MLP` trained by
    :func:`fit_classifier`. ``num_classes=None`` infers it as ``y.max() + 1`` (pass it when a
    training set may miss a class). Defaults: 64->128->C, full-batch Adam lr 1e-2, 150 epochs, no
    weight decay (a model that memorises its training set, as membership inference wants)."""

    hidden: tuple[int, ...] = (128,)
    epochs: int = 150
    lr: float = 1e-2
    batch_size: int | None = None
    weight_decay: float = 0.0
    num_classes: int | None = None

    def __call__(self, X: np.ndarray, y: np.ndarray, rng: np.random.Generator | int
                 ) -> TrainedClassifier:
        Xt, yt = _as_training_data(X, y)
        c = self.num_classes if self.num_classes is not None else int(yt.max()) + 1
        if int(yt.max()) >= c:
            raise ValueError(f"labels reach {int(yt.max())} but num_classes is {c}")
        gen = torch_generator(rng)
        model = MLP(Xt.shape[1], c, self.hidden, generator=gen)
        fit_classifier(model, X, y, epochs=self.epochs, lr=self.lr, batch_size=self.batch_size,
                       weight_decay=self.weight_decay, generator=gen)
        return TrainedClassifier(model)
