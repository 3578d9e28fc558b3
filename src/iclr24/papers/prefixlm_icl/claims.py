"""prefixLM vs causalLM in-context learning: exact LSA dynamics (Fig. 1), stationary points vs
n and x offset (Fig. 2), and trained softmax transformers (Sec. 5.2).

Every claim measures a null arm in the same run and its ``control`` requires that the null does
not pass the rule: context labels taken from another prompt (``lsa_convergence``, plus the
step-size condition of the theorem), a second batch of centred prompts in the place of the
offset ones (``stationary_vs_n``), a second prefix-mask model from another initialisation in
the place of the causal one (``trained_prefix_vs_causal``, plus the positive control that the
prefix model beats online GD, the causal mask's limit, and >= 3 seeds, so smoke never holds).
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np

from iclr24.claims import Estimate, Measurement, Scale, claim, seed_difference, seed_metric, sizes

from .icl_tasks import sample_icl_batch
from .lsa_dynamics import (
    lsa_icl_coefficients,
    lsa_icl_predict,
    stationary_point,
    stationary_weights,
)


def _figure():
    from matplotlib.figure import Figure

    return Figure


def _lsa_metrics(X, y, Xq, yq, n_layers: int, eta: float, method: str = "prefix",
                 baseline: str = "causal") -> tuple[dict, dict]:
    """Query MSE per layer of the ``method`` and ``baseline`` masks on one batch of prompts.

    Returns (metrics, curves). ``method``/``baseline`` exist so a test can pass the baseline as
    the method (the negative control)."""
    curves, per_prompt, gaps = {}, {}, {}
    scale = float(np.mean(yq**2))
    half = n_layers // 2
    for role, mode in (("prefix", method), ("causal", baseline)):
        a = lsa_icl_coefficients(X, y, n_layers, eta, mode)  # (B, L + 1, n)
        pred = np.einsum("bln,bnm->blm", a, X @ np.swapaxes(Xq, 1, 2))  # sum_i a_i x_i^T x_q
        err = np.mean((pred - yq[:, None, :]) ** 2, axis=2)  # (B, L + 1)
        curves[role] = err.mean(axis=0) / scale
        per_prompt[role] = err[:, -1]
        # distance of the predictor w^(l) = X^T a^(l) to the closed-form fixed point of *this* mode
        w_star = stationary_weights(X, y, mode)
        w = np.einsum("bln,bnd->bld", a[:, [half, n_layers]], X)
        gap = np.linalg.norm(w - w_star[:, None], axis=2) / np.linalg.norm(w_star, axis=1)[:, None]
        gaps[role] = float(np.max(gap[:, 1]))
        # per-layer contraction of the worst prompt between L/2 and L (< 1: linear convergence)
        gaps[role + "_rate"] = float(np.max((np.maximum(gap[:, 1], 1e-300)
                                             / np.maximum(gap[:, 0], 1e-300))
                                            ** (1.0 / (n_layers - half))))
        curves[role + "_stationary"] = float(
            np.mean((np.einsum("bd,bmd->bm", w_star, Xq) - yq) ** 2) / scale)
    ratio = Estimate.bootstrap((per_prompt["causal"], per_prompt["prefix"]),
                               lambda c, p: float(np.mean(c) / max(np.mean(p), 1e-300)),
                               paired=True, seed=0)
    metrics = {
        "ratio": ratio,
        "prefix_rel_mse": float(curves["prefix"][-1]),
        "causal_rel_mse": float(curves["causal"][-1]),
        "prefix_gap": gaps["prefix"],
        "causal_gap": gaps["causal"],
        "prefix_rate": gaps["prefix_rate"],
        "causal_rate": gaps["causal_rate"],
        "prefix_stationary_rel_mse": curves["prefix_stationary"],
        "causal_stationary_rel_mse": curves["causal_stationary"],
    }
    return metrics, curves


@claim(
    rule="ratio >= 1000 and prefix_rel_mse <= 1e-8 and prefix_gap <= 1e-3 and causal_gap <= 1e-3 "
         "and prefix_rate < 1 and causal_rate < 1",
    control="eta_lmax < 2 and null_prefix_rel_mse > 1e-8",
    paper="Fig. 1 / Thm. (multi-layer LSA, d = 16, 40 examples, eta = 0.04, noiseless): both "
          "masks converge geometrically in depth to their stationary points; prefixLM's query "
          "error goes to 0 (least squares), causalLM's plateaus at the online-GD error, orders "
          "of magnitude higher on the figure's log scale (values read off a plot, not given "
          "in the text).",
    paper_numbers={"prefix_rel_mse": 0.0},
    against=("the causal mask in the same exact LSA recursion on the same prompts; each mask's "
             "closed-form stationary point as reference"),
)
def lsa_convergence(scale: Scale, seed: int) -> Measurement:
    """Exact LSA recursion for L = 0..200 layers on prompts of the official theory script
    (d = 16, n = 40, 20 queries, x ~ U(-1, 1)^d, w ~ N(0, I), eta = 0.04). ``ratio``: causal /
    prefix query MSE at L = 200, bootstrap over prompts; ``*_gap``: max over prompts of
    ||w^(L) - w*|| / ||w*|| against the closed-form fixed point of that mask; ``*_rate``: the
    worst prompt's per-layer contraction of that gap between L/2 and L; ``*_rel_mse``:
    query MSE / E[y_q^2]. A second prefix run uses eta = 1 / lambda_max (reported only).

    Control (added in the repair, before running it): (i) ``eta_lmax`` = eta * max over prompts
    of lambda_max(X X^T) < 2, the theorem's step-size condition (it bounds the causal one too,
    since ||x_j||^2 <= lambda_max), without which convergence is not expected; (ii) the null
    arm, measured on the same prompts: the prefix recursion fed the in-context labels of
    *another* prompt (context and query no longer share w), ``null_prefix_rel_mse``, must not
    reach the rule's level 1e-8, i.e. an exact fit of the context alone does not pass."""
    batch = sizes(scale, smoke=16, small=64)
    n, m, d, n_layers, eta = 40, 20, 16, 200, 0.04
    b = sample_icl_batch(batch, n, m, d, x_dist="uniform", rng=seed)
    X, y, Xq, yq = b.x[:, :n], b.y[:, :n, 0], b.x[:, n:], b.y[:, n:, 0]
    metrics, curves = _lsa_metrics(X, y, Xq, yq, n_layers, eta)
    lam = float(np.max(np.linalg.eigvalsh(X @ np.swapaxes(X, 1, 2))[:, -1]))
    metrics["eta_lmax"] = eta * lam  # convergence needs 0 < eta < 2 / lambda_max(X X^T)
    y_other = np.roll(y, 1, axis=0)  # null arm: each prompt gets the next prompt's labels
    a_null = lsa_icl_coefficients(X, y_other, n_layers, eta, "prefix")[:, -1]
    pred_null = np.einsum("bn,bnm->bm", a_null, X @ np.swapaxes(Xq, 1, 2))
    metrics["null_prefix_rel_mse"] = float(np.mean((pred_null - yq) ** 2) / np.mean(yq**2))
    pred = lsa_icl_predict(X, y, Xq, n_layers, 1.0 / lam, "prefix")
    fast = np.mean((pred - yq[:, None]) ** 2, axis=(0, 2)) / np.mean(yq**2)
    metrics["prefix_rel_mse_eta_inv_lmax"] = float(fast[-1])
    layers = np.arange(n_layers + 1)
    Figure = _figure()
    fig = Figure(figsize=(6.0, 4.2))
    ax = fig.add_subplot(1, 1, 1)
    ax.semilogy(layers, curves["prefix"], label="prefixLM (eta = 0.04)")
    ax.semilogy(layers, curves["causal"], label="causalLM (eta = 0.04)")
    ax.semilogy(layers, fast, "--", label="prefixLM (eta = 1/lambda_max)")
    ax.axhline(curves["causal_stationary"], color="k", lw=0.8, ls=":",
               label="causal stationary point")
    ax.set_xlabel("number of LSA layers L")
    ax.set_ylabel("query MSE / E[y_q^2]")
    ax.set_title(f"Exact LSA dynamics, d = {d}, n = {n}, {batch} prompts")
    ax.legend()
    fig.tight_layout()
    rows = [{"layer": int(l), "prefix_rel_mse": float(curves["prefix"][l]),
             "causal_rel_mse": float(curves["causal"][l])} for l in (1, 5, 10, 25, 50, 100, 200)]
    return Measurement(metrics=metrics, figure=fig, tables={"query_mse_per_layer": rows},
                       notes="Noiseless linear regression; the recursion is the paper's exact "
                             "coefficient form (float64).")


def _rel_gap(c_hi, z_hi, c_lo, z_lo) -> float:
    """log10 of the relative query MSE (causal / zero predictor) of one set of prompts over
    another's."""
    return float(np.log10((np.mean(c_hi) / np.mean(z_hi)) / (np.mean(c_lo) / np.mean(z_lo))))


@claim(
    rule="prefix_max_mse <= 1e-8 and rel_mu_gap > 0 and rel_mu_monotone == 1",
    control="null_rel_mu_gap_low <= 0",
    paper="Fig. 2 (official theory_plots.py: d = 16, 64 prompts, 200 queries, x ~ U(0, 2)^d + "
          "mu - 1, mu in {0, 1, 2, 3}): the causalLM stationary point's query MSE decreases only "
          "slowly with n and is much worse for non-centred x; the prefixLM / least-squares error "
          "is ~0 once n >= d.",
    against=("closed forms only: the causalLM (online-GD) stationary point vs prefixLM least "
             "squares on the same prompts, across n and x offset; the zero predictor as the "
             "scale of y; null arm: a second batch of centred prompts"),
)
def stationary_vs_n(scale: Scale, seed: int) -> Measurement:
    """Closed-form stationary points (no iteration) for n = 20..300 examples.

    Repair: the old rule read the *absolute* growth ``mu_gap`` = log10(causal MSE at mu = 3 /
    at mu = 0) > 1, which the input-ignoring zero predictor also passes (E[y^2] grows from
    d/3 to d/3 + 9 d with the offset; its own gap, ``zero_mu_gap``, is ~1.45). The rule now
    reads the causal error *relative to E[y_q^2]* (the zero predictor's MSE on the same
    prompts): ``rel_mu_gap`` = log10 of that ratio at mu = 3 over mu = 0 (n = n_max, bootstrap
    over prompts) > 0, and ``rel_mu_monotone``: the relative error grows with every step of
    mu; ``prefix_max_mse``: the largest least-squares query MSE over all mu and n >= 20 > d.
    Control: the null arm, a second independent batch of centred prompts (mu = 0 twice), must
    not pass the rule's gap: ``null_rel_mu_gap_low``, the lower end of its interval, <= 0."""
    batch = sizes(scale, smoke=16, small=64)
    n_max = sizes(scale, smoke=160, small=300)
    n_grid = list(range(20, n_max + 1, 20))
    d, m = 16, sizes(scale, smoke=50, small=200)
    rng = np.random.default_rng(seed)
    rows, finals, zeros, curves, prefix_max = [], {}, {}, {}, 0.0
    for mu in (0, 1, 2, 3, "null"):
        b = sample_icl_batch(batch, n_max, m, d, x_dist="uniform",
                             x_offset=0.0 if mu == "null" else float(mu), rng=rng)
        X, y, Xq, yq = b.x[:, :n_max], b.y[:, :n_max, 0], b.x[:, n_max:], b.y[:, n_max:, 0]
        # causal fixed point for the first n examples = the first n coefficients (online GD)
        a_causal = stationary_point(X, y, "causal")
        kern = np.einsum("bnd,bmd->bnm", X, Xq)
        zeros[mu] = np.mean(yq**2, axis=1)  # per-prompt MSE of the zero predictor
        finals[mu] = np.mean((np.einsum("bn,bnm->bm", a_causal, kern) - yq) ** 2, axis=1)
        if mu == "null":
            continue
        curves[mu] = []
        for n in n_grid:
            pc = np.einsum("bn,bnm->bm", a_causal[:, :n], kern[:, :n])
            w_p = stationary_weights(X[:, :n], y[:, :n], "prefix")
            pp = np.einsum("bd,bmd->bm", w_p, Xq)
            mse_c = np.mean((pc - yq) ** 2, axis=1)
            mse_p = float(np.mean((pp - yq) ** 2))
            prefix_max = max(prefix_max, mse_p)
            curves[mu].append(float(mse_c.mean()))
            rows.append({"mu": mu, "n": n, "causal_mse": float(mse_c.mean()),
                         "prefix_mse": mse_p,
                         "causal_rel_mse": float(mse_c.mean() / zeros[mu].mean())})

    def log_gap(hi, lo):
        return Estimate.bootstrap((hi, lo), lambda a, b: float(np.log10(np.mean(a) / np.mean(b))),
                                  seed=0)

    def rel_gap(hi, lo):  # prompts of the two batches are independent: resample each batch's
        # (causal, zero) pairs by index, the same index in both batches
        return Estimate.bootstrap((finals[hi], zeros[hi], finals[lo], zeros[lo]), _rel_gap,
                                  paired=True, seed=0)

    null_gap = rel_gap("null", 0)
    rel = [float(finals[mu].mean() / zeros[mu].mean()) for mu in (0, 1, 2, 3)]
    Figure = _figure()
    fig = Figure(figsize=(6.0, 4.2))
    ax = fig.add_subplot(1, 1, 1)
    for mu in (0, 1, 2, 3):
        ax.semilogy(n_grid, curves[mu], lw=2, label=f"causal, mu_x = {mu}")
    ax.semilogy(n_grid, [max(r["prefix_mse"], 1e-32) for r in rows if r["mu"] == 3], "k--",
                label="prefix (LSQ), mu_x = 3")
    ax.set_xlabel("number of in-context examples n")
    ax.set_ylabel("query MSE at the stationary point")
    ax.legend()
    fig.tight_layout()
    metrics = {"rel_mu_gap": rel_gap(3, 0), "mu_gap": log_gap(finals[3], finals[0]),
               "zero_mu_gap": log_gap(zeros[3], zeros[0]), "null_rel_mu_gap": null_gap,
               "null_rel_mu_gap_low": null_gap.low, "prefix_max_mse": prefix_max,
               "rel_mu_monotone": float(all(a < b for a, b in pairwise(rel)))}
    metrics.update({f"causal_mse_mu{mu}": float(finals[mu].mean()) for mu in (0, 1, 2, 3)})
    metrics.update({f"causal_rel_mse_mu{mu}": v for mu, v in zip((0, 1, 2, 3), rel)})
    return Measurement(metrics=metrics, figure=fig, tables={"stationary_mse": rows})


# Sizes of the trained-transformer claim at small (smoke: 2 layers, 60 steps). The spec's
# laptop model (d_model 64, 4 layers, 4 heads, d = 8, 24 + 8 prompts, 3 000 steps; the class
# defaults of ICLTransformer / ICLTrainConfig) costs 25-50 ms per step here, i.e. 700-1 400 s
# of CPU for 3 seeds x 3 arms: several times the 200 s budget of a small claim, so the claim
# runs this smaller model, as many steps as the budget allows (1 400: ~14 ms per step, ~180 s),
# and its control states whether the prefix model gets near its limit.
_TRAINED_MODEL = {"d_model": 32, "n_layers": 3, "n_heads": 2, "max_len": 20}
_TRAINED_TASK = {"d": 5, "n_context": 16, "n_query": 4, "task": "linear"}
_NULL_INIT_OFFSET = 7919  # the null arm's second prefix initialisation: seed + this


def _train_arms(seed: int, config, model_kwargs: dict, n_test: int) -> dict:
    """Train three models on the *same* prompt stream and evaluate them on the same held-out
    prompts: ``prefix`` and ``causal`` from the same initialisation (the comparison), and
    ``prefix_null``, a second prefix-mask model from another initialisation (the null arm: the
    mask difference switched off, only the initialisation differs)."""
    import torch

    from iclr24.kits.threads import torch_threads

    from .icl_transformer import ICLTransformer, query_mse, train_icl_transformer

    test = sample_icl_batch(n_test, config.n_context, config.n_query, config.d, config.task,
                            rng=10_000 + seed)
    out = {}
    with torch_threads(1):
        inits = {}
        for name, init_seed in (("shared", seed), ("null", seed + _NULL_INIT_OFFSET)):
            with torch.random.fork_rng():
                torch.manual_seed(init_seed)
                inits[name] = ICLTransformer(config.d, mask="prefix", **model_kwargs).state_dict()
        for arm, mode, init in (("prefix", "prefix", "shared"), ("causal", "causal", "shared"),
                                ("prefix_null", "prefix", "null")):
            model = ICLTransformer(config.d, mask=mode, **model_kwargs)
            model.load_state_dict(inits[init])
            losses = train_icl_transformer(model, config, data_seed=seed)
            out[arm] = query_mse(model, test)
            out[arm + "_final_train_loss"] = float(np.mean(losses[-50:]))
    X, y = test.x[:, :config.n_context], test.y[:, :config.n_context, 0]
    Xq, yq = test.x[:, config.n_context:], test.query_targets[..., 0]
    for mode, name in (("prefix", "lsq"), ("causal", "online_gd")):
        w = stationary_weights(X, y, mode)  # per-prompt least squares / normalised online GD
        out[name] = float(np.mean((np.einsum("bd,bmd->bm", w, Xq) - yq) ** 2))
    out["zero"] = float(np.mean(yq**2))  # the input-ignoring predictor y_hat = 0
    return out


def _trained_metrics(rows: list[dict]) -> dict:
    """Metrics of ``trained_prefix_vs_causal`` from per-seed rows of :func:`_train_arms`."""
    prefix = np.array([r["prefix"] for r in rows])
    causal = np.array([r["causal"] for r in rows])
    null = np.array([r["prefix_null"] for r in rows])
    online_gd = np.array([r["online_gd"] for r in rows])
    null_log_ratio = seed_metric(np.log(null / prefix))
    return {
        "log_ratio": seed_metric(np.log(causal / prefix)),  # log(MSE_causal / MSE_prefix)
        "null_log_ratio": null_log_ratio,
        # the null arm passes the rule `> 0` iff its whole interval is above 0
        "null_log_ratio_low": float(null_log_ratio.low if isinstance(null_log_ratio, Estimate)
                                    else null_log_ratio),
        "prefix_minus_online_gd": seed_difference(prefix, online_gd),
        "ratio": float(np.mean(causal) / np.mean(prefix)),
        "prefix_mse": seed_metric(prefix),
        "causal_mse": seed_metric(causal),
        "prefix_null_mse": seed_metric(null),
        "lsq_mse": float(np.mean([r["lsq"] for r in rows])),
        "online_gd_mse": float(np.mean(online_gd)),
        "zero_predictor_mse": float(np.mean([r["zero"] for r in rows])),
        "n_seeds": len(rows),
    }


@claim(
    rule="log_ratio > 0",
    control="n_seeds >= 3 and prefix_minus_online_gd < 0 and null_log_ratio_low <= 0",
    paper="Sec. 5.2, Tables: trained softmax transformers (shared and unshared layers) on linear "
          "regression, non-linear regression and multiclass classification: prefixLM has lower "
          "test error than causalLM in every setting (exact values not verified here).",
    against=("a causal-mask transformer from the same init on the same prompt stream; null arm: "
             "a second prefix-mask transformer from another init on the same stream; per-prompt "
             "least squares, online GD and the zero predictor as reference errors"),
)
def trained_prefix_vs_causal(scale: Scale, seed: int, progress=None) -> Measurement:
    """Pre-LN softmax transformers (d_model 32, 3 layers, 2 heads; smoke: 2 layers, 60 steps)
    trained for 1 400 AdamW steps (batch 64) on fresh noiseless linear-regression prompts
    (d = 5, 16 examples + 4 queries), smaller than the spec's laptop setting (d_model 64,
    4 layers, d = 8, 24 + 8, 3 000 steps: 700-1 400 s of CPU for the three arms below, over
    the budget). The spec's N-LR (sigmoid) task is not run, for the same reason. The step count
    is the CPU budget's: a first small run at 700 steps (the cost per step misjudged on a
    loaded machine; 90 s of CPU) had the rule hold (log_ratio 0.42 [0.28, 0.57]) but the
    positive control false (prefix MSE 0.236 vs online GD 0.143): inconclusive.

    Arms, same prompt stream: ``prefix`` and ``causal`` from the same initialisation, and the
    null arm ``prefix_null``, a prefix model from a second initialisation. ``log_ratio``: mean
    over seeds of log(causal / prefix) query MSE on held-out prompts (t interval over seeds;
    > 0 means prefix is better). Rule (unchanged at small): ``log_ratio > 0``; smoke uses the
    same rule and can never hold (control, one seed).

    Control, written before the run: (i) at least 3 seeds (one seed cannot tell); (ii) the
    positive control ``prefix_minus_online_gd < 0``: the trained prefix model beats, per seed,
    the causal mask's own limit (normalised online GD, the paper's causal stationary point) on
    the same prompts; otherwise both models are too far from their limits (least squares: 0)
    for the paper's limit argument to apply, which is what the issue found at 1 200 steps;
    (iii) the null arm does not pass the rule: ``null_log_ratio`` (log(prefix_null / prefix),
    the gap produced by the initialisation alone) must not have its whole interval above 0."""
    from .icl_transformer import ICLTrainConfig

    progress = progress or (lambda *a, **k: None)
    n_seeds = sizes(scale, smoke=1, small=3)
    config = ICLTrainConfig(**_TRAINED_TASK, steps=sizes(scale, smoke=60, small=1400))
    model_kwargs = {**_TRAINED_MODEL, "n_layers": sizes(scale, smoke=2, small=3)}
    rows = []
    for i in range(n_seeds):
        r = _train_arms(seed + i, config, model_kwargs, sizes(scale, smoke=300, small=2000))
        rows.append({"seed": seed + i, **r, "ratio": r["causal"] / r["prefix"]})
        progress((i + 1) / n_seeds, f"seed {seed + i}")
    metrics = _trained_metrics(rows)
    metrics["steps"] = config.steps
    Figure = _figure()
    fig = Figure(figsize=(5.5, 4.0))
    ax = fig.add_subplot(1, 1, 1)
    xs = np.arange(len(rows))
    for k, (arm, label) in enumerate((("prefix", "prefixLM"), ("causal", "causalLM"),
                                      ("prefix_null", "prefixLM, 2nd init (null)"))):
        ax.bar(xs + 0.27 * (k - 1), [r[arm] for r in rows], 0.27, label=label)
    ax.axhline(metrics["online_gd_mse"], color="k", ls=":", lw=0.8,
               label="online GD (causal limit)")
    ax.set_xticks(xs, [str(r["seed"]) for r in rows])
    ax.set_xlabel("seed")
    ax.set_ylabel("held-out query MSE")
    ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    return Measurement(metrics=metrics, figure=fig, tables={"per_seed": rows},
                       notes=f"{config.steps} AdamW steps of batch {config.batch}; "
                             f"E[y^2] = d = {config.d} for the zero predictor; least squares "
                             "is exact (MSE 0) with n > d, noiseless.")
