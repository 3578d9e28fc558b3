"""Small-classifier kit shared by the trustworthy-ML papers (chameleon_mi, fair_abstain, sal,
early_exit, prune_kurtosis).

What is here
- :mod:`.digits`: scikit-learn's bundled digits with deterministic stratified splits, scaled to
  [0, 1] or standardised with training statistics (:func:`load_digits_split`).
- :mod:`.mlp`: a small :class:`MLP` classifier, :func:`fit_classifier` (Adam on CE, seeded batch
  order) and :class:`MLPTrainer`, the ``train_fn(X, y, rng) -> predict_proba`` protocol the
  papers' attacks and wrappers take (one 64->128->10 model trains in a fraction of a second).
- :mod:`.score_metrics`: ``tpr_at_fpr`` (max TPR with FPR <= target), ``fpr_at_tpr`` (FPR95),
  top-label ECE with equal-width bins (torchmetrics' binning), a stratified bootstrap interval.
  ROC/AUC themselves come from scikit-learn.

Usage::

    from iclr24.kits.small_classifiers import MLPTrainer, load_digits_split, tpr_at_fpr
    data = load_digits_split((0.5, 0.5), ("train", "test"), seed=0)
    clf = MLPTrainer(epochs=100)(*data.part("train"), rng=np.random.default_rng(0))
    clf.predict_proba(data.X["test"])            # (n, 10)

Run tiny models single-threaded (``iclr24.kits.threads.torch_threads(1)``).
"""

from .digits import DigitsSplit, load_digits_split, stratified_split_indices
from .mlp import MLP, MLPTrainer, TrainedClassifier, fit_classifier, torch_generator
from .score_metrics import expected_calibration_error, fpr_at_tpr, stratified_bootstrap, tpr_at_fpr

__all__ = [
    "MLP",
    "DigitsSplit",
    "MLPTrainer",
    "TrainedClassifier",
    "expected_calibration_error",
    "fit_classifier",
    "fpr_at_tpr",
    "load_digits_split",
    "stratified_bootstrap",
    "stratified_split_indices",
    "torch_generator",
    "tpr_at_fpr",
]
