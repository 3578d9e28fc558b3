"""Structure learners behind one call: ``run_learner(name, X, **kw) -> (d, d) adjacency``.

- "dagma_ls": DAGMA linear with the square loss (dagma package; the LS score that NOTEARS and
  GOLEM-EV also minimise), lambda1 = 0.02, edges |w| > 0.3 (NOTEARS' threshold);
- "dagma_mlp": DAGMA-nonlinear (dagma package): one MLP per variable (hidden width 10,
  sigmoid), its log-MSE score (d/2 log of the mean squared residual, a square-based loss),
  lambda1 = 0.02, lambda2 = 0.005, T = 4, edges |W| > 0.3 - dagma's defaults except the
  iteration counts and learning rate, which the caller passes (``warm_iter``, ``max_iter``,
  ``lr``); ``seed`` seeds torch's initialisation of the hidden layers;
- "pc": PC with Fisher-z tests (causal-learn), alpha = 0.01, a scale-invariant control; its
  CPDAG is returned with an undirected edge as both directions;
- "golem_ev" / "golem_nv": the compact GOLEM of ``golem`` (likelihood score, equal or
  non-equal noise variances, soft DAG penalty; the GOLEM paper's lambdas, threshold 0.3, NV
  started from the EV solution). gcastle, which ships GOLEM, does not install with our torch.
"""

from __future__ import annotations

import numpy as np

from iclr24.kits.threads import single_threaded

__all__ = ["LEARNERS", "run_learner"]

LEARNERS = ("dagma_ls", "dagma_mlp", "pc", "golem_ev", "golem_nv")


def run_learner(name: str, X, **kw) -> np.ndarray:
    """Fit learner ``name`` on data X (n, d); returns a 0/1 adjacency (d, d), [i, j] = i -> j.
    Keyword arguments go to the learner (DAGMA's ``fit``: lambda1, w_threshold, warm_iter,
    max_iter, ...; "dagma_mlp": those of DAGMA-nonlinear's ``fit`` (lr, T, ...) plus ``seed``;
    PC: alpha; GOLEM: lambda_1, lambda_2, w_threshold)."""
    if name not in LEARNERS:
        raise ValueError(f"name must be one of {LEARNERS}, got {name!r}")
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[0] < 3 or not np.all(np.isfinite(X)):
        raise ValueError(f"X must be a finite (n, d) array with n >= 3, got shape {X.shape}")
    with single_threaded():            # BLAS threads on small matrices only spin on 2 cores
        return _run(name, X, **kw)


def _run(name, X, **kw):
    if name == "dagma_ls":
        import contextlib
        import os

        from dagma.linear import DagmaLinear

        opts = {"lambda1": 0.02, "w_threshold": 0.3, **kw}
        with open(os.devnull, "w") as sink, contextlib.redirect_stderr(sink):  # its tqdm bar
            W = DagmaLinear(loss_type="l2").fit(X, **opts)
        return (np.abs(W) > 0).astype(int)
    if name == "dagma_mlp":
        return _dagma_mlp(X, **kw)
    if name.startswith("golem"):
        from .golem import golem

        return (golem(X, equal_variances=name == "golem_ev", **kw) != 0).astype(int)
    from causallearn.search.ConstraintBased.PC import pc

    G = pc(X, kw.get("alpha", 0.01), "fisherz", show_progress=False).G.graph  # Fisher-z tests
    # causal-learn: G[j, i] = 1 and G[i, j] = -1 means i -> j; -1 both ways is undirected
    return ((G == -1) & (G.T != -1) | (G == -1) & (G.T == -1)).astype(int)


def _dagma_mlp(X, seed: int = 0, hidden: int = 10, **kw):
    import contextlib
    import os

    import torch
    from dagma.nonlinear import DagmaMLP, DagmaNonlinear

    dtype = torch.get_default_dtype()                  # DagmaMLP sets the default to double
    opts = {"lambda1": 0.02, "lambda2": 0.005, "w_threshold": 0.3, **kw}
    try:
        with torch.random.fork_rng(devices=[]), open(os.devnull, "w") as sink, \
                contextlib.redirect_stderr(sink):      # its tqdm bar
            torch.manual_seed(seed)
            model = DagmaNonlinear(DagmaMLP([X.shape[1], hidden, 1], dtype=torch.double),
                                   dtype=torch.double)
            W = model.fit(X, **opts)
    finally:
        torch.set_default_dtype(dtype)
    return (np.abs(W) > 0).astype(int)
