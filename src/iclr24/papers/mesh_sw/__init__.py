"""Diffeomorphic Mesh Deformation via Efficient Optimal Transport for Cortical Surface
Reconstruction (Le, Nguyen, Sun, Han, Ho, Xie; ICLR 2024, arXiv 2305.17555).

A mesh is turned into a probability measure - the discrete measure of its varifold (face
centroids and normals weighted by face area), its area-weighted centroids, or samples of the
uniform surface measure - and meshes are compared with the sliced Wasserstein distance, a metric
that costs O(L n log n) and has a dimension-free sample complexity, instead of the Chamfer
pseudo-metric (O(n^2)). The deformation is a CortexODE-style neural ODE on the vertices.

How the code maps to the paper:
- :mod:`.measures`: mesh -> measure (Sec. 3.1): :func:`mesh_to_measure`, :func:`sample_surface`;
- :mod:`.distances`: :func:`sliced_wasserstein` (Sec. 3.2, exact weighted 1-D quantile merge,
  fresh projections from an explicit generator) and the baseline :func:`chamfer_distance`;
- :mod:`.deformer`: :class:`VelocityField`, :class:`NeuralODEDeformer` (Sec. 3.3, torchdiffeq,
  Euler step 0.1, zero-initialised last layer = identity flow), :func:`fit_deformation`;
- :mod:`.evaluation`: CD / ASSD / HD90 / normal consistency and self-intersecting faces (Sec. 4);
- :mod:`.shapes`: synthetic genus-0 targets (bumpy spheres, ellipsoid, box).

Out of reach here: cortical MRI data (ADNI, OASIS, test-retest; FreeSurfer targets with ~1e5
vertices) and the image-conditioned, GPU-trained network. The claims fit one velocity field per
synthetic target on CPU, comparing losses at equal budgets; the official code was not found.
"""

from .deformer import LOSSES, FitHistory, NeuralODEDeformer, VelocityField, fit_deformation
from .distances import chamfer_distance, random_projections, sliced_wasserstein, wasserstein_1d
from .evaluation import self_intersecting_faces, surface_metrics
from .measures import check_mesh, face_geometry, mesh_to_measure, sample_surface
from .shapes import box_target, bumpy_sphere, ellipsoid, icosphere, normalize_to_box, target_meshes

__all__ = [
    "LOSSES",
    "FitHistory",
    "NeuralODEDeformer",
    "VelocityField",
    "box_target",
    "bumpy_sphere",
    "chamfer_distance",
    "check_mesh",
    "ellipsoid",
    "face_geometry",
    "fit_deformation",
    "icosphere",
    "mesh_to_measure",
    "normalize_to_box",
    "random_projections",
    "sample_surface",
    "self_intersecting_faces",
    "sliced_wasserstein",
    "surface_metrics",
    "target_meshes",
    "wasserstein_1d",
]
