"""NfgTransformer claims: equilibrium solving (NashConv vs uniform / MLP / replicator dynamics,
nashpy equilibria as ground truth), exact action-permutation equivariance, and payoff inpainting
on empirical DISC games (vs global mean, Elo, mElo)."""

from __future__ import annotations

import time

import numpy as np
import torch

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes
from iclr24.kits.threads import torch_threads

from .baselines import (
    PayoffMLP,
    fit_ratings_cv,
    nashpy_equilibria,
    predict_ratings,
    replicator_dynamics,
)
from .equilibria import nash_conv
from .games import disc_games, l2_invariant_games
from .network import NfgTransformer
from .training import (
    NfgNashSolver,
    NfgPayoffPredictor,
    TrainConfig,
    train_nash_solver,
    train_payoff_predictor,
)


def _seeds(scale: Scale, seed: int) -> list[int]:
    return [seed + i for i in range(sizes(scale, smoke=1, small=3, full=3))]


def _nash_conv_pair(g: torch.Tensor, strategies) -> tuple[float, float]:
    return (float(nash_conv(g, strategies, reduce="max").mean()),
            float(nash_conv(g, strategies, reduce="sum").mean()))


@claim(
    rule={"smoke": "nfgt_over_uniform < 1",
          "small": "nfgt_over_uniform < 0.3 and nfgt_minus_mlp < 0"},
    control={"smoke": "nashpy_solved_frac >= 0.9 and nashpy_nashconv_max < 1e-6",
             "small": "null_over_uniform >= 0.3 and nashpy_solved_frac >= 0.9 "
                      "and nashpy_nashconv_max < 1e-6"},
    paper="NfgTransformer trained without labels by minimising NashConv solves n-player "
          "general-sum L2-invariant games better than NES (the paper's Table/Fig.; numbers not "
          "retrieved). Official notebook (16x16, D=64, K=8, A=2, batch 32): the max-form NE "
          "loss falls to ~0.015-0.02 after 19k updates.",
    paper_numbers={"nfgt_nashconv_max": 0.02},
    against=("uniform play and a non-equivariant MLP trained with the same loss and steps "
             "(baselines); the same NfgTransformer untrained (null arm); replicator dynamics; "
             "verified nashpy equilibria as exact reference"),
)
def nash_solving(scale: Scale, seed: int, progress=None) -> Measurement:
    """Per seed: train the NfgTransformer NE solver and a non-equivariant MLP (same loss, same
    steps, same schedule) on fresh 2-player L2-invariant games; on held-out games compare mean
    NashConv (max and sum forms) with uniform play, replicator dynamics (200 Euler steps) and
    nashpy's equilibria (ground truth, each verified to NashConv <= 1e-6).
    ``nfgt_over_uniform`` is the per-seed ratio of mean max-NashConv (Student-t over seeds),
    ``nfgt_minus_mlp`` the paired difference to the MLP.

    Rule, fixed from the spec before running: NfgT <= 0.3 x uniform and < MLP (3 seeds, the
    whole interval). Control: (i) the null arm, the same network at its initialisation on the
    same test games (``null_over_uniform``), must *not* reach the 0.3 level, else the level says
    nothing about training; (ii) the exact reference works: nashpy (Lemke-Howson, transposed
    Lemke-Howson, vertex enumeration) returns a NashConv-verified equilibrium on >= 90% of the
    test games, with NashConv < 1e-6 (its solutions are now verified, so this checks that a
    ground truth exists, not the loss code; the loss code has its own known-answer tests).

    Budget (not the paper's size): small trains 2 blocks, D = 32, 600 updates of batch 16 on
    8x8 games against the spec's 3 blocks, 3 000 updates, batch 32 (and the official 8 blocks,
    D = 64, 20k x 32 at 16x16, kept for ``full``), to keep 3 seeds x 2 networks < 5 min."""
    progress = progress or (lambda *a, **k: None)
    t = sizes(scale, smoke=4, small=8, full=16)
    enc = sizes(scale, smoke={"d_model": 16, "n_blocks": 2, "n_heads": 4, "qkv_dim": 16,
                                  "n_action_self_attn": 1},
                small={"d_model": 32, "n_blocks": 2, "n_heads": 4, "qkv_dim": 32,
                       "n_action_self_attn": 1},
                full={"d_model": 64, "n_blocks": 8, "n_heads": 8, "qkv_dim": 64,
                      "n_action_self_attn": 2})
    cfg = sizes(scale, smoke=TrainConfig(steps=100, batch=16),
                small=TrainConfig(steps=600, batch=16),
                full=TrainConfig(steps=20000, batch=32, lr=1e-4))
    n_test = sizes(scale, smoke=50, small=200, full=500)
    seeds = _seeds(scale, seed)
    res: dict[str, list[float]] = {k: [] for k in (
        "nfgt", "nfgt_sum", "mlp", "mlp_sum", "uniform", "uniform_sum", "rd", "rd_sum", "lh",
        "lh_sum", "null", "null_sum", "time_nfgt", "time_mlp")}
    lh_max, lh_fail, curves = 0.0, 0, []
    with torch_threads(1):
        for i, s in enumerate(seeds):
            torch.manual_seed(s)
            model = NfgNashSolver(n_players=2, **enc)
            g = l2_invariant_games(n_test, (t, t), torch.Generator().manual_seed(10_000 + s))
            with torch.no_grad():  # null arm: the same network before training
                null_strat = [lg.softmax(-1) for lg in model(g)]
            t0 = time.process_time()
            curve = train_nash_solver(model, (t, t), cfg, torch.Generator().manual_seed(2 * s),
                                      lambda f, m, i=i: progress((i + 0.45 * f) / len(seeds), m))
            res["time_nfgt"].append(time.process_time() - t0)
            curves.append(curve)
            torch.manual_seed(s)
            mlp = PayoffMLP((t, t), hidden=256)
            t0 = time.process_time()
            train_nash_solver(mlp, (t, t), cfg, torch.Generator().manual_seed(2 * s))
            res["time_mlp"].append(time.process_time() - t0)
            progress((i + 0.9) / len(seeds), f"seed {s}: evaluating")
            with torch.no_grad():
                strat = {
                    "null": null_strat,
                    "nfgt": [lg.softmax(-1) for lg in model(g)],
                    "mlp": [lg.softmax(-1) for lg in mlp(g)],
                    "uniform": [torch.full((n_test, t), 1.0 / t)] * 2,
                    "rd": replicator_dynamics(g, steps=200, step_size=0.1),
                }
            g64 = g.double()
            x, y, ok = nashpy_equilibria(g64.numpy())
            ok_t = torch.from_numpy(ok)
            lh_fail += int((~ok).sum())
            strat["lh"] = [torch.from_numpy(x)[ok_t], torch.from_numpy(y)[ok_t]]
            for name, st in strat.items():
                if name == "lh" and not ok.any():  # no verified equilibrium on any test game
                    mx = sm = float("nan")
                else:
                    mx, sm = _nash_conv_pair(g64[ok_t] if name == "lh" else g, st)
                res[name].append(mx)
                res[name + "_sum"].append(sm)
            if ok.any():
                lh_max = max(lh_max, float(nash_conv(g64[ok_t], strat["lh"], reduce="sum").max()))
            else:
                lh_max = float("nan")
    ratio = [a / b for a, b in zip(res["nfgt"], res["uniform"])]
    null_ratio = [a / b for a, b in zip(res["null"], res["uniform"])]
    metrics = {
        "nfgt_over_uniform": seed_metric(ratio),
        "null_over_uniform": seed_metric(null_ratio),
        "nashpy_solved_frac": 1.0 - lh_fail / (n_test * len(seeds)),
        "nfgt_minus_mlp": seed_difference(res["nfgt"], res["mlp"]),
        "null_minus_mlp": seed_difference(res["null"], res["mlp"]),
        "nfgt_minus_replicator": seed_difference(res["nfgt"], res["rd"]),
        "nashpy_nashconv_max": lh_max,
        "nashpy_failures": lh_fail,
    }
    for name in ("nfgt", "mlp", "uniform", "rd", "lh", "null"):
        label = {"rd": "replicator", "lh": "nashpy", "null": "untrained"}.get(name, name)
        if name != "lh":  # nashpy's entry is the worst case over all test games (above)
            metrics[f"{label}_nashconv_max"] = seed_metric(res[name])
        metrics[f"{label}_nashconv_sum"] = seed_metric(res[name + "_sum"])
    metrics["train_cpu_s_nfgt"] = seed_metric(res["time_nfgt"])
    rows = [{"seed": s, **{k: v[j] for k, v in res.items()}} for j, s in enumerate(seeds)]
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5, 3.2))
    ax = fig.subplots()
    for s, c in zip(seeds, curves):
        k = max(1, len(c) // 50)
        ax.plot(np.convolve(c, np.ones(k) / k, mode="valid"), label=f"seed {s}")
    ax.axhline(np.mean(res["uniform"]), ls="--", c="gray", label="uniform (test)")
    ax.set_xlabel("update")
    ax.set_ylabel("train NashConv (max form)")
    ax.set_title(f"NfgTransformer NE solver, {t}x{t} L2-invariant games")
    ax.legend(fontsize=7)
    return Measurement(metrics=metrics, figure=fig, tables={"per_seed": rows}, notes=(
        f"{t}x{t} 2-player L2-invariant games, encoder {enc}, {cfg.steps} updates of batch "
        f"{cfg.batch} (official: 16x16, D=64, K=8, A=2, 20k x 32); {n_test} test games per "
        "seed. NashConv 'max' = max_p max_a' g_p(a') (official loss), 'sum' = sum over players. "
        "nashpy = NashConv-verified equilibria (Lemke-Howson, then the transposed game, then "
        "vertex enumeration); games with no verified equilibrium are counted as unsolved and "
        "left out of its mean. untrained = the NfgTransformer at initialisation (null arm). "
        "The paper's NES baseline is not reimplemented."))


def _permute_game(g: torch.Tensor, mask: torch.Tensor, perms: list[torch.Tensor]):
    for p, perm in enumerate(perms):
        g = g.index_select(2 + p, perm)
        mask = mask.index_select(1 + p, perm)
    return g, mask


@claim(
    rule="nfgt_max_err < 1e-5",
    control="mlp_max_err > 1e-3",
    paper="Sec. 3: the NfgTransformer is equivariant to permutations of each player's actions "
          "(no positional encodings); a network over the flattened tensor is not.",
    against="a randomly initialised MLP over the flattened game on the same permuted games",
)
def equivariance(scale: Scale, seed: int) -> Measurement:
    """Randomly initialised encoder + NE / deviation-gain / payoff heads on random masked games:
    relabel every player's actions by a random permutation and compare outputs with the
    permuted outputs of the original game (max abs error over embeddings, logits, per-joint and
    per-payoff outputs; -inf logits of absent actions must coincide). The MLP baseline gets the
    same test on its logits.

    An exact property of one randomly initialised network, not a comparison over seeds (the
    error is structural, ~1e-7 in float32 for every seed). Control (the null arm, same games,
    same permutations): a network that is *not* equivariant, the MLP over the flattened game,
    must show an error > 1e-3, i.e. the test bed can see a broken equivariance; otherwise the
    verdict is inconclusive. The 1e-5 level is the spec's float32 tolerance."""
    from .network import DeviationGainHead, NashHead, PayoffHead

    t = sizes(scale, smoke=4, small=8, full=16)
    n_games = sizes(scale, smoke=4, small=16, full=32)
    gen = torch.Generator().manual_seed(seed)
    with torch_threads(1), torch.no_grad():
        torch.manual_seed(seed)
        enc = NfgTransformer(n_players=2, d_model=32, n_blocks=2, n_heads=4, qkv_dim=32,
                             n_action_self_attn=1)
        heads = NashHead(32), DeviationGainHead(32), PayoffHead(32, 4, 16)
        mlp = PayoffMLP((t, t))
        g = l2_invariant_games(n_games, (t, t), gen)
        mask = torch.rand((n_games, t, t), generator=gen) < 0.7
        mask[:, 0, 0] = True
        perms = [torch.randperm(t, generator=gen) for _ in range(2)]
        gp, mp = _permute_game(g, mask, perms)

        def outputs(game, m):
            emb = enc(game, m)
            return emb, heads[0](emb, m), heads[1](emb), heads[2](emb)

        e0, l0, j0, y0 = outputs(g, mask)
        e1, l1, j1, y1 = outputs(gp, mp)
        errs = {}
        errs["embeddings"] = max(float((e1[p] - e0[p][:, perms[p]]).abs().max()) for p in range(2))
        inf_ok = all(bool((torch.isinf(l1[p]) == torch.isinf(l0[p][:, perms[p]])).all())
                     for p in range(2))
        errs["logits"] = max(float((l1[p] - l0[p][:, perms[p]]).nan_to_num(0.0, 0.0, 0.0)
                                   .abs().max()) for p in range(2)) if inf_ok else float("inf")
        errs["deviation_head"] = float((j1 - j0[:, perms[0]][:, :, perms[1]]).abs().max())
        errs["payoff_head"] = float((y1 - y0[:, :, perms[0]][:, :, :, perms[1]]).abs().max())
        m0, m1 = mlp(g), mlp(gp)
        mlp_err = max(float((m1[p] - m0[p][:, perms[p]]).abs().max()) for p in range(2))
    metrics = {"nfgt_max_err": max(errs.values()), "mlp_max_err": mlp_err,
               **{f"err_{k}": v for k, v in errs.items()}}
    return Measurement(metrics=metrics, tables={"errors": [{"output": k, "max_abs_err": v}
                                                           for k, v in errs.items()]},
                       notes=f"{n_games} random {t}x{t} games, 70% of joint actions observed, "
                             "float32, random initialisation (equivariance is structural).")


@claim(
    rule={"smoke": "nfgt_minus_mean < 0",
          "small": "nfgt_minus_elo < 0 and nfgt_minus_melo < 0"},
    control={"small": "melo_minus_mean < 0"},
    paper="Sec. 5: on partially observed empirical DISC games the NfgTransformer predicts "
          "missing payoffs better than rating methods (Elo cannot represent cyclic games; "
          "mElo can, up to its rank); numbers not retrieved.",
    against=("Elo and the better of mElo-2/mElo-4 (baselines, L2-regularised, strength chosen "
             "on held-out observed entries), each fitted to the same test games' observed "
             "entries; the global mean of observed payoffs (input-ignoring null arm)"),
)
def payoff_inpainting(scale: Scale, seed: int, progress=None) -> Measurement:
    """Per seed: train the encoder + payoff head to reconstruct masked DISC games (latent L = 4,
    keep probability 0.5); on held-out games compare the MSE on the unobserved entries with the
    global mean of observed payoffs, Elo and mElo-2k (k = 1, 2) fitted to each game's observed
    win rates. ``nfgt_minus_melo`` is the paired difference to the better mElo per seed.

    Elo and mElo are fitted as rating methods are (Balduzzi et al. 2018): gradient steps on the
    logistic loss of the observed win rates with a learning rate and an L2 penalty on ratings and
    mElo vectors, whose strength is chosen from {0, 1e-3, 1e-2, 0.1, 1} by validation on 20% of
    the *observed* pairs (pooled over the test games; the unobserved entries are never seen).
    Unregularised, mElo overfits (masked MSE 0.17-0.20 at T = 16, worse than the global mean's
    0.136), which would make a win over it meaningless.

    Rule (from the spec, fixed before running): NfgT's masked MSE is below Elo's and below the
    better mElo's (paired over 3 seeds, whole interval). Control (positive, small): the better
    mElo beats the input-ignoring null arm, the global mean of the observed payoffs
    (``melo_minus_mean < 0``); if it does not, beating it says nothing and the verdict is
    inconclusive. Smoke (one seed, plumbing) asks only that NfgT beats the global mean.

    Budget (not the paper's size): small trains D = 32, 2 blocks, 400 updates of batch 8 on
    16x16 games (official: D = 64, 8 blocks, 20k x 32, kept for ``full``)."""
    progress = progress or (lambda *a, **k: None)
    t = sizes(scale, smoke=8, small=16, full=16)
    enc = sizes(scale, smoke={"d_model": 16, "n_blocks": 1, "n_heads": 4, "qkv_dim": 16,
                                  "n_action_self_attn": 1},
                small={"d_model": 32, "n_blocks": 2, "n_heads": 4, "qkv_dim": 32,
                       "n_action_self_attn": 1},
                full={"d_model": 64, "n_blocks": 8, "n_heads": 8, "qkv_dim": 64,
                      "n_action_self_attn": 2})
    cfg = sizes(scale, smoke=TrainConfig(steps=60, batch=8, lr=1e-3),
                small=TrainConfig(steps=400, batch=8, lr=1e-3),
                full=TrainConfig(steps=20000, batch=32, lr=1e-4))
    n_test = sizes(scale, smoke=32, small=100, full=500)
    seeds = _seeds(scale, seed)
    res: dict[str, list[float]] = {k: [] for k in ("nfgt", "mean", "elo", "melo2", "melo4",
                                                   "elo_l2", "melo2_l2", "melo4_l2",
                                                   "time_nfgt")}
    with torch_threads(1):
        for i, s in enumerate(seeds):
            torch.manual_seed(s)
            model = NfgPayoffPredictor(n_players=2, head_heads=4, head_qkv_dim=enc["qkv_dim"],
                                       **enc)
            t0 = time.process_time()

            def report(f: float, msg: str, i: int = i) -> None:
                progress((i + 0.8 * f) / len(seeds), msg)

            train_payoff_predictor(model, t, cfg, torch.Generator().manual_seed(3 * s),
                                   progress=report)
            res["time_nfgt"].append(time.process_time() - t0)
            g, m = disc_games(n_test, t, 4, 0.5, torch.Generator().manual_seed(20_000 + s))
            hidden = (~m)[:, None].expand_as(g)
            with torch.no_grad():
                pred = model(g, m)

            def mse(p: torch.Tensor, g=g, hidden=hidden) -> float:
                return float((p - g)[hidden].square().mean())

            res["nfgt"].append(mse(pred))
            w, mf = g[:, 0], m.float()
            mean_w = (w * mf).flatten(1).sum(1) / mf.flatten(1).sum(1)
            mean_pred = torch.stack([mean_w, 1 - mean_w], 1)[:, :, None, None].expand_as(g)
            res["mean"].append(mse(mean_pred))
            for key, k in (("elo", 0), ("melo2", 1), ("melo4", 2)):
                r, c, lam = fit_ratings_cv(w, m, k=k, generator=torch.Generator().manual_seed(s))
                pw = predict_ratings(r, c)
                res[key].append(mse(torch.stack([pw, 1 - pw], 1)))
                res[key + "_l2"].append(lam)
    best_melo = [min(a, b) for a, b in zip(res["melo2"], res["melo4"])]
    metrics = {
        "nfgt_minus_elo": seed_difference(res["nfgt"], res["elo"]),
        "nfgt_minus_melo": seed_difference(res["nfgt"], best_melo),
        "nfgt_minus_mean": seed_difference(res["nfgt"], res["mean"]),
        "melo_minus_mean": seed_difference(best_melo, res["mean"]),
        "nfgt_inpaint_mse": seed_metric(res["nfgt"]),
        "mean_inpaint_mse": seed_metric(res["mean"]),
        "elo_inpaint_mse": seed_metric(res["elo"]),
        "melo2_inpaint_mse": seed_metric(res["melo2"]),
        "melo4_inpaint_mse": seed_metric(res["melo4"]),
        "train_cpu_s_nfgt": seed_metric(res["time_nfgt"]),
    }
    rows = [{"seed": s, **{k: v[j] for k, v in res.items()}} for j, s in enumerate(seeds)]
    return Measurement(metrics=metrics, tables={"per_seed": rows}, notes=(
        f"DISC games T={t}, L=4, keep prob 0.5; encoder {enc}, {cfg.steps} updates of batch "
        f"{cfg.batch} (official: 16x16, D=64, K=8, A=2, 20k x 32); {n_test} test games per seed. "
        "MSE over the unobserved payoffs of both players. Elo / mElo-2k (k=1: melo2, k=2: "
        "melo4) fitted per game by L2-regularised logistic regression on the observed win "
        "rates (L2 strength chosen on held-out observed pairs; per-seed choice in the table)."))
