"""What Makes a Good Prune? Maximal Unstructured Pruning for Maximal Cosine Similarity
(G. Mason-Williams, F. Dahlqvist; ICLR 2024; OpenReview jsvvPVVzwf; official code
gmw99/what_makes_a_good_prune).

What the paper does. It studies global unstructured magnitude (L1) pruning followed by one epoch
of fine-tuning. The cosine similarity (CS) between the parent's and the pruned network's
flattened parameters is its proxy for functional similarity; L1 pruning maximises CS at every
amount (theorem). Prunability is explained by the shape of the parameter distribution: higher
kurtosis (mass near zero, heavy tails) means more can go at equal CS, which is why pruning at
initialisation (low kurtosis) is worse. A recipe picks the amount: the utopia point p* of the CS
curve, scaled by 1/log(kappa-kappa), the kurtosis of the per-tensor kurtoses.

How the code maps to it.
- :mod:`.cosine`: :func:`flatten_params` (effective, masked tensors), :func:`cosine_prune_curve`
  (analytic, one sort), :func:`utopia_prune_amount`, :func:`prunable_fraction`,
  :func:`cosine_similarity`.
- :mod:`.kurtosis`: :func:`pearson_kurtosis`, :func:`tensor_kurtoses`,
  :func:`kurtosis_of_kurtoses`, :func:`kurtosis_modifier`, :func:`safe_prune_amount`.
- :mod:`.pruning`: :func:`global_magnitude_prune` (torch's ``global_unstructured`` with
  ``L1Unstructured``), :func:`random_global_prune`, :func:`prune_and_finetune` (SGD lr 1e-3,
  momentum 0.9, batch 256, masks kept) -> :class:`PruneReport`, :func:`allowed_amount` (the
  largest amount an accuracy curve keeps within a tolerance).
- :mod:`.training`: the parent MLPs of the study (plain / weight decay / L1 penalty).
- ``claims.py``: ``l1_maximises_cosine``, ``kurtosis_prunability``, ``trained_mlp_recipe``.

What differs / is out of reach. The paper prunes ResNet-18 / VGG-type nets on CIFAR-10 and
ImageNet (the demo: an ImageNet-pretrained ResNet-18 fine-tuned on CIFAR-10); here the same rule
and recipe run on MLPs trained on scikit-learn's digits (kurtosis vs prunability on four trained
variants, the synthetic draws reported beside). Which tensors count is a parameter (``include``); like the official demo we default to
every weight and bias. p_safe is clipped to [0, p*] (the modifier exceeds 1 when kk < 2).

Usage::

    from iclr24.papers.prune_kurtosis import (cosine_prune_curve, global_magnitude_prune,
                                              safe_prune_amount)
    p = safe_prune_amount(model)                 # utopia point x kurtosis modifier
    global_magnitude_prune(model, p)             # masks kept: fine-tune, pruned weights stay 0
"""

from .cosine import (
    DEFAULT_AMOUNTS,
    cosine_prune_curve,
    cosine_similarity,
    flatten_params,
    masked_cosine,
    prunable_fraction,
    prunable_tensors,
    prune_count,
    utopia_prune_amount,
)
from .kurtosis import (
    kurtosis_modifier,
    kurtosis_of_kurtoses,
    pearson_kurtosis,
    safe_prune_amount,
    tensor_kurtoses,
)
from .pruning import (
    PruneReport,
    allowed_amount,
    evaluate_classifier,
    global_magnitude_prune,
    make_pruning_permanent,
    prune_and_finetune,
    random_global_prune,
)
from .training import ParentConfig, train_parent

__all__ = [
    "DEFAULT_AMOUNTS",
    "ParentConfig",
    "PruneReport",
    "allowed_amount",
    "cosine_prune_curve",
    "cosine_similarity",
    "evaluate_classifier",
    "flatten_params",
    "global_magnitude_prune",
    "kurtosis_modifier",
    "kurtosis_of_kurtoses",
    "make_pruning_permanent",
    "masked_cosine",
    "pearson_kurtosis",
    "prunable_fraction",
    "prunable_tensors",
    "prune_and_finetune",
    "prune_count",
    "random_global_prune",
    "safe_prune_amount",
    "tensor_kurtoses",
    "train_parent",
    "utopia_prune_amount",
]
