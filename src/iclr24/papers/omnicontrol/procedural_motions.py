"""A procedural stand-in for HumanML3D: six action classes on a six-joint skeleton whose global
joint positions are known exactly.

HumanML3D (AMASS motions with text) is out of reach here: it needs licensed downloads, SMPL and
CLIP. Instead each sequence is built by forward kinematics in the world frame:

- skeleton: root (pelvis), neck (spine bone 0.55 from the root), left and right hand (arm bones
  0.65 from the neck), left and right foot (leg bones 0.9 from the root); bone lengths are
  fixed, so a generated motion's bone-length violation is a realism measure that the
  representation does not enforce;
- classes (labels replace the text prompt): 0 walk straight, 1 walk in a circle, 2 turn in
  place, 3 jump, 4 wave, 5 stand; each has a heading rate and speed (the root path), a root
  height profile and sinusoidal swing/abduction angles of the bones with class frequencies,
  randomised per sequence (speed, frequency, phase, amplitude, turning direction, smooth angle
  noise);
- N = 60 frames at 20 fps, canonicalised as HumanML3D (root starts at the ground origin facing
  +z), features by :meth:`.motion.MotionRepresentation.from_global`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .motion import MotionRepresentation, yaw_matrix

__all__ = ["ACTIONS", "BONE_LENGTHS", "JOINT_NAMES", "PARENTS", "MotionSet", "bone_lengths",
           "generate_motions"]

JOINT_NAMES = ("root", "neck", "left_hand", "right_hand", "left_foot", "right_foot")
PARENTS = (-1, 0, 1, 1, 0, 0)
BONE_LENGTHS = (0.0, 0.55, 0.65, 0.65, 0.9, 0.9)  # of the bone to each joint's parent
ACTIONS = ("walk", "circle", "turn", "jump", "wave", "stand")
FPS = 20.0


@dataclass(frozen=True)
class MotionSet:
    """Generated motions. features: (B, N, D) raw (not normalised); positions: (B, N, J, 3)
    global joint positions; heading: (B, N) root yaw; labels: (B,) action index."""

    features: torch.Tensor
    positions: torch.Tensor
    heading: torch.Tensor
    labels: torch.Tensor


def bone_lengths(positions: torch.Tensor) -> torch.Tensor:
    """Lengths (..., J - 1) of the bones (child j = 1..J-1 to its parent) of (..., J, 3)."""
    if positions.dim() < 2 or positions.shape[-2:] != (len(PARENTS), 3):
        raise ValueError(f"positions must be (..., {len(PARENTS)}, 3), got "
                         f"{tuple(positions.shape)}")
    child = positions[..., 1:, :]
    parent = positions[..., list(PARENTS[1:]), :]
    return torch.linalg.vector_norm(child - parent, dim=-1)


def _smooth_noise(rng: np.random.Generator, t: np.ndarray, scale: float) -> np.ndarray:
    """A sum of three random low-frequency sinusoids (0.2-1.5 Hz), amplitude ~ scale."""
    out = np.zeros_like(t)
    for _ in range(3):
        out += scale / 3 * rng.normal() * np.sin(2 * math.pi * rng.uniform(0.2, 1.5) * t
                                                 + rng.uniform(0, 2 * math.pi))
    return out


def _bone_direction(swing: np.ndarray, abduction: np.ndarray, side: float,
                    down: bool) -> np.ndarray:
    """Unit vectors (N, 3) in the facing frame: swing in the sagittal plane (towards +z),
    abduction sideways (x sign ``side``), from a rest pointing down (limbs) or up (spine)."""
    c = np.cos(swing)
    if down:
        return np.stack([side * c * np.sin(abduction), -c * np.cos(abduction), np.sin(swing)], -1)
    return np.stack([side * c * np.sin(abduction), c * np.cos(abduction), np.sin(swing)], -1)


def _one_motion(action: int, n_frames: int, rng: np.random.Generator
                ) -> tuple[np.ndarray, np.ndarray]:
    """(positions (N, J, 3), heading (N,)) of one sequence of class ``action``."""
    t = np.arange(n_frames) / FPS
    name = ACTIONS[action]
    f = rng.uniform(0.8, 1.2) * {"walk": 1.0, "circle": 1.0, "turn": 0.8, "jump": 1.2,
                                 "wave": 1.5, "stand": 0.3}[name]
    amp = rng.uniform(0.8, 1.2)
    phase = rng.uniform(0, 2 * math.pi)
    osc = np.sin(2 * math.pi * f * t + phase)
    turn_sign = rng.choice([-1.0, 1.0])
    speed = {"walk": 1.2, "circle": 1.0, "turn": 0.0, "jump": 0.3, "wave": 0.0,
             "stand": 0.0}[name] * rng.uniform(0.8, 1.2)
    yaw_rate = {"walk": 0.0, "circle": 0.7, "turn": 1.6, "jump": 0.0, "wave": 0.0,
                "stand": 0.0}[name] * turn_sign * rng.uniform(0.8, 1.2)
    leg_amp = {"walk": 0.5, "circle": 0.45, "turn": 0.2, "jump": 0.15, "wave": 0.0,
               "stand": 0.0}[name] * amp
    arm_amp = {"walk": 0.4, "circle": 0.35, "turn": 0.15, "jump": 0.0, "wave": 0.0,
               "stand": 0.0}[name] * amp
    noise = 0.06

    heading = yaw_rate * t + _smooth_noise(rng, t, 0.03)
    heading = heading - heading[0]
    hop = np.maximum(0.0, osc) if name == "jump" else np.zeros_like(t)
    height = 0.88 + (0.03 * np.cos(4 * math.pi * f * t + 2 * phase) * (leg_amp > 0)
                     + 0.3 * amp * hop + _smooth_noise(rng, t, 0.01))

    leg_l = leg_amp * osc + _smooth_noise(rng, t, noise)
    leg_r = -leg_amp * osc + _smooth_noise(rng, t, noise)
    arm_l = -arm_amp * osc + _smooth_noise(rng, t, noise)
    arm_r = arm_amp * osc + _smooth_noise(rng, t, noise)
    abd_arm_l = 0.25 + _smooth_noise(rng, t, noise)
    abd_arm_r = 0.25 + _smooth_noise(rng, t, noise)
    if name == "jump":
        arm_l = arm_r = 1.2 * amp * hop + _smooth_noise(rng, t, noise)
        leg_l = leg_r = -0.3 * hop + _smooth_noise(rng, t, noise)
    if name == "wave":  # right arm raised above the head, waving sideways
        abd_arm_r = 2.5 + 0.35 * amp * osc + _smooth_noise(rng, t, noise)
    spine_swing = (0.12 if speed > 0.5 else 0.0) + _smooth_noise(rng, t, 0.03)
    spine_abd = _smooth_noise(rng, t, 0.03)

    local = np.zeros((n_frames, len(PARENTS), 3))                 # facing-frame offsets
    local[:, 1] = BONE_LENGTHS[1] * _bone_direction(spine_swing, spine_abd, 1.0, down=False)
    local[:, 2] = BONE_LENGTHS[2] * _bone_direction(arm_l, abd_arm_l, 1.0, down=True)
    local[:, 3] = BONE_LENGTHS[3] * _bone_direction(arm_r, abd_arm_r, -1.0, down=True)
    local[:, 4] = BONE_LENGTHS[4] * _bone_direction(leg_l, 0.08 + 0 * t, 1.0, down=True)
    local[:, 5] = BONE_LENGTHS[5] * _bone_direction(leg_r, 0.08 + 0 * t, -1.0, down=True)

    rot = yaw_matrix(torch.from_numpy(heading)).numpy()                  # (N, 3, 3)
    forward = np.stack([np.zeros_like(t), np.zeros_like(t), np.full_like(t, speed / FPS)], -1)
    forward[:, 0] += _smooth_noise(rng, t, 0.005)                        # lateral sway
    steps = np.einsum("nij,nj->ni", rot, forward)
    ground = np.concatenate([np.zeros((1, 3)), np.cumsum(steps[:-1], 0)], 0)
    positions = np.zeros((n_frames, len(PARENTS), 3))
    positions[:, 0] = ground + np.stack([0 * t, height, 0 * t], -1)
    for j in range(1, len(PARENTS)):                                   # world-frame kinematics
        positions[:, j] = positions[:, PARENTS[j]] + np.einsum("nij,nj->ni", rot, local[:, j])
    return positions, heading


def generate_motions(n: int, seed: int, *, n_frames: int = 60,
                     labels: np.ndarray | None = None,
                     dtype: torch.dtype = torch.float32) -> MotionSet:
    """``n`` procedural motions (classes balanced round-robin unless ``labels`` is given)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    if isinstance(n_frames, bool) or not isinstance(n_frames, int) or n_frames < 2:
        raise ValueError(f"n_frames must be an int >= 2, got {n_frames!r}")
    rng = np.random.default_rng(seed)
    if labels is None:
        labels = rng.permutation(np.arange(n) % len(ACTIONS))
    labels = np.asarray(labels)
    if labels.shape != (n,) or labels.min() < 0 or labels.max() >= len(ACTIONS):
        raise ValueError(f"labels must be (n,) ints in [0, {len(ACTIONS)}), got {labels!r}")
    pos, head = zip(*(_one_motion(int(a), n_frames, rng) for a in labels))
    positions = torch.from_numpy(np.stack(pos))
    heading = torch.from_numpy(np.stack(head))
    rep = MotionRepresentation(len(PARENTS))
    feats = rep.from_global(positions, heading, normalised=False)
    return MotionSet(features=feats.to(dtype), positions=positions.to(dtype),
                     heading=heading.to(dtype), labels=torch.from_numpy(labels).long())
