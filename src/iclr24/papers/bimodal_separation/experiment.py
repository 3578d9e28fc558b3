"""The reproduction's experiment: a tiny CLAP pretrained on its own corpus, three separator arms
trained on the same budget, and bss_eval on single-source test compositions.

Arms (``ARMS``):
- ``"U"``: mix-and-separate on natural mixtures (L_unsup only), the paper's baseline;
- ``"W"``: the weak bi-modal objective on the same natural mixtures (L_unsup + L_cns + L_cnt);
- ``"S"``: supervised: mix-and-separate on pairs of single-source clips (upper bound).
The U and W arms read only :func:`~.synthetic_sounds.natural_mixtures`; the tiny CLAP is
pretrained on :func:`~.synthetic_sounds.single_source_clips` ``(purpose="clap")``, the S arm on
``purpose="supervised"`` (independent random streams).

Trained CLAPs and separators are cached on disk (:func:`iclr24.kits.frozen_standins.
cached_standin`) under a key of the config and seed, so two claims that need the same arm at the
same seed train it once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import torch

from iclr24.kits.frozen_standins import cached_standin
from iclr24.kits.threads import torch_threads

from .audio_text import TinyCLAP, pretrain_tiny_clap, zero_shot_accuracy
from .evaluation import evaluate_separation
from .separator import TERMS, BiModalSeparator
from .synthetic_sounds import (
    SOUND_CLASSES,
    heldout_compositions,
    natural_mixtures,
    single_source_clips,
)
from .training import supervised_batches, train_separator, weak_batches
from .unet import Synthesizer, TextConditionedUNet

__all__ = ["ARMS", "ExperimentConfig", "arm_scores", "build_separator", "clap_accuracy",
           "tiny_clap"]

ARMS = {"U": ("unsup",), "W": TERMS, "S": ("unsup",)}
_CODE_VERSION = 1  # bump when training code outside the cached callables changes
_EVAL_ONLY = ("n_test", "n_clap_test")  # sizes that do not change a trained arm


@dataclass(frozen=True)
class ExperimentConfig:
    """Sizes of one run (the claims pick them per scale)."""

    n_mixtures: int = 3000      # natural training mixtures (W, U); as many single clips for S
    n_clap_clips: int = 4000    # the tiny CLAP's separate pretraining corpus
    clap_steps: int = 300
    clap_batch: int = 32
    steps: int = 600            # Adam steps per separator arm
    batch_size: int = 4
    lr: float = 1e-3
    n_test: int = 150           # two-source test compositions
    n_clap_test: int = 400      # held-out single-source clips for the CLAP's zero-shot check
    n_fft: int = 256
    hop: int = 128


def _seeded_init(seed: int, build: Callable[[], torch.nn.Module]) -> torch.nn.Module:
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return build()


def tiny_clap(cfg: ExperimentConfig, seed: int) -> TinyCLAP:
    """The frozen tiny CLAP for ``seed`` (trained once per machine, then loaded)."""
    key = {"n_clips": cfg.n_clap_clips, "steps": cfg.clap_steps, "batch": cfg.clap_batch,
           "version": _CODE_VERSION}

    def make() -> TinyCLAP:
        return _seeded_init(seed, lambda: TinyCLAP(SOUND_CLASSES))

    def fit(model: TinyCLAP) -> None:
        clips = single_source_clips(cfg.n_clap_clips, seed, purpose="clap")
        with torch_threads(1):
            pretrain_tiny_clap(model, clips.waves, clips.labels, steps=cfg.clap_steps,
                               batch_size=cfg.clap_batch, seed=seed)

    return cached_standin("bimodal_separation-clap", key, seed, make, fit)


def clap_accuracy(cfg: ExperimentConfig, seed: int) -> float:
    """Zero-shot accuracy of the seed's frozen tiny CLAP on ``cfg.n_clap_test`` held-out
    single-source clips (their own stream): does the bi-modal loss have a signal to give?"""
    clips = single_source_clips(cfg.n_clap_test, seed, purpose="clap_test")
    with torch_threads(1):
        return zero_shot_accuracy(tiny_clap(cfg, seed), clips.waves, clips.labels,
                                  SOUND_CLASSES, clips.sample_rate)


def build_separator(clap: TinyCLAP, cfg: ExperimentConfig, seed: int) -> BiModalSeparator:
    """A fresh separator (seeded init) around the frozen ``clap``."""
    n_freq = cfg.n_fft // 2 + 1
    return _seeded_init(seed, lambda: BiModalSeparator(
        TextConditionedUNet(n_freq, cond_dim=clap.dim), Synthesizer(8, clap.dim), clap,
        n_fft=cfg.n_fft, hop=cfg.hop, sample_rate=clap.sample_rate))


def _trained_arm(arm: str, cfg: ExperimentConfig, seed: int) -> BiModalSeparator:
    clap = tiny_clap(cfg, seed)
    key = {**{k: v for k, v in asdict(cfg).items() if k not in _EVAL_ONLY}, "arm": arm,
           "version": _CODE_VERSION}

    def make() -> BiModalSeparator:
        return build_separator(clap, cfg, seed)

    def fit(model: BiModalSeparator) -> None:
        if arm == "S":
            sampler = supervised_batches(
                single_source_clips(cfg.n_mixtures, seed, purpose="supervised"), cfg.batch_size)
        else:  # U and W: natural mixtures and captions only
            sampler = weak_batches(natural_mixtures(cfg.n_mixtures, seed), cfg.batch_size)
        with torch_threads(1):
            train_separator(model, sampler, steps=cfg.steps, terms=ARMS[arm], lr=cfg.lr,
                            seed=seed)

    return cached_standin(f"bimodal_separation-arm-{arm}", key, seed, make, fit)


def arm_scores(arm: str, cfg: ExperimentConfig, seed: int) -> dict[str, float]:
    """Train (or load) ``arm`` at ``seed`` and score it on the seed's test compositions:
    mean ``sdr``, ``si_sdr``, ``sdr_mixture`` over both sources of every composition."""
    if arm not in ARMS:
        raise ValueError(f"arm must be one of {tuple(ARMS)}, got {arm!r}")
    model = _trained_arm(arm, cfg, seed)
    with torch_threads(1):
        scores = evaluate_separation(model, heldout_compositions(cfg.n_test, seed))
    return {k: float(np.mean(v)) for k, v in scores.items()}
