"""scikit-learn transformer: measures on the circle -> LCOT embeddings (uniform reference).

``LCOTEmbedding().fit_transform(measures)`` maps K measures (each an array of atoms in [0, 1), or a
``(values, weights)`` pair; sizes may differ) to a (K, grid_size) array. The map is the paper's
closed-form embedding, so the transformer is stateless: ``fit`` only validates.

Geometry caveat: LCOT is the *circular* L2 distance between embeddings (see
:func:`~iclr24.papers.lcot.embedding.lcot_pairwise`). Estimators downstream that use the Euclidean
geometry of ``transform``'s output (PCA, linear models, k-NN with ``metric="euclidean"``) therefore
approximate LCOT; they agree with it exactly when all pointwise differences are below 1/2, which
holds for measures that are not too far apart. For exact LCOT neighbours use
``KNeighborsClassifier(metric="precomputed")`` on ``lcot_pairwise(E)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from sklearn.base import BaseEstimator, TransformerMixin

from .embedding import _check_grid_size, coerce_measures, embed_measures
from .geodesics import embedding_to_measure

__all__ = ["LCOTEmbedding"]


class LCOTEmbedding(TransformerMixin, BaseEstimator):
    """Embed circular measures into LCOT space (reference: the uniform measure).

    Parameters
    ----------
    grid_size : int, default 1000
        M, the number of grid points x_m = m / M where the displacement nu_hat is evaluated
        (the official code uses 1000).

    Attributes (after ``fit``)
    --------------------------
    n_features_out_ : int  (= grid_size)
    grid_ : ndarray (grid_size,), the grid x_m.
    """

    def __init__(self, grid_size: int = 1000) -> None:
        self.grid_size = grid_size

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = False  # closed-form embedding: nothing is learnt
        return tags

    def fit(self, X: Sequence, y=None) -> LCOTEmbedding:
        """Validate ``grid_size`` and the measures in X; nothing is learnt."""
        m = _check_grid_size(self.grid_size, "grid_size")
        coerce_measures(X, name="X")
        self.n_features_out_ = m
        self.grid_ = np.arange(m, dtype=np.float64) / m
        return self

    def transform(self, X: Sequence) -> NDArray[np.float64]:
        """X: list of K measures -> (K, grid_size) embeddings in [-1/2, 1/2)."""
        return embed_measures(X, grid_size=_check_grid_size(self.grid_size, "grid_size"),
                              name="X")

    def inverse_transform(self, E) -> list[NDArray[np.float64]]:
        """(K, grid_size) embeddings -> K measures, each ``grid_size`` sorted atoms of mass 1/M
        (the push-forward of the grid by x + e(x); exact inverse up to grid resolution)."""
        arr = np.asarray(E, dtype=np.float64)
        m = _check_grid_size(self.grid_size, "grid_size")
        if arr.ndim != 2 or arr.shape[1] != m:
            raise ValueError(f"E must have shape (K, {m}) (grid_size columns), got {arr.shape}")
        return [embedding_to_measure(row) for row in arr]

    def get_feature_names_out(self, input_features=None) -> NDArray[np.object_]:
        m = _check_grid_size(self.grid_size, "grid_size")
        return np.asarray([f"lcot_x{i}" for i in range(m)], dtype=object)
