"""Offline datasets for federated reproductions (nothing is downloaded).

``digits_split`` loads scikit-learn's bundled 8x8 digits (1,797 images, 10 classes; it ships
inside the scikit-learn wheel), makes a stratified train/test split and standardises pixels with
the training set's statistics, the recipe the FedImpro and CA²FL specs use.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

__all__ = ["TensorSplit", "digits_split"]


@dataclass(frozen=True)
class TensorSplit:
    """x_train: (n, 64) float32, y_train: (n,) int64, x_test, y_test likewise; num_classes."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    num_classes: int


def digits_split(test_size: float = 0.3, *, seed: int = 0) -> TensorSplit:
    """Stratified split of sklearn digits, standardised per pixel (train mean/std; std 0 -> 1)."""
    if not 0.0 < test_size < 1.0:
        raise ValueError(f"test_size must be in (0, 1), got {test_size}")
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    data = load_digits()
    x_tr, x_te, y_tr, y_te = train_test_split(data.data, data.target, test_size=test_size,
                                              stratify=data.target, random_state=seed)
    mu = x_tr.mean(0)
    sd = x_tr.std(0)
    sd[sd == 0] = 1.0
    def to_x(a: np.ndarray) -> torch.Tensor:
        return torch.as_tensor((a - mu) / sd, dtype=torch.float32)
    return TensorSplit(to_x(x_tr), torch.as_tensor(y_tr, dtype=torch.int64),
                       to_x(x_te), torch.as_tensor(y_te, dtype=torch.int64), 10)
