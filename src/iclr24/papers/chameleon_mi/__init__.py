"""Chameleon: Increasing Label-Only Membership Leakage with Adaptive Poisoning (H. Chaudhari,
G. Severi, A. Oprea, J. Ullman; ICLR 2024; official code harshch1803/CHAMELEON).

What the paper does. Label-only membership inference (MI) attacks see only predicted labels and
are nearly useless at low false-positive rates. Chameleon lets the attacker poison the training
set: each challenge point (x, y) gets k_x mislabelled replicas (label (y+1) mod C), with k_x chosen
adaptively on shadow models as the fewest poisons that make *non-member* models misclassify x
while member models still fit it. The attacker then queries a small, pre-selected neighbourhood
of x and thresholds the fraction of queries labelled y.

How the code maps to it.
- :mod:`.poisoning` (Stage I, official Algorithm 2): :func:`balanced_membership_masks`,
  :func:`draw_population`, :func:`train_population`, :func:`make_poison_set`,
  :func:`adaptive_poison_counts` (OUT-shadow mean true-label confidence vs t_p = 0.13, counts
  freeze for good, stop when nothing changes).
- :mod:`.neighbourhood` (Stage II): :func:`scaled_logit`, :func:`gaussian_kl`,
  :func:`membership_neighbourhood` (KL <= tau = 0.75 to x's own IN and OUT Gaussians, on the
  zero-poison shadows), :func:`shift_noise_augment`.
- :mod:`.attacks` (Stage III and baselines): :func:`chameleon_score`, :func:`gap_score`,
  :func:`augmentation_score`, :func:`membership_metrics` (AUC, balanced accuracy, TPR at
  FPR <= target, withheld below 10/FPR non-member trials), :class:`ChameleonAttack`.
- ``claims.py``: ``label_only_tpr`` (Chameleon vs gap vs augmentation attack on the same targets;
  null arm: the neighbourhood queries on unpoisoned targets) and ``adaptive_vs_fixed_poison``
  (the count ablation; null arm: the adaptive counts permuted across points), each decided over
  independent replicates of all three stages (3 at small).

Auditing use. Point :class:`ChameleonAttack` at a training pipeline you own (pass its
``train_fn(X, y, rng) -> predict_proba``) to measure how much a poisoning adversary could learn
about membership from labels alone. It is an attack too: do not run it against data or models
you have no right to test.

What differs / is out of reach. The paper trains ~70 ResNet-18s for 100 epochs on CIFAR-10/100 and
GTSRB with 500 challenge points; here the same three stages run on scikit-learn's bundled digits
with a memorising MLP (64->128->10, full-batch Adam lr 1e-2, 150 epochs; smaller at smoke) and
+-1-pixel shift + noise augmentations instead of AutoAugment. TPR@0.1%FPR needs >= 10,000
non-member trials and is withheld at our scales. TPR is the max TPR with FPR <= target (the
official script takes the ROC point with FPR *nearest* the target).

Usage::

    from iclr24.kits.small_classifiers import MLPTrainer
    from iclr24.papers.chameleon_mi import ChameleonAttack
    attack = ChameleonAttack(MLPTrainer(num_classes=10), num_classes=10).fit(X, y, idx, rng)
    Xp, yp = attack.poison_set()                  # inject into the audited training set
    report = attack.run(n_targets=16, rng=rng)    # or attack.score(model.predict) per model
"""

from .attacks import (
    MIN_NEGATIVES_PER_FPR,
    AttackReport,
    ChameleonAttack,
    augmentation_score,
    chameleon_score,
    fraction_labelled,
    gap_score,
    membership_metrics,
)
from .neighbourhood import gaussian_kl, membership_neighbourhood, scaled_logit, shift_noise_augment
from .poisoning import (
    Population,
    adaptive_poison_counts,
    balanced_membership_masks,
    draw_population,
    label_flip,
    make_poison_set,
    train_population,
    true_label_confidence,
)

__all__ = [
    "MIN_NEGATIVES_PER_FPR",
    "AttackReport",
    "ChameleonAttack",
    "Population",
    "adaptive_poison_counts",
    "augmentation_score",
    "balanced_membership_masks",
    "chameleon_score",
    "draw_population",
    "fraction_labelled",
    "gap_score",
    "gaussian_kl",
    "label_flip",
    "make_poison_set",
    "membership_metrics",
    "membership_neighbourhood",
    "scaled_logit",
    "shift_noise_augment",
    "train_population",
    "true_label_confidence",
]
