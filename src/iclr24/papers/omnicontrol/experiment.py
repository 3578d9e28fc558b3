"""The laptop-scale experiment behind the claims: procedural data, a base denoiser trained once
per (config, seed) and cached on disk, sampling arms, and their control and realism numbers.

Scaled down from the paper (HumanML3D, d = 512, 8 layers, T = 1000, CLIP text, CFG 2.5):
six joints, class labels, d = 64, 2 layers, feed-forward 128 (the classes' defaults are
d = 128, 4 layers), T = 10 (smoke) or 100 (small), a few hundred AdamW steps, and the
claims sample without classifier-free guidance (``cfg_scale = 1``: it doubles the cost of every
step and acts on the label, not on the control; :func:`~.training.sample_motions` supports it).
The K = 500 phase of the guidance runs in the last 1% of steps (at least the final one).
"""

from __future__ import annotations

import io
from dataclasses import asdict, dataclass

import numpy as np
import torch

from iclr24.kits.diffusion import GaussianDiffusion

from .control_signals import GlobalStatistics, random_hints
from .motion import MotionRepresentation
from .networks import ControlledMDM, MotionDenoiser, RealismBranch
from .procedural_motions import ACTIONS, PARENTS, MotionSet, generate_motions
from .realism_metrics import (
    bone_length_violation,
    controlled_joint_jerk,
    frechet_distance,
    motion_statistics,
)
from .spatial_guidance import SpatialGuidance, control_errors
from .training import Progress, sample_motions, train_denoiser, train_realism_branch

__all__ = ["ArmResult", "ExperimentConfig", "Setup", "base_model", "evaluate_arm",
           "prepare", "realism_branch"]

ERROR_THRESHOLD = 0.5  # the paper's 50 cm for trajectory / location errors


@dataclass(frozen=True)
class ExperimentConfig:
    n_train: int = 3000
    n_frames: int = 60
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    ff_size: int = 128
    steps: int = 600
    batch: int = 32
    lr: float = 5e-4
    diffusion_steps: int = 100
    branch_steps: int = 300
    cfg_scale: float = 1.0


@dataclass(frozen=True)
class Setup:
    config: ExperimentConfig
    rep: MotionRepresentation
    stats: GlobalStatistics
    train: MotionSet
    x0: torch.Tensor
    diffusion: GaussianDiffusion
    guidance: SpatialGuidance


@dataclass(frozen=True)
class ArmResult:
    """avg_error: mean keyframe distance; traj_error: share of sequences with any keyframe
    > 0.5; loc_error: share of keyframes > 0.5; bone: mean bone-length violation; jerk: mean
    jerk of the controlled joints (m/s^3); fd: Frechet distance of speed/acceleration
    statistics to held-out real motions (NaN if not asked)."""

    avg_error: float
    traj_error: float
    loc_error: float
    bone: float
    jerk: float
    fd: float


def prepare(config: ExperimentConfig, seed: int) -> Setup:
    train = generate_motions(config.n_train, seed * 1000 + 1, n_frames=config.n_frames)
    rep = MotionRepresentation(len(PARENTS)).with_statistics(train.features)
    t = config.diffusion_steps
    return Setup(config=config, rep=rep, stats=GlobalStatistics.of(train.positions),
                 train=train, x0=rep.normalise(train.features).float(),
                 diffusion=GaussianDiffusion("cosine", t, predict="x0"),
                 guidance=SpatialGuidance(rep, t_switch=max(1, round(t / 100))))


def _new_base(config: ExperimentConfig) -> MotionDenoiser:
    return MotionDenoiser(4 + 3 * (len(PARENTS) - 1), len(ACTIONS), d_model=config.d_model,
                          n_layers=config.n_layers, n_heads=config.n_heads,
                          ff_size=config.ff_size)


def base_model(setup: Setup, seed: int, progress: Progress | None = None) -> MotionDenoiser:
    """The base denoiser for (config, seed), trained once and kept in the disk cache."""
    from iclr24.kits.disk_cache import cached_directory

    cfg = setup.config
    key = {"what": "omnicontrol-base", "version": 1, "seed": seed, "torch": torch.__version__,
           "config": {k: v for k, v in asdict(cfg).items()
                      if k not in ("branch_steps", "cfg_scale")}}

    def build(folder) -> None:
        torch.manual_seed(seed)
        model = _new_base(cfg)
        gen = torch.Generator().manual_seed(seed)
        train_denoiser(model, setup.diffusion, setup.x0, setup.train.labels, steps=cfg.steps,
                       batch=cfg.batch, lr=cfg.lr, generator=gen, progress=progress)
        torch.save(model.state_dict(), folder / "base.pt")

    folder, _ = cached_directory("omnicontrol", key, build)
    model = _new_base(cfg)
    model.load_state_dict(torch.load(io.BytesIO((folder / "base.pt").read_bytes()),
                                     weights_only=True))
    return model.eval()


def realism_branch(setup: Setup, base: MotionDenoiser, seed: int, *,
                   guide_inputs: bool = True, shuffled_hints: bool = False,
                   progress: Progress | None = None) -> ControlledMDM:
    """ControlledMDM with a branch trained for ``config.branch_steps`` on the base (frozen).

    ``shuffled_hints``: the null arm. The branch sees, at the same keyframes, the positions of
    another training motion (a fixed random permutation of the training set), so it trains as
    long on the same data with the same initialisation and batches but learns nothing about
    the control; everything else (x_t guidance, loss) is unchanged."""
    torch.manual_seed(seed + 7)
    model = ControlledMDM(base, RealismBranch(base, 3 * len(PARENTS)))
    gen = torch.Generator().manual_seed(seed + 11)
    positions = setup.train.positions
    branch_positions = None
    if shuffled_hints:
        perm = torch.randperm(positions.shape[0],
                              generator=torch.Generator().manual_seed(seed + 13))
        branch_positions = positions[perm]
    train_realism_branch(model, setup.diffusion, setup.x0, setup.train.labels,
                         positions, setup.stats, setup.guidance,
                         steps=setup.config.branch_steps, batch=setup.config.batch,
                         lr=setup.config.lr, guide_inputs=guide_inputs,
                         branch_positions=branch_positions, generator=gen, progress=progress)
    return model.eval()


def control_problem(n: int, seed: int, config: ExperimentConfig, *, dense_root: bool,
                    n_keyframes: int = 5) -> tuple[MotionSet, torch.Tensor, torch.Tensor]:
    """Held-out real motions and hints: 5 keyframes of a random joint, or the pelvis on every
    frame (``dense_root``)."""
    test = generate_motions(n, seed, n_frames=config.n_frames)
    gen = torch.Generator().manual_seed(seed)
    if dense_root:
        hint, mask = random_hints(test.positions, gen, joints=(0,), dense=True)
    else:
        hint, mask = random_hints(test.positions, gen, n_keyframes=n_keyframes)
    return test, hint, mask


def evaluate_arm(setup: Setup, model: MotionDenoiser | ControlledMDM, labels: torch.Tensor,
                 hint: torch.Tensor, mask: torch.Tensor, *, seed: int, guided: bool,
                 reference: np.ndarray | None = None) -> tuple[ArmResult, torch.Tensor]:
    """Sample one arm (same noise seed for every arm) and measure it; returns the numbers and
    the global positions (B, N, J, 3)."""
    x = sample_motions(model, setup.diffusion, labels, setup.config.n_frames,
                       generator=torch.Generator().manual_seed(seed),
                       cfg_scale=setup.config.cfg_scale,
                       guidance=setup.guidance if guided else None, hint=hint, mask=mask,
                       stats=setup.stats)
    pos = setup.rep.to_global(x)
    d = control_errors(pos, hint, mask)
    keyed = d[mask]
    per_seq = torch.nan_to_num(d, nan=0.0).amax((1, 2))
    fd = float("nan") if reference is None else frechet_distance(motion_statistics(pos),
                                                                  reference)
    return ArmResult(avg_error=float(keyed.mean()),
                     traj_error=float((per_seq > ERROR_THRESHOLD).float().mean()),
                     loc_error=float((keyed > ERROR_THRESHOLD).float().mean()),
                     bone=float(bone_length_violation(pos).mean()),
                     jerk=float(controlled_joint_jerk(pos, mask).mean()), fd=fd), pos
