"""Distilling concept encoders from a frozen text-to-image model (paper Sec. 3, Eq. 1-3).

    L = L_recon + lambda * sum_k L_anchor,k
    L_recon    = E_{t, eps} || eps - eps_theta(x_t, t, T(template with e_1..e_K)) ||^2
    L_anchor,k = || e_k - w(a_k) ||^2

e_k = f_k(features(x)) replaces the input embedding of axis k's placeholder token; T (the text
encoder) and eps_theta (the diffusion model) are frozen but stay in the autograd graph, so the
only parameters that learn are the encoders'. a_k is the VQA model's answer to axis k's question
(closed answer list; an answer outside it maps to the axis's generic word), w(a_k) that word's
input embedding. Answers are computed once per training image (the paper takes a majority vote
over several samples of a stochastic BLIP-2; the stand-in VQA is deterministic, so one answer).

At inference the embeddings of different images are mixed (:func:`recompose`) and sampled
(:func:`generate`); :func:`test_time_finetune` adapts the encoders to one test image with
L_recon only (the anchor is dropped so the embedding can leave the coarse word).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence

import torch

from .encoders import ConceptEncoders
from .interfaces import ImageFeatureExtractor, TextEncoder, TextToImageModel, VQAModel
from .prompts import TemplatePrompt

__all__ = [
    "anchor_embeddings",
    "check_images",
    "concept_distillation_loss",
    "fit_concept_encoders",
    "generate",
    "recompose",
    "test_time_finetune",
    "vqa_anchor_words",
]


def check_images(images: object, name: str = "images", size: int | None = None) -> torch.Tensor:
    """Validate an image batch: a float tensor (B, 3, H, W) with values in [0, 1]."""
    if not isinstance(images, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(images).__name__}")
    if images.ndim != 4 or images.shape[1] != 3 or images.shape[0] < 1:
        raise ValueError(f"{name} must be (batch, 3, H, W), got shape {tuple(images.shape)}")
    if size is not None and images.shape[-2:] != (size, size):
        raise ValueError(f"{name} must be {size}x{size}, got {tuple(images.shape[-2:])}")
    if not images.is_floating_point():
        raise TypeError(f"{name} must be floating point in [0, 1], got {images.dtype}")
    lo, hi = float(images.min()), float(images.max())
    if lo < 0.0 or hi > 1.0 or math.isnan(lo) or math.isnan(hi):
        raise ValueError(f"{name} must have values in [0, 1] (convert from [-1, 1] or 0..255 "
                         f"first), got [{lo:.3g}, {hi:.3g}]")
    return images


def vqa_anchor_words(vqa: VQAModel, images: torch.Tensor,
                     questions: Mapping[str, tuple[str, Sequence[str]]],
                     fallback: Mapping[str, str]) -> dict[str, list[str]]:
    """a_k for every image: axis -> B answers, each in the axis's choices or its fallback word.

    questions: axis -> (question, closed list of answers); fallback: axis -> generic word."""
    check_images(images)
    words: dict[str, list[str]] = {}
    for axis, (question, choices) in questions.items():
        if axis not in fallback:
            raise ValueError(f"fallback has no generic word for axis {axis!r}")
        answers = vqa.answer(images, question, list(choices))
        if len(answers) != len(images):
            raise ValueError(f"the VQA model gave {len(answers)} answers for {len(images)} images")
        words[axis] = [a if a in choices else fallback[axis] for a in answers]
    return words


def anchor_embeddings(prompt: TemplatePrompt, text_encoder: TextEncoder,
                      words: Mapping[str, Sequence[str]]) -> torch.Tensor:
    """w(a_k): the input embeddings of the anchor words, (B, K, D), detached (targets)."""
    with torch.no_grad():
        return prompt.word_embeddings(text_encoder, words).detach()


def concept_distillation_loss(t2i: TextToImageModel, text_encoder: TextEncoder,
                              prompt: TemplatePrompt, images: torch.Tensor,
                              embeddings: torch.Tensor, anchors: torch.Tensor | None, lam: float,
                              *, generator: torch.Generator | None = None
                              ) -> dict[str, torch.Tensor]:
    """L = L_recon + lam * sum_k ||e_k - w(a_k)||^2 for one batch.

    images: (B, 3, H, W) in [0, 1]; embeddings: (B, K, D) (the encoders' outputs, in the graph);
    anchors: (B, K, D) targets w(a_k), or None when lam == 0; generator draws t and eps.
    Returns {"loss", "recon", "anchor"} (anchor is the unweighted sum over axes, batch mean).
    """
    check_images(images, size=t2i.image_size)
    if not isinstance(lam, (int, float)) or isinstance(lam, bool) or lam < 0:
        raise ValueError(f"lam must be a number >= 0, got {lam!r}")
    if embeddings.ndim != 3 or embeddings.shape[0] != images.shape[0]:
        raise ValueError(f"embeddings must be (batch={images.shape[0]}, axes, dim), got "
                         f"{tuple(embeddings.shape)}")
    if anchors is None and lam > 0:
        raise ValueError("anchors are required when lam > 0")
    if anchors is not None and anchors.shape != embeddings.shape:
        raise ValueError(f"anchors must have the embeddings' shape {tuple(embeddings.shape)}, "
                         f"got {tuple(anchors.shape)}")
    x0 = images * 2.0 - 1.0                                    # [0, 1] -> IF's [-1, 1]
    b = x0.shape[0]
    t = torch.randint(0, t2i.num_timesteps, (b,), generator=generator).to(x0.device)
    noise = torch.randn(x0.shape, generator=generator).to(x0.device)
    x_t = t2i.add_noise(x0, noise, t)
    cond = text_encoder(prompt.input_embeddings(text_encoder, embeddings))
    recon = (noise - t2i.predict_noise(x_t, t, cond)).pow(2).mean()  # ||eps - eps_theta||^2
    if anchors is None:
        anchor = embeddings.new_zeros(())
    else:
        anchor = (embeddings - anchors).pow(2).sum(dim=(1, 2)).mean()  # sum_k ||e_k - w(a_k)||^2
    return {"loss": recon + lam * anchor, "recon": recon, "anchor": anchor}


def fit_concept_encoders(encoders: ConceptEncoders, t2i: TextToImageModel,
                         text_encoder: TextEncoder, features: torch.Tensor,
                         prompt: TemplatePrompt, images: torch.Tensor,
                         anchors: torch.Tensor | None, lam: float, *, steps: int,
                         batch_size: int = 32, lr: float = 1e-3, seed: int = 0
                         ) -> list[dict[str, float]]:
    """Train ``encoders`` in place with Adam on :func:`concept_distillation_loss`.

    features: (N, layers, dim) frozen features of ``images`` (N, 3, H, W in [0, 1]);
    anchors: (N, K, D) or None. Returns the per-step losses.
    """
    if tuple(encoders.axes) != tuple(prompt.axes):
        raise ValueError(f"encoders' axes {encoders.axes} differ from the prompt's {prompt.axes}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ValueError(f"steps must be an int >= 0, got {steps!r}")
    n = len(images)
    if len(features) != n or (anchors is not None and len(anchors) != n):
        raise ValueError("features, images and anchors must have the same length")
    gen = torch.Generator().manual_seed(seed)
    params = [p for p in encoders.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr)
    encoders.train()
    history = []
    for _ in range(steps):
        idx = torch.randint(0, n, (min(batch_size, n),), generator=gen)
        emb = encoders(features[idx])
        out = concept_distillation_loss(t2i, text_encoder, prompt, images[idx], emb,
                                        None if anchors is None else anchors[idx], lam,
                                        generator=gen)
        opt.zero_grad(set_to_none=True)
        out["loss"].backward()
        opt.step()
        history.append({k: float(v.detach()) for k, v in out.items()})
    encoders.eval()
    return history


def recompose(encoders: ConceptEncoders, feature_extractor: ImageFeatureExtractor,
              images_by_axis: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """Embeddings (B, K, D) whose axis k comes from ``images_by_axis[axis_k]`` (B images each).

    Recomposition swaps axes between images: {"color": A, "category": B, "material": B} takes
    A's colour and B's category and material."""
    if set(images_by_axis) != set(encoders.axes):
        raise ValueError(f"images_by_axis must have exactly the axes {list(encoders.axes)}, got "
                         f"{sorted(images_by_axis)}")
    sizes = {len(check_images(v, f"images_by_axis[{k!r}]")) for k, v in images_by_axis.items()}
    if len(sizes) != 1:
        raise ValueError(f"every axis needs the same number of images, got {sorted(sizes)}")
    cache: dict[int, torch.Tensor] = {}
    out = []
    for axis in encoders.axes:
        imgs = images_by_axis[axis]
        if id(imgs) not in cache:
            cache[id(imgs)] = feature_extractor.features(imgs)
        out.append(encoders.encode_axis(axis, cache[id(imgs)]))
    return torch.stack(out, dim=1)


def generate(t2i: TextToImageModel, text_encoder: TextEncoder, prompt: TemplatePrompt,
             embeddings: torch.Tensor, *, steps: int, seed: int = 0, guidance: float = 1.0,
             null_words: Mapping[str, str] | None = None) -> torch.Tensor:
    """Sample images (B, 3, H, W) in [0, 1] from the template filled with ``embeddings``
    (B, K, D).

    guidance: classifier-free guidance weight w (1: the conditional model alone, as in
    training); w != 1 needs ``null_words`` (axis -> word), the caption whose encoding is the
    unconditional branch (IF uses the empty prompt; a template needs one word per axis)."""
    if not isinstance(embeddings, torch.Tensor) or embeddings.ndim != 3:
        raise ValueError("embeddings must be a (batch, axes, dim) tensor")
    if isinstance(guidance, bool) or not isinstance(guidance, (int, float)) or guidance < 0:
        raise ValueError(f"guidance must be a number >= 0, got {guidance!r}")
    if guidance != 1.0 and null_words is None:
        raise ValueError("guidance != 1 needs null_words (axis -> word of the null caption)")
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        cond = text_encoder(prompt.input_embeddings(text_encoder, embeddings))
        if guidance == 1.0:
            x = t2i.sample(cond, gen, steps)
        else:
            b = len(embeddings)
            null = prompt.word_embeddings(text_encoder, {a: [null_words[a]] * b
                                                         for a in prompt.axes
                                                         if a in null_words})
            uncond = text_encoder(prompt.input_embeddings(text_encoder, null))
            x = t2i.sample(cond, gen, steps, uncond=uncond, guidance=float(guidance))
    return ((x.clamp(-1.0, 1.0) + 1.0) / 2.0)                  # [-1, 1] -> [0, 1]


def test_time_finetune(encoders: ConceptEncoders, t2i: TextToImageModel,
                       text_encoder: TextEncoder, feature_extractor: ImageFeatureExtractor,
                       prompt: TemplatePrompt, images: torch.Tensor, *, steps: int,
                       lr: float = 1e-4, seed: int = 0) -> ConceptEncoders:
    """A copy of ``encoders`` finetuned on test ``images`` with L_recon only (lambda = 0: the
    anchor is dropped at test time). The given encoders are left unchanged."""
    check_images(images, size=t2i.image_size)
    tuned = copy.deepcopy(encoders)
    tuned.requires_grad_(True)
    with torch.no_grad():
        feats = feature_extractor.features(images)
    fit_concept_encoders(tuned, t2i, text_encoder, feats, prompt, images, None, 0.0,
                         steps=steps, batch_size=len(images), lr=lr, seed=seed)
    return tuned
