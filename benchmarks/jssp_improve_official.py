"""L2S's released policy beside ours: the official checkpoint (zcaicaros/L2S, ``saved_model/``)
loaded by ``L2SPolicy.from_official``, run through our ``improve()`` on the same held-out random
instances as the ``learned_vs_random_moves`` claim, beside our small trained policy (the claim's
small training setting), random N5 moves, greedy best-improvement N5 and the FDD/MWKR rule.

The checkpoint is not shipped (nor downloaded): pass the file. From the repository root::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/jssp_improve_official.py \\
        'PATH/incumbent_10x10[1,99]_fdd-divide-mwkr_yaoxin_1_128_4_4_gin+dghan_1_0.0_5e-05_10_500_64_128000_10.pth'

Options: ``--instances 20 --size 10 --horizon 200 --seeds 3 --seed 0`` (the claim's small test
set for ``--seed 0``), ``--episodes 25`` (our training; 0 skips it), ``--heads 2`` for the
two-head files, ``--cp-sat 10`` to add gaps against CP-SAT (seconds per instance, 1 worker).
It prints, per method, the mean best makespan per rollout seed, their mean, the gap to CP-SAT
when asked, the entropy ratio of the policies' move distributions on the start states (1 =
uniform) and the CPU seconds. Nothing here is a claim: it shows what the released model does
before a small CPU-trained one is judged.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch


def main() -> None:
    from iclr24.papers.jssp_improve import (
        L2SPolicy,
        ReinforceConfig,
        cp_sat_solve,
        dispatch,
        greedy_n5_search,
        improve,
        move_entropy_ratio,
        random_instance,
        random_n5_search,
        train_n_step_reinforce,
    )

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint", help="an official saved_model/*.pth file (gin+dghan)")
    ap.add_argument("--instances", type=int, default=20)
    ap.add_argument("--size", type=int, default=10)
    ap.add_argument("--horizon", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--episodes", type=int, default=25)
    ap.add_argument("--heads", type=int, default=1)
    ap.add_argument("--cp-sat", type=float, default=0.0)
    args = ap.parse_args()
    torch.set_num_threads(1)

    rng = np.random.default_rng(10_000 + args.seed)  # the claim's held-out instances
    tests = [random_instance(args.size, args.size, seed=rng) for _ in range(args.instances)]
    official = L2SPolicy.from_official(args.checkpoint, heads=args.heads)
    ref = None
    if args.cp_sat > 0:
        ref = np.array([cp_sat_solve(x, args.cp_sat, seed=args.seed)[1] for x in tests], float)

    rows: dict[str, tuple[list[float], float, float]] = {}

    def record(name: str, runs: list[list[float]], cpu: float, entropy: float = float("nan")):
        rows[name] = ([float(np.mean(r)) for r in runs], cpu, entropy)
        if ref is not None:
            gaps = [float(np.mean((np.asarray(r) - ref) / ref)) for r in runs]
            rows[name] = rows[name] + (gaps,)

    t0 = time.process_time()
    record("FDD/MWKR rule", [[dispatch(x, "fdd_mwkr").makespan() for x in tests]],
           time.process_time() - t0)
    t0 = time.process_time()
    record("greedy N5", [[c for _, c, _ in greedy_n5_search(tests, args.horizon)]],
           time.process_time() - t0)
    seeds = [args.seed * 1000 + i for i in range(args.seeds)]
    t0 = time.process_time()
    record("random N5", [[c for _, c in random_n5_search(tests, args.horizon, seed=s)]
                         for s in seeds], time.process_time() - t0, 1.0)
    t0 = time.process_time()
    record("official L2S checkpoint", [[c for _, c in improve(tests, official, args.horizon,
                                                              seed=s)] for s in seeds],
           time.process_time() - t0, move_entropy_ratio(official, tests))
    if args.episodes > 0:
        cfg = ReinforceConfig(n_jobs=6, n_machines=6, batch_size=16, horizon=64, n_step=8,
                              episodes=args.episodes)
        runs, ents, cpu = [], [], 0.0
        for s in seeds:
            torch.manual_seed(s)
            ours = L2SPolicy(hidden=64, gin_layers=3, gat_layers=3, heads=1, policy_layers=3)
            t0 = time.process_time()
            train_n_step_reinforce(ours, cfg, seed=s)
            runs.append([c for _, c in improve(tests, ours, args.horizon, seed=s)])
            cpu += time.process_time() - t0
            ents.append(move_entropy_ratio(ours, tests))
        record(f"ours, trained {cfg.episodes * (cfg.horizon // cfg.n_step)} updates (6x6)", runs,
               cpu, float(np.mean(ents)))

    print(f"{args.instances} random {args.size}x{args.size} instances (seed {args.seed}), "
          f"horizon {args.horizon}, all from the FDD/MWKR schedule; one thread")
    head = f"{'method':44s} {'makespan per seed':28s} {'mean':>7s} {'entropy':>8s} {'cpu s':>7s}"
    print(head + ("  gap to CP-SAT" if ref is not None else ""))
    for name, row in rows.items():
        per_seed, cpu, ent = row[:3]
        line = (f"{name:44s} {' / '.join(f'{v:.1f}' for v in per_seed):28s} "
                f"{np.mean(per_seed):7.1f} {ent:8.4f} {cpu:7.1f}")
        if ref is not None:
            line += "  " + " / ".join(f"{100 * g:.2f}%" for g in row[3])
        print(line)
    rand = np.mean(rows["random N5"][0])
    print(f"official / random N5 mean makespan: {np.mean(rows['official L2S checkpoint'][0]) / rand:.4f}")


if __name__ == "__main__":
    main()
