"""SAL - Separate And Learn: "How Does Unlabeled Data Provably Help Out-of-Distribution
Detection?" (Du, Fang, Diakonikolas, Li; ICLR 2024; official code deeplearning-wisc/sal).

OOD detection from a labelled ID set plus an unlabelled *wild* set drawn from
(1 - pi) P_in + pi P_out. SAL (1) *separates* candidate outliers from the wild set: per-sample
gradients of the CE loss w.r.t. the last layer (at the model's own prediction), centred by the
labelled-ID reference gradient, projected on their top singular vector; points scoring above
the 95th percentile of the ID scores are the candidates; (2) *learns* a binary ID-vs-candidate
head on the penultimate features of a fine-tuned copy of the ID network.

Map of the code:
- :mod:`.gradient_filter` - :func:`last_layer_grad_rows` (closed form), :func:`sal_scores`,
  :func:`sal_threshold`, :func:`class_reference_means`, :func:`filter_candidates`,
  :func:`gradnorm_scores` (the official gradient-norm ablation), :func:`filter_quality`.
- :mod:`.detector` - :func:`sal_filter`, :func:`train_ood_classifier`, :class:`SALDetector`
  (``fit`` / ``score_samples``, higher = ID), :func:`msp_scores`, :func:`energy_scores`;
  :class:`SplitNetwork` and :class:`NumpyClassifier` take a user's own torch network (a
  torchvision-style final ``fc`` is split off as the head; image tensors (n, C, H, W) work).
- :mod:`.wild_data` - the synthetic Gaussian and digits wild mixtures of the claims.
- :func:`fpr_at_tpr` - FPR95 (re-exported from the small-classifier kit; labels 1 = ID).

Out of reach here: the paper's CIFAR-10/100 benchmarks with SVHN / LSUN-C / LSUN-R / Textures /
Places365 wild mixtures and a WRN-40-2 backbone (downloads, GPU time); the claims run the same
algorithm on synthetic Gaussians and on scikit-learn's digits (0-5 ID, 6-9 OOD) with a small MLP.
"""

from iclr24.kits.small_classifiers import fpr_at_tpr

from .detector import (
    FilterResult,
    NumpyClassifier,
    OODClassifier,
    SALDetector,
    SplitNetwork,
    energy_scores,
    msp_scores,
    sal_filter,
    train_ood_classifier,
)
from .gradient_filter import (
    class_reference_means,
    filter_candidates,
    filter_quality,
    gradnorm_scores,
    last_layer_grad_rows,
    sal_scores,
    sal_threshold,
)
from .wild_data import WildMixture, digits_wild_mixture, gaussian_wild_mixture

__all__ = [
    "FilterResult",
    "NumpyClassifier",
    "OODClassifier",
    "SALDetector",
    "SplitNetwork",
    "WildMixture",
    "class_reference_means",
    "digits_wild_mixture",
    "energy_scores",
    "filter_candidates",
    "filter_quality",
    "fpr_at_tpr",
    "gaussian_wild_mixture",
    "gradnorm_scores",
    "last_layer_grad_rows",
    "msp_scores",
    "sal_filter",
    "sal_scores",
    "sal_threshold",
    "train_ood_classifier",
]
