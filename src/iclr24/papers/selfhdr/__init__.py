"""SelfHDR: Self-Supervised High Dynamic Range Imaging with Multi-Exposure Images in Dynamic
Scenes (Z. Zhang, H. Wang, S. Liu, X. Wang, L. Lei, W. Zuo; ICLR 2024; arXiv 2310.01840; official
code cszhilu1998/SelfHDR).

What the paper does. Deghosting HDR networks are usually trained with ground-truth HDR images,
which are costly to capture in dynamic scenes. SelfHDR trains the same networks without HDR
labels from two pseudo-targets built from the multi-exposure inputs: a *color* component Y_color
(merge of the aligned exposures: right radiance, ghosts where alignment fails) and a *structure*
component Y_stru (the output of a first network S trained to expand the well-exposed
reference's structure, with masks that drop ghosted pixels). The final network F is supervised
by both (masked L1 to Y_color + a VGG loss to Y_stru) and used alone at test time.

How the code maps to it.
- :mod:`.hdr_imaging`: ``H = I^gamma / t`` (:func:`ldr_to_hdr`; times relative to the short
  frame, so HDR values lie in [0, 1] as in Kalantari's data), the mu-law tone map
  (:func:`mu_tonemap`, mu = 5000), the tent Lambda (:func:`tent_weight`), reference-driven
  triangle weights and the color component (:func:`merge_aligned`), global alignment by a
  bounded translation search or phase correlation (:func:`align_to_reference`), dense
  block-matching flow on top of it (:func:`align_dense`, the default for Y_color), PSNR /
  PSNR-mu.
- :mod:`.losses`: the masks M_1 (5/255) and M_2 (10/255) (:func:`structure_masks`), the stage-1
  loss L_expand + 4 L_preserve and the stage-2 loss L_color + 1 * L_stru, with a swappable
  ``perceptual`` hook (default :func:`gradient_ssim_loss`, a stand-in for VGG-19).
- :mod:`.ahdrnet`: a narrow AHDRNet (attention to the reference, dilated residual dense blocks).
- :mod:`.training`: :class:`SelfHDRTrainer` (``color_labels``, ``fit_stage1``,
  ``make_structure_labels``, ``fit_stage2``, and the color-only and supervised arms).
- :mod:`.synthetic_scenes`: :func:`make_hdr_scenes`, dynamic HDR scenes from scikit-learn's
  bundled photos (camera shifts + a moving sprite, t = 1, 4, 16, 8-bit noisy LDRs, ground truth).
- :mod:`.hdr_io`: Radiance ``.hdr`` read/write and :func:`load_kalantari_scene` (a scene folder
  of Kalantari's set: three ``.tif`` frames, ``exposure.txt``, ``HDRImg.hdr``).
- :mod:`.comparison`: the arms of the claims, trained side by side per seed, with the
  reference-frame null arm.
- ``claims.py``: ``structure_removes_ghosts`` and ``close_to_supervised``.

What is out of reach / differs. Real HDR captures (Kalantari's SIG17 set, the other real
datasets) cannot be downloaded here (the loader reads them where they exist), optical flow
(here integer block matching after a global translation: it follows the moving sprite but
fails, as flow does, on the background the sprite uncovers and in saturated areas, where the
color component ghosts), VGG-19 weights (a gradient + SSIM stand-in; plug a VGG loss into ``perceptual``),
HDR-VDP-2, full-size networks and the paper's 180k-step schedules (a tiny AHDRNet trained a few
hundred steps on small crops).

Usage::

    from iclr24.papers.selfhdr import SelfHDRConfig, SelfHDRTrainer, make_hdr_scenes
    scenes = make_hdr_scenes(64, 32, seed=0)
    trainer = SelfHDRTrainer(SelfHDRConfig(steps=300))
    y_color, aligned = trainer.color_labels(scenes.ldrs)
    s_net = trainer.fit_stage1(scenes.ldrs, y_color)
    y_stru = trainer.make_structure_labels(s_net, aligned)
    f_net = trainer.fit_stage2(scenes.ldrs, y_color, y_stru)
    hdr = trainer.predict(f_net, scenes.ldrs)                      # (64, 3, 32, 32)
    write_radiance_hdr("scene0.hdr", hdr[0].permute(1, 2, 0))      # Radiance RGBE file
    real = load_kalantari_scene("SIG17/Test/001")  # a scene folder fetched by hand
    # real.times is (1, 4, 16) or (1, 8, 64): train with SelfHDRConfig(times=real.times)
"""

from .ahdrnet import AHDRNet
from .comparison import ARMS, ArmRunner, ArmScores, ExperimentSetup, arm_runner
from .hdr_imaging import (
    ALIGN_METHODS,
    GAMMA,
    MU,
    align_dense,
    align_to_reference,
    ldr_to_hdr,
    merge_aligned,
    mu_tonemap,
    psnr,
    psnr_mu,
    tent_weight,
    triangle_weights,
    validate_times,
)
from .hdr_io import KalantariScene, load_kalantari_scene, read_radiance_hdr, write_radiance_hdr
from .losses import (
    color_mask,
    expansion_mask,
    gradient_ssim_loss,
    selfhdr_stage1_loss,
    selfhdr_stage2_loss,
    structure_masks,
)
from .synthetic_scenes import HDRScenes, make_hdr_scenes
from .training import ALIGNMENTS, SelfHDRConfig, SelfHDRTrainer, network_inputs

__all__ = [
    "ALIGNMENTS",
    "ALIGN_METHODS",
    "ARMS",
    "GAMMA",
    "MU",
    "AHDRNet",
    "ArmRunner",
    "ArmScores",
    "ExperimentSetup",
    "HDRScenes",
    "KalantariScene",
    "SelfHDRConfig",
    "SelfHDRTrainer",
    "align_dense",
    "align_to_reference",
    "arm_runner",
    "color_mask",
    "expansion_mask",
    "gradient_ssim_loss",
    "ldr_to_hdr",
    "load_kalantari_scene",
    "make_hdr_scenes",
    "merge_aligned",
    "mu_tonemap",
    "network_inputs",
    "psnr",
    "psnr_mu",
    "read_radiance_hdr",
    "selfhdr_stage1_loss",
    "selfhdr_stage2_loss",
    "structure_masks",
    "tent_weight",
    "triangle_weights",
    "validate_times",
    "write_radiance_hdr",
]
