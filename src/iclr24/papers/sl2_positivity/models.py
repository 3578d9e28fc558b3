"""The MLP that predicts a max-det Gram matrix, its training with optional SL(2) augmentation
(Lawrence & Harris, ICLR 2024, Sec. 5; official ``models/model1.py`` and ``train.py``).

GramMLP: 2d + 1 coefficients -> hidden (100, 1000) with leaky ReLU (Kaiming-uniform init, torch's
default for Linear) -> (d+1)^2 -> reshape -> exact constraint projection with the input p.
Inputs are normalised by ||p|| and targets by the same factor (G*(lambda p) = lambda G*(p));
predictions are multiplied back. Augmentation replaces (p, G*) by (M_{2d}(A)^T p, M_d(A)^T G* M_d(A))
for random A in SL(2) (condition number <= ``aug_cond``), normalised after transforming.
Training: Adam, lr 3e-4, batch 32, MSE on normalised Gram matrices (epochs scaled down).
The same loop trains the SO(2)-equivariant net (``equivariant.SO2GramNet``); ``epochs=0``
returns the untrained network of that seed (a null arm). Zero forms are refused in training and
predicted as the zero matrix (``predict_gram``), never as 0/0.
"""

from __future__ import annotations

import itertools

import numpy as np

from .certificates import project_gram_constraints
from .equivariant import SO2GramNet
from .forms import check_form, induced_matrix, sample_sl2

__all__ = ["GramMLP", "predict_gram", "train_gram_model"]


def _torch():
    import torch

    return torch


def GramMLP(d: int, hidden: tuple[int, ...] = (100, 1000)):
    """An ``nn.Module`` mapping normalised forms (n, 2d+1) to Gram matrices (n, d+1, d+1) that
    satisfy the anti-diagonal constraints exactly."""
    torch = _torch()
    nn = torch.nn

    class _GramMLP(nn.Module):
        def __init__(self):
            super().__init__()
            sizes = [2 * d + 1, *hidden, (d + 1) ** 2]
            layers = []
            for a, b in itertools.pairwise(sizes):
                layers += [nn.Linear(a, b), nn.LeakyReLU()]
            self.net = nn.Sequential(*layers[:-1])
            self.d = d

        def forward(self, p):
            G = self.net(p).reshape(-1, self.d + 1, self.d + 1)
            return project_gram_constraints(G, p)

    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise ValueError(f"d must be a positive int, got {d!r}")
    return _GramMLP()


def _augment(P, G, rng, cond):
    A = sample_sl2(len(P), (1.0, cond), rng)
    d = G.shape[-1] - 1
    Mf = np.stack([induced_matrix(a, 2 * d) for a in A])
    Mg = np.stack([induced_matrix(a, d) for a in A])
    P2 = np.einsum("nk,nkl->nl", P, Mf)                          # M_{2d}(A)^T p
    G2 = np.swapaxes(Mg, 1, 2) @ G @ Mg                           # M_d(A)^T G M_d(A)
    return P2, G2


def train_gram_model(P, G, *, epochs: int, seed: int, augment: bool = False,
                     aug_cond: float = 5.0, hidden=(100, 1000), lr: float = 3e-4,
                     batch: int = 32, architecture: str = "mlp"):
    """Train a GramMLP (``architecture="mlp"``, sizes ``hidden``) or an SO2GramNet
    (``architecture="so2"``, default sizes) on forms P (n, 2d+1) and max-det targets
    G (n, d+1, d+1)."""
    torch = _torch()
    if architecture not in ("mlp", "so2"):
        raise ValueError(f"architecture must be 'mlp' or 'so2', got {architecture!r}")
    P, d = check_form(P)
    G = np.asarray(G, dtype=np.float64)
    if P.ndim != 2:
        raise ValueError(f"P must have shape (n, 2d + 1), got {P.shape}")
    if G.shape != (P.shape[0], d + 1, d + 1):
        raise ValueError(f"G must have shape {(P.shape[0], d + 1, d + 1)}, got {G.shape}")
    zero = np.flatnonzero(~np.any(P, axis=1))
    if zero.size:
        raise ValueError(f"P holds zero forms (rows {zero[:5].tolist()}): they cannot be "
                         "normalised by ||p|| and have no max-det target")
    if augment and not (isinstance(aug_cond, (int, float)) and aug_cond > 1):
        raise ValueError(f"aug_cond must be a number > 1 (a condition-number bound), got "
                         f"{aug_cond!r}")
    for name, v in (("epochs", epochs), ("batch", batch)):
        if isinstance(v, bool) or not isinstance(v, int) or v < (0 if name == "epochs" else 1):
            raise ValueError(f"{name} must be an int >= {0 if name == 'epochs' else 1}, "
                             f"got {v!r}")
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = (GramMLP(d, hidden) if architecture == "mlp" else SO2GramNet(d)).double()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(epochs):
        Pe, Ge = _augment(P, G, rng, aug_cond) if augment else (P, G)
        norm = np.linalg.norm(Pe, axis=1)
        Pt = torch.from_numpy(Pe / norm[:, None])
        Gt = torch.from_numpy(Ge / norm[:, None, None])
        perm = torch.from_numpy(rng.permutation(len(P)))
        for s in range(0, len(P), batch):
            b = perm[s:s + batch]
            loss = ((model(Pt[b]) - Gt[b]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model


def predict_gram(model, P) -> np.ndarray:
    """Gram matrices (n, d+1, d+1) for forms P (n, 2d+1), scale restored. A zero form gets the
    zero matrix, exactly: it is its only PSD Gram matrix and the limit of the 1-homogeneous
    prediction ||p|| model(p / ||p||) as p -> 0 (no division by ||p|| = 0)."""
    torch = _torch()
    P, _ = check_form(P)
    if P.ndim != 2:
        raise ValueError(f"P must have shape (n, 2d + 1), got {P.shape}")
    norm = np.linalg.norm(P, axis=1)
    safe = np.where(norm > 0, norm, 1.0)
    with torch.no_grad():
        G = model(torch.from_numpy(P / safe[:, None]).double()).numpy()
    return G * norm[:, None, None]                               # G(p) = ||p|| G(p / ||p||)
