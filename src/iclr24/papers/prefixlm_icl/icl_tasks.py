"""Synthetic in-context regression / classification prompts (paper Sec. 5.1-5.2).

A prompt holds n in-context examples z_j = [y_j, x_j] followed by m queries [0, x_q] (the
official sampler's layout: the query's y slot is empty). Tasks, as in the official code:

- ``linear``:     y = w^T x,                 w ~ N(0, I_d);
- ``sigmoid``:    y = sigmoid(w^T x) - 1/2   (the paper's non-linear regression, N-LR);
- ``multiclass``: y = onehot(argmax W x),    W ~ N(0, I), K classes (trained with squared loss
                  on the one-hot vector, evaluated by argmax accuracy).

x ~ N(0, I) (official trainer) or U(-1, 1)^d (official theory script), plus ``x_offset``
(the mu_x shift of the stationary-point figure).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = ["ICLBatch", "sample_icl_batch"]

Task = Literal["linear", "sigmoid", "multiclass"]


@dataclass(frozen=True)
class ICLBatch:
    """A batch of prompts.

    tokens:    (batch, n_context + n_query, k + d) float32 model input, rows [y_j, x_j] then [0, x_q]
    x:         (batch, n_context + n_query, d) inputs (examples first, then queries)
    y:         (batch, n_context + n_query, k) targets (k = 1 for regression, K for multiclass)
    n_context: number of in-context examples n
    """

    tokens: np.ndarray
    x: np.ndarray
    y: np.ndarray
    n_context: int

    @property
    def query_targets(self) -> np.ndarray:
        """(batch, n_query, k): what the loss compares the query predictions with."""
        return self.y[:, self.n_context:]


def _positive_int(value, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return int(value)


def sample_icl_batch(batch: int, n_context: int, n_query: int, d: int, task: Task = "linear",
                     x_offset: float = 0.0, noise: float = 0.0,
                     rng: np.random.Generator | int | None = None,
                     x_dist: Literal["normal", "uniform"] = "normal",
                     n_classes: int = 4) -> ICLBatch:
    """Sample ``batch`` prompts of ``n_context`` examples and ``n_query`` queries in R^d.

    ``noise`` is the std of Gaussian label noise on the in-context targets (regression only;
    query targets stay noiseless). ``rng``: a numpy Generator or a seed.
    """
    batch = _positive_int(batch, "batch")
    n_context = _positive_int(n_context, "n_context")
    n_query = _positive_int(n_query, "n_query", 0)
    d = _positive_int(d, "d")
    if task not in ("linear", "sigmoid", "multiclass"):
        raise ValueError(f"task must be 'linear', 'sigmoid' or 'multiclass', got {task!r}")
    if x_dist not in ("normal", "uniform"):
        raise ValueError(f"x_dist must be 'normal' or 'uniform', got {x_dist!r}")
    if not np.isfinite(x_offset):
        raise ValueError(f"x_offset must be finite, got {x_offset!r}")
    if not (np.isfinite(noise) and noise >= 0):
        raise ValueError(f"noise must be a number >= 0, got {noise!r}")
    if task == "multiclass":
        n_classes = _positive_int(n_classes, "n_classes", 2)
        if noise:
            raise ValueError("noise is only defined for the regression tasks")
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    t = n_context + n_query
    if x_dist == "normal":
        x = rng.standard_normal((batch, t, d))
    else:
        x = rng.uniform(-1.0, 1.0, (batch, t, d))
    x = x + x_offset
    if task == "multiclass":
        W = rng.standard_normal((batch, n_classes, d))
        y = np.eye(n_classes)[np.argmax(np.einsum("bkd,btd->btk", W, x), axis=-1)]
    else:
        w = rng.standard_normal((batch, d))
        f = np.einsum("bd,btd->bt", w, x)
        y = (f if task == "linear" else 1.0 / (1.0 + np.exp(-f)) - 0.5)[..., None]
        if noise:
            y[:, :n_context] += noise * rng.standard_normal((batch, n_context, 1))
    y_slot = y.copy()
    y_slot[:, n_context:] = 0.0  # the query's y slot is empty
    tokens = np.concatenate([y_slot, x], axis=-1).astype(np.float32)
    return ICLBatch(tokens=tokens, x=x, y=y, n_context=n_context)
