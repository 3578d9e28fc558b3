"""DiffCSP++: Space Group Constrained Crystal Generation (R. Jiao, W. Huang, Y. Liu, D. Zhao,
Y. Liu; ICLR 2024; arXiv 2402.03992; official code jiaor17/DiffCSP-PP, built on jiaor17/DiffCSP).

What the paper does. DiffCSP diffuses a crystal's lattice and fractional coordinates but
ignores its space group. DiffCSP++ rewrites the space-group constraint as (1) a mask and bias on
the six coefficients k of the rotation-free lattice's matrix logarithm in a fixed basis and (2)
Wyckoff-position constraints that leave one free anchor per orbit, every other atom being an
image of it under the group's ops. Diffusion runs inside the constrained space (masked lattice
noise, anchor-projected coordinate noise, orbit-averaged scores, regeneration from anchors), so
every sample keeps the target symmetry exactly; conditioned on a template (space group +
Wyckoff letters, from ground truth or retrieved by CSPML) it predicts structures far more
accurately than DiffCSP.

How the code maps to it.
- :mod:`.lattice`: :class:`LatticeLogBasis` (``to_k``, ``to_matrix``, ``project``; Prop. 1 and
  the per-family mask/bias table), :func:`crystal_family`, :func:`lattice_degrees_of_freedom`.
- :mod:`.wyckoff`: :class:`WyckoffTemplate` (``from_structure`` via spglib + pyxtal,
  ``from_sites`` for user-chosen Wyckoff letters, ``free`` for P1), :func:`standardize`.
- :mod:`.wrapped_normal`: DiffCSP's wrapped-normal score and its normaliser lambda_t.
- :mod:`.cspnet`: :class:`CSPNet`, the periodic-invariant denoiser.
- :mod:`.diffusion`: :class:`DiffCSPPlusPlus` (``loss``, predictor-corrector ``sample``),
  the :class:`DiffCSP` baseline (the same model with all constraints removed) and :func:`fit`.
  The lattice's Gaussian diffusion is the shared kit :mod:`iclr24.kits.diffusion`.
- :mod:`.crystal_batch`: :class:`Crystal` and flat :class:`CrystalBatch` tensors.
- :mod:`.evaluation`: :func:`match_rate` (StructureMatcher, stol 0.5 / angle_tol 10 / ltol 0.3),
  :func:`space_group_of` (spglib), :func:`structure_valid`.
- :mod:`.crystal_csv`: :func:`load_crystal_csv` reads the paper's datasets in their CDVAE /
  DiffCSP CSV form (MP-20, MPTS-52, Perov-5, Carbon-24: a CIF per row) into standardised
  crystals with templates, listing the rows it could not read (the files are not shipped).
- :mod:`.prototypes`: the procedural data (ten prototypes with real space groups and Wyckoff
  sets, composition -> prototype by a radius-ratio rule) and the CSPML-like
  :func:`retrieve_template`.
- ``claims.py``: ``symmetry_preserved`` and ``csp_match_rate``.

What is out of reach / differs.
- Materials Project data (MP-20, MPTS-52), Perov-5 and Carbon-24 are not available offline
  (:func:`load_crystal_csv` reads them where a user has the files); the claims use procedural
  prototypes (2,000 training crystals at ``small``) whose composition determines the
  structure, with held-out element combinations for testing. Five of the ten prototypes are
  cubic with every atom on a fixed site: their template alone fixes the crystal up to its
  scale, which the matcher ignores, so ``csp_match_rate`` judges the templates that leave
  something to learn (``WyckoffTemplate.free_parameters`` > 0) against an untrained-network
  null arm (issue 38).
- Scale: CSPNet 4 layers x 64 (official 6 x 512, 128 frequencies; we use 10), T = 100 diffusion
  steps at ``small`` (official 1000), 800 Adam steps of 16 crystals (official: thousands of
  epochs); ab initio generation (type diffusion) is not implemented.
- Both arms diffuse the lattice in k (the original DiffCSP diffuses the 3x3 matrix), so the arms
  differ only in the constraints. The lattice sampler clips its x_0 estimate of k to a box
  (``clip_k0``, 1.5 x the largest |k| of the training set in the claims; None = the official
  unclipped sampler): with the cosine schedule's last beta of 0.999 an under-trained
  eps-predictor is amplified ~30x per early step and the official sampler diverged at our
  training budget. lambda_t is computed by quadrature instead of Monte Carlo.
- CSPML's learned composition similarity is replaced by the nearest training composition in
  element-radius space; SMACT charge checks are not applied (synthetic formula types).

Usage::

    from iclr24.papers.diffcsp_pp import CSPNet, DiffCSPPlusPlus, WyckoffTemplate, fit
    template = WyckoffTemplate.from_sites(58, [("Mn", "2a"), ("Li", "2d"), ("O", "4g")])
    model = DiffCSPPlusPlus(CSPNet(hidden=128, layers=4), steps=1000)
    fit(model, training_crystals, steps=10_000)
    crystal = model.sample([template])[0]          # keeps space group 58 exactly
"""

from .crystal_batch import Crystal, CrystalBatch, atomic_number, collate
from .crystal_csv import CrystalTable, load_crystal_csv
from .cspnet import CSPNet, SinusoidalTimeEmbedding
from .diffusion import DiffCSP, DiffCSPPlusPlus, fit
from .evaluation import match_details, match_rate, space_group_of, structure_valid
from .experiment import ARMS, CSPExperiment, run_csp_experiment
from .lattice import (
    CRYSTAL_FAMILIES,
    LatticeLogBasis,
    check_spacegroup,
    crystal_family,
    lattice_degrees_of_freedom,
)
from .prototypes import (
    ANIONS,
    CATIONS,
    PROTOTYPES,
    Composition,
    Prototype,
    all_compositions,
    make_crystal,
    prototype_dataset,
    prototype_of,
    retrieve_template,
    split_compositions,
)
from .wrapped_normal import (
    WrappedNormalSchedule,
    wrapped_normal_noise_score,
    wrapped_normal_score,
    wrapped_normal_sigma_norm,
)
from .wyckoff import WyckoffTemplate, normalize_composition, standardize

__all__ = [
    "ANIONS", "ARMS", "CATIONS", "CRYSTAL_FAMILIES", "PROTOTYPES", "CSPExperiment", "CSPNet",
    "Composition", "Crystal", "CrystalBatch", "CrystalTable", "DiffCSP", "DiffCSPPlusPlus",
    "LatticeLogBasis", "Prototype", "SinusoidalTimeEmbedding", "WrappedNormalSchedule",
    "WyckoffTemplate", "all_compositions", "atomic_number", "check_spacegroup", "collate",
    "crystal_family", "fit", "lattice_degrees_of_freedom", "load_crystal_csv", "make_crystal",
    "match_details", "match_rate", "normalize_composition", "prototype_dataset",
    "prototype_of", "retrieve_template", "run_csp_experiment", "space_group_of",
    "split_compositions", "standardize", "structure_valid", "wrapped_normal_noise_score",
    "wrapped_normal_score", "wrapped_normal_sigma_norm",
]
