"""Offline datasets for federated reproductions (nothing is downloaded).

``digits_split`` loads scikit-learn's bundled 8x8 digits (1,797 images, 10 classes; it ships
inside the scikit-learn wheel), makes a stratified train/test split and standardises pixels with
the training set's statistics, the recipe the FedImpro and CA²FL specs use.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

__all__ = ["TensorSplit", "check_labels", "digits_split"]


@dataclass(frozen=True)
class TensorSplit:
    """x_train: (n, d) float, y_train: (n,) int64 in [0, num_classes), x_test, y_test likewise.

    Checked on construction: a label outside [0, num_classes), a non-finite feature or
    mismatched lengths raise ValueError naming the field (a NaN test feature would otherwise
    still yield an accuracy).
    """

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    num_classes: int

    def __post_init__(self) -> None:
        c = self.num_classes
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 2:
            raise ValueError(f"num_classes must be an int >= 2, got {c!r}")
        for part in ("train", "test"):
            x, y = getattr(self, f"x_{part}"), getattr(self, f"y_{part}")
            if not isinstance(x, torch.Tensor) or x.ndim < 2 or not x.is_floating_point():
                raise TypeError(f"x_{part} must be a floating torch.Tensor (n, d...), got "
                                f"{type(x).__name__}{tuple(getattr(x, 'shape', ()))}")
            if not isinstance(y, torch.Tensor) or y.ndim != 1 or y.is_floating_point():
                raise TypeError(f"y_{part} must be a 1-D integer torch.Tensor, got "
                                f"{type(y).__name__}{tuple(getattr(y, 'shape', ()))}")
            check_labels(y, c, name=f"y_{part}")
            if x.shape[0] != y.shape[0]:
                raise ValueError(f"x_{part} has {x.shape[0]} rows but y_{part} has "
                                 f"{y.shape[0]} labels")
            if not torch.isfinite(x).all():
                bad = int((~torch.isfinite(x)).any(dim=tuple(range(1, x.ndim))).sum())
                raise ValueError(f"x_{part} has NaN or inf features in {bad} rows")


def check_labels(y: torch.Tensor | np.ndarray, num_classes: int, *, name: str = "y") -> None:
    """ValueError naming ``name`` unless every label is an integer in [0, num_classes)."""
    arr = y.detach().cpu().numpy() if isinstance(y, torch.Tensor) else np.asarray(y)
    if arr.size == 0:
        return
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{name} must hold integer class ids, got dtype {arr.dtype}")
    lo, hi = int(arr.min()), int(arr.max())
    if lo < 0 or hi >= num_classes:
        raise ValueError(f"{name} must hold class ids in [0, {num_classes}), got labels in "
                         f"[{lo}, {hi}]")


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

