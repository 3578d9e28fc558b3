"""The laptop-scale world of the claims: digits, a VQ generator, an oracle zoo, a held-out judge
and the evaluated models (the paper's MNIST / CIFAR-10 / ImageNet setting scaled down).

Data. scikit-learn's bundled digits (1797 images), split per class into 40 % evaluated-model
training, 35 % oracle pool and 25 % test (:func:`digit_splits`). The evaluated models train on the
40 % only; the oracle zoo and the judge on the 40 % *and* the pool ("pretrained on more data"),
the zoo with shift / scale / rotation / elastic augmentation (:func:`augment_digits`); the VQ
generator on all non-test images.

Images are 8 x 8 at ``smoke`` and ``small`` (the digits' native resolution) and 16 x 16 (bilinear
upsampling, :func:`iclr24.kits.image_sources.digits_images`) at ``full``. The spec asks for 16 x 16;
upsampling adds no information and makes every decoder call of generation about 4x dearer on
CPU, which does not fit the small-scale budget (five models x three seeds x 50 steps over the
full test split). The generator's latent is 4 x 4 x 16 with 64 codes at either size.

Parts (each trained here, then frozen; the expensive ones once per machine via
:func:`iclr24.kits.frozen_standins.cached_standin`):

- generator: the kit's :class:`~iclr24.kits.vector_quantization.VQAutoencoder` (stand-in for the
  paper's ImageNet VQGAN), wrapped as a :class:`~.latent_generation.VQLatentGenerator`;
- oracle zoo: three :class:`DigitCNN` of widths 12 / 16 / 24 (the evaluated CNN: 8) and different
  seeds, all used in generation (stand-ins for the CLIP / ViT foundation models, out of reach);
- judge: an RBF SVC on pixels (:class:`PixelSVCJudge`), a different model family that takes no
  part in generation (and could not: it is not differentiable);
- evaluated models (:data:`EVALUATED_KINDS`): logistic regression, an MLP, a small CNN, the CNN
  trained with Gaussian-noise augmentation and the CNN with PGD adversarial training (L_inf 0.1,
  5 steps, Madry et al.).
"""

from __future__ import annotations

import hashlib
import inspect
import math
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from iclr24.kits.frozen_standins import cached_standin, freeze
from iclr24.kits.small_classifiers import stratified_split_indices
from iclr24.kits.vector_quantization import VQAutoencoder, fit_vq_autoencoder

from .latent_generation import VQLatentGenerator, check_images
from .oracle_zoo import OracleZoo

__all__ = [
    "DIGIT_CLASSES",
    "EVALUATED_KINDS",
    "SPLIT_FRACTIONS",
    "DigitCNN",
    "DigitSplits",
    "DigitWorld",
    "DigitWorldConfig",
    "LogisticRegression",
    "PixelMLP",
    "PixelSVCJudge",
    "augment_digits",
    "build_digit_world",
    "digit_splits",
    "gaussian_noise",
    "load_digit_tensors",
    "pgd_linf",
    "train_classifier",
    "train_evaluated_model",
]

DIGIT_CLASSES = tuple(str(d) for d in range(10))
EVALUATED_KINDS = ("logreg", "mlp", "cnn", "cnn_noise", "cnn_pgd")
SPLIT_FRACTIONS = (0.40, 0.35, 0.25)  # evaluated-model training, oracle pool, test

Transform = Callable[[torch.Tensor, torch.Tensor, nn.Module, torch.Generator], torch.Tensor]


@dataclass(frozen=True)
class DigitSplits:
    """Disjoint, class-stratified index arrays into the 1797 digits."""

    train: np.ndarray
    oracle_pool: np.ndarray
    test: np.ndarray

    @property
    def non_test(self) -> np.ndarray:
        """train + oracle pool (what the zoo, the judge and the generator learn from)."""
        return np.sort(np.concatenate([self.train, self.oracle_pool]))


def digit_splits(labels: np.ndarray, seed: int) -> DigitSplits:
    """40 / 35 / 25 % stratified split of ``labels`` (:data:`SPLIT_FRACTIONS`)."""
    train, pool, test = stratified_split_indices(np.asarray(labels), SPLIT_FRACTIONS, seed)
    return DigitSplits(train, pool, test)


def load_digit_tensors(size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The digits as images (1797, 1, size, size) in [0, 1] and labels (1797,) int64; size 8
    is the native resolution, larger sizes are bilinear upsamplings."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 8 or size % 4:
        raise ValueError(f"size must be an int >= 8 and a multiple of 4, got {size!r}")
    if size == 8:
        from sklearn.datasets import load_digits

        d = load_digits()
        images, labels = d.images.astype(np.float32) / 16.0, d.target
    else:
        from iclr24.kits.image_sources import digits_images

        images, labels = digits_images(size)
    return torch.from_numpy(np.ascontiguousarray(images))[:, None], torch.from_numpy(
        np.asarray(labels, dtype=np.int64))


def augment_digits(x: torch.Tensor, generator: torch.Generator, *, max_rotation: float = 12.0,
                   scale: tuple[float, float] = (0.9, 1.1), max_shift_px: float = 1.0,
                   elastic_px: float = 0.5) -> torch.Tensor:
    """Random affine (rotation in degrees, isotropic scale, shift in pixels) plus a smooth
    elastic displacement (a 3 x 3 Gaussian field upsampled bilinearly, ``elastic_px`` pixels
    standard deviation), one draw per image from ``generator``; bilinear resampling, zero
    padding, output in [0, 1]. x: (B, C, H, W)."""
    check_images(x)
    b, _, h, w = x.shape
    g = generator
    dev = x.device

    def uniform(lo: float, hi: float) -> torch.Tensor:
        return lo + (hi - lo) * torch.rand(b, generator=g, device=dev)

    ang = torch.deg2rad(uniform(-max_rotation, max_rotation))
    s = uniform(*scale)
    shift = (2 * torch.rand(b, 2, generator=g, device=dev) - 1) * max_shift_px * 2 / torch.tensor(
        [w, h], device=dev, dtype=x.dtype)  # pixels -> normalised coordinates
    cos, sin = torch.cos(ang) / s, torch.sin(ang) / s
    theta = torch.stack([torch.stack([cos, -sin, shift[:, 0]], 1),
                         torch.stack([sin, cos, shift[:, 1]], 1)], 1).to(x.dtype)
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    field = torch.randn(b, 2, 3, 3, generator=g, device=dev, dtype=x.dtype) * elastic_px
    field = F.interpolate(field, size=(h, w), mode="bilinear", align_corners=True)
    field = field * (2 / torch.tensor([w, h], device=dev, dtype=x.dtype))[None, :, None, None]
    grid = grid + field.permute(0, 2, 3, 1)
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros",
                         align_corners=False).clamp(0, 1)


def gaussian_noise(x: torch.Tensor, sigma: float, generator: torch.Generator) -> torch.Tensor:
    """clip(x + sigma * N(0, I), 0, 1): the noise augmentation and the fixed noise benchmark."""
    if not isinstance(sigma, (int, float)) or isinstance(sigma, bool) or not sigma > 0:
        raise ValueError(f"sigma must be a positive number, got {sigma!r}")
    noise = torch.randn(x.shape, generator=generator, device=x.device, dtype=x.dtype)
    return (x + sigma * noise).clamp(0, 1)


def pgd_linf(model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, eps: float, steps: int,
             generator: torch.Generator, step_size: float | None = None) -> torch.Tensor:
    """L_inf PGD (Madry et al. 2018): a uniform random start in the eps-ball, then ``steps``
    sign-gradient ascent steps on CE (step 2.5 eps / steps by default), each projected back onto
    the ball and [0, 1]. No gradient reaches the model's parameters."""
    if not eps > 0 or isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"eps must be > 0 and steps a positive int, got {eps!r}, {steps!r}")
    alpha = 2.5 * eps / steps if step_size is None else step_size
    delta = (2 * torch.rand(x.shape, generator=generator, device=x.device, dtype=x.dtype) - 1) * eps
    adv = (x + delta).clamp(0, 1)
    for _ in range(steps):
        adv.requires_grad_(True)
        (grad,) = torch.autograd.grad(F.cross_entropy(model(adv), y), adv)
        adv = adv.detach() + alpha * grad.sign()
        adv = torch.minimum(torch.maximum(adv, x - eps), x + eps).clamp(0, 1)  # project
    return adv.detach()


class DigitCNN(nn.Module):
    """conv(w)-ReLU-conv(2w)-ReLU-maxpool2-conv(2w)-ReLU-avgpool to 2x2-linear(8w -> classes)."""

    def __init__(self, width: int = 16, n_classes: int = 10, in_ch: int = 1) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(in_ch, width, 3, padding=1), nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(2 * width, 2 * width, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2),
            nn.Flatten(), nn.Linear(8 * width, n_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class LogisticRegression(nn.Module):
    """Multinomial logistic regression on the flattened pixels."""

    def __init__(self, n_pixels: int, n_classes: int = 10) -> None:
        super().__init__()
        self.linear = nn.Linear(n_pixels, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x.flatten(1))


class PixelMLP(nn.Module):
    """pixels -> 128 -> ReLU -> 128 -> ReLU -> classes."""

    def __init__(self, n_pixels: int, n_classes: int = 10, hidden: int = 128) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(n_pixels, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, n_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def _seeded(make: Callable[[], nn.Module], seed: int) -> nn.Module:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return make()


def train_classifier(model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, epochs: int,
                     seed: int, batch_size: int = 64, lr: float = 3e-3,
                     transform: Transform | None = None) -> nn.Module:
    """Adam on cross-entropy over seeded shuffled mini-batches, in place; ``transform(xb, yb,
    model, generator)`` replaces each batch first (augmentation, noise, PGD). Returns the model
    frozen (eval mode, no parameter gradients)."""
    check_images(x)
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be a positive int, got {epochs!r}")
    gen = torch.Generator(device=x.device).manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for _ in range(epochs):
        order = torch.randperm(len(x), generator=gen, device=x.device)
        for start in range(0, len(x), batch_size):
            idx = order[start:start + batch_size]
            xb, yb = x[idx], y[idx]
            if transform is not None:
                xb = transform(xb, yb, model, gen)
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    return freeze(model)


@dataclass(frozen=True)
class DigitWorldConfig:
    """Sizes of the world. Defaults are the ``small`` scale; see the claims for ``smoke``."""

    size: int = 8
    vq_ch: int = 8
    vq_steps: int = 400
    vq_batch: int = 64
    vq_lr: float = 3e-3
    oracle_widths: tuple[int, ...] = (12, 16, 24)
    oracle_epochs: int = 15
    model_epochs: int = 30
    cnn_width: int = 8
    noise_sigma: float = 0.25  # Gaussian-noise augmentation of cnn_noise
    pgd_eps: float = 0.1  # cnn_pgd: L_inf radius and steps of adversarial training
    pgd_steps: int = 5
    lr: float = 3e-3
    batch_size: int = 64


def train_evaluated_model(kind: str, x: torch.Tensor, y: torch.Tensor, *, seed: int,
                          config: DigitWorldConfig = DigitWorldConfig()) -> nn.Module:
    """Train one evaluated model of ``kind`` (:data:`EVALUATED_KINDS`) on (x, y), frozen."""
    if kind not in EVALUATED_KINDS:
        raise ValueError(f"kind must be one of {EVALUATED_KINDS}, got {kind!r}")
    n_pixels = x.shape[1] * x.shape[2] * x.shape[3]
    makers: dict[str, Callable[[], nn.Module]] = {
        "logreg": lambda: LogisticRegression(n_pixels),
        "mlp": lambda: PixelMLP(n_pixels),
    }
    model = _seeded(makers.get(kind, lambda: DigitCNN(config.cnn_width)), seed)
    transform: Transform | None = None
    if kind == "cnn_noise":
        def transform(xb, yb, m, g):
            return gaussian_noise(xb, config.noise_sigma, g)
    elif kind == "cnn_pgd":
        def transform(xb, yb, m, g):
            return pgd_linf(m, xb, yb, eps=config.pgd_eps, steps=config.pgd_steps, generator=g)
    return train_classifier(model, x, y, epochs=config.model_epochs, seed=seed,
                            batch_size=config.batch_size, lr=config.lr, transform=transform)


class PixelSVCJudge:
    """The held-out judge: an RBF SVC (scikit-learn defaults, C = 10) on flattened pixels.
    Called on images (B, C, H, W) it returns labels (B,) int64; it has no gradient."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, C: float = 10.0) -> None:
        from sklearn.svm import SVC

        check_images(x)
        self.svc = SVC(C=C, kernel="rbf", gamma="scale").fit(
            x.flatten(1).cpu().double().numpy(), y.cpu().numpy())

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        pred = self.svc.predict(x.detach().flatten(1).cpu().double().numpy())
        return torch.as_tensor(pred, dtype=torch.int64, device=x.device)


@dataclass
class DigitWorld:
    """Everything a claim needs: images (N, 1, s, s), labels (N,), the split, the frozen
    generator and zoo, and the judge."""

    images: torch.Tensor
    labels: torch.Tensor
    splits: DigitSplits
    generator: VQLatentGenerator
    zoo: OracleZoo
    judge: PixelSVCJudge
    config: DigitWorldConfig

    def part(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        """(images, labels) of ``"train"``, ``"oracle_pool"``, ``"test"`` or ``"non_test"``."""
        if name not in ("train", "oracle_pool", "test", "non_test"):
            raise ValueError(f"name must be train, oracle_pool, test or non_test, got {name!r}")
        idx = torch.from_numpy(getattr(self.splits, name))
        return self.images[idx], self.labels[idx]

    def train_model(self, kind: str, seed: int) -> nn.Module:
        """An evaluated model of ``kind``, trained on the evaluated-model split only."""
        return train_evaluated_model(kind, *self.part("train"), seed=seed, config=self.config)


def _code_key() -> str:
    """Digest of this module and the VQ kit: the stand-ins' training depends on both."""
    from iclr24.kits.vector_quantization import autoencoder, codebook

    text = "".join(inspect.getsource(m) for m in (inspect.getmodule(_code_key), autoencoder,
                                                   codebook))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def build_digit_world(config: DigitWorldConfig, seed: int, *,
                      root: str | os.PathLike[str] | None = None) -> DigitWorld:
    """Split the digits with ``seed``, then load (or train once and cache under ``root``) the VQ
    generator and the oracle members, and fit the judge."""
    if not isinstance(config, DigitWorldConfig):
        raise TypeError(f"config must be a DigitWorldConfig, got {type(config).__name__}")
    images, labels = load_digit_tensors(config.size)
    splits = digit_splits(labels.numpy(), seed)
    idx = torch.from_numpy(splits.non_test)
    x_pool, y_pool = images[idx], labels[idx]
    cfg = asdict(config)
    common: dict[str, Any] = {"size": config.size, "code": _code_key(), "split_seed": seed}
    vq_key = dict(common, **{k: cfg[k] for k in ("vq_ch", "vq_steps", "vq_batch", "vq_lr")})
    oracle_key = dict(common, **{k: cfg[k] for k in ("oracle_epochs", "lr", "batch_size")})
    levels = int(math.log2(config.size // 4)) + 1  # downsample to a 4 x 4 latent
    ch_mult = (1,) + (2,) * (levels - 1)

    def make_vq() -> nn.Module:
        return _seeded(lambda: VQAutoencoder(in_ch=1, ch=config.vq_ch, ch_mult=ch_mult,
                                             code_dim=16, n_codes=64), seed)

    def train_vq(model: nn.Module) -> None:
        fit_vq_autoencoder(model, x_pool, steps=config.vq_steps, batch_size=config.vq_batch,
                           lr=config.vq_lr, seed=seed)

    vq = cached_standin("oracle_robustness-vq", vq_key, seed, make_vq, train_vq, root=root)
    members = []
    for m, width in enumerate(config.oracle_widths):
        member_seed = 1000 * seed + m

        def make_oracle(width: int = width, s: int = member_seed) -> nn.Module:
            return _seeded(lambda: DigitCNN(width), s)

        def train_oracle(model: nn.Module, s: int = member_seed) -> None:
            train_classifier(model, x_pool, y_pool, epochs=config.oracle_epochs, seed=s,
                             batch_size=config.batch_size, lr=config.lr,
                             transform=lambda xb, yb, mdl, g: augment_digits(xb, g))

        members.append(cached_standin(f"oracle_robustness-oracle{m}", dict(oracle_key, width=width),
                                      member_seed, make_oracle, train_oracle, root=root))
    return DigitWorld(images=images, labels=labels, splits=splits,
                      generator=VQLatentGenerator(vq),  # type: ignore[arg-type]
                      zoo=OracleZoo(members, DIGIT_CLASSES), judge=PixelSVCJudge(x_pool, y_pool),
                      config=config)
