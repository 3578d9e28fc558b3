"""EX-Graph claims on the synthetic stand-in: the X-feature null control (E1) and the protocols
end to end (E2). The real data and the leaderboard are out of reach (see the package docstring);
these check the pipeline: X features help exactly when the generator makes them informative.

Each claim measures its null arm in the same run: E1 the generators where X carries no
information (coupling 0, no wash shift), whose X gain must be shown equivalent to zero (TOST,
the ``control``); E2 the uncoupled matching graph of the same seed, which the coupled matcher
must beat (the rule), with the latent-community oracle as the positive control."""

from __future__ import annotations

import math

from iclr24.claims import Estimate, Measurement, Scale, claim, sizes
from iclr24.kits.threads import torch_threads

from .models import ENCODERS
from .protocols import (
    ethereum_link_prediction,
    matching_link_prediction,
    matching_oracle_auc,
    wash_trading_detection,
)
from .synthetic import make_ex_graph_synthetic

_WASH_MATCH_RATE = 0.3  # coupled arm: OpenSea-active wash traders are matched more often
# equivalence bounds of the null arm: half the X effect the paper reports (0.08 AUC, 0.18 recall)
_LP_EQUIVALENCE = 0.04
_WASH_EQUIVALENCE = 0.09
_TOST_CONFIDENCE = 0.90  # a 90% interval inside ±delta is the two one-sided tests at level 0.05


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


@claim(
    rule="lp_auc_gain_coupled > 0 and wash_recall_gain_coupled > 0 and "
         "lp_auc_gain_coupled_vs_null > 0 and wash_recall_gain_coupled_vs_null > 0",
    control=f"abs(lp_auc_gain_null) < {_LP_EQUIVALENCE} and "
            f"abs(wash_recall_gain_null) < {_WASH_EQUIVALENCE}",
    paper="Sec. 4 / Tables 2-3: adding X features improves Ethereum link prediction (up to ~8% "
          "AUC-ROC; the repo's GCN-with-X run reports AUC 0.704) and wash-trading detection (up "
          "to ~18% recall; leaderboard without X: GAT AUC 0.80, recall 0.59). Real-data numbers "
          "cannot be approached here; the claim is the synthetic null control of the spec.",
    paper_numbers={"lp_auc_gain_coupled": 0.08, "wash_recall_gain_coupled": 0.18},
    against=("GCN without X features on the same graphs (paired per seed); null arm measured in "
             "the same run: generators where X is uninformative (coupling 0, no wash shift), "
             "whose X gain must be equivalent to zero (TOST, bounds half the paper's effects)"),
)
def x_features_null_control(scale: Scale, seed: int, progress=None) -> Measurement:
    """GCN with vs without X features on synthetic EX-Graphs, paired per generator seed.

    Link prediction: coupling 0.5 (matched X accounts share their address's community with
    probability 0.5) vs coupling 0 (X side independent); the gain is AUC(with X) - AUC(without
    X). Wash trading (official balanced-subgraph protocol, several runs per seed averaged):
    wash_shift 1 with 30% of wash traders matched vs wash_shift 0 with ordinary matching (no
    X-side wash signal at all); the gain is recall(with X) - recall(without X).

    Rule: on the coupled generators the X gain is > 0 (paired-t 95% interval over seeds) and
    larger than on the null generators of the same seeds (``*_coupled_vs_null``, the paired
    difference of the two gains). It fails when X features do not help, or help no more where
    they carry no information than where they do.

    Control (the null arm, same run): the null gains are *equivalent* to zero, by a TOST at
    level 0.05, i.e. their 90% paired-t interval lies inside [-delta, delta]. Before this
    repair the null had to lie within ±0.01 over a 95% interval of 3 seeds, which needs a
    per-seed spread under ~0.004 and practically cannot hold. The bounds are set, before any
    run of this rule, at half the effect the paper attributes to real X features (delta = 0.04
    AUC for link prediction, 0.08 / 2; 0.09 recall for wash trading, 0.18 / 2): a null gain that
    large would be a leak (held-out edges in the features or message passing, X features that
    encode the label regardless of the generator) of the size the claim is about, and the test
    bed could not tell X information from the leak. A null that is not shown equivalent (too
    few seeds to resolve ±delta, or a real leak) makes the verdict inconclusive.

    Link prediction scores pairs with the MLP decoder (256 → 128 → 1, the official matching
    decoder), not the official Linear(256, 1): a linear map of [z_u ‖ z_v] is a sum of per-node
    terms and cannot use "u and v share a community", the only thing the X features add here
    (checked: on a graph with half the addresses matched and coupling 1, 60 epochs, AUC with /
    without X was 0.729 / 0.730 with the linear decoder, and 0.878 with X with the MLP)."""
    progress = progress or (lambda *a, **k: None)
    n_seeds = sizes(scale, smoke=2, small=3)
    # small: 20 epochs and 4 wash runs (25 and 5 took 325 s on an idle machine, past 5 min)
    lp_epochs = sizes(scale, smoke=5, small=20)
    wash_runs = sizes(scale, smoke=2, small=4)
    wash_epochs = sizes(scale, smoke=10, small=60)
    max_pos = sizes(scale, smoke=2_000, small=10_000)
    name = sizes(scale, smoke="smoke", small="small")
    lp = {(arm, ux): [] for arm in ("coupled", "null") for ux in (True, False)}
    wash = {(arm, ux): [] for arm in ("coupled", "null") for ux in (True, False)}
    rows = []
    steps, step = n_seeds * 4, 0
    with torch_threads(1):
        for s in range(seed, seed + n_seeds):
            for arm, coupling in (("coupled", 0.5), ("null", 0.0)):
                data = make_ex_graph_synthetic(name, coupling=coupling, wash_shift=1.0, seed=s)
                for ux in (True, False):
                    r = ethereum_link_prediction(data, "gcn", ux, runs=1, epochs=lp_epochs,
                                                 patience=20, max_train_pos=max_pos, seed=s,
                                                 decoder="mlp")
                    lp[arm, ux].append(r.runs[0]["auc"])
                    rows.append({"task": "link_prediction", "arm": arm, "seed": s, "use_x": ux,
                                 **r.runs[0]})
                step += 1
                progress(step / steps, f"link prediction seed {s} {arm}")
            for arm, shift, rate in (("coupled", 1.0, _WASH_MATCH_RATE), ("null", 0.0, None)):
                data = make_ex_graph_synthetic(name, coupling=0.5, wash_shift=shift,
                                               wash_match_rate=rate, seed=s)
                for ux in (True, False):
                    r = wash_trading_detection(data, "gcn", ux, "official", runs=wash_runs,
                                               epochs=wash_epochs, seed=s)
                    summary = r.summary()
                    wash[arm, ux].append(summary["recall"][0])
                    rows.append({"task": "wash_trading", "arm": arm, "seed": s, "use_x": ux,
                                 **{k: v[0] for k, v in summary.items()}})
                step += 1
                progress(step / steps, f"wash trading seed {s} {arm}")
    metrics: dict[str, float | Estimate] = {}
    for task, store in (("lp_auc", lp), ("wash_recall", wash)):
        gains = {arm: [a - b for a, b in zip(store[arm, True], store[arm, False])]
                 for arm in ("coupled", "null")}
        metrics[f"{task}_gain_coupled"] = Estimate.mean_of(gains["coupled"])
        metrics[f"{task}_gain_null"] = Estimate.mean_of(gains["null"], _TOST_CONFIDENCE)
        metrics[f"{task}_gain_coupled_vs_null"] = Estimate.difference(
            gains["coupled"], gains["null"], paired=True)
        for arm in ("coupled", "null"):
            metrics[f"{task}_with_x_{arm}"] = _mean(store[arm, True])
            metrics[f"{task}_without_x_{arm}"] = _mean(store[arm, False])
    table = []
    for task, store in (("link prediction AUC", lp), ("wash-trading recall", wash)):
        for arm in ("coupled", "null"):
            diffs = [a - b for a, b in zip(store[arm, True], store[arm, False])]
            mu = _mean(diffs)
            sd = math.sqrt(sum((d - mu) ** 2 for d in diffs) / (len(diffs) - 1))
            table.append({"task": task, "arm": arm, "with_x": _mean(store[arm, True]),
                          "without_x": _mean(store[arm, False]), "gain_mean": mu, "gain_std": sd,
                          "seeds": len(diffs)})
    return Measurement(
        metrics=metrics, tables={"gains": table, "runs": rows},
        notes=f"{n_seeds} generator seeds; link prediction: GCN + MLP decoder, 1 run per seed, "
              f"{lp_epochs} epochs (patience 20; the paper: up to 200), {max_pos} supervised "
              f"positives; "
              f"wash trading: GCN, official balanced induced subgraphs, {wash_runs} runs per "
              f"seed averaged, {wash_epochs} epochs. Synthetic data, decoder trained, held-out "
              f"edges excluded from message passing and features. Null-arm gains carry 90% "
              f"intervals (TOST against ±{_LP_EQUIVALENCE} AUC and ±{_WASH_EQUIVALENCE} "
              f"recall), the other estimates 95%.")


@claim(
    rule="runs_finite == runs_expected and matching_auc_gcn > 0.5 and "
         "matching_auc_gain_vs_uncoupled > 0",
    control="oracle_auc_gain_vs_uncoupled > 0",
    paper="Sec. 4 / leaderboard: the three protocols run GCN, GAT, GATv2, GraphSAGE, TAGCN, "
          "APPNP, Cluster-GCN, DAGNN, GGNN, DeepWalk, Node2Vec (R-GCN, HIN2Vec in matching); "
          "matching AUC-ROC: DAGNN 0.74, APPNP 0.73, GCN 0.71, GGNN 0.71, GraphSAGE 0.67, TAGCN "
          "0.66, R-GCN 0.66, GAT 0.60, HIN2Vec 0.49, GATv2 0.48.",
    paper_numbers={"matching_auc_gcn": 0.71},
    against=("null arm measured in the same run: GCN matching on the uncoupled graph of the same "
             "seed (coupling 0: only degree tells matched addresses apart), paired per seed; "
             "positive control: the latent-community oracle's AUC, coupled vs uncoupled"),
)
def protocols_end_to_end(scale: Scale, seed: int, progress=None) -> Measurement:
    """Every baseline through every protocol on one coupled synthetic graph (coupling 0.5,
    wash_shift 1): Ethereum link prediction with X, wash trading (official protocol) with X,
    matching link prediction; each (model, task) run must return finite metrics.

    The judged matching number: GCN's matching AUC on coupled graphs (coupling 0.5) must beat
    chance *and* the null arm, GCN on the uncoupled graph (coupling 0) drawn with the same
    generator seed (same transfers, follows and matched addresses; only which account each
    address is matched to differs), as a paired difference over seeds
    (``matching_auc_gain_vs_uncoupled``).
    Until this repair the uncoupled AUC was reported but not judged, and the rule was AUC > 0.5
    alone: matched addresses are the more active ones, so degree alone lifts an uncoupled
    matcher above 0.5 and chance is the wrong bar. The rule fails when the matcher does no
    better where the X side is tied to the Ethereum communities than where it is not.

    Control (a positive control, same run, same splits): the latent-community oracle (a pair
    scores 1 when address and account share a generator community; :func:`matching_oracle_auc`)
    must score higher on the coupled than on the uncoupled graphs, paired over seeds. If even
    the oracle cannot separate them on this many test matches, the test bed cannot tell."""
    progress = progress or (lambda *a, **k: None)
    name = sizes(scale, smoke="smoke", small="small")
    epochs = sizes(scale, smoke=3, small=30)
    sweep_size = sizes(scale, smoke={"num_eth": 500, "num_x": 250, "match_share": 0.06,
                                     "wash_share": 0.02},
                       small={})
    n_seeds = sizes(scale, smoke=2, small=3)
    models = sizes(scale, smoke=("gcn", "dagnn", "deepwalk"), small=ENCODERS + ("deepwalk",))
    dw = {"walks_per_node": sizes(scale, smoke=1, small=2), "walk_length": 10,
          "batch_size": 512, "dim": 32}
    rows, finite, expected = [], 0, 0
    match_auc: dict[str, list[float]] = {"coupled": [], "uncoupled": []}
    oracle_auc: dict[str, list[float]] = {"coupled": [], "uncoupled": []}
    matching_rows = []
    total = len(models) * 3 + 1 + n_seeds
    done = 0
    with torch_threads(1):
        # the all-baselines sweep runs on the 2,000-address graph (GAT on 300k edges would
        # not fit the budget); the judged GCN matching runs on the scale's graph
        data = make_ex_graph_synthetic("smoke", coupling=0.5, wash_shift=1.0, seed=seed,
                                       **sweep_size)
        jobs = [(m, "link_prediction") for m in models] + \
               [(m, "wash_trading") for m in models] + \
               [(m, "matching") for m in models + ("rgcn",)]
        for model, task in jobs:
            expected += 1
            if task == "link_prediction":
                r = ethereum_link_prediction(data, model, True, runs=1, epochs=epochs,
                                             max_train_pos=5_000, seed=seed, deepwalk_options=dw)
            elif task == "wash_trading":
                r = wash_trading_detection(data, model, True, "official", runs=1,
                                           epochs=epochs, seed=seed, deepwalk_options=dw)
            else:
                r = matching_link_prediction(data, model, runs=1, epochs=epochs, seed=seed,
                                             deepwalk_options=dw)
            ok = all(math.isfinite(v) for v in r.runs[0].values())
            finite += ok
            rows.append({"model": model, "task": task, "finite": ok, **r.runs[0]})
            done += 1
            progress(done / total, f"{task} {model}")
        m_epochs = sizes(scale, smoke=10, small=40)
        for s in range(seed, seed + n_seeds):
            for arm, coupling in (("coupled", 0.5), ("uncoupled", 0.0)):
                d = make_ex_graph_synthetic(name, coupling=coupling, seed=s)
                auc = matching_link_prediction(d, "gcn", runs=1, epochs=m_epochs,
                                               seed=s).runs[0]["auc"]
                oracle = matching_oracle_auc(d, seed=s)
                match_auc[arm].append(auc)
                oracle_auc[arm].append(oracle)
                matching_rows.append({"arm": arm, "seed": s, "gcn_auc": auc,
                                      "oracle_auc": oracle})
            done += 1
            progress(done / total, f"matching gcn seed {s}")
    return Measurement(
        metrics={"runs_finite": finite, "runs_expected": expected,
                 "matching_auc_gcn": Estimate.mean_of(match_auc["coupled"]),
                 "matching_auc_gcn_uncoupled": Estimate.mean_of(match_auc["uncoupled"]),
                 "matching_auc_gain_vs_uncoupled": Estimate.difference(
                     match_auc["coupled"], match_auc["uncoupled"], paired=True),
                 "oracle_auc_coupled": Estimate.mean_of(oracle_auc["coupled"]),
                 "oracle_auc_uncoupled": Estimate.mean_of(oracle_auc["uncoupled"]),
                 "oracle_auc_gain_vs_uncoupled": Estimate.difference(
                     oracle_auc["coupled"], oracle_auc["uncoupled"], paired=True)},
        tables={"runs": rows, "matching": matching_rows},
        notes=f"Baseline sweep on one coupled graph of {data['eth'].num_nodes} addresses; "
              f"{epochs} epochs per run (the paper: up to "
              f"200), DeepWalk with {dw['walks_per_node']} walk(s) per node of length 10, "
              f"32-d. GCN matching: {n_seeds} seeds x {m_epochs} epochs, coupled (0.5) and "
              f"uncoupled (0) graph per seed, same split; the oracle scores community "
              f"agreement. Cluster-GCN (METIS) and HIN2Vec are not run.")
