"""The arms the SelfHDR claims compare, trained and evaluated side by side on one set of
synthetic scenes per seed (same scenes, same network init, same batch order for every arm).

Arms (the spec's (a)-(d), plus two references):
- ``color_merge`` (a): Y_color itself, the aligned merge, no network;
- ``color_only`` (b): AHDRNet trained on Y_color alone (L_color with M = 1);
- ``selfhdr`` (c): stage 1 (S) -> Y_stru -> stage 2 (F), the method;
- ``supervised`` (d): AHDRNet trained with ground truth (upper bound);
- ``structure_net``: S itself (stage 1 only);
- ``reference_only``: H_2 = I_2^2.2, the reference frame linearised (no merging at all);
- ``untrained``: the shared initial network (a null method for negative controls).

:class:`ArmRunner` trains an arm only when asked and keeps it, so a claim that needs three arms
trains three networks; :func:`arm_runner` reuses one runner per (setup, seed) in a process.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from .hdr_imaging import psnr, psnr_mu
from .synthetic_scenes import HDRScenes, make_hdr_scenes
from .training import SelfHDRConfig, SelfHDRTrainer

__all__ = ["ARMS", "ArmRunner", "ArmScores", "ExperimentSetup", "arm_runner", "arm_table",
           "paired_gain", "per_seed"]

ARMS = ("color_merge", "color_only", "selfhdr", "supervised", "structure_net", "reference_only",
        "untrained")

_TEST_SEED_OFFSET = 1_000_003  # test scenes never overlap the training scenes of any seed


@dataclass(frozen=True)
class ExperimentSetup:
    """Scene sizes and counts plus the training config (its seed is replaced per run)."""

    size: int = 32
    n_train: int = 64
    n_test: int = 16
    config: SelfHDRConfig = field(default_factory=SelfHDRConfig)


@dataclass(frozen=True)
class ArmScores:
    """Per test scene: PSNR-mu overall, PSNR-mu inside the motion mask, PSNR-l (peak 1)."""

    psnr_mu: np.ndarray
    psnr_mu_motion: np.ndarray
    psnr_l: np.ndarray

    def means(self) -> dict[str, float]:
        return {"psnr_mu": float(self.psnr_mu.mean()),
                "psnr_mu_motion": float(self.psnr_mu_motion.mean()),
                "psnr_l": float(self.psnr_l.mean())}


class ArmRunner:
    """Lazily trains and scores the arms of one seed."""

    def __init__(self, setup: ExperimentSetup, seed: int):
        self.setup = setup
        self.seed = int(seed)
        self.trainer = SelfHDRTrainer(replace(setup.config, seed=self.seed))
        self._outputs: dict[str, torch.Tensor] = {}
        self._scores: dict[str, ArmScores] = {}

    @functools.cached_property
    def train_scenes(self) -> HDRScenes:
        s = self.setup
        return make_hdr_scenes(s.n_train, s.size, seed=self.seed, times=s.config.times)

    @functools.cached_property
    def test_scenes(self) -> HDRScenes:
        s = self.setup
        return make_hdr_scenes(s.n_test, s.size, seed=self.seed + _TEST_SEED_OFFSET,
                               times=s.config.times)

    @functools.cached_property
    def color_labels(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(Y_color, aligned stacks) of the training scenes."""
        return self.trainer.color_labels(self.train_scenes.ldrs)

    @functools.cached_property
    def structure_net(self):
        return self.trainer.fit_stage1(self.train_scenes.ldrs, self.color_labels[0])

    @functools.cached_property
    def structure_labels(self) -> torch.Tensor:
        """Y_stru: S frozen, run once over the aligned training stacks."""
        return self.trainer.make_structure_labels(self.structure_net, self.color_labels[1])

    def _network(self, arm: str):
        t, ldrs = self.trainer, self.train_scenes.ldrs
        if arm == "color_only":
            return t.fit_color_only(ldrs, self.color_labels[0])
        if arm == "selfhdr":
            return t.fit_stage2(ldrs, self.color_labels[0], self.structure_labels)
        if arm == "supervised":
            return t.fit_supervised(ldrs, self.train_scenes.gt)
        if arm == "structure_net":
            return self.structure_net
        return t.new_network()  # untrained

    def output(self, arm: str) -> torch.Tensor:
        """The arm's HDR prediction for the test scenes, (n_test, 3, H, W)."""
        if arm not in ARMS:
            raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")
        if arm not in self._outputs:
            ldrs = self.test_scenes.ldrs
            if arm == "color_merge":
                out = self.trainer.color_labels(ldrs)[0]
            elif arm == "reference_only":
                out = torch.as_tensor(ldrs[:, 1], dtype=torch.float32) ** 2.2
            else:
                out = self.trainer.predict(self._network(arm), ldrs)
            self._outputs[arm] = out.detach()
        return self._outputs[arm]

    def scores(self, arm: str) -> ArmScores:
        """Per-scene PSNR-mu, PSNR-mu in the motion mask and PSNR-l of ``arm``."""
        if arm not in self._scores:
            out = self.output(arm).double()
            gt, mask = self.test_scenes.gt, self.test_scenes.motion_mask
            n = len(self.test_scenes)
            self._scores[arm] = ArmScores(
                psnr_mu=np.array([psnr_mu(out[i], gt[i]) for i in range(n)]),
                psnr_mu_motion=np.array([psnr_mu(out[i], gt[i], mask[i]) for i in range(n)]),
                psnr_l=np.array([psnr(out[i], gt[i]) for i in range(n)]))
        return self._scores[arm]


@functools.lru_cache(maxsize=8)
def arm_runner(setup: ExperimentSetup, seed: int) -> ArmRunner:
    """One shared :class:`ArmRunner` per (setup, seed) in this process, so claims that need the
    same arm train it once."""
    return ArmRunner(setup, seed)


def per_seed(runners, arm: str, key: str) -> list[float]:
    """The scene-averaged ``key`` (psnr_mu, psnr_mu_motion, psnr_l) of ``arm`` for each runner."""
    return [r.scores(arm).means()[key] for r in runners]


def paired_gain(runners, method: str, baseline: str, key: str) -> list[float]:
    """Per seed: ``key`` of ``method`` minus ``key`` of ``baseline`` (same scenes and init)."""
    return [a - b for a, b in zip(per_seed(runners, method, key), per_seed(runners, baseline, key))]


def arm_table(runners, arms) -> list[dict]:
    """One row per arm: the seed means of PSNR-mu, PSNR-mu in the motion mask and PSNR-l."""
    return [{"arm": arm, **{k: float(np.mean(per_seed(runners, arm, k)))
                            for k in ("psnr_mu", "psnr_mu_motion", "psnr_l")}} for arm in arms]
