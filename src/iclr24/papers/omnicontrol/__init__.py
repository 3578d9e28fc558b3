"""OmniControl: Control Any Joint at Any Time for Human Motion Generation (Y. Xie, V. Jampani,
L. Zhong, D. Sun, H. Jiang; ICLR 2024; arXiv 2310.08580; official code neu-vi/OmniControl, built
on MDM).

What the paper does. A text-conditioned motion diffusion model (MDM, x_0 prediction) becomes
spatially controllable: the user gives global 3-D positions for any joints at any frames. Two
mechanisms: *spatial guidance* moves the posterior mean of every denoising step down the
gradient of sum ||c - R(mu)|| (R: relative representation -> global joints, differentiable),
scaled by the posterior variance; *realism guidance* is a ControlNet-like trainable copy of the
encoder that sees the hint and adds zero-initialised per-layer residuals to the frozen MDM.

How the code maps to it.
- :mod:`.motion`: :class:`MotionRepresentation` (HumanML3D-style relative features, ``to_global``
  = R, differentiable, and ``from_global``).
- :mod:`.spatial_guidance`: :class:`SpatialGuidance` (Eq. 4-5: per-joint L2, tau = 20 / max
  keyframes, variance floor 0.01, K = 10 / 500, first-frame gradient zeroed; the official
  training-time guidance of x_t), ``control_errors``, ``check_hint``.
- :mod:`.networks`: :class:`MotionDenoiser` (MDM), :class:`RealismBranch`,
  :class:`ControlledMDM`.
- :mod:`.training`: training of the base and of the branch, sampling through the shared
  diffusion kit (:class:`iclr24.kits.diffusion.GaussianDiffusion`, whose ``mean_hook`` is where
  spatial guidance edits the posterior mean), classifier-free guidance.
- :mod:`.control_signals`: hints from real motions, their normalised form for the branch.
- :mod:`.procedural_motions`: the six-class, six-joint procedural motion generator with known
  global joint positions; :mod:`.realism_metrics`: bone-length violation, controlled-joint
  jerk, Frechet distance.
- :mod:`.experiment`: the claims' setup; ``claims.py``: ``spatial_guidance_error`` and
  ``guidances_complementary``.

What is out of reach and differs. HumanML3D (AMASS + licence), CLIP text, the T2M evaluator
(FID, R-precision), SMPL (foot skating) are unavailable offline: motions are procedural (class
labels for text), realism is measured by bone-length violation and the jerk of the
controlled joints (a Frechet distance of speed/acceleration statistics is reported, not judged:
at this scale it is dominated by the base model's mismatch to real motion, issue 38). Foot
skating is not used: the procedural feet slide in the real motions too. The claims' model is
tiny (d = 64, 2 layers vs 512, 8; the classes default to d = 128, 4 layers), T <= 100 steps vs
1000, a few hundred training steps, and the claims sample without classifier-free guidance
(supported by the API) to fit a CPU budget.

Usage::

    from iclr24.papers.omnicontrol import MotionRepresentation, SpatialGuidance
    rep = MotionRepresentation(6).with_statistics(raw_features)
    guide = SpatialGuidance(rep, t_switch=1)
    x = diffusion.sample(model, shape, mean_hook=guide.mean_hook(hint, mask))
"""

from .control_signals import GlobalStatistics, branch_input, random_hints
from .motion import MotionRepresentation, yaw_matrix
from .networks import ControlledMDM, HintEncoder, MotionDenoiser, RealismBranch
from .procedural_motions import (
    ACTIONS,
    BONE_LENGTHS,
    JOINT_NAMES,
    PARENTS,
    MotionSet,
    bone_lengths,
    generate_motions,
)
from .realism_metrics import (
    bone_length_violation,
    controlled_joint_jerk,
    frechet_distance,
    motion_statistics,
)
from .spatial_guidance import SpatialGuidance, check_hint, control_errors, guidance_scale
from .training import sample_motions, train_denoiser, train_realism_branch

__all__ = [
    "ACTIONS",
    "BONE_LENGTHS",
    "JOINT_NAMES",
    "PARENTS",
    "ControlledMDM",
    "GlobalStatistics",
    "HintEncoder",
    "MotionDenoiser",
    "MotionRepresentation",
    "MotionSet",
    "RealismBranch",
    "SpatialGuidance",
    "bone_length_violation",
    "bone_lengths",
    "branch_input",
    "check_hint",
    "control_errors",
    "controlled_joint_jerk",
    "frechet_distance",
    "generate_motions",
    "guidance_scale",
    "motion_statistics",
    "random_hints",
    "sample_motions",
    "train_denoiser",
    "train_realism_branch",
    "yaw_matrix",
]
