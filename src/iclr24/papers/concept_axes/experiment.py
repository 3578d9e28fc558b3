"""The experiments behind the claims: train encoder arms on the frozen stand-ins and score
recompositions and reconstructions with the truth probes.

Arms (spec "Baselines / metrics", scaled down):
- ours: encoders trained with L_recon + lambda * L_anchor, lambda from a fixed sweep;
- no-anchor: the same encoders trained with L_recon only (the paper's "w/o L_anchor" ablation);
- text-only: no encoders; the template filled with the VQA's coarse answer words;
- true words (positive control, issue 38): no encoders; the template filled with the true
  shape, the true *fine* hue word and the true texture, i.e. the best a caption can ask of the
  stand-in text-to-image model. If it does not reproduce what it asks for, nothing can be
  distilled from the model and the test bed cannot tell;
- null arms (issue 38): ours trained with *shuffled* anchors (every image anchored to another
  image's VQA answers: the anchor's pull kept, its information removed), and ours fed the
  features of *other* images (an input-ignoring encoder) for the reconstruction claim.

lambda is not recovered from the paper, so it is swept over :data:`LAMBDA_SWEEP` and every
value is reported. Which value the verdicts read is fixed in advance by the paper's own
heuristic, computed before any training: the lambda whose weighted anchor term is closest (in
log ratio) to the reconstruction term at initialisation (:func:`balanced_lambda`).

Generation uses classifier-free guidance (IF samples with it) with weight
``ExperimentConfig.guidance`` against the null caption; the distillation loss itself is the
conditional one, as in the paper.

Encoder training data are rendered world scenes (the paper trains on images DeepFloyd
generated from axis prompts). Trained encoders are cached like the stand-ins (same seed, config
and code -> same weights), so the two claims share them.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from torch import nn

from iclr24.kits.frozen_standins import cached_standin

from .distillation import (
    anchor_embeddings,
    concept_distillation_loss,
    fit_concept_encoders,
    generate,
    recompose,
    vqa_anchor_words,
)
from .encoders import ConceptEncoders
from .standins import NULL_WORDS, QUESTIONS, StandinConfig, Standins, pretrained_standins
from .world import (
    AXES,
    FINE_HUES,
    GENERIC_WORDS,
    SHAPES,
    TEXTURES,
    SceneBatch,
    circular_hue_error_deg,
    fine_hue_index,
    sample_scenes,
)

__all__ = [
    "HUE_MATCH_DEG",
    "LAMBDA_SWEEP",
    "WORD_ARMS",
    "ExperimentConfig",
    "balanced_lambda",
    "probe_accuracy",
    "probe_hue_error",
    "recomposition_success",
    "reconstruction_hue_error",
    "standins_for",
    "text_embeddings",
    "train_arm",
    "true_word_embeddings",
]

LAMBDA_SWEEP = (0.01, 0.1, 1.0)
HUE_MATCH_DEG = 30.0  # a recomposed hue "matches" within half a coarse colour bin
WORD_ARMS = ("text_only", "true_words")  # arms without encoders


@dataclass(frozen=True)
class ExperimentConfig:
    standins: StandinConfig = field(default_factory=StandinConfig)
    n_train: int = 64
    encoder_steps: int = 10
    encoder_batch: int = 16
    encoder_lr: float = 1e-3
    n_eval: int = 12
    sample_steps: int = 5
    guidance: float = 3.0  # classifier-free guidance weight at generation (IF default: 7)


def _train_set(cfg: ExperimentConfig, seed: int, replicate: int) -> SceneBatch:
    return sample_scenes(cfg.n_train, cfg.standins.image_size,
                         np.random.default_rng([seed, 10, replicate]))


def _anchors(parts: Standins, images: torch.Tensor) -> torch.Tensor:
    words = vqa_anchor_words(parts.vqa, images, QUESTIONS, GENERIC_WORDS)
    return anchor_embeddings(parts.prompt, parts.text_encoder, words)


def balanced_lambda(parts: Standins, cfg: ExperimentConfig, seed: int) -> tuple[float, dict]:
    """The sweep value whose lambda * L_anchor is closest to L_recon at initialisation (log
    ratio), and the initial terms. Computed on replicate 0's untrained encoders."""
    data = _train_set(cfg, seed, 0)
    torch.manual_seed(seed)
    enc = _make_encoders(parts)
    with torch.no_grad():
        feats = parts.features.features(data.images)
        out = concept_distillation_loss(parts.t2i, parts.text_encoder, parts.prompt, data.images,
                                        enc(feats), _anchors(parts, data.images), 0.0,
                                        generator=torch.Generator().manual_seed(seed))
    recon, anchor = float(out["recon"]), float(out["anchor"])
    lam = min(LAMBDA_SWEEP, key=lambda v: abs(math.log(v * anchor / recon)))
    return lam, {"init_recon": recon, "init_anchor": anchor}


def _make_encoders(parts: Standins) -> ConceptEncoders:
    return ConceptEncoders(AXES, feat_layers=parts.features.num_layers,
                           feat_dim=parts.features.feature_dim,
                           out_dim=parts.text_encoder.embedding_dim)


def _derangement(n: int, rng: np.random.Generator) -> np.ndarray:
    """A permutation with no fixed point (n >= 2): position order[i] takes order[i - 1]."""
    order = rng.permutation(n)
    perm = np.empty(n, dtype=np.int64)
    perm[order] = np.roll(order, 1)
    return perm


def train_arm(parts: Standins, cfg: ExperimentConfig, seed: int, replicate: int, lam: float,
              shuffle_anchors: bool = False, root: str | os.PathLike[str] | None = None
              ) -> ConceptEncoders:
    """Encoders trained with anchor weight ``lam`` (0: the no-anchor arm), cached.

    shuffle_anchors: the null arm, every training image anchored to another image's VQA answer
    words (same lambda, same pull towards words, no information about the image)."""
    if shuffle_anchors and lam <= 0:
        raise ValueError("shuffle_anchors needs lam > 0 (there is no anchor to shuffle)")
    data = _train_set(cfg, seed, replicate)
    run_seed = int(np.random.SeedSequence([seed, 20, replicate]).generate_state(1)[0] % 2**31)

    def make() -> nn.Module:
        torch.manual_seed(run_seed)
        return _make_encoders(parts)

    def fit(enc: nn.Module) -> None:
        with torch.no_grad():
            feats = parts.features.features(data.images)
        anchors = _anchors(parts, data.images) if lam > 0 else None
        if shuffle_anchors:
            perm = _derangement(len(anchors), np.random.default_rng([seed, 40, replicate]))
            anchors = anchors[torch.from_numpy(perm)]
        fit_concept_encoders(enc, parts.t2i, parts.text_encoder, feats, parts.prompt,
                             data.images, anchors, lam, steps=cfg.encoder_steps,
                             batch_size=cfg.encoder_batch, lr=cfg.encoder_lr, seed=run_seed)

    config = {**asdict(cfg), "lam": lam, "replicate": replicate, "standin_seed": seed,
              "shuffle_anchors": shuffle_anchors}
    return cached_standin("concept_axes-encoders", config, run_seed, make, fit, root=root)


def _eval_pairs(cfg: ExperimentConfig, seed: int, replicate: int) -> tuple[SceneBatch, SceneBatch]:
    rng = np.random.default_rng([seed, 30, replicate])
    return (sample_scenes(cfg.n_eval, cfg.standins.image_size, rng),
            sample_scenes(cfg.n_eval, cfg.standins.image_size, rng))


def text_embeddings(parts: Standins, images_by_axis: dict[str, torch.Tensor]) -> torch.Tensor:
    """The text-only arm: each axis's embedding is the input embedding of the VQA's answer for
    that axis's source image. (B, K, D)."""
    words = {}
    for axis in AXES:
        answers = vqa_anchor_words(parts.vqa, images_by_axis[axis], {axis: QUESTIONS[axis]},
                                   GENERIC_WORDS)
        words[axis] = answers[axis]
    return anchor_embeddings(parts.prompt, parts.text_encoder, words)


def true_word_embeddings(parts: Standins, truth_by_axis: dict[str, dict[str, np.ndarray]]
                         ) -> torch.Tensor:
    """The true-words arm: each axis's embedding is the input embedding of the true word of
    that axis's source scene (shape, *fine* hue word, texture). truth_by_axis: axis -> the
    source's truth ({"category", "hue", "material"} arrays of length B). (B, K, D)."""
    words = {"category": [SHAPES[i] for i in truth_by_axis["category"]["category"]],
             "color": [FINE_HUES[i] for i in fine_hue_index(truth_by_axis["color"]["hue"])],
             "material": [TEXTURES[i] for i in truth_by_axis["material"]["material"]]}
    return anchor_embeddings(parts.prompt, parts.text_encoder, words)


def _embeddings(parts: Standins, arm: ConceptEncoders | str,
                images_by_axis: dict[str, torch.Tensor],
                truth_by_axis: dict[str, dict[str, np.ndarray]]) -> torch.Tensor:
    if isinstance(arm, ConceptEncoders):
        with torch.no_grad():
            return recompose(arm, parts.features, images_by_axis)
    if arm == "text_only":
        return text_embeddings(parts, images_by_axis)
    if arm == "true_words":
        return true_word_embeddings(parts, truth_by_axis)
    raise ValueError(f"arm must be ConceptEncoders or one of {WORD_ARMS}, got {arm!r}")


def _generate(parts: Standins, cfg: ExperimentConfig, emb: torch.Tensor, seed: int
              ) -> torch.Tensor:
    return generate(parts.t2i, parts.text_encoder, parts.prompt, emb, steps=cfg.sample_steps,
                    seed=seed, guidance=cfg.guidance, null_words=NULL_WORDS)


def _truth(batch: SceneBatch) -> dict[str, np.ndarray]:
    return {"category": batch.shape, "material": batch.texture, "hue": batch.hue}


def _matches(pred: dict[str, np.ndarray], truth: dict[str, np.ndarray], axis: str) -> np.ndarray:
    if axis == "color":
        return circular_hue_error_deg(pred["hue"], truth["hue"]) < HUE_MATCH_DEG
    return pred[axis] == truth[axis]


def recomposition_success(parts: Standins, cfg: ExperimentConfig, seed: int, replicate: int,
                          arm: ConceptEncoders | str) -> dict[str, float]:
    """Take axis k from image A and the others from image B (k cycles over the axes), generate,
    and probe. Success: axis k matches A and every other axis matches B. ``arm``: trained
    encoders, or one of :data:`WORD_ARMS`. Returns the overall and per-swapped-axis success
    rates."""
    a, b = _eval_pairs(cfg, seed, replicate)
    swapped = np.arange(cfg.n_eval) % len(AXES)
    ta, tb = _truth(a), _truth(b)
    by_axis, truth_by_axis = {}, {}
    for k, axis in enumerate(AXES):
        take_a = swapped == k
        by_axis[axis] = torch.where(torch.from_numpy(take_a)[:, None, None, None],
                                    a.images, b.images)
        truth_by_axis[axis] = {key: np.where(take_a, ta[key], tb[key]) for key in ta}
    emb = _embeddings(parts, arm, by_axis, truth_by_axis)
    images = _generate(parts, cfg, emb, seed * 7 + replicate)
    pred = parts.probe.predict(images)
    ok = np.ones(cfg.n_eval, bool)
    for k, axis in enumerate(AXES):
        ok &= np.where(swapped == k, _matches(pred, ta, axis), _matches(pred, tb, axis))
    out = {"success": float(ok.mean())}
    for k, axis in enumerate(AXES):
        out[f"success_swap_{axis}"] = float(ok[swapped == k].mean())
    return out


def reconstruction_hue_error(parts: Standins, cfg: ExperimentConfig, seed: int, replicate: int,
                             arm: ConceptEncoders | str, permute_inputs: bool = False) -> float:
    """Mean circular hue error (degrees) between test images and images generated from their
    own embeddings (``arm``: trained encoders, or one of :data:`WORD_ARMS`).

    permute_inputs: the null arm, every embedding computed from *another* test image (a
    derangement), so the generation ignores the image it is scored against."""
    a, _ = _eval_pairs(cfg, seed, replicate)
    src = np.arange(cfg.n_eval)
    if permute_inputs:
        src = _derangement(cfg.n_eval, np.random.default_rng([seed, 50, replicate]))
    images, truth = a.images[torch.from_numpy(src)], {k: v[src] for k, v in _truth(a).items()}
    emb = _embeddings(parts, arm, {axis: images for axis in AXES},
                      {axis: truth for axis in AXES})
    gen = _generate(parts, cfg, emb, seed * 11 + replicate)
    pred = parts.probe.predict(gen)
    return float(circular_hue_error_deg(pred["hue"], a.hue).mean())


def probe_hue_error(parts: Standins, cfg: ExperimentConfig, seed: int, replicate: int) -> float:
    """Mean circular hue error (degrees) of the truth probe on the real test images (how well
    the scorer itself reads hue)."""
    a, _ = _eval_pairs(cfg, seed, replicate)
    return float(circular_hue_error_deg(parts.probe.predict(a.images)["hue"], a.hue).mean())


def standins_for(cfg: ExperimentConfig, seed: int,
                 root: str | os.PathLike[str] | None = None) -> Standins:
    return pretrained_standins(cfg.standins, seed, root=root)


def probe_accuracy(parts: Standins, cfg: ExperimentConfig, seed: int, replicate: int
                   ) -> dict[str, float]:
    """Shape and texture accuracy of the truth probe on the real test images (the ceiling of
    any recomposition success it scores)."""
    a, _ = _eval_pairs(cfg, seed, replicate)
    pred = parts.probe.predict(a.images)
    return {"category": float(np.mean(pred["category"] == a.shape)),
            "material": float(np.mean(pred["material"] == a.texture))}
