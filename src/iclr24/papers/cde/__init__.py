"""Learning from Sparse Offline Datasets via Conservative Density Estimation (Cen, Liu, Wang,
Yao, Lam, Zhao; ICLR 2024, arXiv 2401.08819; official code czp16/cde-offline-rl).

CDE is a DICE-style offline RL method: it optimises the policy's state-action occupancy under
an f-divergence to a *mixture* of the data occupancy and an out-of-distribution (OOD) action
distribution, and caps the density ratio on the OOD part at a small ε̃, which makes pessimism
explicit in occupancy space and bounds the concentrability. It targets sparse rewards and very
small datasets.

How the code maps to the paper:
- :mod:`.divergence`: :func:`soft_chi2` (the soft-χ² f, f', (f')⁻¹, f∘(f')⁻¹, log (f')⁻¹);
- :mod:`.losses`: the V-loss (dual of the regularised LP) with its normaliser λ, the OOD
  penalty of the E-step;
- :mod:`.cde`: :class:`CDEConfig` (official maze2d defaults), :class:`CDE` (``fit`` runs the four
  official steps: V, E, behaviour policy, I-projection policy extraction; ``act``);
- :mod:`.dataset`: :class:`OfflineDataset` (D4RL-style columns with episode starts) and
  trajectory-wise sub-sampling (the ``dataset_ratio`` experiments);
- :mod:`.maze`: :class:`PointUMaze` (a gymnasium environment), the scripted expert and the
  noisy waypoint-controller dataset (a stand-in for D4RL maze2d-umaze);
- :mod:`.baselines`: in-house :class:`BC` (also filtered BC on successful episodes), :class:`CQL`, :class:`IQL` (d3rlpy cannot be installed
  beside gymnasium 1.4); the OptiDICE-style arm is ``CDE`` with ζ = 1 and weighted-BC extraction;
- :mod:`.tabular`: gridworld known-answer checks of the V-step against SciPy's dual optimum and
  of the OOD cap of the E-step, and the exact value of the policy a ratio w defines.

Out of reach here: D4RL (maze2d, Adroit, MuJoCo locomotion) needs MuJoCo and a dataset download,
and the paper's 100k-step, 256-unit runs do not fit the CPU budget; the claims use PointUMaze,
64-unit networks and a few thousand gradient steps.
"""

from .baselines import BC, CQL, IQL
from .cde import CDE, CDEConfig, TanhMixturePolicy
from .dataset import OfflineDataset
from .divergence import SoftChi2, soft_chi2
from .losses import eta_loss, ood_penalty, v_loss
from .maze import PointUMaze, expert_action, noisy_controller_dataset, rollout_returns
from .tabular import (
                      TabularMDP,
                      dual_objective,
                      gridworld_mdp,
                      policy_value,
                      ratio_policy,
                      sample_transitions,
                      solve_dual,
                      support_optimal_policy,
                      tabular_e_step,
                      tabular_v_step,
)

__all__ = [
    "BC",
    "CDE",
    "CQL",
    "IQL",
    "CDEConfig",
    "OfflineDataset",
    "PointUMaze",
    "SoftChi2",
    "TabularMDP",
    "TanhMixturePolicy",
    "dual_objective",
    "eta_loss",
    "expert_action",
    "gridworld_mdp",
    "noisy_controller_dataset",
    "ood_penalty",
    "policy_value",
    "ratio_policy",
    "rollout_returns",
    "sample_transitions",
    "soft_chi2",
    "solve_dual",
    "support_optimal_policy",
    "tabular_e_step",
    "tabular_v_step",
    "v_loss",
]
