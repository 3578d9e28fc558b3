"""Wild-mixture data sets for the SAL reproductions (laptop-scale stand-ins for the paper's
CIFAR-10/100 + SVHN/LSUN/Textures/Places mixtures, which need downloads and a GPU).

A :class:`WildMixture` holds a labelled ID set S_in, an unlabelled wild set S_wild drawn from
(1 - pi) P_in + pi P_out (the truth of which point is an outlier is kept for evaluation only),
and disjoint ID / OOD test sets. Wild-ID points are disjoint from the labelled ID set and
wild-OOD points from the test OOD set (the paper's protocol, official ``make_dataset.py``).

- :func:`gaussian_wild_mixture` (spec's data A): ID = 3 Gaussian classes in R^10 with means
  on a simplex (scale 3, unit covariance); OOD = a Gaussian centred off the ID means' span
  with a wider covariance.
- :func:`digits_wild_mixture` (data B): scikit-learn's bundled digits; ID = digits 0-5, OOD =
  digits 6-9 (semantic shift); ID split labelled / wild / test, OOD split wild pool / test,
  and the wild set gets as many OOD points as make the outlier fraction pi.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["WildMixture", "digits_wild_mixture", "gaussian_wild_mixture"]


@dataclass(frozen=True)
class WildMixture:
    """X_id (n, d) labelled ID inputs with y_id (n,) in [0, num_classes); X_wild (m, d) the
    unlabelled wild set and wild_is_outlier (m,) its hidden truth; X_test_id (t, d) with
    y_test_id, X_test_ood (u, d) test outliers (none of them in the wild set)."""

    X_id: np.ndarray
    y_id: np.ndarray
    X_wild: np.ndarray
    wild_is_outlier: np.ndarray
    X_test_id: np.ndarray
    y_test_id: np.ndarray
    X_test_ood: np.ndarray
    num_classes: int

    @property
    def pi(self) -> float:
        """The realised outlier fraction of the wild set."""
        return float(self.wild_is_outlier.mean())


def _check_pi(pi: float) -> float:
    if isinstance(pi, bool) or not isinstance(pi, (int, float)) or not 0 < pi < 1:
        raise ValueError(f"pi must be a number in (0, 1), got {pi!r}")
    return float(pi)


def _check_count(v: int, name: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ValueError(f"{name} must be a positive int, got {v!r}")
    return int(v)


def _shuffle_wild(rng: np.random.Generator, X_in: np.ndarray, X_out: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    X = np.concatenate([X_in, X_out]).astype(np.float32)
    truth = np.r_[np.zeros(len(X_in), bool), np.ones(len(X_out), bool)]
    order = rng.permutation(len(X))
    return X[order], truth[order]


def gaussian_wild_mixture(n_id: int = 1500, n_wild: int = 1500, pi: float = 0.1, *,
                          n_test_id: int = 1000, n_test_ood: int = 300, dim: int = 10,
                          scale: float = 3.0, ood_shift: float = 0.0, ood_std: float = 0.5,
                          seed: int = 0) -> WildMixture:
    """Synthetic mixture: class k in {0, 1, 2} ~ N(scale e_k, I) in R^dim (e_k the simplex
    vertices); OOD ~ N(c + ood_shift e_3, ood_std^2 I) with c the ID centroid (off the span of
    the ID means). The wild set has round(pi n_wild) outliers; every draw is fresh."""
    n_id, n_wild = _check_count(n_id, "n_id"), _check_count(n_wild, "n_wild")
    n_test_id, n_test_ood = _check_count(n_test_id, "n_test_id"), _check_count(n_test_ood,
                                                                             "n_test_ood")
    pi = _check_pi(pi)
    if _check_count(dim, "dim") < 4:
        raise ValueError(f"dim must be >= 4 (3 ID classes and an OOD direction), got {dim}")
    rng = np.random.default_rng(seed)
    means = np.zeros((3, dim))
    means[np.arange(3), np.arange(3)] = scale
    ood_mean = means.mean(axis=0)
    ood_mean[3] = ood_shift

    def draw_id(n: int) -> tuple[np.ndarray, np.ndarray]:
        y = rng.integers(0, 3, n)
        return (means[y] + rng.standard_normal((n, dim))).astype(np.float32), y

    def draw_ood(n: int) -> np.ndarray:
        return (ood_mean + ood_std * rng.standard_normal((n, dim))).astype(np.float32)

    X_id, y_id = draw_id(n_id)
    n_out = round(pi * n_wild)
    if not 0 < n_out < n_wild:
        raise ValueError(f"pi * n_wild must round to between 1 and n_wild - 1, got {n_out}")
    X_wild, truth = _shuffle_wild(rng, draw_id(n_wild - n_out)[0], draw_ood(n_out))
    X_test_id, y_test_id = draw_id(n_test_id)
    return WildMixture(X_id, y_id, X_wild, truth, X_test_id, y_test_id, draw_ood(n_test_ood),
                       num_classes=3)


def digits_wild_mixture(pi: float = 0.1, *, id_classes=(0, 1, 2, 3, 4, 5),
                        ood_classes=(6, 7, 8, 9), id_fractions=(0.5, 0.25, 0.25),
                        ood_fractions=(0.6, 0.4), seed: int = 0) -> WildMixture:
    """Digits mixture (pixels / 16). ID digits split (stratified, seeded) into labelled / wild /
    test by ``id_fractions``; OOD digits into a wild pool / test by ``ood_fractions``; the wild
    set takes round(pi / (1 - pi) * n_wild_id) points of the pool (at most all of it)."""
    from iclr24.kits.small_classifiers import load_digits_split

    pi = _check_pi(pi)
    if set(id_classes) & set(ood_classes):
        raise ValueError(f"id_classes and ood_classes must be disjoint, got {id_classes} and "
                         f"{ood_classes}")
    ind = load_digits_split(id_fractions, ("labelled", "wild", "test"), classes=id_classes,
                            seed=seed)
    ood = load_digits_split(ood_fractions, ("wild", "test"), classes=ood_classes, seed=seed)
    rng = np.random.default_rng(seed)
    X_wild_in = ind.X["wild"]
    pool = ood.X["wild"]
    n_out = min(round(pi / (1 - pi) * len(X_wild_in)), len(pool))
    if n_out < 1:
        raise ValueError(f"pi = {pi} gives no outliers in a wild set of {len(X_wild_in)} ID "
                         f"points")
    X_out = pool[rng.choice(len(pool), n_out, replace=False)]
    X_wild, truth = _shuffle_wild(rng, X_wild_in, X_out)
    return WildMixture(*ind.part("labelled"), X_wild, truth, *ind.part("test"), ood.X["test"],
                       num_classes=ind.num_classes)
