"""Claims of "What Makes a Good Prune?": L1 pruning maximises cosine similarity (theorem),
kurtosis predicts prunability (synthetic distributions), and the cosine/kurtosis recipe on
trained MLPs (digits), each against random pruning or the untrained network."""

from __future__ import annotations

import copy

import numpy as np

from iclr24.claims import Estimate, Measurement, Scale, claim, sizes

# the spec's numbers (numpy, 200,000 draws): fraction prunable at CS >= 0.95
SPEC_FRACTIONS = {"uniform": 0.46, "gaussian": 0.55, "laplace": 0.67, "t3": 0.69}


def _draws(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    return {"uniform": rng.uniform(-1, 1, n), "gaussian": rng.normal(size=n),
            "laplace": rng.laplace(size=n), "t3": rng.standard_t(3, n)}


def _random_cs(theta: np.ndarray, amounts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """CS of random global pruning at each amount for one draw: a uniformly random order of the
    entries, pruning its first round(p n) (each prefix is a uniform random subset of its size;
    the subsets of one draw are nested, as random pruning with one fixed random score is)."""
    from .cosine import prune_count

    sq = rng.permutation(np.asarray(theta, dtype=np.float64) ** 2)
    cum = np.concatenate([[0.0], np.cumsum(sq)])
    k = np.array([prune_count(p, theta.size) for p in amounts])
    cs = np.sqrt(np.clip(1.0 - cum[k] / cum[-1], 0.0, 1.0))
    cs[k == theta.size] = 0.0
    return cs


@claim(
    rule="max_violation <= 1e-9 and min_interior_margin > 0",
    paper="Theorem: for any pruning amount, global L1 (magnitude) pruning maximises the cosine "
          "similarity between the parent's and the pruned network's parameter vectors; other "
          "rules (e.g. random pruning) give a smaller or equal CS.",
    against=("random global pruning (5 draws per amount) of the same parameter vectors and "
             "trained MLP"),
    resources={"cpus": 1},
)
def l1_maximises_cosine(scale: Scale, seed: int) -> Measurement:
    """CS of L1 vs random global pruning (5 draws) on the 101-point grid, for four random
    parameter vectors and a trained MLP (the MLP pruned with torch's real ``global_unstructured``
    and our seeded random masks, on a 0.1 grid). ``max_violation`` = max over vectors, draws and
    amounts of CS_random - CS_L1 (must be <= 0 up to rounding); ``min_interior_margin`` = min
    over vectors and 0 < p < 1 of CS_L1 - mean CS_random (must be > 0: strict inequality)."""
    from iclr24.kits.small_classifiers import MLPTrainer, load_digits_split
    from iclr24.kits.threads import torch_threads

    from .cosine import DEFAULT_AMOUNTS, cosine_prune_curve, cosine_similarity, flatten_params
    from .pruning import global_magnitude_prune, random_global_prune

    rng = np.random.default_rng(seed)
    n = sizes(scale, smoke=5_000, small=100_000)
    amounts = DEFAULT_AMOUNTS
    interior = (amounts > 0) & (amounts < 1)
    rows, violation, margin = [], -np.inf, np.inf
    for name, theta in _draws(rng, n).items():
        l1 = cosine_prune_curve(theta, amounts)
        rand = np.stack([_random_cs(theta, amounts, rng) for _ in range(5)])
        violation = max(violation, float((rand - l1).max()))
        m = float((l1 - rand.mean(0))[interior].min())
        margin = min(margin, m)
        rows.append({"vector": name, "n": n, "min_margin": m,
                     "cs_l1_at_0.5": float(l1[50]), "cs_random_at_0.5": float(rand[:, 50].mean())})
    data = load_digits_split((0.5, 0.5), ("train", "test"), seed=seed)
    with torch_threads(1):
        parent = MLPTrainer(epochs=sizes(scale, smoke=30, small=100), num_classes=10)(
            *data.part("train"), rng=rng).model
        theta0 = flatten_params(parent).double().numpy()
        grid = np.round(np.linspace(0.1, 0.9, 9), 2)
        mlp_l1, mlp_rand = [], []
        for p in grid:
            pruned = global_magnitude_prune(copy.deepcopy(parent), float(p))
            mlp_l1.append(cosine_similarity(theta0, flatten_params(pruned).double().numpy()))
            draws = []
            for _ in range(5):
                r = random_global_prune(copy.deepcopy(parent), float(p), rng)
                draws.append(cosine_similarity(theta0, flatten_params(r).double().numpy()))
            mlp_rand.append(draws)
    mlp_l1, mlp_rand = np.array(mlp_l1), np.array(mlp_rand)
    violation = max(violation, float((mlp_rand - mlp_l1[:, None]).max()))
    m = float((mlp_l1 - mlp_rand.mean(1)).min())
    margin = min(margin, m)
    rows.append({"vector": "trained MLP (torch pruning)", "n": int(theta0.size), "min_margin": m,
                 "cs_l1_at_0.5": float(mlp_l1[4]), "cs_random_at_0.5": float(mlp_rand[4].mean())})
    analytic = cosine_prune_curve(theta0, grid)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5, 3.5))
    ax = fig.add_subplot()
    ax.plot(grid, mlp_l1, "o-", label="L1 (global_unstructured)")
    ax.plot(grid, analytic, "k:", label="L1 analytic curve")
    ax.plot(grid, mlp_rand.mean(1), "s-", label="random (mean of 5)")
    ax.set_xlabel("prune amount p")
    ax.set_ylabel("cosine similarity to parent")
    ax.legend(fontsize=8)
    return Measurement(
        metrics={"max_violation": violation, "min_interior_margin": margin,
                 "mlp_analytic_vs_torch_max_abs": float(np.abs(analytic - mlp_l1).max())},
        figure=fig, tables={"vectors": rows},
        notes="Random pruning drawn 5 times per amount; the MLP is the kit's 64->128->10 on "
              "digits, pruned over all weights and biases.")


@claim(
    rule="frac_uniform < frac_gaussian and frac_gaussian < frac_laplace and "
         "frac_laplace < frac_t3 and max_dev_from_spec <= 0.02",
    paper="Higher kurtosis of the parameter distribution => more of it can be pruned at equal "
          "cosine similarity (Gaussian kurtosis 3, PyTorch's uniform-type init 1.8); the spec's "
          "numpy check (200,000 draws): fraction prunable before CS < 0.95 is 0.46 (uniform), "
          "0.55 (Gaussian), 0.67 (Laplace), 0.69 (Student-t, nu = 3).",
    paper_numbers={"frac_uniform": 0.46, "frac_gaussian": 0.55, "frac_laplace": 0.67,
                   "frac_t3": 0.69},
    against="the spec's numpy reference fractions (0.46/0.55/0.67/0.69); no other pruning rule",
    resources={"cpus": 1},
)
def kurtosis_prunability(scale: Scale, seed: int) -> Measurement:
    """200,000 draws of each distribution (both scales: one sort each); the fraction L1 pruning
    can remove before CS < 0.95, the utopia amount p*, and the Pearson kurtosis. The ordering
    must follow kurtosis and each fraction lie within 0.02 of the spec's number. Student-t with
    nu = 5 (kurtosis 9) is reported as the caveat: kurtosis is not a perfect monotone predictor."""
    from .cosine import DEFAULT_AMOUNTS, cosine_prune_curve, prunable_fraction, utopia_prune_amount
    from .kurtosis import pearson_kurtosis

    rng = np.random.default_rng(seed)
    n = 200_000
    vecs = _draws(rng, n)
    vecs["t5"] = rng.standard_t(5, n)
    metrics, rows = {}, []
    for name, v in vecs.items():
        frac = prunable_fraction(v, 0.95)
        p_star = utopia_prune_amount(DEFAULT_AMOUNTS, cosine_prune_curve(v))
        kurt = pearson_kurtosis(v)
        metrics[f"frac_{name}"] = frac
        metrics[f"utopia_{name}"] = p_star
        metrics[f"kurtosis_{name}"] = kurt
        rows.append({"distribution": name, "pearson_kurtosis": kurt, "frac_at_cs_0.95": frac,
                     "utopia_p": p_star})
    metrics["max_dev_from_spec"] = max(abs(metrics[f"frac_{k}"] - v)
                                       for k, v in SPEC_FRACTIONS.items())
    return Measurement(metrics=metrics, tables={"distributions": rows},
                       notes="Student-t nu=5 has kurtosis ~9 but a smaller prunable fraction "
                             "than Laplace (kurtosis 6): kurtosis orders the four families of "
                             "the claim, it is not a law.")


def _spearman(a, b) -> float:
    from scipy.stats import spearmanr

    r = spearmanr(a, b).statistic
    return float(r) if np.isfinite(r) else 0.0


@claim(
    rule={"smoke": "drop_at_safe < 0.02 and spearman_cs_acc >= 0.8",
          "small": "drop_at_safe < 0.02 and spearman_cs_acc >= 0.8"},
    paper="Recipe: prune globally by L1 at p_safe = p* x m(kk) (utopia point of the CS curve "
          "scaled by the kurtosis-of-kurtoses modifier), then fine-tune one epoch; accuracy is "
          "kept (the spec: within ~2 points of the unpruned model). CS to the parent tracks "
          "post-pruning performance across methods and amounts. Exact per-model percentages "
          "not retrieved.",
    against=("the unpruned parent's test accuracy; random pruning and the pruned untrained "
             "network at p_safe reported, not judged"),
    resources={"cpus": 1},
)
def trained_mlp_recipe(scale: Scale, seed: int, progress=None) -> Measurement:
    """Digits MLPs 64->256->256->10 (Adam, 60 epochs; 40 at smoke): plain, weight decay 1e-3,
    L1 penalty 1e-4 (smoke: plain only; small: all three x 3 seeds). For each: kk, p*, p_safe;
    L1 and random global pruning at p in {0.5, ..., 0.95} (+ one SGD epoch, lr 1e-3, momentum
    0.9, batch 256, masks kept), and L1 at p_safe. Decides on test accuracy:
    ``drop_at_safe`` = parent - fine-tuned accuracy at p_safe (the worst variant per seed;
    an Estimate over seeds at small) must be < 2 points, and ``spearman_cs_acc`` (Spearman of CS
    vs fine-tuned accuracy over the L1 and random points pooled, the worst variant per seed)
    >= 0.8. Reported beside: the same recipe with random pruning (``drop_at_safe_random``),
    pruning the untrained network at p_safe (``drop_at_safe_init``), the largest amount at
    <= 1 point loss per variant and its kurtosis."""
    import torch

    from iclr24.kits.small_classifiers import load_digits_split
    from iclr24.kits.threads import torch_threads

    from .cosine import DEFAULT_AMOUNTS, cosine_prune_curve, utopia_prune_amount
    from .kurtosis import kurtosis_modifier, kurtosis_of_kurtoses, tensor_kurtoses
    from .pruning import evaluate_classifier, prune_and_finetune
    from .training import ParentConfig, train_parent

    progress = progress or (lambda *a, **k: None)
    seeds = sizes(scale, smoke=[seed], small=[seed, seed + 1, seed + 2])
    epochs = sizes(scale, smoke=40, small=60)
    variants = {"plain": ParentConfig(epochs=epochs),
                "weight_decay": ParentConfig(epochs=epochs, weight_decay=1e-3),
                "l1": ParentConfig(epochs=epochs, l1=1e-4)}
    if scale == Scale.SMOKE:
        variants = {"plain": variants["plain"]}
    grid = sizes(scale, smoke=[0.5, 0.7, 0.8, 0.9, 0.95], small=[0.5, 0.6, 0.7, 0.8, 0.9, 0.95])
    rows, per_seed = [], {k: [] for k in ("drop", "drop_random", "drop_init", "spearman")}
    tolerated: dict[str, list[float]] = {k: [] for k in variants}
    kurt: dict[str, list[float]] = {k: [] for k in variants}
    steps, step = len(seeds) * len(variants), 0
    with torch_threads(1):
        for s in seeds:
            data = load_digits_split((0.6, 0.4), ("train", "test"), scaling="standard", seed=s)
            Xtr, ytr = (torch.as_tensor(a) for a in data.part("train"))
            Xte, yte = (torch.as_tensor(a) for a in data.part("test"))
            worst = {k: -np.inf for k in ("drop", "drop_random", "drop_init")}
            worst_rho = np.inf
            for name, cfg in variants.items():
                progress(step / steps, f"seed {s}: {name}")
                step += 1
                parent = train_parent(Xtr, ytr, 10, cfg, seed=s)
                acc_parent = evaluate_classifier(parent, Xte, yte)[0]
                kk = kurtosis_of_kurtoses(parent)
                p_star = utopia_prune_amount(DEFAULT_AMOUNTS, cosine_prune_curve(parent))
                p_safe = float(np.clip(p_star * kurtosis_modifier(kk), 0.0, p_star))
                rng = np.random.default_rng(s)

                def run(model, p, method, rng=rng, data=(Xtr, ytr, Xte, yte)):
                    return prune_and_finetune(copy.deepcopy(model), p, *data, method=method,
                                              rng=rng)

                pts = [run(parent, p, m) for m in ("l1", "random") for p in grid]
                rho = _spearman([r.cosine for r in pts], [r.acc_finetuned for r in pts])
                safe = run(parent, p_safe, "l1")
                safe_random = run(parent, p_safe, "random")
                init = train_parent(Xtr, ytr, 10, ParentConfig(hidden=cfg.hidden, epochs=0),
                                    seed=s)
                safe_init = run(init, p_safe, "l1")
                drops = {"drop": acc_parent - safe.acc_finetuned,
                         "drop_random": acc_parent - safe_random.acc_finetuned,
                         # untrained parent pruned at p_safe, then one epoch, vs trained parent
                         "drop_init": acc_parent - safe_init.acc_finetuned}
                for k, v in drops.items():
                    worst[k] = max(worst[k], v)
                worst_rho = min(worst_rho, rho)
                ok = [r.amount for r in pts if r.method == "l1"
                      and acc_parent - r.acc_finetuned <= 0.01]
                tolerated[name].append(max(ok) if ok else 0.0)
                kurt[name].append(float(np.mean(tensor_kurtoses(parent))))
                rows.append({"seed": s, "variant": name, "acc_parent": acc_parent, "kk": kk,
                             "p_star": p_star, "p_safe": p_safe,
                             "acc_safe_l1": safe.acc_finetuned,
                             "acc_safe_random": safe_random.acc_finetuned,
                             "acc_safe_init": safe_init.acc_finetuned, "spearman": rho,
                             **{f"acc_l1_{r.amount:g}": r.acc_finetuned
                                for r in pts if r.method == "l1"},
                             **{f"acc_random_{r.amount:g}": r.acc_finetuned
                                for r in pts if r.method == "random"}})
            for k in ("drop", "drop_random", "drop_init"):
                per_seed[k].append(worst[k])
            per_seed["spearman"].append(worst_rho)

    def agg(xs):
        return Estimate.mean_of(xs) if len(xs) > 1 else float(xs[0])

    metrics = {"drop_at_safe": agg(per_seed["drop"]),
               "spearman_cs_acc": agg(per_seed["spearman"]),
               "drop_at_safe_random": agg(per_seed["drop_random"]),
               "drop_at_safe_init": agg(per_seed["drop_init"]),
               "p_safe_mean": float(np.mean([r["p_safe"] for r in rows])),
               "acc_parent_mean": float(np.mean([r["acc_parent"] for r in rows]))}
    for name in variants:
        metrics[f"tolerated_{name}"] = float(np.mean(tolerated[name]))
        metrics[f"mean_tensor_kurtosis_{name}"] = float(np.mean(kurt[name]))
    most_kurtotic = max(variants, key=lambda k: metrics[f"mean_tensor_kurtosis_{k}"])
    metrics["most_kurtotic_tolerates_most"] = float(
        metrics[f"tolerated_{most_kurtotic}"] == max(metrics[f"tolerated_{k}"] for k in variants))
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5, 3.5))
    ax = fig.add_subplot()
    for r in rows:
        ax.plot(grid, [r[f"acc_l1_{p:g}"] for p in grid], "o-", ms=3, lw=1,
                label=f"L1 {r['variant']} s{r['seed']}")
        ax.plot(grid, [r[f"acc_random_{p:g}"] for p in grid], "x:", ms=3, lw=1)
    ax.set_xlabel("prune amount p (after one fine-tuning epoch)")
    ax.set_ylabel("test accuracy")
    ax.legend(fontsize=6)
    return Measurement(metrics=metrics, figure=fig, tables={"models": rows},
                       notes="Dotted: random global pruning at the same amounts. All weights "
                             "and biases are pruned and measured (the official demo's choice).")
