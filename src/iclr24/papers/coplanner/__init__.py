"""COPlanner: Plan to Roll Out Conservatively but to Explore Optimistically for Model-Based RL
(X. Wang, R. Zheng, Y. Sun, R. Jia, W. Wongkamjan, H. Xu, F. Huang; ICLR 2024; arXiv 2310.07220;
official code si0wang/COPlanner, MBPO variant built on mbrl-lib).

What the paper does. Dyna-style model-based RL (MBPO) trains a policy on rollouts of a learned
dynamics model; model errors mislead it. COPlanner adds one planner, Uncertainty-aware
Policy-guided MPC (UP-MPC): from N_c policy-sampled candidate actions it looks H steps ahead in
the learned ensemble and scores each by discounted predicted reward ± rate · discounted ensemble
uncertainty. With the minus sign it picks the actions of model rollouts (conservative: stay where
the model is reliable, fewer model errors reach the learner); with the plus sign it picks real
environment actions (optimistic: visit uncertain, rewarding states, which then shrinks the model
error there). Stored rewards are never penalised: uncertainty only steers which action is taken.

How the code maps to it.
- :mod:`.dynamics_model`: ``GaussianEnsemble`` (probabilistic MLP ensemble, Gaussian NLL,
  bootstrap, early stopping; ``sample`` -> next state (TS1), reward, uncertainty u).
- :mod:`.planner`: ``up_mpc_action`` / ``up_mpc_scores`` (UP-MPC, batched over states and
  candidates).
- :mod:`.mbpo`: ``COPlannerConfig`` (official defaults), ``MBPO`` (the MBPO loop with the two
  plug-ins; both off = the MBPO baseline), ``MBPOHistory``, ``RolloutBatch``,
  ``rollout_length`` (mbrl-lib's schedule). SAC, the buffers and evaluation come from
  ``iclr24.kits.reinforcement``.
- :mod:`.envs`: ``PendulumEnv`` (Pendulum-v1) and ``MountainCarEnv``
  (MountainCarContinuous-v0) as gymnasium environments, with their vectorised true dynamics
  (``pendulum_step``, ``mountaincar_step``) to measure model error, and termination rules.
- ``claims.py``: ``pendulum_efficiency`` (env steps to reach an eval return of −600,
  COPlanner vs MBPO), ``rollout_model_error`` (UP-MPC(−) rollouts vs policy rollouts and vs
  UP-MPC with α_c = 0 on the same model, error against the true dynamics),
  ``mountaincar_exploration`` (sparse reward: final return, judged only when the flag is
  reached in evaluation).

What is out of reach / scaled down. MuJoCo Gym, DeepMind Control (proprioceptive and visual) and
the DreamerV3 variant are out of reach on 2 CPU cores (paper: 0.2-1 M env steps, 10-20 SAC
updates per step, 7-member ensembles of 4 × 200 units); the claims use gymnasium classic control
with 5 × (3 × 64) ensembles, 2 × 64 SAC networks, a few thousand env steps, 1-2 SAC updates per
step and a short rollout schedule (length 1 -> 3 within the run). Differences in the model's
uncertainty (normalised units, shared sampling noise by default) are listed in
:mod:`.dynamics_model`.
"""

from .dynamics_model import GaussianEnsemble
from .envs import (
    MountainCarEnv,
    PendulumEnv,
    mountaincar_step,
    mountaincar_termination,
    pendulum_step,
    pendulum_termination,
)
from .mbpo import MBPO, COPlannerConfig, MBPOHistory, RolloutBatch, rollout_length
from .planner import DynamicsModel, up_mpc_action, up_mpc_scores

__all__ = [
    "MBPO",
    "COPlannerConfig",
    "DynamicsModel",
    "GaussianEnsemble",
    "MBPOHistory",
    "MountainCarEnv",
    "PendulumEnv",
    "RolloutBatch",
    "mountaincar_step",
    "mountaincar_termination",
    "pendulum_step",
    "pendulum_termination",
    "rollout_length",
    "up_mpc_action",
    "up_mpc_scores",
]
