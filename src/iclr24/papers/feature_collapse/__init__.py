"""Feature Collapse (Laurent, von Brecht, Bresson; ICLR 2024; arXiv 2305.16162; official code
xbresson/feature_collapse, four notebooks).

What the paper shows. On a synthetic sentence-classification task with latent concepts, words
that play the same role (the words of one concept) receive the same learned embedding
("feature collapse"), and collapse goes together with generalisation. In the large-sample
limit the regularised risk's minimisers collapse exactly; with long-tailed (Zipf) word
frequencies this needs a LayerNorm, since otherwise the embedding norms track frequency.

How the code maps to it.
- :mod:`.data_model`: :class:`ConceptSentenceDataset` (the notebooks' ``DataModel``).
- :mod:`.collapse_model`: :class:`EmbedLinearClassifier` (embedding, optional affine-free
  LayerNorm, position-wise linear classifier, init / 1000), :func:`train_collapse_model` (SGD
  with separate weight decay on W and U, optional frozen random embedding), :func:`accuracy`.
- :mod:`.collapse_metrics`: :func:`within_concept_ratio`, :func:`pca_spectrum_ratio`,
  :func:`norm_frequency_spearman`, :func:`norm_spread`, :func:`classifier_block_ratio`, :func:`layer_norm_rows`.
- ``claims.py``: ``collapse_generalization`` (Fig. 3: trainable vs frozen embedding) and
  ``layernorm_zipf`` (Fig. 4: Zipf frequencies, with and without LayerNorm; null arm: the
  no-LN network on uniform frequencies).

What is scaled down: the number of classes K and of epochs (SGD steps). The paper's Fig. 3 runs
K = 1000 classes for 1200 epochs (60 000 SGD steps); ``collapse_generalization`` runs K = 200
for 1000 epochs at ``small`` (10 000 steps) and K = 50, 300 words for 600 epochs at ``smoke``;
``layernorm_zipf`` runs K = 200 with n_spl = 5 sentences per class (the data-poor regime in
which the accuracy contrast of Fig. 4b/c shows) for 400 epochs (4 000 steps; the notebooks:
K = 1000, n_spl = 500 and 5). The exact counts are in each claim's docstring and metrics. Everything else
(n_c = 3, 1200 words, L = 15, d = 100, lr 0.1, batch 100, weight decay 1e-3 on W and on U,
init / 1000) is the official setting. The collapse statistics are our scalar summaries of the
notebooks' PCA plots.
"""

from .collapse_metrics import (
    classifier_block_ratio,
    layer_norm_rows,
    norm_frequency_spearman,
    norm_spread,
    pca_spectrum_ratio,
    within_concept_ratio,
)
from .data_model import ConceptSentenceDataset


def __getattr__(name: str):
    # torch is imported only when the network is used
    if name in ("EmbedLinearClassifier", "TrainingHistory", "accuracy", "train_collapse_model"):
        from . import collapse_model

        return getattr(collapse_model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ConceptSentenceDataset",
    "EmbedLinearClassifier",
    "TrainingHistory",
    "accuracy",
    "classifier_block_ratio",
    "layer_norm_rows",
    "norm_frequency_spearman",
    "norm_spread",
    "pca_spectrum_ratio",
    "train_collapse_model",
    "within_concept_ratio",
]
