"""Class-balanced focal loss (Cui et al., CVPR 2019), the training loss of RQGNN (paper Sec. 4).

With n_c training graphs of class c, the class weight is the inverse "effective number"

    w_c = (1 - beta) / (1 - beta^{n_c}),   renormalised so that sum_c w_c = C,

and on one-hot targets y (B, C) and logits z (B, C) the loss is

    L = sum_{b, c} w_{y_b} * FL(z_bc, y_bc) / sum_{b, c} y_bc,
    FL(z, y) = exp(-gamma y z - gamma log(1 + e^{-z})) * BCE_with_logits(z, y),

i.e. the focal modulator (1 - p_t)^gamma with p_t = sigmoid(z) for y = 1 and 1 - sigmoid(z) for
y = 0, summed over every one-hot entry and divided by the number of one-hot positives (= the
batch size, not the number of anomalies). Defaults beta = 0.999, gamma = 1.5 are the official
code's (``lossfunc.CB_loss``). The official code gives a class with zero training graphs weight
0; here a missing class is an error, since the weights are then meaningless.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

__all__ = ["class_balanced_focal_loss", "class_balanced_weights"]


def class_balanced_weights(class_counts: Sequence[int] | torch.Tensor, beta: float = 0.999
                           ) -> torch.Tensor:
    """(C,) float64 weights w_c = (1 - beta) / (1 - beta^{n_c}), scaled to sum to C."""
    if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not 0.0 <= beta < 1.0:
        raise ValueError(f"beta must be a number in [0, 1); got {beta!r}")
    counts = torch.as_tensor(class_counts, dtype=torch.float64).reshape(-1)
    if counts.numel() < 2:
        raise ValueError(f"class_counts must give one count per class (at least 2); got "
                         f"{list(counts.tolist())}")
    if bool((counts != counts.round()).any()) or bool((counts < 0).any()):
        raise ValueError(f"class_counts must be non-negative integers; got {counts.tolist()}")
    if bool((counts == 0).any()):
        missing = torch.nonzero(counts == 0).flatten().tolist()
        raise ValueError(f"class_counts has zero training examples for class(es) {missing}: "
                         "the class-balanced weights need every class present")
    effective = 1.0 - torch.pow(torch.tensor(beta, dtype=torch.float64), counts)
    w = (1.0 - beta) / effective  # w_c = (1 - beta) / (1 - beta^{n_c})
    return w / w.sum() * counts.numel()  # sum_c w_c = C


def class_balanced_focal_loss(logits: torch.Tensor, y: torch.Tensor,
                              class_counts: Sequence[int] | torch.Tensor, beta: float = 0.999,
                              gamma: float = 1.5) -> torch.Tensor:
    """Scalar class-balanced focal loss of ``logits`` (B, C) against labels ``y`` (B,) in 0..C-1.

    ``class_counts`` (C,) are the training-set counts per class (all > 0); ``gamma`` >= 0
    (0 gives the class-balanced sigmoid cross entropy).
    """
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point() \
            or logits.dim() != 2:
        raise TypeError(f"logits must be a float tensor of shape (B, C); got "
                        f"{type(logits).__name__} {tuple(getattr(logits, 'shape', ()))}")
    if not isinstance(y, torch.Tensor) or y.dtype not in (torch.long, torch.int32, torch.int64):
        raise TypeError(f"y must be an integer tensor of labels; got {type(y).__name__}")
    y = y.reshape(-1).long()
    b, c = logits.shape
    if b == 0 or y.shape[0] != b:
        raise ValueError(f"y must hold one label per row of logits (B = {b} > 0); got {y.shape[0]}")
    if int(y.min()) < 0 or int(y.max()) >= c:
        raise ValueError(f"labels must lie in 0..{c - 1}; got range [{int(y.min())}, "
                         f"{int(y.max())}]")
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or gamma < 0:
        raise ValueError(f"gamma must be a number >= 0; got {gamma!r}")
    w = class_balanced_weights(class_counts, beta)
    if w.numel() != c:
        raise ValueError(f"class_counts has {w.numel()} entries but logits have C = {c} classes")
    onehot = F.one_hot(y, c).to(logits.dtype)
    bce = F.binary_cross_entropy_with_logits(logits, onehot, reduction="none")
    # focal modulator exp(-gamma y z - gamma log(1 + e^{-z})) = (1 - p_t)^gamma
    modulator = torch.exp(-gamma * onehot * logits - gamma * F.softplus(-logits))
    weight = w.to(device=logits.device, dtype=logits.dtype)[y][:, None]  # w_{y_b} on every entry
    return (weight * modulator * bce).sum() / onehot.sum()  # / number of one-hot positives
