"""VertiBench: Advancing Feature Distribution Diversity in Vertical Federated Learning
Benchmarks (Wu, Li, He; ICLR 2024, arXiv 2307.02040; official code Xtra-Computing/VertiBench).

Vertical federated learning (VFL) trains on data whose *columns* are split across parties.
Real VFL datasets are scarce, so benchmarks cut a centralised dataset's columns arbitrarily.
VertiBench names the two factors that drive VFL performance and gives a metric and a split
generator for each:

* party importance -- Shapley importance per party (:func:`party_importance`); its imbalance is
  summarised by a Dirichlet concentration :func:`estimate_alpha`; :class:`ImportanceSplitter`
  draws splits whose importance shares follow Dir(alpha) (small alpha: one dominant party);
* inter-party correlation -- :func:`pcor` of correlation blocks and :func:`icor` (mean
  inter-party minus inner-party Pcor); :class:`CorrelationSplitter` searches feature
  permutations with pymoo's BRKGA for the split whose Icor sits at
  beta * Icor_max + (1 - beta) * Icor_min (larger beta: MORE cross-party correlation);
  :func:`estimate_beta` places any split on that scale.

VFL baselines with a scikit-learn interface over a list of party matrices: :class:`SplitNN`
(joint training through the cut layer, PyTorch) and :class:`LocalEnsemble` (local models on
local columns, stacked or averaged).

Usage (a few seconds on one core)::

    from sklearn.datasets import load_breast_cancer
    from iclr24.papers.vertibench import (BRKGAConfig, CorrelationSplitter, ImportanceSplitter,
                                          SplitNN)
    X, y = load_breast_cancer(return_X_y=True)
    X_train, X_test, y_train, y_test = X[:400], X[400:], y[:400], y[400:]
    parts = ImportanceSplitter(n_parties=4, alpha=0.5, rng=0).split_indices(X.shape[1])
    Xs_train, Xs_test = ImportanceSplitter(4, 0.5, rng=0).split(X_train, X_test)
    # reduced GA: the default is the paper's (population 1000 x 100 generations), which
    # takes minutes even at 30 features; use it for a benchmark, not a first try
    quick = BRKGAConfig(n_elites=20, n_offsprings=60, n_mutants=10, bias=0.7, n_gen=20)
    cs = CorrelationSplitter(3, rng=0, fit_brkga=quick, split_brkga=quick).fit(X_train)
    Xs_train, Xs_test = cs.split(X_train, X_test, beta=0.8); print(cs.best_beta_)
    print(SplitNN(epochs=20, seed=0).fit(Xs_train, y_train).score(Xs_test, y_test))

Module map: ``splitters.py`` (Algorithms 1-2), ``party_importance.py`` (Shapley importance,
alpha_hat), ``party_correlation.py`` (Pcor, Icor, beta_hat), ``vfl_models.py`` (baselines),
``claims.py`` (reproductions).

Scaled down / different from the paper: scikit-learn's bundled data (breast cancer, digits)
and ``make_classification`` instead of covtype, msd, gisette, realsim, epsilon, letter, radar
and the real VFL sets (NUS-WIDE, Vehicle, Satellite); the benchmarked algorithms (GAL, FedTree,
FedOnce, C-VFL) are represented by SplitNN and a local ensemble only; no communication-cost or
party-scalability study; BRKGA keeps the paper's settings at ``small`` and is reduced at
``smoke``. Splits differ from the official code for the same integer seed (explicit numpy
Generators instead of the global RNG); see each module's docstring for the details.
"""

from .party_correlation import (
    correlation_matrix,
    equal_party_sizes,
    estimate_beta,
    icor,
    icor_for_permutations,
    pcor,
    pcor_matrix,
    split_icor,
)
from .party_importance import (
    cache_shap_kernels,
    dirichlet_share_variance,
    estimate_alpha,
    feature_shapley,
    importance_shares,
    party_importance,
    party_importance_from_shapley,
)
from .splitters import (
    PAPER_FIT_BRKGA,
    PAPER_SPLIT_BRKGA,
    BRKGAConfig,
    CorrelationSplitter,
    ImportanceSplitter,
    RandomEqualSplitter,
    apply_split,
    dirichlet_stick_breaking,
)
from .vfl_models import LocalEnsemble, SplitNN, SplitNNNetwork

__all__ = [
    "PAPER_FIT_BRKGA",
    "PAPER_SPLIT_BRKGA",
    "BRKGAConfig",
    "CorrelationSplitter",
    "ImportanceSplitter",
    "LocalEnsemble",
    "RandomEqualSplitter",
    "SplitNN",
    "SplitNNNetwork",
    "apply_split",
    "cache_shap_kernels",
    "correlation_matrix",
    "dirichlet_share_variance",
    "dirichlet_stick_breaking",
    "equal_party_sizes",
    "estimate_alpha",
    "estimate_beta",
    "feature_shapley",
    "icor",
    "icor_for_permutations",
    "importance_shares",
    "party_importance",
    "party_importance_from_shapley",
    "pcor",
    "pcor_matrix",
    "split_icor",
]
