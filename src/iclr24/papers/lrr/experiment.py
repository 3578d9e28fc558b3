"""The laptop-scale LRR experiment: one function that trains and scores an arm on MiniCATER.

Arms (the paper's ablations, Sec. 4.5 / spec):
- ``"lrr"``: surrogate tasks in training, two-stream encoder, Look-Remember-Reason decoding
  with the model's own Look answers (teacher-forced Look answers also scored);
- ``"final_only"``: the same architecture trained only on the final answer;
- ``"spatial_only"``: LRR without the motion stream.

Everything an arm depends on is in :class:`ExperimentConfig`; the claims pick the sizes per
scale. Models are far smaller than the spec's 1-2M parameters (d = 64, one layer per stream, a
two-layer LM) and train for 800 steps at small (spec: ~2,500), because each claim trains six of them on two
CPU cores in minutes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .lrr import LRR, FitConfig
from .minicater import MiniCATERConfig, MiniCATERVideo, generate_minicater
from .model import CrossAttentionLM, TwoStreamVideoEncoder
from .program import SurrogateProgram, Vocabulary

__all__ = ["ARMS", "ExperimentConfig", "build_model", "majority_floor", "make_data", "run_arm"]

ARMS = ("lrr", "final_only", "spatial_only")


@dataclass(frozen=True)
class ExperimentConfig:
    """Data, model and optimiser sizes of one run."""

    n_train: int = 3000
    n_test: int = 600
    n_frames: int = 12
    patch: int = 8
    dim: int = 64
    spatial_layers: int = 1
    motion_layers: int = 1
    lm_layers: int = 2
    heads: int = 4
    steps: int = 400
    batch_size: int = 16
    lr: float = 3e-3

    @property
    def look_frames(self) -> tuple[int, ...]:
        return tuple(range(0, self.n_frames - 1, 3))  # a Look every 3 frames


def make_data(config: ExperimentConfig, seed: int
              ) -> tuple[list[MiniCATERVideo], list[MiniCATERVideo]]:
    """Train and test videos for one seed (disjoint draws of the same generator)."""
    rng_train, rng_test = (np.random.default_rng(s)
                           for s in np.random.SeedSequence(seed).spawn(2))
    world = MiniCATERConfig(n_frames=config.n_frames)
    return (generate_minicater(config.n_train, world, seed=rng_train),
            generate_minicater(config.n_test, world, seed=rng_test))


def majority_floor(data: tuple[list[MiniCATERVideo], list[MiniCATERVideo]]
                   ) -> dict[str, float]:
    """The input-ignoring predictor: always the most frequent final cell of the training videos
    (ties: the lowest cell). Its top-1 accuracy on the test videos: ``acc`` (all),
    ``acc_contained`` / ``acc_visible`` (snitch contained / visible at the end). The claims'
    learning controls ask the arms to beat it."""
    train, test = data
    if not train or not test:
        raise ValueError("data must hold non-empty (train, test) lists of videos")
    cells = np.array([v.final_cell for v in train])
    mode = int(np.argmax(np.bincount(cells)))
    hit = np.array([v.final_cell == mode for v in test])
    hidden = np.array([v.contained_at_end for v in test])
    return {"acc": float(hit.mean()),
            "acc_contained": float(hit[hidden].mean()) if hidden.any() else float("nan"),
            "acc_visible": float(hit[~hidden].mean()) if (~hidden).any() else float("nan")}


def build_model(config: ExperimentConfig, vocab: Vocabulary, *, motion: bool = True,
                seed: int = 0) -> LRR:
    """An LRR model with freshly initialised weights (``torch.manual_seed(seed)``)."""
    torch.manual_seed(seed)
    size = MiniCATERConfig(n_frames=config.n_frames).frame_size
    encoder = TwoStreamVideoEncoder(size, config.patch, config.dim, config.spatial_layers,
                                    config.motion_layers if motion else 0, config.heads,
                                    config.n_frames)
    length = SurrogateProgram(vocab, config.look_frames).length
    lm = CrossAttentionLM(len(vocab), config.dim, config.lm_layers, config.heads, 1, length)
    return LRR(encoder, lm, vocab)


def run_arm(arm: str, config: ExperimentConfig, seed: int,
            data: tuple[list[MiniCATERVideo], list[MiniCATERVideo]]) -> dict[str, float]:
    """Train arm ``arm`` on data[0], score on data[1]: accuracies overall and on the
    contained-at-end subset (generated Look answers), plus teacher-forced ones and Look-answer
    accuracy for arms with surrogates."""
    if arm not in ARMS:
        raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")
    train, test = data
    vocab = Vocabulary(config.n_frames, MiniCATERConfig(n_frames=config.n_frames).n_cells)
    program = SurrogateProgram(vocab, config.look_frames, surrogates=arm != "final_only")
    model = build_model(config, vocab, motion=arm != "spatial_only", seed=seed)
    losses = model.fit(train, program, FitConfig(steps=config.steps,
                                                  batch_size=config.batch_size, lr=config.lr),
                       seed=seed)
    y = np.array([v.final_cell for v in test])
    hidden = np.array([v.contained_at_end for v in test])
    final, looks = model.predict_final(test, program)
    out = {"acc": float(np.mean(final == y)), "acc_contained": float(np.mean((final == y)[hidden])),
           "acc_visible": float(np.mean((final == y)[~hidden])),
           "final_loss": float(np.mean(losses[-max(1, len(losses) // 10):]))}
    if program.surrogates:
        truth = np.array([[v.snitch_cell(t) for t in program.look_frames] for v in test])
        out["look_acc"] = float(np.mean(looks == truth))
        tf_final, tf_looks = model.predict_final(test, program, teacher_forced=True)
        out["acc_tf"] = float(np.mean(tf_final == y))
        out["acc_tf_contained"] = float(np.mean((tf_final == y)[hidden]))
        out["look_acc_tf"] = float(np.mean(tf_looks == truth))
    return out
