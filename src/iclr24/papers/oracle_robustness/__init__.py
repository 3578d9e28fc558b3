"""Foundation Model-oriented Robustness: Robust Image Model Evaluation with Pretrained Models
(P. Zhang, H. Liu, C. Li, X. Xie, S. Kim, H. Wang; ICLR 2024; arXiv 2308.10632; no official code).

What the paper does. Fixed robustness benchmarks (ImageNet-C, norm-bounded attacks) test narrow
perturbation families and can be overfitted. The paper measures a classifier against a
*surrogate oracle*, a zoo of foundation models: for each test image it generates, in the latent
space of a VQGAN, a new image that the evaluated model gets wrong if it can while the oracle
zoo still assigns the original label. FMR = PA / SA, the accuracy on the accepted generated
images relative to the clean accuracy, is the robustness score. We count it on one population
(of the clean-right, accepted images, the share still right after generation) so it is a rate;
the paper's PA / SA can exceed 1 and is reported as ``PA_over_SA`` (see :mod:`.robustness_metric`).

The algorithm is reconstructed from the abstract, the OpenReview reviews and summaries (no code
was released; the method section was not available to us): latent sign-gradient ascent on
J(z) = CE(f(D(Q(z))), y) - lam * (1/M) sum_m CE(h_m(D(Q(z))), y) for a fixed step budget, then
the last iterate the oracle accepts. Treat it as faithful in spirit, not a copy.

How the code maps to it.
- :mod:`.oracle_zoo`: :class:`OracleZoo` (ensemble log-probabilities, the penalty term, the
  acceptance rule; non-differentiable members may only filter; ``label_shifted``, the null
  oracle of the claims).
- :mod:`.latent_generation`: the :class:`LatentGenerator` protocol, :class:`VQLatentGenerator`
  (the kit's VQ autoencoder as generator), :func:`generate_oracle_bounded` (Algorithm 1, our
  reading) and :func:`latent_attack` (the unconstrained baseline, lam = 0 and no acceptance).
- :mod:`.robustness_metric`: :func:`fmr_scores` (SA, PA, FMR, PA / SA, acceptance rate),
  :func:`foundation_model_robustness` (model-specific generation over a loader, then the scores)
  and :func:`label_agreement` (the held-out judge's check).
- :mod:`.digit_world`: the laptop-scale world (digits split 40 / 35 / 25 %, a VQ generator, a zoo
  of three CNNs, an RBF-SVC judge, five evaluated models including noise-augmented and
  PGD-trained CNNs), stand-ins trained once per machine and frozen.
- ``claims.py``: ``oracle_preserves_labels`` (lam = 1 vs the unconstrained attack, judged by the
  held-out judge) and ``fmr_separates_training`` (FMR of robust vs standard training).

What differs / is out of reach.
- Digits (8 x 8, native resolution; 16 x 16 only at ``full``) instead of MNIST / CIFAR-10 /
  ImageNet; the kit's small VQ autoencoder (4 x 4 x 16 latent, 64 codes, trained here on the
  non-test digits, no GAN / perceptual loss) instead of an ImageNet VQGAN; three small CNNs
  trained here on more data with augmentation instead of CLIP / ViT foundation models.
  ImageNet oracle zoos, VQGAN weights and ImageNet-C comparisons are out of reach on CPU
  offline; any ``nn.Module`` oracle and any encode/decode generator plug in.
- The optimiser (sign steps), step size and acceptance threshold are our choices; the paper's
  are not known to us.

Usage::

    from iclr24.papers.oracle_robustness import (OracleZoo, VQLatentGenerator,
                                                  foundation_model_robustness)
    zoo = OracleZoo([oracle_a, oracle_b], classes=[str(d) for d in range(10)])
    res = foundation_model_robustness(model.eval(), zoo, VQLatentGenerator(vq_autoencoder),
                                      [(images, labels)], steps=50, lr=0.05, lam=1.0)
    res.as_dict()    # {"SA", "PA", "FMR", "PA_over_SA", "accept_rate", "n"}
"""

from .digit_world import (
    DIGIT_CLASSES,
    EVALUATED_KINDS,
    SPLIT_FRACTIONS,
    DigitCNN,
    DigitSplits,
    DigitWorld,
    DigitWorldConfig,
    LogisticRegression,
    PixelMLP,
    PixelSVCJudge,
    augment_digits,
    build_digit_world,
    digit_splits,
    gaussian_noise,
    load_digit_tensors,
    pgd_linf,
    train_classifier,
    train_evaluated_model,
)
from .latent_generation import (
    FALLBACKS,
    LatentGenerator,
    VQLatentGenerator,
    check_images,
    generate_oracle_bounded,
    latent_attack,
)
from .oracle_zoo import OracleZoo
from .robustness_metric import (
    RobustnessResult,
    fmr_scores,
    foundation_model_robustness,
    label_agreement,
)

__all__ = [
    "DIGIT_CLASSES",
    "EVALUATED_KINDS",
    "FALLBACKS",
    "SPLIT_FRACTIONS",
    "DigitCNN",
    "DigitSplits",
    "DigitWorld",
    "DigitWorldConfig",
    "LatentGenerator",
    "LogisticRegression",
    "OracleZoo",
    "PixelMLP",
    "PixelSVCJudge",
    "RobustnessResult",
    "VQLatentGenerator",
    "augment_digits",
    "build_digit_world",
    "check_images",
    "digit_splits",
    "fmr_scores",
    "foundation_model_robustness",
    "gaussian_noise",
    "generate_oracle_bounded",
    "label_agreement",
    "latent_attack",
    "load_digit_tensors",
    "pgd_linf",
    "train_classifier",
    "train_evaluated_model",
]
