"""Reinforcement-learning kit: replay buffer, MLPs, tanh-Gaussian actor, a compact SAC, the
evaluation loop and PPO's generic pieces.

For the papers that learn policies (cde, coplanner, gapn; the red-teaming paper reuses the PPO
pieces):

- ``buffer.py``: ``TransitionBuffer`` (ring buffer, seeded uniform sampling, ``Batch``).
- ``networks.py``: ``mlp``, ``QNetwork``, ``TanhGaussianActor`` (CleanRL's log-std squashing and
  the tanh change-of-variables log-probability).
- ``sac.py``: ``SAC`` (twin critics, Polyak targets, auto-tuned entropy; CleanRL defaults),
  ``SACConfig``, ``train_sac`` (online loop on a gymnasium Box-action environment).
- ``evaluation.py``: ``evaluate_policy`` (separate environment instance, seeded episodes) and
  ``normalized_score`` (D4RL's 0-100 scale).
- ``ppo.py``: ``gae``, ``clipped_policy_loss``, ``clipped_value_loss``.

Environments written for a paper live in that paper's folder and pass gymnasium's
``check_env``. gymnasium is imported only where an environment is used.
"""

from .buffer import Batch, TransitionBuffer
from .evaluation import evaluate_policy, normalized_score
from .networks import QNetwork, TanhGaussianActor, mlp
from .ppo import clipped_policy_loss, clipped_value_loss, gae
from .sac import SAC, SACConfig, SACRun, train_sac

__all__ = [
    "SAC",
    "Batch",
    "QNetwork",
    "SACConfig",
    "SACRun",
    "TanhGaussianActor",
    "TransitionBuffer",
    "clipped_policy_loss",
    "clipped_value_loss",
    "evaluate_policy",
    "gae",
    "mlp",
    "normalized_score",
    "train_sac",
]
