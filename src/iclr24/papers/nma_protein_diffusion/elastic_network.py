"""The anisotropic network model (ANM) of a Calpha trace, differentiable in torch.

Paper Sec. 3 (and the official ``src/forces``): every pair of Calpha atoms within the cutoff
(13 A) is joined by a spring. With d_ij = x_j - x_i and the spring constant k_ij, the Hessian of
the elastic energy has the 3 x 3 blocks

    H_ij = -k_ij d_ij d_ij^T / |d_ij|^2        (i != j, |d_ij| <= cutoff)
    H_ii = -sum_{j != i} H_ij

and its eigenvectors are the normal modes. Six eigenvalues are zero (three translations, three
rotations) when the network is rigid; mode index 6 (0-based) is the lowest non-trivial mode.

Spring constants: ``"hinsen"`` is Hinsen's Calpha force field (Hinsen et al. 2000), as in the
official code and springcraft: k(r) = 860 r - 2390 for r < 4 A (r clipped below at 2.9 A) and
k(r) = 1.28e6 / r^6 for r >= 4 A; ``"uniform"`` is the classic ANM with k = 1 (ProDy's
``gamma = 1``). The Hessian is written out in torch so gradients flow from eigenvectors back
to coordinates (``torch.linalg.eigh`` supplies the eigenvector derivative); it is built in
float64, as the official code does, because the eigen-gap terms 1/(lambda_i - lambda_j) of that
derivative lose precision in float32.
"""

from __future__ import annotations

import torch

__all__ = ["FORCE_FIELDS", "anm_hessian", "count_zero_modes", "hinsen_force_constant",
           "mode_displacements", "normal_modes"]

FORCE_FIELDS = ("hinsen", "uniform")
RIGID_MODES = 6


def hinsen_force_constant(r: torch.Tensor) -> torch.Tensor:
    """Hinsen's Calpha spring constant k(r) (kJ mol^-1 A^-2) at distances ``r`` (A), any shape.

    k(r) = 860 r - 2390 for r < 4 (with r clipped below at 2.9), 1.28e6 r^-6 for r >= 4.
    """
    if not isinstance(r, torch.Tensor):
        raise TypeError(f"r must be a torch.Tensor of distances, got {type(r).__name__}")
    rc = r.clamp_min(2.9)  # 2.9 A: the closest Calpha-Calpha distance the fit accepts
    near = 860.0 * rc - 2390.0  # k = 8.6e2 r - 2.39e3 (bonded neighbours, r < 4 A)
    far = 1.28e6 * rc.clamp_min(4.0).pow(-6)  # k = 128e4 r^-6 (r >= 4 A)
    return torch.where(rc < 4.0, near, far)


def _check_coords(x: torch.Tensor, name: str = "x") -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of Calpha coordinates, got "
                        f"{type(x).__name__}")
    if x.dim() < 2 or x.shape[-1] != 3 or x.shape[-2] < 3:
        raise ValueError(f"{name} must have shape (..., N, 3) with N >= 3 atoms, got "
                         f"{tuple(x.shape)}")
    if not torch.is_floating_point(x):
        raise TypeError(f"{name} must be a floating-point tensor, got {x.dtype}")


def anm_hessian(x: torch.Tensor, cutoff: float = 13.0, force: str = "hinsen") -> torch.Tensor:
    """The ANM Hessian of Calpha coordinates.

    x:      (..., N, 3) coordinates in Angstrom (float; computed in float64).
    cutoff: springs join pairs with |x_i - x_j| <= cutoff.
    force:  ``"hinsen"`` or ``"uniform"`` (k = 1).
    Returns (..., 3N, 3N) float64, ordered [x1, y1, z1, x2, ...]; differentiable in ``x``.
    Raises ValueError on non-finite coordinates (issue 38: they gave a NaN Hessian silently).
    """
    _check_coords(x)
    if isinstance(cutoff, bool) or not isinstance(cutoff, (int, float)) or not cutoff > 0:
        raise ValueError(f"cutoff must be a positive number (Angstrom), got {cutoff!r}")
    if force not in FORCE_FIELDS:
        raise ValueError(f"force must be one of {FORCE_FIELDS}, got {force!r}")
    if not bool(torch.isfinite(x.detach()).all()):
        bad = ~torch.isfinite(x.detach()).reshape(-1, *x.shape[-2:]).flatten(1).all(1)
        where = torch.nonzero(bad).flatten().tolist()[:5]
        raise ValueError(f"x must hold finite coordinates, got NaN or inf in structure(s) "
                         f"{where} (flattened batch index): their Hessian would be NaN")
    x = x.to(torch.float64)
    n = x.shape[-2]
    d = x.unsqueeze(-3) - x.unsqueeze(-2)  # d[..., i, j] = x_j - x_i
    r2 = (d * d).sum(-1)
    eye = torch.eye(n, dtype=torch.bool, device=x.device)
    r2_safe = torch.where(eye, torch.ones_like(r2), r2)  # no 0/0 on the diagonal (nor its grad)
    in_range = (r2 <= cutoff ** 2) & ~eye
    if force == "hinsen":
        k = hinsen_force_constant(r2_safe.sqrt())
    else:
        k = torch.ones_like(r2)
    k = torch.where(in_range, k, torch.zeros_like(k))
    off = -(k / r2_safe).unsqueeze(-1).unsqueeze(-1) * d.unsqueeze(-1) * d.unsqueeze(-2)
    diag = -off.sum(-3)  # H_ii = -sum_{j != i} H_ij   (..., N, 3, 3); off is 0 on i == j
    blocks = off + eye.to(x.dtype)[:, :, None, None] * diag.unsqueeze(-4)
    # (..., N, N, 3, 3) -> (..., 3N, 3N): row (i, a), column (j, b)
    return blocks.transpose(-3, -2).reshape(*x.shape[:-2], 3 * n, 3 * n)


def count_zero_modes(eigvals: torch.Tensor, zero_tol: float = 1e-12) -> torch.Tensor:
    """Number of eigenvalues with |lambda| <= zero_tol * max |lambda|, per structure.

    eigvals: (..., 3N) -> (...,) long.
    """
    scale = eigvals.abs().amax(-1, keepdim=True)
    return (eigvals.abs() <= zero_tol * scale).sum(-1)


def normal_modes(x: torch.Tensor, k: int = 1, skip: int = RIGID_MODES, *, cutoff: float = 13.0,
                 force: str = "hinsen", zero_tol: float = 1e-12
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` lowest non-trivial normal modes of the ANM of ``x``.

    x: (..., N, 3). Returns ``(eigvals (..., k), eigvecs (..., 3N, k))`` in float64, the modes
    ``skip .. skip + k - 1`` of the ascending eigen-decomposition (unit-norm eigenvectors; their
    sign is arbitrary). Differentiable in ``x``.

    Raises ValueError when a network does not have exactly six zero modes (eigenvalues below
    ``zero_tol`` times the largest): then index 6 is not the lowest internal motion (a network
    that falls apart at this cutoff, or collinear atoms).
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}")
    if isinstance(skip, bool) or not isinstance(skip, int) or skip < 0:
        raise ValueError(f"skip must be a non-negative int, got {skip!r}")
    h = anm_hessian(x, cutoff=cutoff, force=force)
    if skip + k > h.shape[-1]:
        raise ValueError(f"skip + k = {skip + k} exceeds the {h.shape[-1]} modes of "
                         f"{h.shape[-1] // 3} atoms")
    vals, vecs = torch.linalg.eigh(h)
    zeros = count_zero_modes(vals.detach(), zero_tol)
    bad = zeros != RIGID_MODES
    if bool(bad.any()):
        where = torch.nonzero(bad.reshape(-1)).flatten().tolist()[:5]
        counts = zeros.reshape(-1)[where].tolist()
        raise ValueError(
            f"the spring network must have exactly {RIGID_MODES} zero modes (rigid motions), "
            f"got {counts} in structure(s) {where} (flattened batch index): it is not rigid at "
            f"cutoff={cutoff} A (disconnected pieces or collinear atoms), so mode {skip} is not "
            f"its lowest internal motion; increase the cutoff or check the coordinates")
    return vals[..., skip:skip + k], vecs[..., skip:skip + k]


def mode_displacements(vec: torch.Tensor, residue_idx: torch.Tensor) -> torch.Tensor:
    """Per-residue displacement vectors of one mode on the chosen residues.

    vec: (..., 3N) one eigenvector; residue_idx: (n_m,) indices in [0, N).
    Returns (..., n_m, 3).
    """
    if not isinstance(vec, torch.Tensor) or vec.dim() < 1 or vec.shape[-1] % 3:
        raise ValueError(f"vec must be a tensor of shape (..., 3N), got "
                         f"{getattr(vec, 'shape', type(vec).__name__)}")
    n = vec.shape[-1] // 3
    idx = _check_residue_idx(residue_idx, n, "residue_idx")
    return vec.reshape(*vec.shape[:-1], n, 3)[..., idx.to(vec.device), :]


def _check_residue_idx(residue_idx: object, n_res: int | None, name: str) -> torch.Tensor:
    """residue_idx as a 1-D long tensor of distinct indices (in [0, n_res) when n_res given)."""
    idx = torch.as_tensor(residue_idx)
    if idx.dim() != 1 or idx.numel() < 2 or idx.dtype in (torch.bool,) or \
            torch.is_floating_point(idx) or torch.is_complex(idx):
        raise ValueError(f"{name} must be a 1-D sequence of at least 2 integer residue indices, "
                         f"got {residue_idx!r}")
    idx = idx.long().cpu()
    if idx.unique().numel() != idx.numel():
        raise ValueError(f"{name} must not repeat a residue, got {idx.tolist()}")
    if int(idx.min()) < 0 or (n_res is not None and int(idx.max()) >= n_res):
        bound = f"[0, {n_res})" if n_res is not None else "[0, N)"
        raise ValueError(f"{name} out of range: residues must lie in {bound}, got "
                         f"{idx.min().item()}..{idx.max().item()}")
    return idx
