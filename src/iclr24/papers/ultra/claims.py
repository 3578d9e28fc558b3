"""ULTRA's claims at laptop scale: zero-shot transfer to unseen relation vocabularies.

U1 ``zero_shot_synthetic``: pre-train on rule-generated KGs, run zero-shot on unseen ones.
U2 ``zero_shot_real``: three-fold leave-one-out over pykeen's Nations / Kinships / UMLS.
Both compare, in the same run and on the same test facts: ULTRA zero-shot, the same architecture
randomly initialised (the null arm), PyG DistMult trained on the target, ULTRA trained from
scratch on the target with the fine-tuning budget, and ULTRA fine-tuned with that budget. Both
replicate over 3 seeds at small and read intervals over seeds; each has a ``control`` that its
null arm, measured in the same run, does not pass the rule.
(U3, permutation invariance, is a unit test.)

The released official weights (``ultra_3g.pth``) are not shipped, so no claim depends on them:
``benchmarks/ultra_official.py`` evaluates a local copy beside random init and our trained model.
A claim arm switched on by an environment variable would give the same code hash different
metric sets on different machines, so the comparison lives in the benchmark.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch

from iclr24.claims import Estimate, Measurement, Scale, claim, seed_difference, seed_metric, sizes
from iclr24.kits.threads import torch_threads

__all__ = ["zero_shot_real", "zero_shot_synthetic"]


@dataclass(frozen=True)
class _Budget:
    dim: int
    layers: int
    pretrain_steps: int
    finetune_steps: int
    batch_size: int
    num_negatives: int
    distmult_epochs: int
    eval_triples: int  # fixed subsample of test facts per target graph (same for every method)


_SECOND_INIT_OFFSET = 100_003


def _compare_on_target(target, pretrained, budget: _Budget, seed: int,
                       progress: Callable[[str], None]) -> dict[str, float]:
    """The five methods and a second untrained initialisation on one target graph; returns
    their filtered MRR and Hits@10."""
    from iclr24.kits.knowledge_graphs import (
        KGETrainConfig,
        evaluate_link_prediction,
        kge_score_fn,
        train_kge,
    )

    from .evaluation import evaluate
    from .foundation_model import Ultra, prepare_graph
    from .training import TrainConfig, fine_tune, train_ultra

    gen = torch.Generator().manual_seed(seed)
    test = target.test
    if len(test) > budget.eval_triples:
        test = test[torch.randperm(len(test), generator=gen)[:budget.eval_triples]]
    data = prepare_graph(target)
    ft_cfg = TrainConfig(steps=budget.finetune_steps, batch_size=budget.batch_size,
                         num_negatives=budget.num_negatives)
    out: dict[str, float] = {}

    def record(key: str, metrics: dict[str, float]) -> None:
        out[f"mrr_{key}"] = metrics["mrr"]
        out[f"hits10_{key}"] = metrics["hits@10"]

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # the same initial weights as the pre-trained model's start
        random_init = Ultra(pretrained.dim, pretrained.num_layers)
        # null arm: an independent untrained initialisation (an offset outside the seed grid,
        # so it never equals another replicate's or fold's random init)
        torch.manual_seed(seed + _SECOND_INIT_OFFSET)
        second_init = Ultra(pretrained.dim, pretrained.num_layers)
    progress(f"{target.name}: random inits / zero-shot")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unseen entities/relations: counted in n_unseen below
        record("random_init", evaluate(random_init, target, triples=test, data=data))
        record("second_init", evaluate(second_init, target, triples=test, data=data))
        zero_shot = evaluate(pretrained, target, triples=test, data=data)
    record("zero_shot", zero_shot)
    out["n_unseen"] = zero_shot["n_unseen"]
    progress(f"{target.name}: DistMult")
    dm = train_kge(target.train, target.num_entities, target.num_relations,
                   KGETrainConfig(dim=64, epochs=budget.distmult_epochs), seed=seed)
    record("distmult", evaluate_link_prediction(
        kge_score_fn(dm, target.num_entities, target.num_relations), target, triples=test))
    progress(f"{target.name}: from scratch")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed + 1)
        scratch = Ultra(pretrained.dim, pretrained.num_layers)
    train_ultra(scratch, [target], ft_cfg, seed=seed + 1)
    progress(f"{target.name}: fine-tuning")
    tuned, _ = fine_tune(pretrained, target, ft_cfg, seed=seed + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        record("scratch", evaluate(scratch, target, triples=test, data=data))
        record("finetuned", evaluate(tuned, target, triples=test, data=data))
    return out


_METHODS = ("random_init", "zero_shot", "distmult", "scratch", "finetuned")
_ARMS = _METHODS + ("second_init",)  # with the second untrained network (a null arm)


def _mean_rows(rows: list[dict[str, float]]) -> dict[str, float]:
    """Mean over target graphs of every number of :func:`_compare_on_target`'s rows."""
    return {k: sum(r[k] for r in rows) / len(rows) for k in rows[0]}


def _bar_figure(rows: list[dict], labels: list[str], title: str):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.5, 3.6))
    ax = fig.add_subplot(1, 1, 1)
    width = 0.8 / len(_METHODS)
    for j, m in enumerate(_METHODS):
        xs = [i + (j - (len(_METHODS) - 1) / 2) * width for i in range(len(rows))]
        ax.bar(xs, [r[f"mrr_{m}"] for r in rows], width, label=m.replace("_", " "))
    ax.set_xticks(range(len(rows)), labels)
    ax.set_ylabel("filtered MRR (both directions)")
    ax.set_title(title)
    ax.set_ylim(0, 1.25)
    ax.legend(fontsize=7, ncol=5, loc="upper center")
    fig.tight_layout()
    return fig


def _synthetic_replicate(scale: Scale, seed: int, progress: Callable[[float, str], None]
                         ) -> tuple[list, list, list[dict[str, float]], list[float]]:
    """One replicate of U1 with its own graphs, rules and initial weights: returns (pre-training
    graphs, target graphs, one row per target, pre-training losses)."""
    from .synthetic_kg import make_rule_kg
    from .training import TrainConfig, pretrain

    n_ent, n_pre, n_test, budget = _synthetic_sizes(scale)
    base = 1000 * seed
    pre = [make_rule_kg(n_ent, 5 + i % 3, 5 + (i + 1) % 3, seed=base + i) for i in range(n_pre)]
    tests = [make_rule_kg(n_ent, 4 + 2 * j, 8 - j, seed=base + 500 + j, degree=2.5)
             for j in range(n_test)]
    cfg = TrainConfig(steps=budget.pretrain_steps, batch_size=budget.batch_size,
                      num_negatives=budget.num_negatives)
    model, losses = pretrain(pre, cfg, dim=budget.dim, num_layers=budget.layers, seed=seed,
                             progress=lambda f, m="": progress(0.7 * f, f"pre-training: {m}"))
    rows = [_compare_on_target(kg, model, budget, seed,
                               lambda m, j=j: progress(0.7 + 0.3 * j / n_test, m))
            for j, kg in enumerate(tests)]
    return pre, tests, rows, losses


def _synthetic_sizes(scale: Scale) -> tuple[int, int, int, _Budget]:
    """(entities per graph, pre-training graphs, target graphs, budget). Small: 3 seeds of
    1000 pre-training and 150 fine-tuning steps fit ~150 s of one core (measured: 100 steps
    ~3 s); the single-seed version had 1500 / 200."""
    return (sizes(scale, smoke=100, small=300), sizes(scale, smoke=2, small=4),
            sizes(scale, smoke=1, small=2),
            sizes(scale,
                  smoke=_Budget(dim=16, layers=2, pretrain_steps=150, finetune_steps=40,
                                batch_size=8, num_negatives=16, distmult_epochs=30,
                                eval_triples=60),
                  small=_Budget(dim=32, layers=4, pretrain_steps=1000, finetune_steps=150,
                                batch_size=8, num_negatives=32, distmult_epochs=100,
                                eval_triples=200)))


@claim(
    rule="zero_shot_minus_random >= 0.2 and zero_shot_over_distmult >= 0.8",
    control="random_over_distmult < 0.8 and second_init_over_distmult < 0.8",
    paper=("Fig. 1 / Table 1: ULTRA pre-trained on 3 KGs and run zero-shot on 50+ unseen KGs "
           "(new entities and relations) averages MRR 0.395 vs 0.344 for the supervised "
           "state of the art of each graph (the best published per-graph model, not DistMult); "
           "fine-tuning adds more. Synthetic analogue (spec U1): zero-shot "
           "beats random init by >= 0.2 MRR and reaches >= 0.8 x DistMult trained on the target."),
    paper_numbers={"mrr_zero_shot": 0.395, "mrr_supervised_sota": 0.344},
    against=("null arm: the same ULTRA randomly initialised (the pre-trained model's starting "
             "weights), in the same run; PyG DistMult trained on the target, on the same test "
             "facts; from-scratch and fine-tuned ULTRA shown"),
)
def zero_shot_synthetic(scale: Scale, seed: int, progress=None) -> Measurement:
    """Pre-train ULTRA on rule-generated KGs and test zero-shot on unseen graphs whose relation
    vocabularies (ids, counts, rules) differ, against random init, DistMult on the target,
    ULTRA from scratch and ULTRA fine-tuned (same fine-tuning budget).

    Replicates: seeds ``seed, seed+1, seed+2`` at small (one at smoke); each replicate draws
    its own graphs, rules and initial weights. Rule (the spec's thresholds, unchanged; written
    before this version ran): zero-shot minus random-init MRR >= 0.2 (paired t interval over
    seeds) and zero-shot / DistMult MRR >= 0.8 (t interval of the per-seed ratios); the whole
    interval decides. It fails when zero-shot is no better than the untrained network or falls
    clearly below DistMult.

    Null arms (same run, same test facts): the randomly initialised ULTRA (the pre-trained
    model's own starting weights) and a second, independent initialisation (seed + 100003; the
    MRR of an untrained network varies a lot with its initialisation: 0.31 and 0.01 for two
    initialisations on one small-scale target). In the method's place the first one's first term is
    exactly 0, so it cannot pass; ``control`` requires that neither reaches the second term
    (``random_over_distmult < 0.8 and second_init_over_distmult < 0.8``): if an untrained
    network already reached 0.8 x DistMult, DistMult would be too weak a reference for the
    ratio to mean anything."""
    progress = progress or (lambda *a, **k: None)
    n_ent, n_pre, n_test, budget = _synthetic_sizes(scale)
    n_seeds = sizes(scale, smoke=1, small=3)
    seeds = [seed + i for i in range(n_seeds)]
    t0 = time.perf_counter()
    reps = []
    with torch_threads(1):
        for i, s in enumerate(seeds):
            def seed_progress(f: float, m: str = "", i: int = i, s: int = s) -> None:
                progress((i + f) / n_seeds, f"seed {s}: {m}")

            reps.append(_synthetic_replicate(scale, s, seed_progress))
    means = [_mean_rows(rows) for _, _, rows, _ in reps]

    def per_seed(key: str) -> list[float]:
        return [m[key] for m in means]

    metrics: dict = {}
    for m in _ARMS:
        metrics[f"mrr_{m}"] = seed_metric(per_seed(f"mrr_{m}"))
        metrics[f"hits10_{m}"] = seed_metric(per_seed(f"hits10_{m}"))
    metrics["zero_shot_minus_random"] = seed_difference(per_seed("mrr_zero_shot"),
                                                        per_seed("mrr_random_init"))
    metrics["zero_shot_over_distmult"] = seed_metric(  # ratio per seed, then the interval
        [m["mrr_zero_shot"] / max(m["mrr_distmult"], 1e-9) for m in means])
    metrics["random_over_distmult"] = seed_metric(  # the null arms through the same ratio
        [m["mrr_random_init"] / max(m["mrr_distmult"], 1e-9) for m in means])
    metrics["second_init_over_distmult"] = seed_metric(
        [m["mrr_second_init"] / max(m["mrr_distmult"], 1e-9) for m in means])
    metrics["finetuned_minus_scratch"] = seed_difference(per_seed("mrr_finetuned"),
                                                         per_seed("mrr_scratch"))
    metrics["n_unseen"] = sum(per_seed("n_unseen"))
    metrics["pretrain_loss_first"] = seed_metric([sum(r[3][:20]) / 20 for r in reps])
    metrics["pretrain_loss_last"] = seed_metric([sum(r[3][-20:]) / 20 for r in reps])
    metrics["n_seeds"] = n_seeds
    metrics["wall_s"] = time.perf_counter() - t0
    table = [{"seed": s, "target": kg.name, "relations": kg.num_relations,
              "test_facts": len(kg.test), **{k: round(v, 4) for k, v in row.items()}}
             for s, (_, tests, rows, _) in zip(seeds, reps) for kg, row in zip(tests, rows)]
    pre, tests = reps[0][0], reps[0][1]
    notes = (f"{n_seeds} seed(s) ({seeds}), each with its own graphs, rules and initial weights. "
             f"Per seed: pre-trained on {n_pre} rule KGs ({n_ent} entities each, |R| = "
             f"{[g.num_relations for g in pre]} for the first seed) for "
             f"{budget.pretrain_steps} steps (d={budget.dim}, {budget.layers}+{budget.layers} "
             f"layers, batch {budget.batch_size}, K={budget.num_negatives}); tested on {n_test} "
             f"unseen rule KGs (|R| = {[g.num_relations for g in tests]}) with other seeds, "
             f"rules, relation ids and a higher fact density (degree 2.5 vs 2.0). Fine-tuning / "
             f"from-scratch budget: {budget.finetune_steps} steps. DistMult: PyG, d=64, "
             f"{budget.distmult_epochs} epochs, margin loss. MRR is filtered, both directions, on "
             f"up to {budget.eval_triples} test facts per graph, averaged over the targets of a "
             f"seed; intervals are 95% t intervals over seeds (paired for differences). "
             f"second_init is a second untrained network (seed + 100003), a null arm of the "
             f"control. The "
             f"paper's numbers are averages over 50+ real KGs, not this synthetic family.")
    return Measurement(metrics=metrics, tables={"per_target": table}, notes=notes,
                       figure=_bar_figure(reps[0][2], [kg.name.split("(")[0] + f" {j}"
                                                       for j, kg in enumerate(tests)],
                                          f"U1: unseen synthetic KGs, seed {seeds[0]}"))


def _real_fold(scale: Scale, seed: int, k: int) -> tuple[int, str, dict]:
    """Fold ``k`` of one replicate of U2: pre-train on the other two KGs with seed + 10k and
    compare on the k-th. Returns (seed, target name, its row)."""
    from .pykeen_datasets import PYKEEN_KGS, load_pykeen_kg
    from .training import TrainConfig, pretrain

    budget = _real_budget(scale)
    target = PYKEEN_KGS[k]
    with torch_threads(1):
        sources = [load_pykeen_kg(n) for n in PYKEEN_KGS if n != target]
        cfg = TrainConfig(steps=budget.pretrain_steps, batch_size=budget.batch_size,
                          num_negatives=budget.num_negatives)
        model, _ = pretrain(sources, cfg, dim=budget.dim, num_layers=budget.layers,
                            seed=seed + 10 * k)
        row = _compare_on_target(load_pykeen_kg(target), model, budget, seed + 10 * k,
                                 lambda m: None)
    return seed, target, row


def _relation_graph_density() -> dict[str, float]:
    """How informative G_R can be on each KG: relation-graph edges over 4 R^2."""
    from .foundation_model import prepare_graph
    from .pykeen_datasets import PYKEEN_KGS, load_pykeen_kg

    density = {}
    for name in PYKEEN_KGS:
        data = prepare_graph(load_pykeen_kg(name))
        density[name] = data.relation_graph.edge_index.shape[1] / (4 * data.num_relations ** 2)
    return density


def _real_budget(scale: Scale) -> _Budget:
    """Small: 3 seeds x 3 folds must fit ~200 s of one core; 200 pre-training and 60
    fine-tuning steps took ~31 s per fold (Kinships target 37 s), and 120 / 40 still took
    221 s (user + sys, idle machine), so 100 / 35."""
    return sizes(
        scale,
        smoke=_Budget(dim=8, layers=2, pretrain_steps=15, finetune_steps=6, batch_size=4,
                      num_negatives=8, distmult_epochs=5, eval_triples=12),
        small=_Budget(dim=32, layers=4, pretrain_steps=100, finetune_steps=35, batch_size=8,
                      num_negatives=32, distmult_epochs=100, eval_triples=80))


@claim(
    rule=("nations_zero_shot_minus_random > 0 and kinships_zero_shot_minus_random > 0 and "
          "umls_zero_shot_minus_random > 0 and finetuned_minus_midpoint >= 0"),
    control="null_folds_passing < 3 and distmult_minus_random > 0",
    paper=("The paper reports nothing on Nations/Kinships/UMLS; only the direction is claimed "
           "(spec U2): zero-shot beats random init in every leave-one-out fold, and fine-tuning "
           "closes at least half of the gap between zero-shot and supervised DistMult (mean over "
           "folds). Paper, for reference: zero-shot MRR 0.395 vs 0.344 for the supervised state "
           "of the art of each graph, averaged over its benchmark KGs. Known contradiction: "
           "even the official ultra_3g weights (800k steps on FB15k-237/WN18RR/CoDEx-M) are "
           "at the level of untrained networks on Kinships zero-shot (80 test facts): MRR "
           "0.111 vs 0.205 for one random initialisation in the audit; 0.097 vs 0.072 "
           "(difference +0.025 [0.011, 0.039]) over three other initialisations and test "
           "subsamples in benchmarks/ultra_official.py, while untrained networks alone range "
           "0.02-0.2 there. Nations 0.461 vs 0.401, UMLS 0.220 vs 0.105 (same benchmark)."),
    paper_numbers={"mrr_zero_shot": 0.395, "mrr_supervised_sota": 0.344},
    against=("per fold, the same ULTRA randomly initialised (the pre-trained model's starting "
             "weights), and the midpoint of zero-shot and PyG DistMult trained on the target, "
             "on the same test facts; null arm: a second, independent random initialisation "
             "in zero-shot's place (same run)"),
    resources={"cpus": {"smoke": 1, "small": 2}},
)
def zero_shot_real(scale: Scale, seed: int, progress=None) -> Measurement:
    """Three-fold leave-one-out over the pykeen KGs (Nations, Kinships, UMLS): pre-train on two,
    zero-shot on the third, beside random init, DistMult, from-scratch and fine-tuned ULTRA.
    Replicated over seeds (1 at smoke, 3 at small; seed x fold tasks run 2 at a time): each
    fold's zero-shot minus random-init MRR is a paired t interval over seeds (same seed: same
    initial weights, same test facts), and the rule reads every fold's whole interval.

    This claim is an honest contradiction, not a bug to be tuned away: with the official
    released weights (``ultra_3g.pth``, pre-trained on three large KGs) zero-shot Kinships MRR
    is 0.111 against 0.205 for one randomly initialised network in the audit, and 0.097
    against 0.072 over three other initialisations in ``benchmarks/ultra_official.py`` (80
    test facts; +0.025 [0.011, 0.039]): the released model is at the level of untrained
    networks on Kinships (whose MRR varies from ~0.02 to ~0.2 with the initialisation), below
    one and barely above others. Our model, pre-trained a hundred steps on two small graphs,
    is no better than its own initialisation in any fold at small (3 seeds). Kinships' relation graph is nearly complete (density
    0.94 of the possible (r1, r2, interaction) edges), so G_R gives little to tell its
    relations apart, but Nations' is as dense (0.95) and transfers: why the released model
    loses on Kinships is not established here. A fold that loses is reported as measured, and
    the rule (the spec's, unchanged) then fails.

    Null arm (same run, same test facts): a second randomly initialised ULTRA (seed + 100003)
    put in zero-shot's place, ``{fold}_null_minus_random``: two untrained networks differ only by
    initialisation noise. ``null_folds_passing`` counts the folds where that null passes the
    rule's term (whole interval above 0; at one seed, the number above 0). Control: the null
    does not pass in all three folds (``null_folds_passing < 3``), and, as a positive control
    that the targets can be learned beyond the untrained network at this budget, supervised
    DistMult beats random init on the fold mean (``distmult_minus_random > 0``, paired over
    seeds). Either false: the test bed cannot tell, *inconclusive*."""
    from .pykeen_datasets import PYKEEN_KGS

    progress = progress or (lambda *a, **k: None)
    budget = _real_budget(scale)
    n_seeds = sizes(scale, smoke=1, small=3)
    n_jobs = sizes(scale, smoke=1, small=2)
    t0 = time.perf_counter()
    seeds = [seed + s for s in range(n_seeds)]
    progress(0.02, f"{n_seeds} seed(s) x 3 folds")
    # one task per (seed, fold): 9 tasks keep 2 workers busy where 3 seeds left one idle
    tasks = [(s, k) for s in seeds for k in range(len(PYKEEN_KGS))]
    if n_jobs == 1:
        done = [_real_fold(scale, s, k) for s, k in tasks]
    else:
        from joblib import Parallel, delayed

        done = []
        for out in Parallel(n_jobs=n_jobs, return_as="generator")(
                delayed(_real_fold)(scale, s, k) for s, k in tasks):
            done.append(out)
            progress(len(done) / len(tasks), f"seed {out[0]}, {out[1]} done")
    density = _relation_graph_density()
    reps = [{"seed": s, "rows": {t: row for s2, t, row in done if s2 == s}, "density": density}
            for s in seeds]
    metrics: dict = {}
    for m in _ARMS:
        for key in ("mrr", "hits10"):
            metrics[f"{key}_{m}"] = seed_metric(
                [sum(r["rows"][n][f"{key}_{m}"] for n in PYKEEN_KGS) / 3 for r in reps])
    for name in PYKEEN_KGS:
        zs = [r["rows"][name]["mrr_zero_shot"] for r in reps]
        rnd = [r["rows"][name]["mrr_random_init"] for r in reps]
        metrics[f"{name}_zero_shot_minus_random"] = seed_difference(zs, rnd)  # paired by seed
        for m in _ARMS:
            metrics[f"{name}_mrr_{m}"] = seed_metric([r["rows"][name][f"mrr_{m}"] for r in reps])
        metrics[f"{name}_n_unseen"] = reps[0]["rows"][name]["n_unseen"]
        metrics[f"{name}_relation_graph_density"] = reps[0]["density"][name]

    def fold_mean(rep, m):
        return sum(rep["rows"][n][f"mrr_{m}"] for n in PYKEEN_KGS) / 3

    metrics["finetuned_minus_midpoint"] = seed_metric(
        [fold_mean(r, "finetuned") - 0.5 * (fold_mean(r, "zero_shot") + fold_mean(r, "distmult"))
         for r in reps])
    metrics["finetuned_minus_scratch"] = seed_difference(
        [fold_mean(r, "finetuned") for r in reps], [fold_mean(r, "scratch") for r in reps])
    metrics["distmult_minus_random"] = seed_difference(  # positive control of the test bed
        [fold_mean(r, "distmult") for r in reps], [fold_mean(r, "random_init") for r in reps])
    passing = 0
    for name in PYKEEN_KGS:  # null arm: a second untrained network in zero-shot's place
        null = seed_difference([r["rows"][name]["mrr_second_init"] for r in reps],
                               [r["rows"][name]["mrr_random_init"] for r in reps])
        metrics[f"{name}_null_minus_random"] = null
        passing += int((null.low if isinstance(null, Estimate) else null) > 0)
    metrics["null_folds_passing"] = passing
    metrics["min_zero_shot_minus_random"] = min(  # of the seed means; diagnostic
        sum(r["rows"][n]["mrr_zero_shot"] - r["rows"][n]["mrr_random_init"] for r in reps)
        / n_seeds for n in PYKEEN_KGS)
    metrics["n_seeds"] = n_seeds
    metrics["wall_s"] = time.perf_counter() - t0
    table = [{"seed": r["seed"], "target": name,
              "pretrained_on": "+".join(n for n in PYKEEN_KGS if n != name),
              **{m: round(r["rows"][name][f"mrr_{m}"], 4) for m in _METHODS},
              **{f"hits10_{m}": round(r["rows"][name][f"hits10_{m}"], 4) for m in _METHODS}}
             for r in reps for name in PYKEEN_KGS]
    notes = (f"{n_seeds} seed(s) (seed, seed+1, ...; fold k of seed s uses s + 10k). Leave-one-"
             f"out over pykeen's shipped KGs (read offline). Per fold: pre-train "
             f"{budget.pretrain_steps} steps on the other two (d={budget.dim}, "
             f"{budget.layers}+{budget.layers} layers, batch {budget.batch_size}, "
             f"K={budget.num_negatives}); fine-tune / from scratch {budget.finetune_steps} "
             f"steps; DistMult (PyG, d=64, {budget.distmult_epochs} epochs). Filtered MRR, both "
             f"directions, on a fixed subsample of {budget.eval_triples} test facts per target, "
             f"the same for every method. Intervals: 95% paired t over seeds (n=3 gives "
             f"t = 4.3, so a fold must win clearly on every seed to hold). *_n_unseen counts "
             f"evaluated facts with an entity or relation absent from the target's training "
             f"facts. Two source graphs and a few hundred steps are far from "
             f"the paper's 800k steps on FB15k-237/WN18RR/CoDEx-M. *_relation_graph_density is the "
             f"fraction of possible (r1, r2, interaction) edges present in G_R: near 1 the "
             f"relation graph is almost complete and can barely tell relations apart.")
    first = reps[0]["rows"]
    return Measurement(metrics=metrics, tables={"leave_one_out": table}, notes=notes,
                       figure=_bar_figure([first[n] for n in PYKEEN_KGS], list(PYKEEN_KGS),
                                          f"U2: leave-one-out (pykeen), seed {seeds[0]}"))
