"""Side by side: iclr24's VertiBench against the official ``vertibench`` 0.1.2 on the same data.

The official package pins pymoo below ours (< 0.6.1.6) and reseeds numpy's global RNG, so it
lives in a venv of its own; this script runs our side here and the official side as a
subprocess of that venv's Python (the same file in ``--worker`` mode, which imports only the
official package), on the same arrays. Set the venv up once::

    python3.11 -m venv /work/venvs/vertibench-official
    /work/venvs/vertibench-official/bin/python -m pip install torch==2.13.0   # pin first
    /work/venvs/vertibench-official/bin/python -m pip install vertibench==0.1.2

then run (from the repository root)::

    .venv/bin/python benchmarks/vertibench_vs_official.py [--official-python PATH] [--paper-ga]

Datasets: breast_cancer (569 x 30), wine (178 x 13), make_classification (1000 x 24). For each
it prints

* correlation: max |R_ours - R_official| of the Spearman matrices, max |Icor| difference on 5
  random equal splits (same splits on both sides);
* correlation split (K = 3): the fitted Icor extremes, |beta_hat - beta| at beta = 0, 0.5, 1
  (each side's beta_hat on its own fitted scale, and ours re-scored on the official scale),
  CPU seconds of fit + 3 splits and the ratio official / ours;
* importance split (K = 4, alpha = 0.1, 1, 10): std of party importance shares over 200 draws
  per side with fixed feature importances (|standardised logistic-regression coefficient|),
  the mean std per side and the two-sample KS p-value.

BRKGA: fit 20/60/10 x 20 generations by default (``--paper-ga``: the paper's 200/700/100 x 100,
slow on the official side), split 20/70/10 <= 100 generations, ftol 1e-4 over 10 (the paper's).
Nothing here is a claim; it is a consistency and speed check of the implementation.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DEFAULT_OFFICIAL = "/work/venvs/vertibench-official/bin/python"
BETAS = (0.0, 0.5, 1.0)
ALPHAS = (0.1, 1.0, 10.0)
K_CORR, K_IMP, N_IMP_DRAWS, N_ICOR_SPLITS = 3, 4, 200, 5


def _datasets() -> dict[str, np.ndarray]:
    from sklearn.datasets import load_breast_cancer, load_wine, make_classification

    syn, _ = make_classification(n_samples=1000, n_features=24, n_informative=8, n_redundant=8,
                                 random_state=0)
    return {"breast_cancer": load_breast_cancer(return_X_y=True)[0],
            "wine": load_wine(return_X_y=True)[0], "synthetic_24": syn}


def _random_equal_splits(d: int, k: int, n: int, seed: int) -> list[list[list[int]]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        order = rng.permutation(d)
        out.append([sorted(part.tolist()) for part in np.array_split(order, k)])
    return out


# ------------------------------------------------------------------------ official side
def _worker(request_path: str, result_path: str) -> None:
    """Runs inside the official venv: only numpy and vertibench are imported."""
    import contextlib
    import io

    from vertibench.Evaluator import CorrelationEvaluator
    from vertibench.Splitter import CorrelationSplitter, ImportanceSplitter

    req = json.loads(Path(request_path).read_text())
    arrays = np.load(req["arrays"])
    out: dict = {}
    for name in req["datasets"]:
        X = arrays[name]
        res: dict = {}
        ev = CorrelationEvaluator()
        corr = np.asarray(ev.corr_func(X))
        res["corr_path"] = str(Path(result_path).with_suffix(f".{name}.npy"))
        np.save(res["corr_path"], corr)
        icors = []
        for split in req["icor_splits"][name]:
            Xs = [X[:, idx] for idx in split]
            icors.append(float(CorrelationEvaluator().fit_evaluate(Xs)))
        res["icor"] = icors
        t0 = time.process_time()
        splitter = CorrelationSplitter(K_CORR, seed=req["seed"])
        with contextlib.redirect_stdout(io.StringIO()):  # fit_min_max prints min/max
            splitter.fit(X, **req["fit_ga"])
        splits = {}
        for beta in BETAS:
            parts = splitter.split_indices(X, beta=beta, **req["split_ga"])
            splits[str(beta)] = [np.asarray(p).tolist() for p in parts]
        res["corr_split_cpu_s"] = time.process_time() - t0
        res["icor_min"], res["icor_max"] = float(splitter.min_icor), float(splitter.max_icor)
        res["beta_hat"] = {}
        for beta, parts in splits.items():
            # evaluate() scores the fitted matrix in its own column order: fit a fresh evaluator
            # on the split, then place it on the splitter's fitted Icor scale
            ev = CorrelationEvaluator()
            ev.fit([X[:, p] for p in parts])
            ev.min_icor, ev.max_icor = splitter.min_icor, splitter.max_icor
            res["beta_hat"][beta] = float(ev.evaluate_beta())
        res["corr_splits"] = splits
        imp = {}
        for alpha in ALPHAS:
            sp = ImportanceSplitter(K_IMP, weights=alpha, seed=req["seed"])
            imp[str(alpha)] = [[np.asarray(p).tolist() for p in sp.split_indices(X)]
                               for _ in range(N_IMP_DRAWS)]
        res["importance_splits"] = imp
        out[name] = res
    Path(result_path).write_text(json.dumps(out))


# ------------------------------------------------------------------------------ our side
def _ours(X: np.ndarray, icor_splits, fit_ga, split_ga, seed: int) -> dict:
    from iclr24.papers.vertibench import (
        BRKGAConfig,
        CorrelationSplitter,
        ImportanceSplitter,
        correlation_matrix,
        icor,
    )

    res: dict = {"corr": correlation_matrix(X)}
    res["icor"] = []
    for split in icor_splits:
        order = np.concatenate(split)
        res["icor"].append(icor(res["corr"][np.ix_(order, order)], [len(p) for p in split]))
    t0 = time.process_time()
    cs = CorrelationSplitter(
        K_CORR, rng=seed,
        fit_brkga=BRKGAConfig(fit_ga["n_elites"], fit_ga["n_offsprings"], fit_ga["n_mutants"],
                              fit_ga["bias"], fit_ga["n_gen"]),
        split_brkga=BRKGAConfig(split_ga["n_elites"], split_ga["n_offsprings"],
                                split_ga["n_mutants"], split_ga["bias"], split_ga["n_gen"],
                                ftol=split_ga["term_tol"], period=split_ga["term_period"]),
    ).fit(X)
    splits = {str(b): cs.split_indices(b) for b in BETAS}
    res["corr_split_cpu_s"] = time.process_time() - t0
    res["icor_min"], res["icor_max"] = cs.icor_min_, cs.icor_max_
    res["beta_hat"] = {b: cs.beta_of(p) for b, p in splits.items()}
    res["corr_splits"] = splits
    res["importance_splits"] = {
        str(a): [ImportanceSplitter(K_IMP, a, rng=seed * 1000 + i).split_indices(X.shape[1])
                 for i in range(N_IMP_DRAWS)] for a in ALPHAS}
    return res


def _share_std(importance: np.ndarray, splits) -> np.ndarray:
    out = []
    for parts in splits:
        party = np.array([importance[np.asarray(p, dtype=int)].sum() for p in parts])
        out.append(np.std(party / party.sum()))
    return np.asarray(out)


def _feature_importance(X: np.ndarray, name: str) -> np.ndarray:
    from sklearn.datasets import load_breast_cancer, load_wine, make_classification
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    y = {"breast_cancer": lambda: load_breast_cancer(return_X_y=True)[1],
         "wine": lambda: load_wine(return_X_y=True)[1],
         "synthetic_24": lambda: make_classification(n_samples=1000, n_features=24,
                                                     n_informative=8, n_redundant=8,
                                                     random_state=0)[1]}[name]()
    Z = StandardScaler().fit_transform(X)
    coef = LogisticRegression(max_iter=5000).fit(Z, y).coef_
    return np.abs(coef).mean(axis=0)


def _official_beta(official: dict, icor_value: float) -> float:
    lo, hi = official["icor_min"], official["icor_max"]
    return float(np.clip((icor_value - lo) / (hi - lo), 0, 1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--official-python", default=DEFAULT_OFFICIAL)
    parser.add_argument("--paper-ga", action="store_true",
                        help="fit with the paper's BRKGA 200/700/100 x 100 (slow)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--worker", nargs=2, metavar=("REQUEST", "RESULT"), help=argparse.SUPPRESS)
    ns = parser.parse_args(argv)
    if ns.worker:
        _worker(*ns.worker)
        return 0
    if not Path(ns.official_python).exists():
        parser.error(f"{ns.official_python} not found; create the official venv (see the "
                     "module docstring)")
    from scipy.stats import ks_2samp

    from iclr24.papers.vertibench import icor as ours_icor

    fit_ga = {"n_elites": 200, "n_offsprings": 700, "n_mutants": 100, "n_gen": 100, "bias": 0.7} \
        if ns.paper_ga else {"n_elites": 20, "n_offsprings": 60, "n_mutants": 10, "n_gen": 20,
                             "bias": 0.7}
    split_ga = {"n_elites": 20, "n_offsprings": 70, "n_mutants": 10, "n_gen": 100, "bias": 0.7,
                "term_tol": 1e-4, "term_period": 10}
    data = _datasets()
    icor_splits = {n: _random_equal_splits(X.shape[1], K_CORR, N_ICOR_SPLITS, ns.seed)
                   for n, X in data.items()}
    with tempfile.TemporaryDirectory() as tmp:
        arrays = os.path.join(tmp, "data.npz")
        np.savez(arrays, **data)
        request = os.path.join(tmp, "request.json")
        Path(request).write_text(json.dumps({
            "arrays": arrays, "datasets": list(data), "icor_splits": icor_splits,
            "fit_ga": fit_ga, "split_ga": split_ga, "seed": ns.seed}))
        result = os.path.join(tmp, "result.json")
        t0 = time.perf_counter()
        subprocess.run([ns.official_python, os.path.abspath(__file__), "--worker", request,
                        result], check=True, cwd=tmp,
                       stdout=subprocess.DEVNULL)  # the package prints per evaluator
        official_wall = time.perf_counter() - t0
        off = json.loads(Path(result).read_text())
        for name in data:
            off[name]["corr"] = np.load(off[name]["corr_path"])
    print(f"official side: {official_wall:.1f} s wall (subprocess, imports included)")
    for name, X in data.items():
        ours = _ours(X, icor_splits[name], fit_ga, split_ga, ns.seed)
        o = off[name]
        print(f"\n== {name} {X.shape}")
        print(f"correlation: max |R diff| = {np.abs(ours['corr'] - o['corr']).max():.2e}; "
              f"max |Icor diff| over {N_ICOR_SPLITS} splits = "
              f"{max(abs(a - b) for a, b in zip(ours['icor'], o['icor'])):.2e}")
        print(f"Icor extremes: ours [{ours['icor_min']:.4f}, {ours['icor_max']:.4f}], official "
              f"[{o['icor_min']:.4f}, {o['icor_max']:.4f}]")
        for b in map(str, BETAS):
            parts = ours["corr_splits"][b]
            order = np.concatenate(parts)
            v = ours_icor(o["corr"][np.ix_(order, order)], [len(p) for p in parts])
            print(f"  beta={b}: beta_hat ours {ours['beta_hat'][b]:.3f} (on the official scale "
                  f"{_official_beta(o, v):.3f}), official {o['beta_hat'][b]:.3f}")
        ratio = o["corr_split_cpu_s"] / max(ours["corr_split_cpu_s"], 1e-9)
        print(f"  CPU s fit + 3 splits: ours {ours['corr_split_cpu_s']:.2f}, official "
              f"{o['corr_split_cpu_s']:.2f} (official / ours = {ratio:.1f}x)")
        imp = _feature_importance(X, name)
        for a in map(str, ALPHAS):
            s_ours = _share_std(imp, ours["importance_splits"][a])
            s_off = _share_std(imp, o["importance_splits"][a])
            p = ks_2samp(s_ours, s_off).pvalue
            print(f"  importance alpha={a}: share std ours {s_ours.mean():.4f}, official "
                  f"{s_off.mean():.4f}, |diff| {abs(s_ours.mean() - s_off.mean()):.4f}, "
                  f"KS p = {p:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
