"""The lattice half of DiffCSP++'s space-group constraint (paper Sec. 3.1, Prop. 1).

A lattice matrix ``L`` (rows = lattice vectors, pymatgen's convention) is first freed of its
rotation: the polar decomposition L = L_sym Q keeps L_sym = (L L^T)^(1/2), a symmetric positive
definite matrix that depends on L only through the metric G = L L^T. Its matrix logarithm is a
symmetric matrix, written in a fixed basis of six symmetric matrices (each of unit Frobenius
norm; 0-based indices as in the official ``CrystalFamily``)::

    log(L_sym) = sum_{i=0..5} k_i B_i,
    B0 ~ e1e2^T + e2e1^T, B1 ~ e1e3^T + e3e1^T, B2 ~ e2e3^T + e3e2^T,
    B3 ~ diag(1, -1, 0),  B4 ~ diag(1, 1, -2),  B5 ~ diag(1, 1, 1).

Every crystal family is then a linear constraint on k (a mask m and a bias b,
``project(k) = k * m + b``):

    cubic (195-230)         k0..k4 = 0
    hexagonal (143-194)     k1..k3 = 0, k0 = -ln(3) sqrt(2) / 4   (gamma = 120 degrees)
    tetragonal (75-142)     k0..k3 = 0
    orthorhombic (16-74)    k0..k2 = 0
    monoclinic (3-15)       k0 = k2 = 0                            (unique axis b)
    triclinic (1-2)         free

Trigonal groups (143-167) share the hexagonal mask: their conventional (hexagonal-axes) cell
is what the standardised structures use. Rhombohedral primitive settings are not supported (as
in the official code). ``to_matrix`` returns the symmetric L_sym = expm(sum_i k_i B_i), which
has the same metric, hence the same crystal, as the L it came from, *if L is right-handed*
(det L > 0): the metric cannot tell a cell from its mirror image, and L_sym is always
right-handed, so ``to_k`` refuses a left-handed L rather than mirror its crystal silently
(issue 38). Negating all three lattice vectors and the fractional coordinates gives the same
crystal in a right-handed cell.
"""

from __future__ import annotations

import math

import numpy as np
import torch

__all__ = ["CRYSTAL_FAMILIES", "LatticeLogBasis", "check_spacegroup", "crystal_family",
           "lattice_degrees_of_freedom"]

CRYSTAL_FAMILIES = ("triclinic", "monoclinic", "orthorhombic", "tetragonal", "hexagonal",
                    "cubic")
_HEX_BIAS = -0.25 * math.log(3.0) * math.sqrt(2.0)  # k0 of gamma = 120 deg, normalised basis


def check_spacegroup(spacegroup: object, name: str = "spacegroup") -> int:
    """``spacegroup`` as an int in 1..230, else a ValueError/TypeError naming ``name``."""
    if isinstance(spacegroup, bool) or not isinstance(spacegroup, (int, np.integer)):
        if isinstance(spacegroup, torch.Tensor) and spacegroup.numel() == 1 \
                and not spacegroup.is_floating_point():
            spacegroup = int(spacegroup.item())
        else:
            raise TypeError(f"{name} must be an int space-group number (1-230), got "
                            f"{spacegroup!r}")
    if not 1 <= int(spacegroup) <= 230:
        raise ValueError(f"{name} must be a space-group number in 1..230, got {spacegroup}")
    return int(spacegroup)


def crystal_family(spacegroup: int) -> str:
    """The crystal family of an international space-group number (1-230)."""
    sg = check_spacegroup(spacegroup)
    if sg >= 195:
        return "cubic"
    if sg >= 143:
        return "hexagonal"
    if sg >= 75:
        return "tetragonal"
    if sg >= 16:
        return "orthorhombic"
    if sg >= 3:
        return "monoclinic"
    return "triclinic"


_FIXED = {"cubic": [0, 1, 2, 3, 4], "hexagonal": [0, 1, 2, 3], "tetragonal": [0, 1, 2, 3],
          "orthorhombic": [0, 1, 2], "monoclinic": [0, 2], "triclinic": []}


def lattice_degrees_of_freedom(spacegroup: int) -> int:
    """How many of the six log coefficients k the group leaves free: 1 (cubic: the scale),
    2 (hexagonal, trigonal, tetragonal), 3 (orthorhombic), 4 (monoclinic), 6 (triclinic)."""
    return 6 - len(_FIXED[crystal_family(spacegroup)])


def _tables() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    basis = torch.zeros(6, 3, 3, dtype=torch.float64)
    basis[0, 0, 1] = basis[0, 1, 0] = 1.0
    basis[1, 0, 2] = basis[1, 2, 0] = 1.0
    basis[2, 1, 2] = basis[2, 2, 1] = 1.0
    basis[3] = torch.diag(torch.tensor([1.0, -1.0, 0.0], dtype=torch.float64))
    basis[4] = torch.diag(torch.tensor([1.0, 1.0, -2.0], dtype=torch.float64))
    basis[5] = torch.eye(3, dtype=torch.float64)
    basis = basis / torch.linalg.matrix_norm(basis)[:, None, None]  # unit Frobenius norm
    masks = torch.ones(231, 6, dtype=torch.float64)
    biases = torch.zeros(231, 6, dtype=torch.float64)
    for sg in range(1, 231):
        fam = crystal_family(sg)
        masks[sg, _FIXED[fam]] = 0.0
        if fam == "hexagonal":
            biases[sg, 0] = _HEX_BIAS
    masks[0] = float("nan")  # row 0 is never a valid group: poison it
    biases[0] = float("nan")
    return basis, masks, biases


class LatticeLogBasis:
    """Rotation-free log coordinates k (6-d) of lattices and the space-group projection.

    All methods accept a single item or a batch (leading dimension) and keep the input's dtype
    and device. ``L``: (..., 3, 3) with lattice vectors as rows; ``k``: (..., 6).
    """

    def __init__(self) -> None:
        self.basis, self._masks, self._biases = _tables()

    # -- conversions --------------------------------------------------------------------
    def to_k(self, lattice: torch.Tensor | np.ndarray) -> torch.Tensor:
        """k with log(sqrt(L L^T)) = sum_i k_i B_i (differentiable; via ``eigh`` of L L^T).

        Raises ValueError if a lattice is not 3x3, not finite, its metric L L^T is not
        positive definite (a degenerate cell), or it is left-handed (det L < 0: L_sym, which
        is right-handed, would hold the crystal's mirror image; see the module docstring)."""
        L = _as_tensor(lattice, "lattice")
        if L.shape[-2:] != (3, 3):
            raise ValueError(f"lattice must have shape (..., 3, 3), got {tuple(L.shape)}")
        if not torch.isfinite(L).all():
            raise ValueError("lattice has non-finite entries")
        G = L @ L.transpose(-1, -2)  # metric tensor, rotation invariant
        w, V = torch.linalg.eigh(G)
        scale = w.abs().amax(-1, keepdim=True).clamp_min(torch.finfo(w.dtype).tiny)
        if torch.any(w <= 1e-10 * scale):
            raise ValueError("lattice is not positive definite: L L^T has a zero or negative "
                             "eigenvalue (collinear or coplanar lattice vectors)")
        if torch.any(torch.linalg.det(L) < 0):
            raise ValueError("lattice must be right-handed (det L > 0), got a left-handed cell: "
                             "its log coordinates keep only the metric L L^T, so the crystal "
                             "would come back mirrored; negate all three lattice vectors (and "
                             "the fractional coordinates) to describe the same crystal in a "
                             "right-handed cell")
        log_sym = V @ torch.diag_embed(0.5 * torch.log(w)) @ V.transpose(-1, -2)  # log sqrtm
        B = self.basis.to(dtype=L.dtype, device=L.device)
        return torch.einsum("...ij,kij->...k", log_sym, B)  # k_i = <log L_sym, B_i>_F

    def to_matrix(self, k: torch.Tensor | np.ndarray) -> torch.Tensor:
        """L_sym = expm(sum_i k_i B_i): (..., 3, 3), symmetric positive definite."""
        kk = self._k(k)
        B = self.basis.to(dtype=kk.dtype, device=kk.device)
        return torch.linalg.matrix_exp(torch.einsum("...k,kij->...ij", kk, B))

    # -- the space-group constraint -----------------------------------------------------
    def mask(self, spacegroup: int | torch.Tensor | np.ndarray) -> torch.Tensor:
        """(..., 6) float mask (1 = free coefficient) of each space group."""
        return self._masks[_sg_index(spacegroup)]

    def bias(self, spacegroup: int | torch.Tensor | np.ndarray) -> torch.Tensor:
        """(..., 6) fixed values of the constrained coefficients (nonzero only at k0 of the
        hexagonal family)."""
        return self._biases[_sg_index(spacegroup)]

    def project(self, k: torch.Tensor | np.ndarray,
                spacegroup: int | torch.Tensor | np.ndarray) -> torch.Tensor:
        """P_G(k) = k * mask_G + bias_G; ``spacegroup`` an int or one per batch row."""
        kk = self._k(k)
        m, b = self._mb(kk, spacegroup)
        return kk * m + b

    def project_noise(self, eps: torch.Tensor, spacegroup: int | torch.Tensor | np.ndarray
                      ) -> torch.Tensor:
        """The mask alone (noise lives in the constrained subspace; the bias is not noise)."""
        kk = self._k(eps)
        m, _ = self._mb(kk, spacegroup)
        return kk * m

    # -- helpers ------------------------------------------------------------------------
    def _k(self, k: torch.Tensor | np.ndarray) -> torch.Tensor:
        kk = _as_tensor(k, "k")
        if kk.shape[-1:] != (6,):
            raise ValueError(f"k must have shape (..., 6), got {tuple(kk.shape)}")
        return kk

    def _mb(self, k: torch.Tensor, spacegroup) -> tuple[torch.Tensor, torch.Tensor]:
        idx = _sg_index(spacegroup)
        if idx.dim() > 0 and (k.dim() < 2 or idx.shape[0] != k.shape[0]):
            raise ValueError(f"spacegroup has {idx.shape[0]} entries but k has shape "
                             f"{tuple(k.shape)} (one space group per batch row expected)")
        m = self._masks[idx].to(dtype=k.dtype, device=k.device)
        b = self._biases[idx].to(dtype=k.dtype, device=k.device)
        return m, b


def _as_tensor(x: torch.Tensor | np.ndarray, name: str) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        t = x
    elif isinstance(x, (np.ndarray, list, tuple)):
        t = torch.as_tensor(np.array(x, dtype=np.float64))
    else:
        raise TypeError(f"{name} must be a tensor or array, got {type(x).__name__}")
    if not t.is_floating_point():
        t = t.to(torch.float64)
    return t


def _sg_index(spacegroup) -> torch.Tensor:
    if isinstance(spacegroup, (torch.Tensor, np.ndarray)) and np.ndim(spacegroup) > 0:
        sg = torch.as_tensor(np.asarray(spacegroup.cpu() if isinstance(spacegroup, torch.Tensor)
                                        else spacegroup))
        if sg.dim() != 1 or sg.is_floating_point():
            raise TypeError("spacegroup must be an int or a 1-D integer array of numbers")
        if torch.any(sg < 1) or torch.any(sg > 230):
            raise ValueError(f"spacegroup must be space-group numbers in 1..230, got "
                             f"{sg.min().item()}..{sg.max().item()}")
        return sg.long()
    return torch.tensor(check_spacegroup(spacegroup))
