"""Tiny stand-ins for the frozen pretrained models, trained here on the procedural world.

DeepFloyd IF + T5-XXL, BLIP-2 and CLIP ViT-L/14 weights are out of reach (no downloads, CPU
only). Each is replaced by a small model trained once on :mod:`.world` scenes, cached on disk
(:func:`iclr24.kits.frozen_standins.cached_standin`) and frozen:

- :class:`TinyTextEncoder` (T5's role): an embedding table plus one transformer layer, run on
  input embeddings so placeholder rows can be swapped in;
- :class:`TinyTextToImage` (IF stage I's role): a tiny ``diffusers`` ``UNet2DConditionModel``
  (two levels; cross-attention to the text encoder's output at the lower one; as in IF's UNet,
  an attention-pooled text embedding added to the time embedding, which modulates every ResNet
  block by scale and shift) with a ``DDPMScheduler`` (cosine schedule, as IF) for training and
  a DDIM sampler with classifier-free guidance for generation. Trained jointly with the text
  encoder on captions "a photo of <shape> with <colour> color and <texture> material" whose
  colour word is a fine hue word (24 bins), a coarse colour word (6 bins) or the generic word,
  so language here, as in real captions, names colour at mixed precision. As IF drops 10% of
  its captions to the empty string, 10% of the captions here are the null caption (every axis
  the generic word, :data:`~.world.GENERIC_WORDS`), the unconditional branch of guidance;
- :class:`SceneCNN` in three roles, each trained on its own draw of scenes: the feature
  extractor (CLIP's role: per-layer pooled features of 4 conv layers stand in for 12 CLS
  tokens), the coarse VQA model (BLIP-2's role: answers in 6 colour words, 5 shapes, 4 textures)
  and the truth probes that score generations (independent of the VQA used for anchoring).

Issue 38: the earlier stand-in (additive time embedding, no caption dropout, no guidance, 250
steps) ignored its captions (true fine words gave a hue error of 81 degrees, chance 90), so
nothing could be distilled from it. Scale-shift conditioning, caption dropout with guidance and
a larger training budget are IF's own design; whether the stand-in now follows its captions is
measured in every claim run (the true-words arm is each claim's positive control).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from types import MappingProxyType

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr24.kits.frozen_standins import cached_standin

from .distillation import check_images
from .prompts import TemplatePrompt, WordTokenizer
from .world import (
    AXES,
    COARSE_COLORS,
    FINE_HUES,
    GENERIC_WORDS,
    SHAPES,
    TEXTURES,
    coarse_color_index,
    fine_hue_index,
    sample_scenes,
)

__all__ = [
    "NULL_WORDS",
    "TEMPLATE",
    "CoarseVQA",
    "SceneCNN",
    "StandinConfig",
    "Standins",
    "TextToImageBundle",
    "TinyTextEncoder",
    "TinyTextToImage",
    "TruthProbe",
    "pretrained_standins",
    "train_scene_cnn",
    "train_text_to_image",
    "world_prompt",
    "world_tokenizer",
]

TEMPLATE = "a photo of {category} with {color} color and {material} material"
# the null caption (every axis its generic word): the unconditional branch of guidance
NULL_WORDS = MappingProxyType(dict(GENERIC_WORDS))
_TEMPLATE_WORDS = ("a", "photo", "of", "with", "color", "and", "material")


def world_tokenizer() -> WordTokenizer:
    """The stand-in text encoder's vocabulary: template words, all axis words, generic words."""
    words = (_TEMPLATE_WORDS + SHAPES + FINE_HUES + COARSE_COLORS + TEXTURES
             + tuple(GENERIC_WORDS.values()))
    return WordTokenizer(words)


def world_prompt(tokenizer: WordTokenizer | None = None) -> TemplatePrompt:
    return TemplatePrompt(TEMPLATE, AXES, tokenizer or world_tokenizer())


class TinyTextEncoder(nn.Module):
    """Embedding table + learned positions + one pre-norm transformer layer + final norm."""

    def __init__(self, vocab_size: int, dim: int = 32, max_len: int = 16, heads: int = 4) -> None:
        super().__init__()
        self.embedding_dim = dim
        self.table = nn.Embedding(vocab_size, dim)
        self.position = nn.Parameter(torch.randn(max_len, dim) * 0.02)
        self.layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=2 * dim, dropout=0.0,
                                                batch_first=True, norm_first=True)
        self.norm = nn.LayerNorm(dim)

    def input_embeddings(self, token_ids: torch.Tensor) -> torch.Tensor:
        return self.table(token_ids.to(self.table.weight.device))

    def forward(self, inputs_embeds: torch.Tensor) -> torch.Tensor:
        length = inputs_embeds.shape[1]
        return self.norm(self.layer(inputs_embeds + self.position[:length]))


class TinyTextToImage(nn.Module):
    """eps_theta(x_t, t, cond): a tiny diffusers UNet2DConditionModel and its noise schedule.

    image_size: H = W (a multiple of 4); cond_dim: the text encoder's width; channels:
    block widths of the two UNet levels; timesteps: T of the DDPM schedule.
    """

    def __init__(self, image_size: int = 8, cond_dim: int = 32, channels: Sequence[int] = (16, 32),
                 timesteps: int = 50) -> None:
        super().__init__()
        from diffusers import DDIMScheduler, DDPMScheduler, UNet2DConditionModel  # slow import

        self.image_size, self.channels, self.num_timesteps = image_size, 3, timesteps
        self.unet = UNet2DConditionModel(
            sample_size=image_size, in_channels=3, out_channels=3, layers_per_block=1,
            block_out_channels=tuple(channels),
            down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),  # attention at H/2 only
            up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
            cross_attention_dim=cond_dim, attention_head_dim=8, norm_num_groups=8,
            # as IF's UNet: an attention-pooled text embedding is added to the time embedding,
            # which scales and shifts every ResNet block's normalised features (ADM-style)
            addition_embed_type="text", addition_embed_type_num_heads=4,
            resnet_time_scale_shift="scale_shift")
        self.train_scheduler = DDPMScheduler(num_train_timesteps=timesteps,
                                             beta_schedule="squaredcos_cap_v2")
        self.sample_scheduler = DDIMScheduler.from_config(self.train_scheduler.config)

    def add_noise(self, x0: torch.Tensor, noise: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return self.train_scheduler.add_noise(x0, noise, t)

    def predict_noise(self, x_t: torch.Tensor, t: torch.Tensor, cond: torch.Tensor
                      ) -> torch.Tensor:
        return self.unet(x_t, t, encoder_hidden_states=cond).sample

    def sample(self, cond: torch.Tensor, generator: torch.Generator, steps: int, *,
               uncond: torch.Tensor | None = None, guidance: float = 1.0) -> torch.Tensor:
        """DDIM sampling; with ``uncond`` (the null caption's encoding, cond's shape) and
        ``guidance`` w, classifier-free guidance eps_u + w (eps_c - eps_u). (B, 3, H, W) in
        [-1, 1]-ish (not clamped)."""
        if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= self.num_timesteps:
            raise ValueError(f"steps must be an int in [1, {self.num_timesteps}], got {steps!r}")
        if isinstance(guidance, bool) or not isinstance(guidance, (int, float)) or guidance < 0:
            raise ValueError(f"guidance must be a number >= 0, got {guidance!r}")
        if uncond is None and guidance != 1.0:
            raise ValueError("guidance != 1 needs uncond (the null caption's encoding)")
        if uncond is not None and uncond.shape != cond.shape:
            raise ValueError(f"uncond must have cond's shape {tuple(cond.shape)}, got "
                             f"{tuple(uncond.shape)}")
        sched = self.sample_scheduler
        sched.set_timesteps(steps)
        b = cond.shape[0]
        x = torch.randn((b, 3, self.image_size, self.image_size), generator=generator)
        x = x.to(cond.device)
        guided = uncond is not None and guidance != 1.0
        both = torch.cat([uncond, cond]) if guided else cond
        for t in sched.timesteps:
            tt = torch.full((len(both),), int(t), dtype=torch.int64, device=cond.device)
            if guided:
                eps_u, eps_c = self.predict_noise(torch.cat([x, x]), tt, both).chunk(2)
                eps = eps_u + guidance * (eps_c - eps_u)  # classifier-free guidance
            else:
                eps = self.predict_noise(x, tt, both)
            x = sched.step(eps, t, x).prev_sample
        return x


class TextToImageBundle(nn.Module):
    """The text encoder and the diffusion model, trained together and cached as one module."""

    def __init__(self, vocab_size: int, image_size: int, dim: int, channels: Sequence[int],
                 timesteps: int) -> None:
        super().__init__()
        self.text_encoder = TinyTextEncoder(vocab_size, dim)
        self.t2i = TinyTextToImage(image_size, dim, channels, timesteps)


class SceneCNN(nn.Module):
    """4 conv layers (3x3, width ``width``, GELU, the 3rd strided) with one linear head per
    target on the last layer's global average; ``features`` returns every layer's global average
    (B, 4, width). Input: (B, 3, H, W) in [0, 1], normalised inside (mean 0.5, std 0.25, the
    stand-in's own "CLIP preprocessing")."""

    def __init__(self, heads: dict[str, int], width: int = 32) -> None:
        super().__init__()
        self.num_layers, self.feature_dim = 4, width
        self.convs = nn.ModuleList([
            nn.Conv2d(3, width, 3, padding=1), nn.Conv2d(width, width, 3, padding=1),
            nn.Conv2d(width, width, 3, stride=2, padding=1), nn.Conv2d(width, width, 3, padding=1)])
        self.heads = nn.ModuleDict({k: nn.Linear(width, n) for k, n in heads.items()})

    def _layers(self, images: torch.Tensor) -> list[torch.Tensor]:
        h = (images - 0.5) / 0.25
        pooled = []
        for conv in self.convs:
            h = F.gelu(conv(h))
            pooled.append(h.mean(dim=(2, 3)))
        return pooled

    def features(self, images: torch.Tensor) -> torch.Tensor:
        check_images(images)
        return torch.stack(self._layers(images), dim=1)

    def forward(self, images: torch.Tensor) -> dict[str, torch.Tensor]:
        last = self._layers(images)[-1]
        return {k: head(last) for k, head in self.heads.items()}


FINE_HEADS = {"category": len(SHAPES), "material": len(TEXTURES), "hue": 2}
COARSE_HEADS = {"category": len(SHAPES), "material": len(TEXTURES), "color": len(COARSE_COLORS)}
QUESTIONS = {
    "category": ("What is the object in the photo?", SHAPES),
    "color": ("What is the color of the object in the photo?", COARSE_COLORS),
    "material": ("What is the material of the object in the photo?", TEXTURES),
}


class CoarseVQA:
    """The VQA stand-in: a :class:`SceneCNN` with coarse heads answering the three questions of
    :data:`QUESTIONS` (only those; any other question is a ValueError)."""

    questions = QUESTIONS

    def __init__(self, net: SceneCNN) -> None:
        self.net = net

    def answer(self, images: torch.Tensor, question: str, choices: Sequence[str]) -> list[str]:
        check_images(images)
        axis = next((a for a, (q, _) in QUESTIONS.items() if q == question), None)
        if axis is None:
            raise ValueError(f"the stand-in VQA knows only the questions "
                             f"{[q for q, _ in QUESTIONS.values()]}, got {question!r}")
        vocabulary = QUESTIONS[axis][1]
        allowed = torch.tensor([w in choices for w in vocabulary])
        if not allowed.any():
            raise ValueError(f"choices {list(choices)} share no answer with {list(vocabulary)}")
        with torch.no_grad():
            logits = self.net(images)[axis].masked_fill(~allowed.to(images.device), -torch.inf)
        return [vocabulary[i] for i in logits.argmax(dim=1).tolist()]


class TruthProbe:
    """Scores generations: a :class:`SceneCNN` with shape, texture and hue (cos, sin) heads."""

    def __init__(self, net: SceneCNN) -> None:
        self.net = net

    def predict(self, images: torch.Tensor) -> dict[str, np.ndarray]:
        """{"category": (B,) shape index, "material": (B,) texture index, "hue": (B,) in [0,1)}."""
        check_images(images)
        with torch.no_grad():
            out = self.net(images)
        hue = torch.atan2(out["hue"][:, 1], out["hue"][:, 0]) / (2 * torch.pi) % 1.0
        return {"category": out["category"].argmax(1).numpy(),
                "material": out["material"].argmax(1).numpy(), "hue": hue.numpy()}


@dataclass(frozen=True)
class StandinConfig:
    """Sizes of the stand-ins (everything their weights depend on besides the seed)."""

    image_size: int = 8
    dim: int = 32
    unet_channels: tuple[int, int] = (16, 32)
    timesteps: int = 50
    t2i_steps: int = 40
    t2i_batch: int = 32
    t2i_lr: float = 2e-3
    caption_drop: float = 0.1  # IF drops 10% of captions (classifier-free guidance)
    cnn_width: int = 32
    cnn_steps: int = 60
    cnn_batch: int = 64


def _captions(tokenizer: WordTokenizer, prompt: TemplatePrompt, shape, hue, texture,
              rng: np.random.Generator, caption_drop: float) -> torch.Tensor:
    """Token ids (n, L) of captions with mixed-precision colour words and generic fallbacks; a
    fraction ``caption_drop`` are the null caption (every axis its generic word)."""
    n = len(shape)
    u = rng.random(n)
    color = np.where(u < 0.5, np.array(FINE_HUES)[fine_hue_index(hue)],
                     np.where(u < 0.9, np.array(COARSE_COLORS)[coarse_color_index(hue)],
                              GENERIC_WORDS["color"]))
    cat = np.where(rng.random(n) < 0.1, GENERIC_WORDS["category"], np.array(SHAPES)[shape])
    mat = np.where(rng.random(n) < 0.1, GENERIC_WORDS["material"], np.array(TEXTURES)[texture])
    drop = rng.random(n) < caption_drop  # IF: 10% of captions dropped, for guidance
    words = [NULL_WORDS if d else {"category": c, "color": h, "material": m}
             for c, h, m, d in zip(cat, color, mat, drop)]
    return torch.tensor([tokenizer.encode(prompt.fill_words(w)) for w in words])


def train_text_to_image(bundle: TextToImageBundle, cfg: StandinConfig, seed: int) -> None:
    """Joint DDPM training of the text encoder and the UNet on captioned world scenes."""
    rng = np.random.default_rng([seed, 1])
    gen = torch.Generator().manual_seed(seed)
    tokenizer = world_tokenizer()
    prompt = world_prompt(tokenizer)
    n = cfg.t2i_steps * cfg.t2i_batch
    scenes = sample_scenes(n, cfg.image_size, rng)
    ids = _captions(tokenizer, prompt, scenes.shape, scenes.hue, scenes.texture, rng,
                    cfg.caption_drop)
    x0_all = scenes.images * 2 - 1
    t2i, text = bundle.t2i, bundle.text_encoder
    opt = torch.optim.AdamW(bundle.parameters(), lr=cfg.t2i_lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(cfg.t2i_steps, 1))
    bundle.train()
    for step in range(cfg.t2i_steps):
        sl = slice(step * cfg.t2i_batch, (step + 1) * cfg.t2i_batch)
        x0 = x0_all[sl]
        t = torch.randint(0, t2i.num_timesteps, (len(x0),), generator=gen)
        noise = torch.randn(x0.shape, generator=gen)
        cond = text(text.input_embeddings(ids[sl]))
        loss = F.mse_loss(t2i.predict_noise(t2i.add_noise(x0, noise, t), t, cond), noise)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()


def train_scene_cnn(net: SceneCNN, cfg: StandinConfig, seed: int) -> None:
    """Supervised training on a fresh draw of scenes: cross-entropy for class heads, squared
    error on (cos, sin) of the hue for a ``hue`` head."""
    rng = np.random.default_rng([seed, 2])
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    for _ in range(cfg.cnn_steps):
        s = sample_scenes(cfg.cnn_batch, cfg.image_size, rng)
        out = net(s.images)
        targets = {"category": torch.from_numpy(s.shape), "material": torch.from_numpy(s.texture),
                   "color": torch.from_numpy(coarse_color_index(s.hue))}
        loss = 0.0
        for k, logits in out.items():
            if k == "hue":
                ang = torch.from_numpy(s.hue * 2 * np.pi).float()
                loss = loss + F.mse_loss(logits, torch.stack([ang.cos(), ang.sin()], 1)) * 4
            else:
                loss = loss + F.cross_entropy(logits, targets[k])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()


@dataclass(frozen=True)
class Standins:
    """The frozen parts one experiment uses."""

    tokenizer: WordTokenizer
    prompt: TemplatePrompt
    text_encoder: TinyTextEncoder
    t2i: TinyTextToImage
    features: SceneCNN
    vqa: CoarseVQA
    probe: TruthProbe


def pretrained_standins(cfg: StandinConfig, seed: int,
                        root: str | os.PathLike[str] | None = None) -> Standins:
    """Train (or load from the cache) and freeze every stand-in; roles use distinct seeds."""
    tokenizer = world_tokenizer()
    prompt = world_prompt(tokenizer)
    config = asdict(cfg)

    def make_bundle() -> TextToImageBundle:
        torch.manual_seed(seed)
        return TextToImageBundle(len(tokenizer), cfg.image_size, cfg.dim, cfg.unet_channels,
                                 cfg.timesteps)

    def fit_bundle(m: nn.Module) -> None:
        train_text_to_image(m, cfg, seed)

    def cnn_maker(heads: dict[str, int], role_seed: int):
        def make_cnn() -> SceneCNN:
            torch.manual_seed(role_seed)
            return SceneCNN(heads, cfg.cnn_width)
        return make_cnn

    def cnn_trainer(role_seed: int):
        def fit_cnn(m: nn.Module) -> None:
            train_scene_cnn(m, cfg, role_seed)
        return fit_cnn

    bundle = cached_standin("concept_axes-t2i", config, seed, make_bundle, fit_bundle, root=root)
    nets = {}
    for role, heads, offset in (("features", FINE_HEADS, 101), ("vqa", COARSE_HEADS, 202),
                                ("probe", FINE_HEADS, 303)):
        role_seed = seed * 1000 + offset
        nets[role] = cached_standin(f"concept_axes-{role}", {**config, "heads": heads},
                                    role_seed, cnn_maker(heads, role_seed),
                                    cnn_trainer(role_seed), root=root)
    return Standins(tokenizer, prompt, bundle.text_encoder, bundle.t2i, nets["features"],
                    CoarseVQA(nets["vqa"]), TruthProbe(nets["probe"]))
