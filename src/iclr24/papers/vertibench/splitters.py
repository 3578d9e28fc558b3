"""Vertical split generators: importance-based (Dirichlet alpha) and correlation-based (beta).

VertiBench (Wu et al., ICLR 2024), Section 3 and Algorithms 1-2, mirrored on the official
``ImportanceSplitter`` / ``CorrelationSplitter``:

ImportanceSplitter (Algorithm 1)
    1. p ~ Dir(alpha 1_K) drawn by stick-breaking with Beta draws
       (p_1 ~ Beta(a_1, sum_{j>1} a_j), p_i = (1 - sum_{j<i} p_j) Beta(a_i, sum_{j>i} a_j),
       p_K = remainder), because numpy's ``dirichlet`` returns NaN for tiny alpha. If every p
       underflows to 0 the whole mass goes to one random party.
    2. Unless empty parties are allowed, each party first gets one distinct random feature.
    3. Each remaining feature goes to party j independently with probability p_j.
    With i.i.d. assignment the expected share of the total (additive) importance of party j is
    p_j, so importance shares follow Dir(alpha) whatever the per-feature importances are.
    Small alpha -> one dominant party; large alpha -> balanced parties. The pre-assignment of
    step 2 biases shares towards balance when d is small relative to K.

CorrelationSplitter (Algorithm 2)
    Party sizes are an equal split of the d columns. A candidate split is a permutation of the
    columns encoded by random keys in [-1, 1]^d (argsort -> order -> contiguous blocks),
    optimised with pymoo's BRKGA. ``fit`` finds Icor_min and Icor_max (BRKGA 200/700/100,
    bias 0.7, 100 generations each); ``split_indices(beta)`` minimises
    |Icor(perm) - (beta Icor_max + (1 - beta) Icor_min)| (BRKGA 20/70/10, bias 0.7, <= 100
    generations, stop when the best value improves by < 1e-4 over 10 generations).
    Larger beta means MORE inter-party correlation (the official docstring says the opposite;
    the official formula, which we follow, is as written here).

Differences from the official code, none of which changes the mechanism:
* explicit ``numpy.random.Generator`` streams instead of numpy's global seed (so the splits
  differ from the official ones for the same integer seed);
* the population is evaluated in one vectorised batch (exact spectra), not one candidate at a
  time in a thread pool;
* duplicates are eliminated on a hash of the induced *partition* (the same split reached by
  two within-party orderings counts once) rather than on a hash of the raw order;
* ``CorrelationSplitter.fit`` takes whichever matrix it is given; the official ``split``
  fits on train and test concatenated, our claims fit on the training rows only (correlation
  is label-free, but this keeps test rows out of every choice).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .party_correlation import (
    correlation_matrix,
    equal_party_sizes,
    icor,
    icor_for_permutations,
)
from .party_importance import _as_rng

__all__ = [
    "PAPER_FIT_BRKGA",
    "PAPER_SPLIT_BRKGA",
    "BRKGAConfig",
    "CorrelationSplitter",
    "ImportanceSplitter",
    "RandomEqualSplitter",
    "apply_split",
    "dirichlet_stick_breaking",
]


def _check_n_parties(n_parties: int) -> int:
    if isinstance(n_parties, bool) or not isinstance(n_parties, (int, np.integer)):
        raise TypeError(f"n_parties must be an int; got {n_parties!r}")
    if n_parties < 2:
        raise ValueError(f"n_parties must be >= 2; got {n_parties}")
    return int(n_parties)


def _check_n_features(n_features: int, n_parties: int, allow_empty: bool) -> int:
    if isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer)):
        raise TypeError(f"n_features must be an int; got {n_features!r}")
    if n_features < 1:
        raise ValueError(f"n_features must be >= 1; got {n_features}")
    if not allow_empty and n_parties > n_features:
        raise ValueError(f"n_parties={n_parties} is larger than the number of features "
                         f"n_features={n_features}; every party needs at least one feature "
                         "(or pass allow_empty_party=True)")
    return int(n_features)


def dirichlet_stick_breaking(alpha: Sequence[float], rng: int | np.random.Generator | None = None
                             ) -> np.ndarray:
    """One draw p ~ Dir(alpha) by sequential Beta stick-breaking (stable for tiny alpha).

    alpha: (K,) positive concentrations. Returns (K,) non-negative, summing to 1 (up to
    underflow: if every component underflows, all mass goes to one random component).
    """
    a = np.asarray(alpha, dtype=float)
    if a.ndim != 1 or a.size < 2:
        raise ValueError(f"alpha must be a 1-D sequence of at least 2 values; got {alpha!r}")
    if not np.all(np.isfinite(a)) or np.any(a <= 0):
        raise ValueError(f"alpha must be finite and > 0; got {alpha!r}")
    gen = _as_rng(rng)
    K = a.size
    p = np.zeros(K)
    remaining = 1.0
    for i in range(K - 1):
        # p_i = (1 - sum_{j<i} p_j) * Beta(a_i, sum_{j>i} a_j)
        phi = gen.beta(a[i], a[i + 1:].sum())
        if not np.isfinite(phi):
            phi = 0.0
        p[i] = remaining * phi
        remaining = max(remaining - p[i], 0.0)
    p[-1] = remaining  # last component takes the rest of the stick
    total = p.sum()
    if total < 1 - 1e-6:
        p[:] = 0.0
        p[gen.integers(K)] = 1.0
    else:
        p /= total
    return p


def apply_split(X: np.ndarray, indices: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Cut X (n, d) into party matrices X[:, indices[k]] (n, d_k)."""
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (n_samples, n_features); got shape {X.shape}")
    out = []
    for k, ix in enumerate(indices):
        ix = np.asarray(ix, dtype=int)
        if ix.size and (ix.min() < 0 or ix.max() >= X.shape[1]):
            raise ValueError(f"indices[{k}] has column ids outside [0, {X.shape[1]})")
        out.append(X[:, ix])
    return out


class _SplitterBase:
    n_parties: int
    indices_: list[np.ndarray] | None

    def split_indices(self, n_features: int) -> list[np.ndarray]:  # pragma: no cover
        raise NotImplementedError

    def split(self, *Xs: np.ndarray, indices: Sequence[np.ndarray] | None = None
              ) -> list[list[np.ndarray]]:
        """Split every matrix in ``Xs`` (all with the same columns) with one set of indices.

        Returns one list of K party matrices per input; the indices are kept in ``indices_``.
        """
        if not Xs:
            raise ValueError("split needs at least one matrix")
        d = np.asarray(Xs[0]).shape[1] if np.asarray(Xs[0]).ndim == 2 else -1
        for k, X in enumerate(Xs):
            X = np.asarray(X)
            if X.ndim != 2 or X.shape[1] != d:
                raise ValueError(f"Xs[{k}] must be 2-D with {d} columns like Xs[0]; "
                                 f"got shape {X.shape}")
        if indices is None:
            indices = self.split_indices(d)
        self.indices_ = [np.asarray(ix, dtype=int) for ix in indices]
        return [apply_split(X, self.indices_) for X in Xs]


class ImportanceSplitter(_SplitterBase):
    """Importance-based vertical split with party shares ~ Dir(alpha).

    n_parties: K >= 2; alpha: a positive float (symmetric Dirichlet) or K positive weights;
    rng: seed or Generator (one stream for all calls, so successive splits differ but the
    sequence is reproducible); allow_empty_party: skip the one-feature-per-party pre-assignment.
    """

    def __init__(self, n_parties: int, alpha: float | Sequence[float] = 1.0,
                 rng: int | np.random.Generator | None = None,
                 allow_empty_party: bool = False) -> None:
        self.n_parties = _check_n_parties(n_parties)
        if isinstance(alpha, (bool, np.bool_)):
            raise TypeError(f"alpha must be a positive float or a sequence of {self.n_parties} "
                            f"positive floats; got the bool {alpha!r}")
        if isinstance(alpha, (int, float, np.integer, np.floating)):
            if not np.isfinite(alpha) or alpha <= 0:
                raise ValueError(f"alpha must be > 0 (a Dirichlet concentration); got {alpha!r}")
            weights = np.full(self.n_parties, float(alpha))
        else:
            try:
                weights = np.asarray(alpha, dtype=float)
            except (TypeError, ValueError):
                raise TypeError(f"alpha must be a positive float or a sequence of "
                                f"{self.n_parties} positive floats; got {alpha!r}") from None
            if weights.shape != (self.n_parties,):
                raise ValueError(f"alpha must have one weight per party ({self.n_parties}); "
                                 f"got shape {weights.shape}")
            if not np.all(np.isfinite(weights)) or np.any(weights <= 0):
                raise ValueError(f"alpha must be > 0 for every party; got {alpha!r}")
        self.alpha = weights
        self.allow_empty_party = bool(allow_empty_party)
        self._rng = _as_rng(rng)
        self.indices_ = None
        self.probs_: np.ndarray | None = None

    def split_indices(self, n_features: int) -> list[np.ndarray]:
        """Draw one split of ``n_features`` columns: K sorted arrays of column ids."""
        K = self.n_parties
        d = _check_n_features(n_features, K, self.allow_empty_party)
        rng = self._rng
        p = dirichlet_stick_breaking(self.alpha, rng)  # step 1: p ~ Dir(alpha)
        self.probs_ = p
        owner = np.full(d, -1)
        if not self.allow_empty_party:
            first = rng.choice(d, size=K, replace=False)  # step 2: one feature per party
            owner[first] = np.arange(K)
        draws = rng.choice(K, size=d, p=p)  # step 3: feature -> party j w.p. p_j
        free = owner < 0
        owner[free] = draws[free]
        return [np.flatnonzero(owner == k) for k in range(K)]


class RandomEqualSplitter(_SplitterBase):
    """The split most VFL benchmarks use: shuffle the columns, cut into K equal blocks."""

    def __init__(self, n_parties: int, rng: int | np.random.Generator | None = None) -> None:
        self.n_parties = _check_n_parties(n_parties)
        self._rng = _as_rng(rng)
        self.indices_ = None

    def split_indices(self, n_features: int) -> list[np.ndarray]:
        d = _check_n_features(n_features, self.n_parties, False)
        order = self._rng.permutation(d)
        sizes = equal_party_sizes(d, self.n_parties)
        cuts = np.concatenate([[0], np.cumsum(sizes)])
        return [np.sort(order[cuts[k]:cuts[k + 1]]) for k in range(self.n_parties)]


@dataclass(frozen=True)
class BRKGAConfig:
    """Biased random-key GA settings (pymoo ``BRKGA``). ``ftol=None`` runs all ``n_gen``
    generations; otherwise stop when the best objective improves by < ftol over ``period``
    generations (pymoo ``DefaultSingleObjectiveTermination``)."""

    n_elites: int = 200
    n_offsprings: int = 700
    n_mutants: int = 100
    bias: float = 0.7
    n_gen: int = 100
    ftol: float | None = None
    period: int = 10

    def __post_init__(self) -> None:
        for name in ("n_elites", "n_offsprings", "n_mutants", "n_gen", "period"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"BRKGAConfig.{name} must be a positive int; got {value!r}")
        if not 0.5 <= self.bias <= 1.0:
            raise ValueError(f"BRKGAConfig.bias must be in [0.5, 1]; got {self.bias!r}")
        if self.ftol is not None and not self.ftol > 0:
            raise ValueError(f"BRKGAConfig.ftol must be > 0 or None; got {self.ftol!r}")


#: The paper's settings: Icor extremes (``fit``) and the beta-matching search (``split``).
PAPER_FIT_BRKGA = BRKGAConfig(200, 700, 100, 0.7, 100)
PAPER_SPLIT_BRKGA = BRKGAConfig(20, 70, 10, 0.7, 100, ftol=1e-4, period=10)


def _pymoo_pieces():
    """Import pymoo lazily and build the problem / duplicate-elimination classes once."""
    global _PYMOO
    if _PYMOO is not None:
        return _PYMOO
    from pymoo.config import Config

    Config.warnings["not_compiled"] = False
    from pymoo.algorithms.soo.nonconvex.brkga import BRKGA
    from pymoo.core.duplicate import DuplicateElimination
    from pymoo.core.problem import Problem
    from pymoo.optimize import minimize
    from pymoo.termination import get_termination
    from pymoo.termination.default import DefaultSingleObjectiveTermination

    class IcorProblem(Problem):
        """Random keys (n, d) in [-1, 1] -> objective from the Icor of argsort(keys)."""

        def __init__(self, corr, party_sizes, objective):
            super().__init__(n_var=corr.shape[0], n_obj=1, xl=-1.0, xu=1.0)
            self.corr = corr
            self.party_sizes = party_sizes
            self.objective = objective

        def _evaluate(self, x, out, *args, **kwargs):
            orders = np.argsort(x, axis=1)
            out["F"] = self.objective(icor_for_permutations(self.corr, orders,
                                                            self.party_sizes))[:, None]

    class PartitionDuplicateElimination(DuplicateElimination):
        """Two keys vectors are duplicates when they induce the same party partition."""

        def __init__(self, party_sizes):
            super().__init__()
            self.cuts = np.concatenate([[0], np.cumsum(party_sizes)])

        def _keys(self, pop):
            orders = np.argsort(pop.get("X"), axis=1)
            blocks = [np.sort(orders[:, a:b], axis=1) for a, b in zip(self.cuts[:-1],
                                                                      self.cuts[1:])]
            canon = np.concatenate(blocks, axis=1)
            return [row.tobytes() for row in canon]

        def _do(self, pop, other, is_duplicate):
            seen = set(self._keys(other)) if other is not None and len(other) else set()
            for i, key in enumerate(self._keys(pop)):
                if key in seen:
                    is_duplicate[i] = True
                else:
                    seen.add(key)
            return is_duplicate

    def run(corr, party_sizes, objective, config: BRKGAConfig, seed: int):
        algorithm = BRKGA(n_elites=config.n_elites, n_offsprings=config.n_offsprings,
                          n_mutants=config.n_mutants, bias=config.bias,
                          eliminate_duplicates=PartitionDuplicateElimination(party_sizes))
        if config.ftol is None:
            termination = get_termination("n_gen", config.n_gen)
        else:
            termination = DefaultSingleObjectiveTermination(
                ftol=config.ftol, period=config.period, n_max_gen=config.n_gen)
        res = minimize(IcorProblem(corr, party_sizes, objective), algorithm, termination,
                       seed=seed, verbose=False)
        x = np.asarray(res.X, dtype=float).reshape(-1)
        return np.argsort(x), float(np.asarray(res.F).reshape(-1)[0]), int(res.algorithm.n_gen)

    _PYMOO = run
    return run


_PYMOO = None


class CorrelationSplitter(_SplitterBase):
    """Correlation-based vertical split hitting a requested beta in [0, 1].

    n_parties: K >= 2; rng: seed or Generator for the GA seeds; fit_brkga / split_brkga: GA
    settings (paper defaults); corr_method: "spearman" (paper) or "pearson".

    After ``fit(X)``: ``corr_`` (d, d), ``party_sizes_``, ``icor_min_``, ``icor_max_``.
    After ``split_indices(beta)``: ``best_icor_``, ``best_beta_``, ``n_gen_``.
    """

    def __init__(self, n_parties: int, rng: int | np.random.Generator | None = None,
                 fit_brkga: BRKGAConfig = PAPER_FIT_BRKGA,
                 split_brkga: BRKGAConfig = PAPER_SPLIT_BRKGA,
                 corr_method: str = "spearman") -> None:
        self.n_parties = _check_n_parties(n_parties)
        for name, cfg in (("fit_brkga", fit_brkga), ("split_brkga", split_brkga)):
            if not isinstance(cfg, BRKGAConfig):
                raise TypeError(f"{name} must be a BRKGAConfig; got {type(cfg)}")
        if corr_method not in ("spearman", "pearson"):
            raise ValueError(f"corr_method must be 'spearman' or 'pearson'; got {corr_method!r}")
        self._rng = _as_rng(rng)
        self.fit_brkga = fit_brkga
        self.split_brkga = split_brkga
        self.corr_method = corr_method
        self.corr_: np.ndarray | None = None
        self.party_sizes_: list[int] | None = None
        self.icor_min_: float | None = None
        self.icor_max_: float | None = None
        self.indices_ = None
        self.best_icor_: float | None = None
        self.best_beta_: float | None = None
        self.n_gen_: int | None = None

    def _seed(self) -> int:
        return int(self._rng.integers(2**31 - 1))

    def fit(self, X: np.ndarray) -> CorrelationSplitter:
        """Correlation matrix of X (n, d) and the Icor extremes over equal-size splits."""
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-D array (n_samples, n_features); got {X.shape}")
        d = _check_n_features(X.shape[1], self.n_parties, False)
        if d == self.n_parties:
            # a 1x1 block has one singular value, so every Pcor (and Icor) is 0 whatever the split
            raise ValueError(f"X has {d} features for n_parties={self.n_parties}: one feature per "
                             "party makes Icor 0 for every split, so the correlation split is "
                             f"undefined; it needs at least {self.n_parties + 1} features")
        self.party_sizes_ = equal_party_sizes(d, self.n_parties)
        self.corr_ = correlation_matrix(X, self.corr_method)
        run = _pymoo_pieces()
        _, fmin, _ = run(self.corr_, self.party_sizes_, lambda v: v, self.fit_brkga, self._seed())
        _, fmax, _ = run(self.corr_, self.party_sizes_, lambda v: -v, self.fit_brkga,
                         self._seed())
        self.icor_min_, self.icor_max_ = fmin, -fmax  # min Icor; max Icor = -min(-Icor)
        if not self.icor_max_ > self.icor_min_:
            raise ValueError("all equal-size splits of X have the same Icor; the correlation "
                             "split is undefined (are all features constant or independent?)")
        return self

    def _check_fitted(self) -> None:
        if self.corr_ is None:
            raise RuntimeError("CorrelationSplitter is not fitted; call fit(X) first")

    def split_indices(self, beta: float = 0.5, *, n_features: int | None = None
                      ) -> list[np.ndarray]:
        """Columns of each party for the split whose Icor is closest to
        beta * Icor_max + (1 - beta) * Icor_min. Returns K sorted arrays of column ids.
        ``n_features``, if given, must equal the fitted width (a consistency check)."""
        self._check_fitted()
        d = self.corr_.shape[0]
        if n_features is not None and n_features != d:
            raise ValueError(f"n_features={n_features} differs from the fitted {d} features")
        if isinstance(beta, (bool, np.bool_)) \
                or not isinstance(beta, (int, float, np.integer, np.floating)) \
                or not 0.0 <= beta <= 1.0:
            raise ValueError(f"beta must be a number in [0, 1]; got {beta!r}")
        target = beta * self.icor_max_ + (1 - beta) * self.icor_min_
        run = _pymoo_pieces()
        order, _, n_gen = run(self.corr_, self.party_sizes_, lambda v: np.abs(v - target),
                              self.split_brkga, self._seed())  # min |Icor - target|
        cuts = np.concatenate([[0], np.cumsum(self.party_sizes_)])
        parts = [np.sort(order[cuts[k]:cuts[k + 1]]) for k in range(self.n_parties)]
        self.best_icor_ = self.icor_of(parts)
        self.best_beta_ = self.beta_of(parts)
        self.n_gen_ = n_gen
        return parts

    def split(self, *Xs: np.ndarray, beta: float = 0.5,
              indices: Sequence[np.ndarray] | None = None) -> list[list[np.ndarray]]:
        """Split each matrix of ``Xs`` with the same indices for ``beta``. Every matrix must
        have the fitted number of columns (the indices cover exactly those)."""
        self._check_fitted()
        d = self.corr_.shape[0]
        for k, X in enumerate(Xs):
            shape = np.shape(X)
            if len(shape) != 2 or shape[1] != d:
                raise ValueError(f"Xs[{k}] must have the {d} columns the splitter was fitted on; "
                                 f"got shape {shape}")
        if indices is None:
            indices = self.split_indices(beta)
        return super().split(*Xs, indices=indices)

    def icor_of(self, indices: Sequence[np.ndarray]) -> float:
        """Icor of any split of the fitted columns (parties in the given order)."""
        self._check_fitted()
        order = np.concatenate([np.asarray(ix, dtype=int) for ix in indices])
        if np.sort(order).tolist() != list(range(self.corr_.shape[0])):
            raise ValueError("indices must partition the fitted columns exactly once each")
        sub = self.corr_[np.ix_(order, order)]
        return icor(sub, [len(ix) for ix in indices])

    def beta_of(self, indices: Sequence[np.ndarray]) -> float:
        """beta_hat = clip((Icor - Icor_min) / (Icor_max - Icor_min), 0, 1) of a split."""
        self._check_fitted()
        value = self.icor_of(indices)
        return float(np.clip((value - self.icor_min_) / (self.icor_max_ - self.icor_min_), 0, 1))
