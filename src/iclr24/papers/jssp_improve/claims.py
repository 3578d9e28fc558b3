"""L2S claims: the batched evaluator is exact and faster than one-by-one CPM (Sec. 4.3), and
learned N5 moves beat random N5 moves at an equal step budget (Sec. 5, Tables 1-3).

Each claim measures its null arms in the same run and states in ``control`` what the test bed
must show: ``evaluator_exact`` checks two deliberately wrong evaluators against the same
references (they must be caught); ``learned_vs_random_moves`` requires the trained policy to be
measurably non-uniform (else it *is* the random-N5 null) and a random-vs-random comparison not
to pass its rule."""

from __future__ import annotations

import time

import numpy as np

from iclr24.claims import Estimate, Measurement, Scale, claim, seed_difference, seed_metric, sizes

_TIMING_REPEATS = 5  # interleaved timing repeats of evaluator_exact (an interval over them)


def _truncated_makespans(batch, sweeps: int):
    """Null evaluator (a plausible bug): est(v) = max_u est(u) + p(u) iterated a fixed number of
    ``sweeps`` with no resolved mask, i.e. exact only for paths of at most ``sweeps`` arcs.
    Returns est (N,) and the makespans (G,)."""
    import torch

    from .evaluator import MaxPlusPass

    forward = MaxPlusPass("source_to_target")
    p = batch.dur.to(torch.float64).unsqueeze(1)
    est = torch.zeros_like(p)
    for _ in range(sweeps):
        est = forward(est + p, batch.edge_index)  # est(v) = max_u est(u) + p(u)
    est = est[:, 0]
    return est, est[batch.ptr[1:] - 1]


def _job_arcs_only(batch):
    """Null evaluator: the exact evaluator on the graph without its machine arcs (the schedule
    ignored: every job alone on its machines). Returns est, lst (N,) and makespans (G,)."""
    from .evaluator import batched_times

    relaxed = batch.clone()
    relaxed.edge_index = batch.edge_index_job
    return batched_times(relaxed)


@claim(
    rule={"smoke": "makespan_mismatches == 0 and est_max_err == 0 and lst_max_err == 0 "
                   "and cpsat_max_err == 0",
          "small": "makespan_mismatches == 0 and est_max_err == 0 and lst_max_err == 0 "
                   "and cpsat_max_err == 0 and speedup > 1"},
    control="null_truncated_mismatches > 0 and null_job_arcs_mismatches > 0 "
            "and null_job_arcs_cpsat_max_err > 0",
    paper="Sec. 4.3 / Fig. 4: the message-passing evaluator computes the same start times as the "
          "critical path method (CPM) and, run on a batch of schedules (GPU), is much faster "
          "than CPM one schedule at a time; the official script checks that it reproduces the "
          "OR-Tools makespans of 1000 10x10 instances exactly.",
    against=("networkx longest path and per-schedule CPM (exactness and timing); CP-SAT's "
             "objective on its own schedules; null arms: two deliberately wrong evaluators (a "
             "fixed number of max-plus sweeps without the resolved mask, and the exact evaluator "
             "with the machine arcs dropped) checked against the same references"),
    resources={"cpus": 1},
)
def evaluator_exact(scale: Scale, seed: int, progress=None) -> Measurement:
    """Random feasible schedules (random priority dispatching) of random instances (smoke: 16 of
    6x6, small: 256 of 10x10). Exactness: batched makespans vs ``networkx.dag_longest_path_length``
    (arc weight = processing time of the tail), est / lst vs a per-schedule CPM (networkx
    topological order + Python passes, the official ``CPM_batch_G``); CP-SAT schedules (smoke 4,
    small 8 instances, 30 s each) re-evaluated by the batched evaluator vs CP-SAT's objective
    (optimal or best found; ``cpsat_all_optimal`` says whether all were proven optimal, which
    depends on the machine's speed, and is reported, not judged). Timing (single thread, process
    time, 5 interleaved repeats): one batched call over all schedules vs the CPM loop;
    ``speedup`` = CPM / batched per repeat, mean with a t interval over the repeats, judged at small only (16 graphs of 38 nodes are too few for
    batching to pay). ``speedup_vs_unbatched`` (reported, not judged): the same evaluator called
    once per schedule / one batched call, i.e. what batching itself buys.

    Null arms, measured in the same run against the same references: (1) a truncated evaluator,
    m + 1 max-plus sweeps (as many as a job chain S -> O_1 .. O_m -> T has arcs) and no resolved
    mask, the bug the mask prevents; (2) the exact evaluator on the job arcs alone (machine
    arcs dropped, so the makespan is the longest job). Control, written before the run: both nulls
    must be caught (``null_*_mismatches > 0``, and the job-arcs null's CP-SAT error > 0), else the
    references cannot tell a wrong evaluator from a right one and the verdict is inconclusive."""
    import networkx as nx

    from iclr24.kits.threads import torch_threads

    from .baselines import cp_sat_solve, cpm_times
    from .dispatch import dispatch
    from .evaluator import batched_times
    from .instance import random_instance
    from .schedule import schedule_batch

    progress = progress or (lambda *a, **k: None)
    n_inst, size, n_cp = sizes(scale, smoke=(16, 6, 4), small=(256, 10, 8), full=(1000, 10, 32))
    rng = np.random.default_rng(seed)
    insts = [random_instance(size, size, seed=rng) for _ in range(n_inst)]
    scheds = [dispatch(x, "random", seed=rng) for x in insts]
    with torch_threads(1):
        batch = schedule_batch(scheds)
        est, lst, cmax = batched_times(batch)
        t_est, t_cmax = _truncated_makespans(batch, size + 1)
        j_est, j_lst, j_cmax = _job_arcs_only(batch)
        ptr = batch.ptr.tolist()
        mism, est_err, lst_err = 0, 0.0, 0.0
        t_mism, t_est_err, j_mism, j_est_err, j_lst_err = 0, 0.0, 0, 0.0, 0.0
        for g, s in enumerate(scheds):
            ej, em = s.edges()
            p = s.instance.node_durations()
            arcs = np.concatenate([ej, em], axis=1).T
            graph = nx.DiGraph()
            graph.add_weighted_edges_from((int(u), int(v), int(p[u])) for u, v in arcs)
            ref = nx.dag_longest_path_length(graph)
            mism += int(ref != float(cmax[g]))
            t_mism += int(ref != float(t_cmax[g]))
            j_mism += int(ref != float(j_cmax[g]))
            e_ref, l_ref, _ = cpm_times(s)
            part = slice(ptr[g], ptr[g + 1])

            def err(x, r, part=part):
                return float(np.abs(x[part].numpy() - r).max())

            est_err, lst_err = max(est_err, err(est, e_ref)), max(lst_err, err(lst, l_ref))
            t_est_err = max(t_est_err, err(t_est, e_ref))
            j_est_err = max(j_est_err, err(j_est, e_ref))
            j_lst_err = max(j_lst_err, err(j_lst, l_ref))
        progress(0.4, "exactness checked")
        cp_rows, cp_err, t_cp_err, j_cp_err = [], 0.0, 0.0, 0.0
        for x in insts[:n_cp]:
            sched, obj, optimal = cp_sat_solve(x, time_limit=30.0, seed=seed)
            one = schedule_batch([sched])
            _, _, c_re = batched_times(one)
            c_trunc = float(_truncated_makespans(one, size + 1)[1][0])
            c_jobs = float(_job_arcs_only(one)[2][0])
            cp_err = max(cp_err, abs(float(c_re[0]) - obj))
            t_cp_err, j_cp_err = max(t_cp_err, abs(c_trunc - obj)), max(j_cp_err, abs(c_jobs - obj))
            cp_rows.append({"instance": x.name, "cpsat_objective": obj, "optimal": optimal,
                            "reevaluated_makespan": float(c_re[0]),
                            "null_truncated_makespan": c_trunc, "null_job_arcs_makespan": c_jobs})
        progress(0.6, "CP-SAT schedules re-evaluated")
        t_batch, t_cpm, t_single = [], [], []
        for _ in range(_TIMING_REPEATS):  # interleaved repeats
            t0 = time.process_time()
            batched_times(schedule_batch(scheds))
            t_batch.append(time.process_time() - t0)
            t0 = time.process_time()
            for s in scheds:
                cpm_times(s)
            t_cpm.append(time.process_time() - t0)
            t0 = time.process_time()
            for s in scheds:
                batched_times(schedule_batch([s]))
            t_single.append(time.process_time() - t0)
    tb, tc, ts = (float(np.median(t)) for t in (t_batch, t_cpm, t_single))
    # speed-up per interleaved repeat (CPM / batched over the same schedules), mean with a
    # t interval over the repeats: the rule's `speedup > 1` reads the whole interval
    speedups = [c / b for c, b in zip(t_cpm, t_batch)]
    metrics = {
        "makespan_mismatches": mism, "est_max_err": est_err, "lst_max_err": lst_err,
        "cpsat_max_err": cp_err,
        "cpsat_all_optimal": float(all(r["optimal"] for r in cp_rows)),
        "speedup": seed_metric(speedups), "speedup_vs_unbatched": ts / tb,
        "batched_ms_per_schedule": 1e3 * tb / n_inst, "cpm_ms_per_schedule": 1e3 * tc / n_inst,
        "null_truncated_mismatches": t_mism, "null_truncated_est_max_err": t_est_err,
        "null_truncated_cpsat_max_err": t_cp_err,
        "null_job_arcs_mismatches": j_mism, "null_job_arcs_est_max_err": j_est_err,
        "null_job_arcs_lst_max_err": j_lst_err, "null_job_arcs_cpsat_max_err": j_cp_err,
    }
    return Measurement(
        metrics=metrics, tables={"cp_sat": cp_rows},
        notes=f"{n_inst} random {size}x{size} schedules, one batched call of {batch.num_nodes} "
              f"nodes; CPU, one thread (the paper times a GPU). Batched includes building the "
              f"batch from machine orders; CPM includes building the networkx graph. Null "
              f"evaluators caught on {t_mism}/{n_inst} (truncated, {size + 1} sweeps) and "
              f"{j_mism}/{n_inst} (job arcs only) schedules.")


ENTROPY_LEVEL = 0.95  # fixed before any run: the policy must be at least 5% below uniform


def _bounds(x) -> tuple[float, float]:
    return (x.low, x.high) if isinstance(x, Estimate) else (float(x), float(x))


def _test_bed_can_tell(metrics) -> bool | None:
    """l2s_entropy_ratio < 0.95 (whole interval: training moved the policy away from the uniform
    random-N5 policy) and the random-vs-random null does not pass the rule (the lower end of
    random_vs_random_gain <= 0)."""
    e_low, e_high = _bounds(metrics["l2s_entropy_ratio"])
    moved = True if e_high < ENTROPY_LEVEL else False if e_low >= ENTROPY_LEVEL else None
    null_passes = _bounds(metrics["random_vs_random_gain"])[0] > 0
    if null_passes or moved is False:
        return False
    return moved


@claim(
    rule="gain_vs_random > 0",
    control=_test_bed_can_tell,
    paper="Tables 1-3: trained on 10x10, L2S beats hand-crafted N5 improvement heuristics "
          "(random, greedy/best-improvement, first-improvement) at equal numbers of steps and "
          "the DRL construction methods by a large margin; e.g. on Taillard 15x15 the gap to the "
          "best known is 9.3% at T=500 vs 2.6% at T=5000 (L2S), against ~26% for L2D.",
    paper_numbers={},
    against=("random N5 moves, same start, budget and seed (the null arm; a second random-N5 "
             "run with other seeds is the random-vs-random null of the rule); greedy N5 and the "
             "FDD/MWKR rule reported; CP-SAT as gap reference"),
    resources={"cpus": 1},
)
def learned_vs_random_moves(scale: Scale, seed: int, progress=None) -> Measurement:
    """Per seed s (3 at small, 2 at smoke): train a small L2S (hidden 64, 3 GIN + 3 GAT layers,
    1 head, 3 policy blocks) by n-step REINFORCE on random 6x6 instances (batch 16, episodes of
    64 steps, update every 8 steps; small 25 episodes = 200 updates, smoke 1 episode of 8 steps
    = 1 update) at the paper's Adam lr 5e-5, then improve the same held-out random 10x10
    instances (small 20, smoke 4 of 6x6) for 200 steps (smoke 20) from the FDD/MWKR schedule,
    sampling moves (BatchNorm on the batch's statistics, as the official test script); random N5
    with the same budget and seed; greedy best-improvement N5 (deterministic); the rule alone.
    Gap = (C - C_ref) / C_ref with C_ref the CP-SAT objective (10 s, 1 worker; the fraction
    proven optimal is reported). Rule (the paper's terms, unchanged): ``gain_vs_random`` = mean
    gap(random N5) - mean gap(L2S), paired over seeds, > 0 over its whole interval.

    The budget is the test bed's weak point: the paper makes ~10^5 updates (2,000 batches x 50),
    this claim 200 (15 before this repair; 25 episodes is what the CPU budget of ``small``
    allows, chosen from a CPU-time profile, not from results). At lr 5e-5 that few updates left
    the policy almost uniform (entropy ratio 0.9997 after 120), i.e. it *was* random N5 and
    the rule compared random N5 with itself; a first run at lr 1e-3 collapsed the policy to
    near-determinism within 48 updates and was worse than random N5. The lr stays the paper's.
    Control (written before the run; :func:`_test_bed_can_tell`): (1) the trained policy has
    moved away from uniform, ``l2s_entropy_ratio`` (mean over the test start states of
    H(pi) / log |N5|, see :func:`~.training.move_entropy_ratio`) below 0.95 over its whole
    interval; (2) the random-vs-random null, ``random_vs_random_gain`` = gap(random N5, seed s)
    - gap(random N5, seed s + 500) paired over seeds, does not pass the rule. Otherwise the
    verdict is "the test bed cannot tell". ``untrained_entropy_ratio`` is the same ratio of the
    freshly initialised networks (reported). The released 10x10 checkpoint is compared in
    ``benchmarks/jssp_improve_official.py`` instead (the file is not shipped, so it cannot be
    part of a claim's evidence, and a result must not depend on an environment variable): on
    this claim's small test set (seed 0, 3 rollout seeds) it reached mean makespan 861.0 against
    876.1 for random N5 (gap to CP-SAT 5.2% vs 7.1%) with entropy ratio 0.35, while our policy
    after 200 updates had ratio 0.996 and 874.7, i.e. the effect exists on this test bed and
    the control's level separates the two policies."""
    import torch

    from iclr24.kits.threads import torch_threads

    from .baselines import cp_sat_solve, greedy_n5_search, random_n5_search
    from .dispatch import dispatch
    from .instance import random_instance
    from .policy import L2SPolicy
    from .training import ReinforceConfig, improve, move_entropy_ratio, train_n_step_reinforce

    progress = progress or (lambda *a, **k: None)
    n_seeds = sizes(scale, smoke=2, small=3, full=5)
    n_test, test_size, horizon = sizes(scale, smoke=(4, 6, 20), small=(20, 10, 200),
                                       full=(50, 10, 500))
    cfg = sizes(scale,
                smoke=ReinforceConfig(n_jobs=6, n_machines=6, batch_size=4, horizon=8, n_step=8,
                                      episodes=1),
                small=ReinforceConfig(n_jobs=6, n_machines=6, batch_size=16, horizon=64,
                                      n_step=8, episodes=25),
                full=ReinforceConfig(n_jobs=10, n_machines=10, batch_size=64, horizon=500,
                                     n_step=10, episodes=200, lr=5e-5))
    rng = np.random.default_rng(10_000 + seed)
    tests = [random_instance(test_size, test_size, seed=rng) for _ in range(n_test)]
    with torch_threads(1):
        t0 = time.process_time()
        ref, optimal = [], []
        for x in tests:
            _, obj, opt = cp_sat_solve(x, time_limit=10.0, seed=seed)
            ref.append(obj)
            optimal.append(opt)
        ref = np.array(ref, dtype=np.float64)
        t_cp = time.process_time() - t0
        progress(0.1, "CP-SAT references")

        def gap(makespans) -> float:
            return float(np.mean((np.asarray(makespans, dtype=np.float64) - ref) / ref))

        gap_rule = gap([dispatch(x, "fdd_mwkr").makespan() for x in tests])
        t0 = time.process_time()
        greedy = greedy_n5_search(tests, horizon)
        t_greedy = time.process_time() - t0
        gap_greedy = gap([c for _, c, _ in greedy])
        greedy_moves = float(np.mean([k for _, _, k in greedy]))
        gaps_l2s, gaps_rand, gaps_rand2, rows, train_logs = [], [], [], [], []
        entropies, entropies0 = [], []
        t_train = t_l2s = t_rand = 0.0
        for i in range(n_seeds):
            s = seed * 1000 + i
            torch.manual_seed(s)
            policy = L2SPolicy(hidden=64, gin_layers=3, gat_layers=3, heads=1, policy_layers=3)
            entropies0.append(move_entropy_ratio(policy, tests))
            t0 = time.process_time()
            train_logs.append(train_n_step_reinforce(policy, cfg, seed=s))
            t_train += time.process_time() - t0
            entropies.append(move_entropy_ratio(policy, tests))
            t0 = time.process_time()
            g_l2s = gap([c for _, c in improve(tests, policy, horizon, seed=s)])
            t_l2s += time.process_time() - t0
            t0 = time.process_time()
            g_rand = gap([c for _, c in random_n5_search(tests, horizon, seed=s)])
            g_rand2 = gap([c for _, c in random_n5_search(tests, horizon, seed=s + 500)])
            t_rand += time.process_time() - t0
            gaps_l2s.append(g_l2s)
            gaps_rand.append(g_rand)
            gaps_rand2.append(g_rand2)
            rows.append({"seed": s, "gap_l2s": g_l2s, "gap_random_n5": g_rand,
                         "gap_random_n5_other_seed": g_rand2,
                         "l2s_entropy_ratio": entropies[-1],
                         "untrained_entropy_ratio": entropies0[-1],
                         "gap_greedy_n5": gap_greedy, "gap_rule": gap_rule,
                         "train_first_batch_incumbent": train_logs[-1][0],
                         "train_last_batch_incumbent": train_logs[-1][-1]})
            progress(0.1 + 0.9 * (i + 1) / n_seeds, f"seed {i + 1}/{n_seeds}")
    metrics = {
        "gain_vs_random": seed_difference(gaps_rand, gaps_l2s),
        "random_vs_random_gain": seed_difference(gaps_rand, gaps_rand2),
        "gain_vs_greedy": seed_metric([gap_greedy - g for g in gaps_l2s]),
        "gap_l2s": seed_metric(gaps_l2s), "gap_random_n5": seed_metric(gaps_rand),
        "gap_greedy_n5": gap_greedy, "gap_rule": gap_rule,
        "greedy_moves_before_local_optimum": greedy_moves,
        "l2s_entropy_ratio": seed_metric(entropies),
        "untrained_entropy_ratio": seed_metric(entropies0),
        "cpsat_optimal_fraction": float(np.mean(optimal)),
    }
    timing = [{"part": "cp_sat_reference", "cpu_s": t_cp}, {"part": "greedy_n5", "cpu_s": t_greedy},
              {"part": "l2s_training_all_seeds", "cpu_s": t_train},
              {"part": "l2s_rollouts_all_seeds", "cpu_s": t_l2s},
              {"part": "random_n5_two_runs_all_seeds", "cpu_s": t_rand}]
    return Measurement(
        metrics=metrics, figure=_gap_figure(gap_rule, gaps_rand, gap_greedy, gaps_l2s, horizon),
        tables={"gaps_per_seed": rows, "cpu_time": timing},
        notes=f"{n_test} held-out random {test_size}x{test_size} instances, horizon {horizon}, all "
              f"methods from the same FDD/MWKR schedule; gaps vs CP-SAT ({np.mean(optimal):.0%} "
              f"proven optimal). L2S trained {cfg.episodes} episodes x {cfg.horizon // cfg.n_step} "
              f"updates on {cfg.n_jobs}x{cfg.n_machines} per seed at lr {cfg.lr:g} (the paper: "
              f"2,000 x 50 on 10x10); policy entropy / max entropy on the test start states "
              f"{np.mean(entropies):.4f} trained, {np.mean(entropies0):.4f} untrained (control "
              f"level {ENTROPY_LEVEL}).")


def _gap_figure(rule: float, rand: list[float], greedy: float, l2s: list[float], horizon: int):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 3.2))
    ax = fig.add_subplot(1, 1, 1)
    names = ["FDD/MWKR", "random N5", "greedy N5", "L2S"]
    vals = [[rule], rand, [greedy], l2s]
    ax.bar(names, [100 * float(np.mean(v)) for v in vals], color=["0.6", "C0", "C1", "C2"])
    for k, v in enumerate(vals):
        ax.scatter([k] * len(v), [100 * g for g in v], color="k", s=10, zorder=3)
    ax.set_ylabel("mean gap to CP-SAT (%)")
    ax.set_title(f"horizon {horizon} (dots: seeds)")
    fig.tight_layout()
    return fig
