"""Vertical federated learning baselines: SplitNN and a local-ensemble (stacking) VFL.

VertiBench (Wu et al., ICLR 2024), Section 5, benchmarks SplitNN, GAL, FedTree, FedOnce and
C-VFL across (alpha, beta). We keep two ends of that spectrum, both in-process:

* :class:`SplitNN` -- each party k holds an encoder f_k(x_k) -> h_k; the server holds a top model
  g([h_1, ..., h_K]) -> logits; everything is trained jointly end-to-end by back-propagating
  through the cut layer (the server sends dL/dh_k back to party k). In one process this is
  exactly an ``nn.Module`` with K encoders and a top model (:class:`SplitNNNetwork`).
* :class:`LocalEnsemble` -- each party trains a model on its own columns only; a combiner on the
  parties' out-of-fold class probabilities makes the prediction (stacking), or the probabilities
  are averaged. No cross-party feature interaction is ever learned: a simple stand-in for the
  GAL / FedOnce family whose parties fit local models on local features.

Both follow scikit-learn: ``fit(Xs, y)``, ``predict(Xs)``, ``predict_proba(Xs)``, where ``Xs`` is a
list of K party matrices (n, d_k) with the same rows in the same order. Each party standardises
its own columns (statistics from its training rows only; no data leaves a party).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import torch
from torch import nn

__all__ = ["LocalEnsemble", "SplitNN", "SplitNNNetwork", "check_parties"]


def check_parties(Xs: Sequence[np.ndarray], n_parties: int | None = None,
                  dims: Sequence[int] | None = None) -> list[np.ndarray]:
    """Validate a list of party matrices (same rows), optionally against fitted K and widths."""
    if isinstance(Xs, np.ndarray) or not isinstance(Xs, Sequence) or len(Xs) < 1:
        raise ValueError("Xs must be a list of party matrices (n_samples, d_k)")
    out = []
    for k, X in enumerate(Xs):
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"Xs[{k}] must be 2-D (n_samples, d_k); got shape {X.shape}")
        if X.shape[0] != np.asarray(Xs[0]).shape[0]:
            raise ValueError(f"all parties must hold the same rows; Xs[0] has "
                             f"{np.asarray(Xs[0]).shape[0]}, Xs[{k}] has {X.shape[0]}")
        if not np.isfinite(X).all():
            raise ValueError(f"Xs[{k}] contains NaN or infinite values")
        out.append(X)
    if n_parties is not None and len(out) != n_parties:
        raise ValueError(f"Xs must hold {n_parties} parties as at fit time; got {len(out)}")
    if dims is not None:
        for k, (X, dk) in enumerate(zip(out, dims)):
            if X.shape[1] != dk:
                raise ValueError(f"Xs[{k}] must have {dk} columns as at fit time; got {X.shape[1]}")
    return out


def _check_y(y: np.ndarray, n: int) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"y must be 1-D with one label per row ({n}); got shape {y.shape}")
    return y


class SplitNNNetwork(nn.Module):
    """The SplitNN module: K party encoders (Linear-ReLU-Linear to ``embedding_dim``) and a top
    model at the server (ReLU on the concatenated cut layer, Linear-ReLU-Linear to logits).

    ``forward(xs)`` takes a list of K tensors (batch, d_k) and returns logits (batch, C).
    A party with zero columns contributes a zero embedding.
    """

    def __init__(self, party_dims: Sequence[int], n_classes: int, hidden: int = 64,
                 embedding_dim: int = 16, top_hidden: int = 64) -> None:
        super().__init__()
        if len(party_dims) < 1 or any(int(d) < 0 for d in party_dims):
            raise ValueError(f"party_dims must be K >= 1 non-negative ints; got {party_dims!r}")
        if n_classes < 2:
            raise ValueError(f"n_classes must be >= 2; got {n_classes}")
        self.party_dims = [int(d) for d in party_dims]
        self.embedding_dim = embedding_dim
        self.encoders = nn.ModuleList([
            nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, embedding_dim))
            if d > 0 else nn.Identity() for d in self.party_dims])
        self.top = nn.Sequential(nn.ReLU(), nn.Linear(embedding_dim * len(self.party_dims),
                                                      top_hidden),
                                 nn.ReLU(), nn.Linear(top_hidden, n_classes))

    def forward(self, xs: Sequence[torch.Tensor]) -> torch.Tensor:
        if len(xs) != len(self.party_dims):
            raise ValueError(f"forward expects {len(self.party_dims)} party tensors; "
                             f"got {len(xs)}")
        hs = []
        for x, d, enc in zip(xs, self.party_dims, self.encoders):
            if d == 0:  # an empty party has nothing to send
                hs.append(x.new_zeros((x.shape[0], self.embedding_dim)))
            else:
                hs.append(enc(x))  # h_k = f_k(x_k), computed at party k
        return self.top(torch.cat(hs, dim=1))  # logits = g([h_1, ..., h_K]) at the server


class _PartyScaler:
    def fit(self, Xs: list[np.ndarray]) -> _PartyScaler:
        self.mean_ = [X.mean(axis=0) for X in Xs]
        self.scale_ = [np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0) for X in Xs]
        return self

    def transform(self, Xs: list[np.ndarray]) -> list[np.ndarray]:
        return [(X - m) / s for X, m, s in zip(Xs, self.mean_, self.scale_)]


class SplitNN:
    """SplitNN classifier (joint training through the cut layer), scikit-learn style.

    Hyper-parameters: hidden / embedding_dim / top_hidden (network widths), epochs, batch_size,
    lr (Adam), weight_decay, seed (initialisation and mini-batch order via torch.Generator),
    n_threads (torch intra-op threads while fitting/predicting, restored afterwards; these tiny
    networks run fastest on one thread, and spinning worker threads are costly on a busy
    machine; None keeps torch's setting).
    """

    def __init__(self, hidden: int = 64, embedding_dim: int = 16, top_hidden: int = 64,
                 epochs: int = 40, batch_size: int = 64, lr: float = 1e-3,
                 weight_decay: float = 1e-4, seed: int = 0, n_threads: int | None = 1) -> None:
        for name, value in (("hidden", hidden), ("embedding_dim", embedding_dim),
                            ("top_hidden", top_hidden), ("epochs", epochs),
                            ("batch_size", batch_size)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be a positive int; got {value!r}")
        if not lr > 0:
            raise ValueError(f"lr must be > 0; got {lr!r}")
        if n_threads is not None and (isinstance(n_threads, bool) or not isinstance(
                n_threads, (int, np.integer)) or n_threads < 1):
            raise ValueError(f"n_threads must be a positive int or None; got {n_threads!r}")
        if weight_decay < 0:
            raise ValueError(f"weight_decay must be >= 0; got {weight_decay!r}")
        self.hidden, self.embedding_dim, self.top_hidden = hidden, embedding_dim, top_hidden
        self.epochs, self.batch_size, self.lr = epochs, batch_size, lr
        self.weight_decay, self.seed, self.n_threads = weight_decay, seed, n_threads

    @contextmanager
    def _threads(self) -> Iterator[None]:
        previous = torch.get_num_threads()
        if self.n_threads is not None:
            torch.set_num_threads(int(self.n_threads))
        try:
            yield
        finally:
            torch.set_num_threads(previous)

    def fit(self, Xs: Sequence[np.ndarray], y: np.ndarray) -> SplitNN:
        """Xs: K party matrices (n, d_k); y: (n,) class labels."""
        with self._threads():
            return self._fit(Xs, y)

    def _fit(self, Xs: Sequence[np.ndarray], y: np.ndarray) -> SplitNN:
        Xs = check_parties(Xs)
        y = _check_y(y, Xs[0].shape[0])
        self.classes_, y_idx = np.unique(y, return_inverse=True)
        if self.classes_.size < 2:
            raise ValueError("y must contain at least 2 classes")
        self.party_dims_ = [X.shape[1] for X in Xs]
        self._scaler = _PartyScaler().fit(Xs)
        gen = torch.Generator().manual_seed(int(self.seed))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(self.seed))  # layer initialisation, local to this fork
            net = SplitNNNetwork(self.party_dims_, int(self.classes_.size), self.hidden,
                                 self.embedding_dim, self.top_hidden)
        opt = torch.optim.Adam(net.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        xs = [torch.from_numpy(X).float() for X in self._scaler.transform(Xs)]
        yt = torch.from_numpy(y_idx.astype(np.int64))
        n = yt.shape[0]
        self.loss_curve_ = []
        net.train()
        for _ in range(self.epochs):
            perm = torch.randperm(n, generator=gen)
            total = 0.0
            for start in range(0, n, self.batch_size):
                idx = perm[start:start + self.batch_size]
                loss = nn.functional.cross_entropy(net([x[idx] for x in xs]), yt[idx])
                opt.zero_grad()
                loss.backward()  # gradients flow back through the cut layer to every party
                opt.step()
                total += loss.item() * idx.shape[0]
            self.loss_curve_.append(total / n)
        net.eval()
        self.network_ = net
        return self

    def predict_proba(self, Xs: Sequence[np.ndarray]) -> np.ndarray:
        """(n, C) class probabilities."""
        if not hasattr(self, "network_"):
            raise RuntimeError("SplitNN is not fitted; call fit(Xs, y) first")
        Xs = check_parties(Xs, len(self.party_dims_), self.party_dims_)
        with self._threads(), torch.no_grad():
            logits = self.network_([torch.from_numpy(X).float()
                                   for X in self._scaler.transform(Xs)])
            return torch.softmax(logits, dim=1).double().numpy()

    def predict(self, Xs: Sequence[np.ndarray]) -> np.ndarray:
        """(n,) predicted labels."""
        proba = self.predict_proba(Xs)  # raises if not fitted
        return self.classes_[np.argmax(proba, axis=1)]

    def score(self, Xs: Sequence[np.ndarray], y: np.ndarray) -> float:
        """Accuracy."""
        return float(np.mean(self.predict(Xs) == np.asarray(y)))


class LocalEnsemble:
    """Local-ensemble VFL: party models on local columns, combined by stacking or averaging.

    base_estimator: a scikit-learn classifier with ``predict_proba`` (default: logistic
    regression on the party's standardised columns); combiner: "stacking" (a logistic
    regression on the K parties' out-of-fold class probabilities, ``cv`` stratified folds) or
    "average" (mean of the parties' probabilities); seed: fold shuffling.
    """

    def __init__(self, base_estimator=None, combiner: str = "stacking", cv: int = 5,
                 seed: int = 0) -> None:
        if combiner not in ("stacking", "average"):
            raise ValueError(f"combiner must be 'stacking' or 'average'; got {combiner!r}")
        if isinstance(cv, bool) or not isinstance(cv, (int, np.integer)) or cv < 2:
            raise ValueError(f"cv must be an int >= 2; got {cv!r}")
        if base_estimator is not None and not hasattr(base_estimator, "predict_proba"):
            raise TypeError("base_estimator must be a classifier with predict_proba")
        self.base_estimator = base_estimator
        self.combiner = combiner
        self.cv = cv
        self.seed = seed

    def _base(self):
        from sklearn.base import clone
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        if self.base_estimator is not None:
            return clone(self.base_estimator)
        return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))

    def _party_proba(self, model, X: np.ndarray) -> np.ndarray:
        if model is None:  # a party with no columns carries no information: uniform guess
            return np.full((X.shape[0], self.classes_.size), 1.0 / self.classes_.size)
        proba = np.zeros((X.shape[0], self.classes_.size))
        cols = np.searchsorted(self.classes_, model.classes_)
        proba[:, cols] = model.predict_proba(X)
        return proba

    def fit(self, Xs: Sequence[np.ndarray], y: np.ndarray) -> LocalEnsemble:
        """Xs: K party matrices (n, d_k); y: (n,) class labels."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import StratifiedKFold

        Xs = check_parties(Xs)
        y = _check_y(y, Xs[0].shape[0])
        self.classes_ = np.unique(y)
        if self.classes_.size < 2:
            raise ValueError("y must contain at least 2 classes")
        self.party_dims_ = [X.shape[1] for X in Xs]
        self.models_ = [self._base().fit(X, y) if X.shape[1] else None for X in Xs]
        if self.combiner == "stacking":
            folds = StratifiedKFold(self.cv, shuffle=True, random_state=self.seed)
            oof = np.zeros((y.shape[0], len(Xs) * self.classes_.size))
            C = self.classes_.size
            for train, held in folds.split(Xs[0], y):
                for k, X in enumerate(Xs):
                    model = self._base().fit(X[train], y[train]) if X.shape[1] else None
                    # out-of-fold probabilities: what party k would send for unseen rows
                    oof[held, k * C:(k + 1) * C] = self._party_proba(model, X[held])
            self.meta_ = LogisticRegression(max_iter=2000).fit(np.log(oof + 1e-6), y)
        return self

    def predict_proba(self, Xs: Sequence[np.ndarray]) -> np.ndarray:
        """(n, C) class probabilities."""
        if not hasattr(self, "models_"):
            raise RuntimeError("LocalEnsemble is not fitted; call fit(Xs, y) first")
        Xs = check_parties(Xs, len(self.party_dims_), self.party_dims_)
        probs = [self._party_proba(m, X) for m, X in zip(self.models_, Xs)]
        if self.combiner == "average":
            return np.mean(probs, axis=0)  # p(y|x) = (1/K) sum_k p_k(y|x_k)
        return self.meta_.predict_proba(np.log(np.concatenate(probs, axis=1) + 1e-6))

    def predict(self, Xs: Sequence[np.ndarray]) -> np.ndarray:
        """(n,) predicted labels."""
        proba = self.predict_proba(Xs)  # raises if not fitted
        return self.classes_[np.argmax(proba, axis=1)]

    def score(self, Xs: Sequence[np.ndarray], y: np.ndarray) -> float:
        """Accuracy."""
        return float(np.mean(self.predict(Xs) == np.asarray(y)))
