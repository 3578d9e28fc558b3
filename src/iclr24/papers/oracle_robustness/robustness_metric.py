"""Foundation-model-oriented robustness (FMR): accuracy on oracle-bounded generated data
relative to clean accuracy.

    SA  = the evaluated model's accuracy on the clean test set (all of it; the paper is
          ambiguous here, a reviewer noted, so we fix it to the clean accuracy),
    PA  = its accuracy on the *accepted* generated images (its own generated set: generation is
          model-specific, like an attack, with a shared budget and acceptance rule),
    FMR = PA / SA,

reported with the acceptance rate (a model that makes generation fail gets fewer accepted
samples). The oracle is right on the accepted set by construction, so a label-preservation check
needs a separate judge that took no part in generation (:func:`label_agreement`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch

from .latent_generation import LatentGenerator, generate_oracle_bounded
from .oracle_zoo import OracleZoo

__all__ = ["RobustnessResult", "fmr_scores", "foundation_model_robustness", "label_agreement"]


def _as_bool(v: object, name: str) -> torch.Tensor:
    if not isinstance(v, torch.Tensor) or v.dtype != torch.bool or v.dim() != 1:
        raise TypeError(f"{name} must be a 1-D bool tensor")
    return v


def fmr_scores(clean_correct: torch.Tensor, generated_correct: torch.Tensor,
               accepted: torch.Tensor) -> dict[str, float]:
    """SA, PA, FMR and the acceptance rate from per-sample outcomes (each (N,) bool).

    clean_correct:     the model is right on clean test image i.
    generated_correct: the model is right on the image generated from i.
    accepted:          the oracle accepted that generated image.

    Raises ValueError if SA = 0 (FMR = PA / SA is undefined) or nothing was accepted (PA is).
    """
    clean = _as_bool(clean_correct, "clean_correct")
    gen = _as_bool(generated_correct, "generated_correct")
    acc = _as_bool(accepted, "accepted")
    if not len(clean) == len(gen) == len(acc) or len(clean) == 0:
        raise ValueError(f"clean_correct, generated_correct and accepted must have one equal, "
                         f"non-zero length, got {len(clean)}, {len(gen)}, {len(acc)}")
    sa = float(clean.double().mean())
    if sa == 0:
        raise ValueError("the clean accuracy SA is 0, so FMR = PA / SA is undefined (is the "
                         "model trained, and are the labels in the zoo's class order?)")
    if not bool(acc.any()):
        raise ValueError("the oracle zoo accepted no generated image, so PA is undefined (is the "
                         "zoo's accept_threshold reachable, and does it classify the generator's "
                         "reconstructions?)")
    pa = float(gen[acc].double().mean())
    return {"SA": sa, "PA": pa, "FMR": pa / sa,  # FMR = PA / SA
            "accept_rate": float(acc.double().mean()), "n": float(len(clean))}


@dataclass(frozen=True)
class RobustnessResult:
    """What :func:`foundation_model_robustness` measured: ``sa``, ``pa``, ``fmr``,
    ``accept_rate``, ``n`` (test images) and the generated set itself (``x_generated``
    (N, C, H, W), ``accepted`` (N,), ``labels`` (N,))."""

    sa: float
    pa: float
    fmr: float
    accept_rate: float
    n: int
    x_generated: torch.Tensor
    accepted: torch.Tensor
    labels: torch.Tensor

    def as_dict(self) -> dict[str, float]:
        """{"SA", "PA", "FMR", "accept_rate", "n"}."""
        return {"SA": self.sa, "PA": self.pa, "FMR": self.fmr, "accept_rate": self.accept_rate,
                "n": float(self.n)}


def _predict(model: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(x).argmax(dim=1)


def foundation_model_robustness(model: Callable[[torch.Tensor], torch.Tensor], zoo: OracleZoo,
                                generator: LatentGenerator,
                                loader: Iterable[tuple[torch.Tensor, torch.Tensor]],
                                **gen_kwargs: object) -> RobustnessResult:
    """FMR of ``model``: its clean accuracy, then its accuracy on its own oracle-bounded
    generated set (:func:`generate_oracle_bounded` with ``gen_kwargs``: steps, lr, lam,
    fallback), over the (images (B, C, H, W) in [0, 1], labels (B,)) batches of ``loader``."""
    clean, gen, acc, xs, ys = [], [], [], [], []
    for batch in loader:
        if not isinstance(batch, (tuple, list)) or len(batch) != 2:
            raise TypeError("loader must yield (images, labels) pairs")
        x, y = batch
        x_new, ok = generate_oracle_bounded(model, zoo, generator, x, y,
                                            **gen_kwargs)  # type: ignore[arg-type]
        clean.append(_predict(model, x) == y)
        gen.append(_predict(model, x_new) == y)
        acc.append(ok)
        xs.append(x_new)
        ys.append(y)
    if not clean:
        raise ValueError("loader yielded no batches")
    scores = fmr_scores(torch.cat(clean), torch.cat(gen), torch.cat(acc))
    return RobustnessResult(sa=scores["SA"], pa=scores["PA"], fmr=scores["FMR"],
                            accept_rate=scores["accept_rate"], n=int(scores["n"]),
                            x_generated=torch.cat(xs), accepted=torch.cat(acc),
                            labels=torch.cat(ys))


def label_agreement(judge: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor,
                    y: torch.Tensor, mask: torch.Tensor | None = None) -> float:
    """Fraction of the images in ``x`` (restricted to ``mask``) that ``judge`` (images -> labels
    (B,)) labels y: the held-out check that generation preserved the label. The judge must take
    no part in generation, or the check is circular."""
    if not isinstance(y, torch.Tensor) or y.shape != (len(x),):
        raise ValueError(f"y must be a tensor of shape ({len(x)},)")
    if mask is not None:
        mask = _as_bool(mask, "mask")
        if len(mask) != len(x):
            raise ValueError(f"mask must have length {len(x)}, got {len(mask)}")
        if not bool(mask.any()):
            raise ValueError("mask selects no image; agreement is undefined")
        x, y = x[mask], y[mask]
    pred = judge(x)
    if not isinstance(pred, torch.Tensor) or pred.shape != y.shape:
        raise ValueError(f"judge must return one label per image, shape {tuple(y.shape)}")
    return float((pred.to(y.device) == y).double().mean())
