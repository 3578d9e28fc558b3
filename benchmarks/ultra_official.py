"""Zero-shot MRR of the official released ULTRA weights beside our own trained model.

The official repository (DeepGraphLearning/ULTRA) ships ``ckpts/ultra_3g.pth`` (pre-trained
800k steps on FB15k-237 + WN18RR + CoDEx-M), ``ultra_4g.pth`` and ``ultra_50g.pth``. None of
them is shipped here and nothing is downloaded: pass a local copy. For each of pykeen's
Nations, Kinships and UMLS (offline, none of them in the official pre-training mixtures of
``ultra_3g``/``ultra_4g``), on the same fixed subsample of test facts, the script prints the
filtered MRR and Hits@10 (both directions, pessimistic ties as in the official code) of

* ``official``        the released weights, zero-shot (``Ultra.from_official``, d = 64, 6 + 6);
* ``official_init``   the same architecture randomly initialised (its null arm);
* ``ours``            ULTRA pre-trained by this package on the two other graphs (the
                      ``zero_shot_real`` claim's small budget by default), zero-shot;
* ``ours_init``       our model's own starting weights (its null arm).

Usage (from the repository root)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/ultra_official.py /path/to/ultra_3g.pth \\
        [--test-facts 80] [--seeds 0 1 2] [--pretrain-steps 100]

Replicates over ``--seeds`` (the test-fact subsample, the random initialisations and our
pre-training change with the seed; the official weights do not) and prints each seed's row and
the mean with a 95% t interval.
"""

from __future__ import annotations

import argparse
import time
import warnings

import torch

from iclr24.kits.statistics import mean_interval
from iclr24.kits.threads import torch_threads
from iclr24.papers.ultra import (
    PYKEEN_KGS,
    TrainConfig,
    Ultra,
    evaluate,
    load_pykeen_kg,
    prepare_graph,
    pretrain,
)

ARMS = ("official", "official_init", "ours", "ours_init")


def run_seed(official: Ultra, seed: int, test_facts: int, pretrain_steps: int, dim: int,
             layers: int) -> dict[str, dict[str, dict[str, float]]]:
    """{target: {arm: {"mrr", "hits@10"}}} for one seed."""
    graphs = {name: load_pykeen_kg(name) for name in PYKEEN_KGS}
    out: dict[str, dict[str, dict[str, float]]] = {}
    for k, name in enumerate(PYKEEN_KGS):
        target = graphs[name]
        gen = torch.Generator().manual_seed(seed + 10 * k)
        test = target.test[torch.randperm(len(target.test), generator=gen)[:test_facts]]
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed + 10 * k)
            official_init = Ultra(official.dim, official.num_layers)
            ours_init = Ultra(dim, layers)  # the starting weights pretrain() draws below
        cfg = TrainConfig(steps=pretrain_steps, batch_size=8, num_negatives=32)
        ours, _ = pretrain([graphs[n] for n in PYKEEN_KGS if n != name], cfg, dim=dim,
                           num_layers=layers, seed=seed + 10 * k)
        data = prepare_graph(target)
        out[name] = {}
        for arm, model in zip(ARMS, (official, official_init, ours, ours_init)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                metrics = evaluate(model, target, triples=test, data=data)
            out[name][arm] = {"mrr": metrics["mrr"], "hits@10": metrics["hits@10"]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", help="local path of ultra_3g.pth / ultra_4g.pth")
    parser.add_argument("--test-facts", type=int, default=80)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--pretrain-steps", type=int, default=100)
    parser.add_argument("--dim", type=int, default=32)
    parser.add_argument("--layers", type=int, default=4)
    args = parser.parse_args()

    official = Ultra.from_official(args.checkpoint)
    rows = []
    with torch_threads(1):
        for seed in args.seeds:
            t0 = time.process_time()
            res = run_seed(official, seed, args.test_facts, args.pretrain_steps, args.dim,
                           args.layers)
            rows.append(res)
            print(f"seed {seed} ({time.process_time() - t0:.0f} s CPU)")
            for name in PYKEEN_KGS:
                cells = "  ".join(f"{arm} {res[name][arm]['mrr']:.3f}" for arm in ARMS)
                print(f"  {name:9s} MRR  {cells}")
    print(f"\nMean filtered MRR over {len(rows)} seed(s), {args.test_facts} test facts per "
          "graph, both directions (95% t interval where >= 2 seeds):")
    print(f"{'target':9s} " + " ".join(f"{arm:>22s}" for arm in ARMS)
          + f" {'official - init':>22s}")
    for name in PYKEEN_KGS:
        cells = []
        series = {arm: [r[name][arm]["mrr"] for r in rows] for arm in ARMS}
        series["diff"] = [a - b for a, b in zip(series["official"], series["official_init"])]
        for key in ARMS + ("diff",):
            mean, low, high = mean_interval(series[key], 0.95)  # low = high for one seed
            cells.append(f"{mean:7.3f} [{low:6.3f},{high:6.3f}]")
        print(f"{name:9s} " + " ".join(f"{c:>22s}" for c in cells))


if __name__ == "__main__":
    main()
