"""Dynamics-informed protein design with structure conditioning (U. J. Komorowska, S. V.
Mathis, K. Didi, F. Vargas, P. Lio, M. Jamnik; ICLR 2024; OpenReview jZPqf2G9Sw; official code
ujk21/dyn-informed).

What the paper does. A pretrained, unconditional backbone diffusion model (Genie) is conditioned
on *how the designed protein moves*: the lowest non-trivial normal mode of an anisotropic
network model (ANM, Hinsen force field, 13 A cutoff) of the model's current clean-structure
estimate, restricted to chosen residues, should match a target pattern (e.g. the hinge motion of
adenylate kinase). The guidance is analytic - the gradient of a sign-free mode loss through the
eigendecomposition, Tweedie's x0 estimate and the denoiser - so nothing is retrained and no
classifier is learned; the same pattern with a motif reconstruction loss scaffolds motifs, and
the two combine ("dynamic motifs").

How the code maps to it.
- :mod:`.elastic_network`: :func:`hinsen_force_constant`, the differentiable torch
  :func:`anm_hessian` (Hinsen or uniform springs), :func:`normal_modes` (checks for exactly six
  zero modes), :func:`mode_displacements`.
- :mod:`.dynamics_loss`: :func:`displacement_cosines`, :func:`normalised_amplitudes`,
  :func:`dynamics_loss` (L_dyn = L1(cosines) + 2 L1(amplitudes)), :func:`mode_overlap`.
- :mod:`.guidance`: :class:`NormalModeGuidance` (update (1 - alpha_t) gs alpha_t g, as the
  official code), :class:`MotifGuidance` (callables ``(x_t, t, denoiser, diffusion) ->
  delta``) and :func:`guided_ddpm_sample` on the shared
  diffusion kit (:mod:`iclr24.kits.diffusion`: the update enters through its posterior-mean
  hook, the noise is centre-of-mass free).
- :mod:`.superposition`: batched Kabsch (motif guidance, motif RMSD, mode overlap).
- :mod:`.backbones`: procedural Calpha traces (helices, hairpins, two-domain hinge proteins)
  and the plausibility measures (bond deviation, clash fraction).
- :mod:`.denoiser`: :class:`CalphaDenoiser`, the small transformer that stands in for Genie.
- :mod:`.experiment`: the claims' pipeline (stand-in training, hinge targets, paired arms).
- ``claims.py``: ``dynamics_guidance`` (guided L_dyn <= 0.7 x unconditional) and
  ``plausibility_kept`` (bond deviation and clashes at most 2 x unconditional).

What differs / is out of reach.
- Genie (aqlaboratory/genie, SE(3)-equivariant, trained on SCOPe, T = 1000) and its weights are
  out of reach (no download, CPU only): a small transformer DDPM trained here on procedural
  Calpha traces of 48 residues (T = 200, cosine, 1,500 steps) replaces it. It returns x0 through
  a v-parameterisation rather than the noise (equivalent in the guidance: Tweedie's x0 estimate
  is what the loss sees, and the noise estimate follows from it), diffuses coordinates in 10 A
  units, and is trained with random-rotation augmentation instead of being equivariant. Its
  samples are far from protein-like (mean bond deviation ~2.3 A at small; both arms share it),
  so the claims test the guidance mechanism, not design quality. The guidance code takes any
  ``model(x_t, t)``, so a Genie wrapper would plug in.
- 150-residue designs, the 3adk target, ProteinMPNN/ESMFold designability and diversity are
  out of reach; the claims measure L_dyn, mode overlap, bond geometry and clashes on held-out
  procedural hinge proteins instead.
- The guidance scale is ours (our units and model), fixed on a validation target before the
  claims ran; cond_frac = 0.5 and eta = 0.4 are the official defaults.
- Safety checks absent from the official code: structures with a non-finite x0 estimate, a
  non-rigid network or near-degenerate modes 6/7 are skipped at that step, and the sampler
  warns (:class:`GuidanceSkippedWarning`) with the number of skipped structure-steps;
  :func:`anm_hessian` refuses non-finite coordinates. The claims score L_dyn on rigid final
  structures only and guard their test bed (rigid networks, guidance applied, chains not
  broken) with a ``control`` (issue 38).

Usage::

    from iclr24.papers.nma_protein_diffusion import (NormalModeGuidance, guided_ddpm_sample,
                                                     normal_modes)
    from iclr24.kits.diffusion import GaussianDiffusion
    diff = GaussianDiffusion("cosine", 200, predict="eps", variance="beta")
    _, vecs = normal_modes(target_coords)                    # (3N, 1): mode 6
    disp = vecs[:, 0].reshape(-1, 3)[motif]                  # (n_m, 3)
    guide = NormalModeGuidance(disp, motif, scale=3000.0, cond_frac=0.5)
    x = guided_ddpm_sample(model, diff, [guide], (10, 150, 3), eta=0.4)
    guide.skipped, guide.attempted       # structure-steps skipped / guided (warned if any)
"""

from .backbones import (
    BOND,
    FAMILIES,
    HingeProtein,
    backbone_dataset,
    bond_deviation,
    clash_fraction,
    hinge_protein,
    ideal_helix,
    renormalise_bonds,
)
from .denoiser import CalphaDenoiser, random_rotations, v_loss
from .dynamics_loss import displacement_cosines, dynamics_loss, mode_overlap, normalised_amplitudes
from .elastic_network import (
    FORCE_FIELDS,
    anm_hessian,
    count_zero_modes,
    hinsen_force_constant,
    mode_displacements,
    normal_modes,
)
from .guidance import (
    GuidanceSkippedWarning,
    MotifGuidance,
    NormalModeGuidance,
    guided_ddpm_sample,
)
from .superposition import kabsch_rotation, motif_rmsd, superpose

__all__ = [
    "BOND",
    "FAMILIES",
    "FORCE_FIELDS",
    "CalphaDenoiser",
    "GuidanceSkippedWarning",
    "HingeProtein",
    "MotifGuidance",
    "NormalModeGuidance",
    "anm_hessian",
    "backbone_dataset",
    "bond_deviation",
    "clash_fraction",
    "count_zero_modes",
    "displacement_cosines",
    "dynamics_loss",
    "guided_ddpm_sample",
    "hinge_protein",
    "hinsen_force_constant",
    "ideal_helix",
    "kabsch_rotation",
    "mode_displacements",
    "mode_overlap",
    "motif_rmsd",
    "normal_modes",
    "normalised_amplitudes",
    "random_rotations",
    "renormalise_bonds",
    "superpose",
    "v_loss",
]
