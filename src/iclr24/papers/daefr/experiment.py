"""The digits restoration experiment behind the claims: data, cached stand-ins, the three arms.

Data: scikit-learn's digits upsampled to 16x16 (``iclr24.kits.image_sources.digits_images``),
scaled to [-1, 1] = HQ; LQ = :func:`~.degradation.degrade` with the severe preset (r = 4,
sigma in [1.2, 2]) that exposes the domain gap. Split 1,300 / 497 by a seeded permutation.

Stand-ins (trained once per machine through ``iclr24.kits.frozen_standins.cached_standin``):
- stage 1: the HQ and the LQ codebook (:func:`stage1_codebooks`), one pair per base seed: they
  play the pretrained VQGANs and are shared by the replicate seeds of a claim;
- stage 2: the associated pair (:func:`associated_pair`), one per replicate seed, shared by both
  claims; with ``association_loss=False`` the null arm of ``association_alignment``: the same
  stage 2 (steps, data, seed, reconstruction losses) with the association term's weight 0.

Arms of stage 3 (:func:`train_arm`), same data, steps and predictor:
- ``"codeformer"``: the stage-1 HQ encoder fine-tuned on LQ inputs (single encoder);
- ``"no_association"``: the stage-1 HQ and LQ encoders + fusion (DAEFR without stage 2);
- ``"daefr"``: the associated encoders + fusion (the full method).
All three predict stage-1 HQ code indices and decode with the frozen stage-1 HQ decoder.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import torch
from torch import nn

from iclr24.kits.frozen_standins import cached_standin
from iclr24.kits.image_sources import digits_images
from iclr24.kits.vector_quantization import VQAutoencoder

from .association import (
    CLIP_INIT_LOG_SCALE,
    AssociationConfig,
    content_token_mask,
    fit_association,
    token_retrieval_accuracy,
)
from .degradation import DegradationConfig, degrade
from .fusion import CrossAttentionFusion
from .model import DAEFR
from .predictor import CodePredictor
from .training import CodebookConfig, PredictorConfig, fit_code_predictor, fit_codebook

__all__ = ["ARMS", "DigitsData", "DigitsExperiment", "arm_metrics", "associated_pair",
           "digit_features", "digits_data", "eval_pairs", "majority_code_accuracy",
           "retrieval_accuracy", "stage1_codebooks", "stage1_codes", "train_arm"]

ARMS = ("codeformer", "no_association", "daefr")


@dataclass(frozen=True)
class DigitsExperiment:
    """Sizes of one run (the scale changes these, never the logic)."""

    n_train: int = 1300
    n_test: int = 497
    degradation: DegradationConfig = field(default_factory=DegradationConfig.severe)
    codebook: CodebookConfig = field(
        default_factory=lambda: CodebookConfig(ch=8, steps=600, batch_size=32))
    association: AssociationConfig = field(
        default_factory=lambda: AssociationConfig(steps=300, batch_size=32))
    predictor: PredictorConfig = field(
        default_factory=lambda: PredictorConfig(steps=500, batch_size=32))
    predictor_dim: int = 64
    predictor_layers: int = 2
    predictor_heads: int = 4
    fusion_heads: int = 4
    retrieval_batch: int = 64

    def __post_init__(self) -> None:
        if not 1 <= self.n_train <= 1300 or not 1 <= self.n_test <= 497:
            raise ValueError("n_train must be in [1, 1300] and n_test in [1, 497]")

    @classmethod
    def full(cls) -> DigitsExperiment:
        """Wider encoders, 3 predictor layers and 3-6x the steps of small (not run on the
        2-core machine)."""
        return cls(codebook=CodebookConfig(ch=16, steps=600, batch_size=64),
                   association=AssociationConfig(steps=360, batch_size=64),
                   predictor=PredictorConfig(steps=1500, batch_size=64), predictor_layers=3)

    @classmethod
    def smoke(cls) -> DigitsExperiment:
        return cls(n_train=400, n_test=200,
                   codebook=CodebookConfig(ch=8, steps=25, batch_size=16, restart_every=10,
                                           kmeans_images=128),
                   association=AssociationConfig(steps=25, batch_size=16),
                   predictor=PredictorConfig(steps=25, batch_size=16, lr=1e-3),
                   predictor_dim=32, predictor_layers=1, predictor_heads=2, fusion_heads=2,
                   retrieval_batch=32)


@dataclass(frozen=True)
class DigitsData:
    """HQ images (N, 1, 16, 16) in [-1, 1] and digit labels for both splits."""

    x_train: torch.Tensor
    y_train: np.ndarray
    x_test: torch.Tensor
    y_test: np.ndarray


@functools.lru_cache(maxsize=4)
def digits_data(exp: DigitsExperiment, seed: int) -> DigitsData:
    """The 1,300 / 497 split (seeded), truncated to ``exp.n_train`` / ``exp.n_test`` (memoised:
    the stand-ins and arms of one run share it; treat the tensors as read-only)."""
    imgs, labels = digits_images(16)
    x = torch.from_numpy(imgs[:, None]) * 2 - 1
    perm = np.random.default_rng(seed).permutation(len(x))
    tr, te = perm[:1300][:exp.n_train], perm[1300:][:exp.n_test]
    return DigitsData(x[tr].contiguous(), labels[tr], x[te].contiguous(), labels[te])


def _lq(exp: DigitsExperiment, x: torch.Tensor, seed: int) -> torch.Tensor:
    return degrade(x, exp.degradation, torch.Generator().manual_seed(seed))


def _key(exp: DigitsExperiment) -> dict:
    return {"data": [exp.n_train, "digits16", asdict(exp.degradation)],
            "codebook": asdict(exp.codebook)}


def stage1_codebooks(exp: DigitsExperiment, seed: int, *, root=None
                     ) -> tuple[VQAutoencoder, VQAutoencoder]:
    """The stage-1 (HQ, LQ) autoencoders for base seed ``seed``, frozen; the LQ one is trained
    on a degraded copy of the training split (degradation seed ``seed``)."""
    data = digits_data(exp, seed)

    def make() -> VQAutoencoder:
        return exp.codebook.build(1)

    def train_on(images, fit_seed: int):  # images: a callable, so a cache hit degrades nothing
        def train(model: VQAutoencoder) -> None:
            model.load_state_dict(fit_codebook(images(), exp.codebook, seed=fit_seed)[0]
                                  .state_dict())
        return train

    hq = cached_standin("daefr-stage1-hq", _key(exp), seed, make,
                        train_on(lambda: data.x_train, seed), root=root)
    lq = cached_standin("daefr-stage1-lq", _key(exp), seed, make,
                        train_on(lambda: _lq(exp, data.x_train, seed), seed + 1), root=root)
    return hq, lq


class _AssociatedPair(nn.Module):
    def __init__(self, hq: VQAutoencoder, lq: VQAutoencoder) -> None:
        super().__init__()
        self.hq, self.lq = hq, lq
        self.register_buffer("logit_scale", torch.tensor(math.exp(CLIP_INIT_LOG_SCALE)))


def associated_pair(exp: DigitsExperiment, seed: int, replicate: int, *,
                    association_loss: bool = True, root=None
                    ) -> tuple[VQAutoencoder, VQAutoencoder, float]:
    """Stage 2 from the stage-1 pair of base seed ``seed`` on the pairs of replicate seed
    ``replicate``: (associated HQ, associated LQ, learnt scale exp(s)), frozen.
    ``association_loss=False``: the null arm, L_assoc's weight 0 (reconstruction only)."""
    if not isinstance(association_loss, bool):
        raise TypeError(f"association_loss must be a bool, got {association_loss!r}")
    hq1, lq1 = stage1_codebooks(exp, seed, root=root)
    data = digits_data(exp, seed)
    cfg = exp.association if association_loss else replace(exp.association, weight=0.0)

    def make() -> _AssociatedPair:
        return _AssociatedPair(exp.codebook.build(1), exp.codebook.build(1))

    def train(pair: _AssociatedPair) -> None:
        pair.hq.load_state_dict(hq1.state_dict())
        pair.lq.load_state_dict(lq1.state_dict())
        x_lq = _lq(exp, data.x_train, 1000 + replicate)
        fit = fit_association(pair.hq, pair.lq, data.x_train, x_lq, cfg, seed=replicate)
        pair.logit_scale.fill_(fit.logit_scale)

    key = {**_key(exp), "base_seed": seed, "association": asdict(cfg)}
    name = "daefr-stage2" if association_loss else "daefr-stage2-recon-only"
    pair = cached_standin(name, key, replicate, make, train, root=root)
    return pair.hq, pair.lq, float(pair.logit_scale)


def train_arm(arm: str, exp: DigitsExperiment, seed: int, replicate: int, *, root=None
              ) -> DAEFR:
    """Stage 3 of one arm (see the module docstring) on the replicate's training pairs."""
    if arm not in ARMS:
        raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")
    hq1, lq1 = stage1_codebooks(exp, seed, root=root)
    data = digits_data(exp, seed)
    dim, n_codes = exp.codebook.code_dim, exp.codebook.n_codes
    positions = (16 // hq1.factor) ** 2
    torch.manual_seed(10_000 + replicate)  # same predictor init in every arm of a replicate
    predictor = CodePredictor(dim, exp.predictor_dim, exp.predictor_layers, exp.predictor_heads,
                              2 * exp.predictor_dim, n_codes, positions)
    fusion = CrossAttentionFusion(dim, exp.fusion_heads)
    if arm == "codeformer":
        model = DAEFR(hq1, None, None, predictor, prior=hq1)
    elif arm == "no_association":
        model = DAEFR(hq1, lq1, fusion, predictor, prior=hq1)
    else:
        hq2, lq2, _ = associated_pair(exp, seed, replicate, root=root)
        model = DAEFR(hq2, lq2, fusion, predictor, prior=hq1)
    x_lq = _lq(exp, data.x_train, 1000 + replicate)
    fit_code_predictor(model, x_lq, data.x_train, exp.predictor, seed=replicate)
    return model


def eval_pairs(exp: DigitsExperiment, seed: int, replicate: int) -> tuple[torch.Tensor,
                                                                          torch.Tensor]:
    """(x_lq, x_hq) of the test split for a replicate (its own degradation draws)."""
    data = digits_data(exp, seed)
    return _lq(exp, data.x_test, 2000 + replicate), data.x_test


def digit_features(x: torch.Tensor) -> np.ndarray:
    """(N, 1, 16, 16) images -> (N, 64) features: 2x2 average pooling back to the digits' native
    8x8 grid, flattened (what the identity classifier reads)."""
    return torch.nn.functional.avg_pool2d(x, 2).reshape(len(x), -1).numpy()


@torch.no_grad()
def arm_metrics(model: DAEFR, x_lq: torch.Tensor, x_hq: torch.Tensor, y: np.ndarray,
                classifier) -> dict[str, float]:
    """code_acc (top-1 accuracy of the predicted stage-1 HQ indices), psnr (mean over images,
    data range 2), identity (accuracy of ``classifier``, fitted on clean HQ images, on the
    restorations)."""
    from skimage.metrics import peak_signal_noise_ratio

    idx, _ = model.targets(x_hq)
    pred = model.predict_indices(x_lq)
    restored = model.prior.part.decode_indices(pred).clamp(-1, 1)
    ref, out = x_hq.numpy().astype(np.float64), restored.numpy().astype(np.float64)
    psnr = np.mean([peak_signal_noise_ratio(r, o, data_range=2.0) for r, o in zip(ref, out)])
    identity = float(np.mean(classifier.predict(digit_features(restored)) == y))
    return {"code_acc": float((pred == idx).float().mean()), "psnr": float(psnr),
            "identity": identity}


@torch.no_grad()
def stage1_codes(prior: VQAutoencoder, x: torch.Tensor, encoder: VQAutoencoder | None = None
                 ) -> torch.Tensor:
    """(N, h, w) nearest codes of ``prior``'s (stage-1) codebook for images x (N, C, H, W),
    encoded by ``encoder`` (default: the prior's own encoder, i.e. the stage-3 targets)."""
    enc = prior if encoder is None else encoder
    return torch.cat([prior.quantizer.nearest(enc.encode(chunk)) for chunk in x.split(256)])


def majority_code_accuracy(train_codes: torch.Tensor, test_codes: torch.Tensor) -> float:
    """Accuracy of the input-ignoring code predictor: at every latent position, the code most
    frequent there in ``train_codes`` (ties: the lowest index), scored on ``test_codes``.
    Both (N, h, w) integer tensors with the same (h, w). The learning floor of the arms."""
    for name, c in (("train_codes", train_codes), ("test_codes", test_codes)):
        if not isinstance(c, torch.Tensor) or c.dim() != 3 or c.is_floating_point() \
                or c.dtype == torch.bool or not len(c) or int(c.min()) < 0:
            raise ValueError(f"{name} must be a non-empty (N, h, w) tensor of code indices >= 0")
    if train_codes.shape[1:] != test_codes.shape[1:]:
        raise ValueError(f"train_codes and test_codes must share (h, w), got "
                         f"{tuple(train_codes.shape[1:])} and {tuple(test_codes.shape[1:])}")
    flat = train_codes.flatten(1).long()  # (N, P)
    n_codes = int(max(flat.max(), test_codes.max())) + 1
    counts = torch.zeros(flat.shape[1], n_codes).scatter_add_(
        1, flat.t(), torch.ones(flat.t().shape))
    mode = counts.argmax(dim=1)  # (P,), the first maximum on ties
    return float((test_codes.flatten(1) == mode).float().mean())


@torch.no_grad()
def retrieval_accuracy(hq: VQAutoencoder, lq: VQAutoencoder, x_hq: torch.Tensor,
                       x_lq: torch.Tensor, batch: int) -> tuple[float, float]:
    """(retrieval accuracy, chance level): for each LQ token of a batch of ``batch`` test pairs,
    is its nearest HQ token (cosine, among the batch's content tokens) its own pair? Averaged
    over batches; content tokens as in the association loss (HQ patch range > 0.1)."""
    accs, chance = [], []
    for i in range(0, len(x_hq) - batch + 1, batch):
        xh, xl = x_hq[i:i + batch], x_lq[i:i + batch]
        zh, zl = hq.encode(xh), lq.encode(xl)
        mask = content_token_mask(xh, tuple(zh.shape[2:]))
        accs.append(token_retrieval_accuracy(zh, zl, mask=mask))
        chance.append(1.0 / int(mask.sum()))
    return float(np.mean(accs)), float(np.mean(chance))

