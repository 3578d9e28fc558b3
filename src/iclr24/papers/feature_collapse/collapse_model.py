"""The embed-then-linear network of the official notebooks and its SGD training.

h(x) = U vec(phi(w_{x_1}), ..., phi(w_{x_L})): an embedding W (n_words, d), phi = LayerNorm
without affine parameters or the identity, and a bias-free linear classifier U (K, L d) whose
blocks u_{k,l} in R^d are position specific. W and U start at PyTorch's default initialisation
divided by 1000; training is plain SGD (lr 0.1, batch 100) on cross-entropy with *separate*
weight decay on W and on U (1e-3 each), as the notebooks. ``freeze_embedding=True`` keeps W at a
random N(0, 1) initialisation (the non-collapsing baseline of the claims).

Scaled down: only the number of epochs (and, in the Zipf claim, the number of classes K); the
claims state what they use.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["EmbedLinearClassifier", "TrainingHistory", "accuracy", "train_collapse_model"]


class EmbedLinearClassifier(nn.Module):
    """tokens (batch, L) int64 -> scores (batch, K)."""

    def __init__(self, n_words: int, L: int, d: int, K: int, layer_norm: bool = False,
                 init_scale: float = 1e-3, generator: torch.Generator | None = None):
        super().__init__()
        for name, v in (("n_words", n_words), ("L", L), ("d", d), ("K", K)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if not init_scale > 0:
            raise ValueError(f"init_scale must be > 0, got {init_scale!r}")
        self.L, self.d, self.layer_norm = L, d, bool(layer_norm)
        self.emb = nn.Embedding(n_words, d)
        self.clf = nn.Linear(L * d, K, bias=False)
        with torch.no_grad():
            # PyTorch defaults (N(0, 1) and Kaiming-uniform), drawn from ``generator``, / 1000
            self.emb.weight.normal_(generator=generator).mul_(init_scale)
            bound = 1.0 / np.sqrt(L * d)
            self.clf.weight.uniform_(-bound, bound, generator=generator).mul_(init_scale)

    def features(self, weight: torch.Tensor | None = None) -> torch.Tensor:
        """phi(W): (n_words, d), LayerNorm applied when the model uses it."""
        w = self.emb.weight if weight is None else weight
        return F.layer_norm(w, (self.d,)) if self.layer_norm else w  # no affine parameters

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if tokens.dtype.is_floating_point or tokens.dtype.is_complex or tokens.dtype == torch.bool:
            raise TypeError(f"tokens must be an integer tensor of word ids, got {tokens.dtype}")
        if tokens.ndim != 2 or tokens.shape[1] != self.L:
            raise ValueError(f"tokens must have shape (batch, {self.L}), got {tuple(tokens.shape)}")
        x = self.emb(tokens)  # (batch, L, d)
        if self.layer_norm:
            x = F.layer_norm(x, (self.d,))
        return self.clf(x.reshape(x.shape[0], self.L * self.d))


@dataclass
class TrainingHistory:
    epochs: int
    train_loss: list[float] = field(default_factory=list)
    test_accuracy: list[tuple[int, float]] = field(default_factory=list)


def _integer_ids(values, name: str) -> torch.Tensor:
    """int64 tensor of ``values``; fractional ids are refused, not truncated (integral floats
    such as 3.0 are converted exactly)."""
    a = values.detach().cpu().numpy() if isinstance(values, torch.Tensor) else np.asarray(values)
    if a.dtype == bool or not (np.issubdtype(a.dtype, np.integer)
                               or np.issubdtype(a.dtype, np.floating)):
        raise TypeError(f"{name} must be integer ids, got dtype {a.dtype}")
    if np.issubdtype(a.dtype, np.floating) and not np.all(np.isfinite(a) & (a == np.round(a))):
        raise TypeError(f"{name} must be integer ids, got fractional or non-finite values "
                        f"(dtype {a.dtype})")
    return torch.as_tensor(a.astype(np.int64))


def _positive_batch(batch) -> int:
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise ValueError(f"batch must be a positive int, got {batch!r}")
    return int(batch)


def _check_pair(tokens, labels, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    t = _integer_ids(tokens, f"{name} tokens")
    y = _integer_ids(labels, f"{name} labels")
    if t.ndim != 2:
        raise ValueError(f"{name} tokens must be 2-D (sentences, L), got shape {tuple(t.shape)}")
    if y.ndim != 1 or y.shape[0] != t.shape[0]:
        raise ValueError(f"{name} tokens and labels must have the same length: {t.shape[0]} "
                         f"sentences but labels of shape {tuple(y.shape)}")
    if t.shape[0] == 0:
        raise ValueError(f"{name} set is empty (0 sentences)")
    return t, y


def accuracy(model: EmbedLinearClassifier, tokens, labels, batch: int = 1000) -> float:
    """Fraction of sentences whose argmax score is the label."""
    t, y = _check_pair(tokens, labels, "evaluation")
    batch = _positive_batch(batch)
    correct = 0
    with torch.no_grad():
        for i in range(0, t.shape[0], batch):
            correct += int((model(t[i:i + batch]).argmax(1) == y[i:i + batch]).sum())
    return correct / t.shape[0]


def train_collapse_model(model: EmbedLinearClassifier, tokens, labels, epochs: int,
                         lr: float = 0.1, wd_emb: float = 1e-3, wd_clf: float = 1e-3,
                         batch: int = 100, freeze_embedding: bool = False, seed: int = 0,
                         test: tuple | None = None, eval_every: int = 0,
                         progress=None) -> TrainingHistory:
    """Plain SGD on cross-entropy with weight decay ``wd_emb`` on W and ``wd_clf`` on U.

    tokens: (N, L) int; labels: (N,) int (same length and N >= 1, else ValueError; fractional
    ids raise TypeError); ``batch`` a positive int. ``freeze_embedding``
    re-draws W ~ N(0, 1) (normal scale, seeded) and does not train it. ``test=(tokens, labels)``
    with ``eval_every=k`` records the test accuracy every k epochs. Shuffling uses ``seed``.
    """
    t, y = _check_pair(tokens, labels, "training")
    batch = _positive_batch(batch)
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be a positive int, got {epochs!r}")
    if int(y.max()) >= model.clf.out_features or int(y.min()) < 0:
        raise ValueError(f"labels must be in [0, {model.clf.out_features}), got range "
                         f"[{int(y.min())}, {int(y.max())}]")
    if int(t.max()) >= model.emb.num_embeddings or int(t.min()) < 0:
        raise ValueError(f"tokens must be word ids in [0, {model.emb.num_embeddings})")
    for name, v in (("lr", lr), ("wd_emb", wd_emb), ("wd_clf", wd_clf)):
        if not (isinstance(v, (int, float)) and v >= 0):
            raise ValueError(f"{name} must be a number >= 0, got {v!r}")
    gen = torch.Generator().manual_seed(seed)
    groups = [{"params": model.clf.parameters(), "weight_decay": wd_clf}]
    if freeze_embedding:
        with torch.no_grad():
            model.emb.weight.normal_(generator=gen)
        model.emb.weight.requires_grad_(False)
    else:
        groups.insert(0, {"params": model.emb.parameters(), "weight_decay": wd_emb})
    opt = torch.optim.SGD(groups, lr=lr)
    hist = TrainingHistory(epochs)
    n = t.shape[0]
    for epoch in range(1, epochs + 1):
        perm = torch.randperm(n, generator=gen)
        total, steps = 0.0, 0
        for i in range(0, n, batch):
            idx = perm[i:i + batch]
            loss = F.cross_entropy(model(t[idx]), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.item()
            steps += 1
        hist.train_loss.append(total / steps)
        if test is not None and eval_every and (epoch % eval_every == 0 or epoch == epochs):
            hist.test_accuracy.append((epoch, accuracy(model, *test)))
        if progress is not None:
            progress(epoch / epochs)
    return hist
