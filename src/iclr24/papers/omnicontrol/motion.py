"""The relative motion representation and its differentiable global recovery R (paper Sec. 3.1).

HumanML3D stores a motion as per-frame features relative to the root: root angular velocity
about the vertical axis, root planar velocity in the root's facing frame, root height and the
root-relative positions of the other joints in the facing frame ("ric"); global joint positions
are not stored. OmniControl's spatial guidance needs them, so it differentiates through R, which
integrates the heading and the velocity and rotates the relative positions back to the world.

Here a frame of a J-joint skeleton has D = 4 + 3 (J - 1) features, in HumanML3D's order:

    [ yaw velocity (1) | planar velocity in the facing frame (x, z) (2) | root height (1) |
      ric: (J - 1) x 3 joint positions relative to the root's ground point, facing frame ]

Axes: y up, a heading psi rotates the facing direction +z about y, R_y(psi) = [[c, 0, s],
[0, 1, 0], [-s, 0, c]]. Sequences are canonicalised as HumanML3D's: the root starts at the
ground-plane origin facing +z (psi_0 = 0). The recovery (HumanML3D's ``recover_from_ric``):

    psi_0 = 0,  psi_n = sum_{k<n} omega_k                                   (integrate yaw)
    p_0 = 0,    p_n = p_{n-1} + R_y(psi_{n-1}) v_{n-1}                      (integrate velocity)
    root_n = (p_n.x, h_n, p_n.z),  P_nj = R_y(psi_n) ric_nj + (p_n.x, 0, p_n.z)

so the last frame's velocities are never used (HumanML3D drops that frame; we store zeros).
What differs: HumanML3D's 263-d vector also holds 6-D rotations, joint velocities and foot
contacts, which R does not read; here only the part R reads exists. HumanML3D itself is out of
reach offline (it needs AMASS and a licence), see :mod:`.procedural_motions`.
"""

from __future__ import annotations

import torch

__all__ = ["MotionRepresentation", "yaw_matrix"]


def yaw_matrix(psi: torch.Tensor) -> torch.Tensor:
    """R_y(psi) for every element of ``psi`` (...,) -> (..., 3, 3)."""
    c, s = torch.cos(psi), torch.sin(psi)
    z, o = torch.zeros_like(psi), torch.ones_like(psi)
    return torch.stack([torch.stack([c, z, s], -1), torch.stack([z, o, z], -1),
                        torch.stack([-s, z, c], -1)], -2)


class MotionRepresentation:
    """Features <-> global joint positions of a J-joint skeleton, with optional normalisation.

    n_joints:     J (joint 0 is the root).
    feature_mean, feature_std: (D,) statistics of the raw features (the model sees
                  (raw - mean) / std); None means no normalisation.
    """

    def __init__(self, n_joints: int, feature_mean: torch.Tensor | None = None,
                 feature_std: torch.Tensor | None = None) -> None:
        if isinstance(n_joints, bool) or not isinstance(n_joints, int) or n_joints < 1:
            raise ValueError(f"n_joints must be a positive int, got {n_joints!r}")
        self.n_joints = n_joints
        self.n_feats = 4 + 3 * (n_joints - 1)
        if (feature_mean is None) != (feature_std is None):
            raise ValueError("give both feature_mean and feature_std, or neither")
        if feature_mean is not None:
            feature_mean = torch.as_tensor(feature_mean).flatten()
            feature_std = torch.as_tensor(feature_std).flatten()
            for name, v in (("feature_mean", feature_mean), ("feature_std", feature_std)):
                if v.numel() != self.n_feats:
                    raise ValueError(f"{name} must have D = {self.n_feats} entries, got "
                                     f"{v.numel()}")
            if torch.any(feature_std <= 0):
                raise ValueError("feature_std must be positive")
        self.feature_mean, self.feature_std = feature_mean, feature_std

    # -- normalisation ---------------------------------------------------------------------
    def with_statistics(self, raw: torch.Tensor, min_std: float = 1e-2) -> MotionRepresentation:
        """A copy normalised by the per-feature mean/std of ``raw`` (B, N, D); stds below
        ``min_std`` are raised to it (constant features such as the last frame's velocity)."""
        raw = self._check(raw, "raw")
        flat = raw.reshape(-1, self.n_feats).double()
        return MotionRepresentation(self.n_joints, flat.mean(0),
                                    flat.std(0).clamp_min(min_std))

    def normalise(self, raw: torch.Tensor) -> torch.Tensor:
        if self.feature_mean is None:
            return raw
        return (raw - self.feature_mean.to(raw)) / self.feature_std.to(raw)

    def denormalise(self, x: torch.Tensor) -> torch.Tensor:
        if self.feature_mean is None:
            return x
        return x * self.feature_std.to(x) + self.feature_mean.to(x)

    def _check(self, x: torch.Tensor, name: str) -> torch.Tensor:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
        if x.dim() != 3 or x.shape[-1] != self.n_feats:
            raise ValueError(f"{name} must be (batch, frames, {self.n_feats}) motion features, "
                             f"got shape {tuple(x.shape)}")
        return x

    # -- R and its inverse ------------------------------------------------------------------
    def to_global(self, x: torch.Tensor, *, normalised: bool = True) -> torch.Tensor:
        """Global joint positions (B, N, J, 3) of features ``x`` (B, N, D); differentiable.

        normalised: whether ``x`` is in the model's normalised space (then it is de-normalised
        with the stored statistics first, as the official guidance does before R).
        """
        x = self._check(x, "x")
        raw = self.denormalise(x) if normalised else x
        omega, vx, vz, height = raw[..., 0], raw[..., 1], raw[..., 2], raw[..., 3]
        ric = raw[..., 4:].reshape(*raw.shape[:2], self.n_joints - 1, 3)
        # psi_n = sum_{k<n} omega_k (psi_0 = 0)
        psi = torch.cumsum(omega, 1) - omega
        c, s = torch.cos(psi), torch.sin(psi)
        # p_n = sum_{k<n} R_y(psi_k) v_k (p_0 = 0); R_y(psi) (vx, 0, vz) = (c vx + s vz, 0,
        # -s vx + c vz)
        step = torch.stack([c * vx + s * vz, -s * vx + c * vz], -1)
        ground = torch.cumsum(step, 1) - step                                   # (B, N, 2)
        root = torch.stack([ground[..., 0], height, ground[..., 1]], -1)
        c, s = c[..., None], s[..., None]
        rx, ry, rz = ric[..., 0], ric[..., 1], ric[..., 2]
        others = torch.stack([c * rx + s * rz + ground[..., :1], ry,
                              -s * rx + c * rz + ground[..., 1:]], -1)  # R_y(psi_n) ric + p_n
        return torch.cat([root[:, :, None], others], 2)

    def cost_gradient(self, x: torch.Tensor, upstream: torch.Tensor, *,
                      normalised: bool = True) -> torch.Tensor:
        """The vector-Jacobian product of R: d<upstream, R(x)>/dx (B, N, D) for an upstream
        gradient (B, N, J, 3) on the global positions, in closed form (no autograd graph; the
        guidance's inner loop runs it hundreds of times per step). Equals
        ``torch.autograd.grad(to_global(x), x, upstream)`` (tested)."""
        x = self._check(x, "x")
        raw = self.denormalise(x) if normalised else x
        omega, vx, vz = raw[..., 0], raw[..., 1], raw[..., 2]
        ric = raw[..., 4:].reshape(*raw.shape[:2], self.n_joints - 1, 3)
        psi = torch.cumsum(omega, 1) - omega
        c, s = torch.cos(psi), torch.sin(psi)
        step_x, step_z = c * vx + s * vz, -s * vx + c * vz
        ux, uy, uz = upstream[..., 0], upstream[..., 1], upstream[..., 2]      # (B, N, J)
        rx, rz = ric[..., 0], ric[..., 2]
        cj, sj = c[..., None], s[..., None]
        # ric_j -> P_j = R_y(psi) ric_j + g: transposed rotation of the upstream
        g_rx, g_ry, g_rz = cj * ux[..., 1:] - sj * uz[..., 1:], uy[..., 1:], \
            sj * ux[..., 1:] + cj * uz[..., 1:]
        # g_n feeds every joint of frame n; g_n = sum_{k<n} step_k (reverse exclusive cumsum)
        gg_x, gg_z = ux.sum(-1), uz.sum(-1)
        s_x = gg_x.flip(1).cumsum(1).flip(1) - gg_x
        s_z = gg_z.flip(1).cumsum(1).flip(1) - gg_z
        g_vx, g_vz = c * s_x - s * s_z, s * s_x + c * s_z
        # psi_n rotates step_n and the ric of frame n: d/dpsi R_y(psi) a = (a'_z, 0, -a'_x)
        rot_x, rot_z = cj * rx + sj * rz, -sj * rx + cj * rz
        g_psi = s_x * step_z - s_z * step_x + \
            (ux[..., 1:] * rot_z - uz[..., 1:] * rot_x).sum(-1)
        g_omega = g_psi.flip(1).cumsum(1).flip(1) - g_psi                   # psi = cumsum excl.
        g_ric = torch.stack([g_rx, g_ry, g_rz], -1).flatten(2)
        grad = torch.cat([g_omega[..., None], g_vx[..., None], g_vz[..., None],
                          uy[..., :1], g_ric], -1)
        return grad * self.feature_std.to(grad) if normalised and \
            self.feature_std is not None else grad

    def from_global(self, positions: torch.Tensor, heading: torch.Tensor, *,
                    normalised: bool = True) -> torch.Tensor:
        """Features (B, N, D) of global positions (B, N, J, 3) with root heading (B, N).

        The root must start at the ground-plane origin with heading 0 (canonicalised);
        ``normalised`` returns the model's normalised features.
        """
        if not isinstance(positions, torch.Tensor) or positions.dim() != 4 or \
                positions.shape[2:] != (self.n_joints, 3):
            raise ValueError(f"positions must be (batch, frames, {self.n_joints}, 3), got "
                             f"{tuple(getattr(positions, 'shape', ()))}")
        if not isinstance(heading, torch.Tensor) or heading.shape != positions.shape[:2]:
            raise ValueError(f"heading must be (batch, frames) = {tuple(positions.shape[:2])}, "
                             f"got {tuple(getattr(heading, 'shape', ()))}")
        root = positions[:, :, 0]
        ground = root * torch.tensor([1.0, 0.0, 1.0], dtype=root.dtype, device=root.device)
        inv = yaw_matrix(heading).transpose(-1, -2)                            # R_y(-psi_n)
        omega = torch.cat([heading[:, 1:] - heading[:, :-1],
                           torch.zeros_like(heading[:, :1])], 1)
        step = torch.cat([ground[:, 1:] - ground[:, :-1], torch.zeros_like(ground[:, :1])], 1)
        local_step = torch.einsum("bnij,bnj->bni", inv, step)                # R_y(-psi_n) dp
        ric = torch.einsum("bnij,bnkj->bnki", inv, positions[:, :, 1:] - ground[:, :, None])
        raw = torch.cat([omega[..., None], local_step[..., [0, 2]], root[..., 1:2],
                         ric.reshape(*ric.shape[:2], -1)], -1)
        return self.normalise(raw) if normalised else raw
