"""Oracle-bounded generation in a generator's latent space (the paper's Algorithm 1, our reading).

No code was released; this is reconstructed from the abstract, the OpenReview reviews and
summaries. For a test image x with label y, an evaluated model f and an oracle zoo
O = {h_1..h_M}, start from the latent z_0 = E(x) of a VQ generator (encoder E, quantiser Q with
straight-through gradient, decoder D) and for a fixed budget of S steps ascend

    J(z) = CE(f(x'), y) - lam * (1/M) sum_m CE(h_m(x'), y),     x' = clip(D(Q(z)), 0, 1),

raising the evaluated model's loss while keeping every oracle member confident in y. The step
is the L_inf steepest-ascent (sign) step z <- z + lr * sign(dJ/dz), as in latent adversarial
training with VQGAN (DAT); the paper does not say which optimiser it uses. The perturbation is
bounded by the oracle, not by an L_p ball: an iterate counts only if the zoo accepts it
(:meth:`OracleZoo.accepts`). After the loop the last accepted iterate is returned
(``fallback="last_accepted"``; z_0's reconstruction is iterate 0) or, with ``fallback="drop"``,
the final iterate only if it is accepted.

:func:`latent_attack` is the unconstrained baseline: the same ascent with lam = 0 and no
acceptance (the final iterate, whatever it now shows).

The generator is an interface (:class:`LatentGenerator`): the paper uses an ImageNet VQGAN (out
of reach here, weights not available offline); the claims plug in the kit's small
:class:`~iclr24.kits.vector_quantization.VQAutoencoder` through :class:`VQLatentGenerator`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import torch
from torch import nn
from torch.nn import functional as F

from iclr24.kits.frozen_standins import freeze
from iclr24.kits.vector_quantization import VQAutoencoder

from .oracle_zoo import OracleZoo

__all__ = ["FALLBACKS", "LatentGenerator", "VQLatentGenerator", "check_images",
           "generate_oracle_bounded", "latent_attack"]

FALLBACKS = ("last_accepted", "drop")

Model = Callable[[torch.Tensor], torch.Tensor]


@runtime_checkable
class LatentGenerator(Protocol):
    """An image generator with a latent space: ``encode(x) -> z`` and ``decode(z) -> x``.

    ``decode`` must be differentiable in z (a VQ generator quantises inside it with a
    straight-through gradient). Images are (B, C, H, W) in [0, 1]; z has any shape whose first
    axis is the batch.
    """

    def encode(self, x: torch.Tensor) -> torch.Tensor: ...

    def decode(self, z: torch.Tensor) -> torch.Tensor: ...


class VQLatentGenerator:
    """:class:`LatentGenerator` over a (pretrained) :class:`VQAutoencoder`, frozen in place.

    encode(x) = E(x), the continuous pre-quantisation latent (B, code_dim, H/f, W/f);
    decode(z) = D(Q(z)) with Q's straight-through gradient (the raw decoder output; generation
    clips it to [0, 1]).
    """

    def __init__(self, autoencoder: VQAutoencoder) -> None:
        if not isinstance(autoencoder, VQAutoencoder):
            raise TypeError(f"autoencoder must be a VQAutoencoder, got "
                            f"{type(autoencoder).__name__}")
        self.autoencoder = freeze(autoencoder)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return self.autoencoder.encode(x)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return self.autoencoder.decode(self.autoencoder.quantize(z).quantized)

    def reconstruct(self, x: torch.Tensor) -> torch.Tensor:
        """clip(D(Q(E(x))), 0, 1), without gradient: iterate 0 of generation."""
        with torch.no_grad():
            return self.decode(self.encode(x)).clamp(0, 1)


def check_images(x: object, name: str = "x") -> torch.Tensor:
    """Raise TypeError/ValueError unless ``x`` is a finite float tensor (B, C, H, W), B >= 1, with
    values in [0, 1]; returns it."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point torch.Tensor of images, got "
                        f"{type(x).__name__ if not isinstance(x, torch.Tensor) else x.dtype}")
    if x.dim() != 4 or x.shape[0] < 1:
        raise ValueError(f"{name} must have shape (B, C, H, W) with B >= 1, got {tuple(x.shape)}")
    if not torch.isfinite(x).all() or float(x.min()) < 0 or float(x.max()) > 1:
        raise ValueError(f"{name} must hold pixel values in [0, 1], got range "
                         f"[{float(x.min()):.3g}, {float(x.max()):.3g}]")
    return x


def _check_common(model: object, generator: object, x: torch.Tensor, y: object, steps: object,
                  lr: object, n_classes: int | None) -> torch.Tensor:
    if not callable(model):
        raise TypeError(f"model must be callable (images -> logits), got {type(model).__name__}")
    if isinstance(model, nn.Module) and model.training:
        raise ValueError("model must be in eval mode (call model.eval()): generation must not "
                         "update its batch-norm statistics or sample dropout masks")
    if not isinstance(generator, LatentGenerator):
        raise TypeError(f"generator must provide encode(x) and decode(z) (LatentGenerator), got "
                        f"{type(generator).__name__}")
    check_images(x)
    if not isinstance(y, torch.Tensor) or y.dtype not in (torch.int64, torch.int32):
        raise TypeError("y must be an integer torch.Tensor of labels")
    if y.shape != (len(x),):
        raise ValueError(f"y must have shape ({len(x)},), got {tuple(y.shape)}")
    if int(y.min()) < 0 or (n_classes is not None and int(y.max()) >= n_classes):
        raise ValueError(f"y must hold labels in [0, {n_classes}), got range "
                         f"[{int(y.min())}, {int(y.max())}]")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive int, got {steps!r}")
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not lr > 0:
        raise ValueError(f"lr must be a positive number, got {lr!r}")
    return y.long()


def _decode(generator: LatentGenerator, z: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    out = generator.decode(z)
    if not isinstance(out, torch.Tensor) or out.shape != like.shape:
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ValueError(f"generator.decode(generator.encode(x)) must have x's shape "
                         f"{tuple(like.shape)}, got {shape}")
    return out.clamp(0, 1)  # keep x' in the valid pixel range


def _model_loss(model: Model, xs: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    logits = model(xs)
    if not isinstance(logits, torch.Tensor) or logits.dim() != 2 or len(logits) != len(xs) \
            or logits.shape[1] <= int(y.max()):
        raise ValueError(f"model must return logits (B, K) with K > {int(y.max())}, got "
                         f"{tuple(logits.shape) if isinstance(logits, torch.Tensor) else logits}")
    return F.cross_entropy(logits, y, reduction="none")


def generate_oracle_bounded(model: Model, zoo: OracleZoo, generator: LatentGenerator,
                            x: torch.Tensor, y: torch.Tensor, *, steps: int = 50,
                            lr: float = 0.05, lam: float = 1.0,
                            fallback: str = "last_accepted") -> tuple[torch.Tensor, torch.Tensor]:
    """Oracle-bounded latent perturbation of ``x`` against ``model``.

    model:     the evaluated classifier, images -> logits (B, K), in eval mode.
    zoo:       the oracle; its members take part in the penalty when ``lam > 0`` (each must be
               differentiable, else ValueError) and always in acceptance.
    generator: a :class:`LatentGenerator`; decode(encode(x)) must have x's shape.
    x, y:      images (B, C, H, W) in [0, 1] and labels (B,) in [0, zoo.n_classes).
    steps, lr: the ascent budget: ``steps`` sign steps of size ``lr`` in the latent.
    lam:       oracle weight in J = CE(f(x'), y) - lam * mean_m CE(h_m(x'), y) (>= 0).
    fallback:  ``"last_accepted"`` (the last iterate the zoo accepted, iterate 0 being the
               reconstruction of x) or ``"drop"`` (the final iterate, accepted only if the zoo
               accepts it).

    Returns ``(x_new (B, C, H, W) in [0, 1], accepted (B,) bool)``; where ``accepted`` is False
    x_new is the final iterate and should be left out of any score. No gradient reaches the
    parameters of ``model``, ``zoo`` or ``generator``.
    """
    if not isinstance(zoo, OracleZoo):
        raise TypeError(f"zoo must be an OracleZoo, got {type(zoo).__name__}")
    y = _check_common(model, generator, x, y, steps, lr, zoo.n_classes)
    if isinstance(lam, bool) or not isinstance(lam, (int, float)) or not lam >= 0:
        raise ValueError(f"lam must be a non-negative number, got {lam!r}")
    if fallback not in FALLBACKS:
        raise ValueError(f"fallback must be one of {FALLBACKS}, got {fallback!r}")
    if lam > 0:
        zoo.check_differentiable(x)

    z = generator.encode(x).detach()
    best = accepted = None
    for s in range(steps + 1):
        z.requires_grad_(s < steps)
        xs = _decode(generator, z, x)  # iterate s: x'_s = clip(D(Q(z_s)), 0, 1)
        if s < steps and lam > 0:
            penalty, ok = zoo.score(xs, y)
        else:
            with torch.no_grad():
                ok = zoo.accepts(xs, y)
            penalty = None
        if best is None:
            best, accepted = xs.detach().clone(), ok
        best = torch.where(ok[:, None, None, None], xs.detach(), best)
        accepted = accepted | ok
        if s == steps:
            break
        objective = _model_loss(model, xs, y)  # CE(f(x'), y)
        if penalty is not None:
            objective = objective - lam * penalty  # - lam * (1/M) sum_m CE(h_m(x'), y)
        (grad,) = torch.autograd.grad(objective.sum(), z)
        z = (z + lr * grad.sign()).detach()  # L_inf steepest ascent on J
    final = xs.detach()
    if fallback == "drop":
        return final, ok
    # never accepted: report the final iterate (flagged)
    return torch.where(accepted[:, None, None, None], best, final), accepted


def latent_attack(model: Model, generator: LatentGenerator, x: torch.Tensor, y: torch.Tensor, *,
                  steps: int = 50, lr: float = 0.05) -> torch.Tensor:
    """The unconstrained baseline: ``steps`` sign-ascent steps of CE(f(clip(D(Q(z)))), y) from
    z_0 = E(x), no oracle penalty and no acceptance; returns the final iterate (B, C, H, W)."""
    y = _check_common(model, generator, x, y, steps, lr, None)
    z = generator.encode(x).detach()
    for _ in range(steps):
        z.requires_grad_(True)
        (grad,) = torch.autograd.grad(_model_loss(model, _decode(generator, z, x), y).sum(), z)
        z = (z + lr * grad.sign()).detach()
    with torch.no_grad():
        return _decode(generator, z, x)
