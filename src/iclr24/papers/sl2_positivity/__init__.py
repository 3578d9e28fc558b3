"""Learning Polynomial Problems with SL(2, R)-Equivariance (Lawrence & Harris, ICLR 2024; arXiv
2312.02146; official code harris-mit/polySL2equiv): predict max-det SOS certificates (Gram
matrices) of positive binary forms with a network, exploit SL(2) equivariance by augmentation.

How the code maps to the paper:

- ``forms``: binary forms, anti-diagonal sums, the official random SOS generator, induced
  matrices M_k(A), the SL(2) action on forms and Gram matrices, SL(2) sampling by condition
  number -> :func:`random_sos_binary_forms`, :func:`induced_matrix`, :func:`act_on_form`,
  :func:`act_on_gram`, :func:`sample_sl2`;
- ``certificates``: max-det Gram by cvxpy/SCS (with SCS's own solve time, which excludes
  cvxpy's per-call canonicalisation), the exact constraint projection, the certification rate
  -> :func:`max_det_gram`, :func:`max_det_gram_timed`, :func:`project_gram_constraints`,
  :func:`certification_rate`;
- ``models``: the MLP and its training with or without SL(2) augmentation -> :func:`GramMLP`,
  :func:`train_gram_model`, :func:`predict_gram`;
- ``equivariant``: the SO(2)-equivariant net (circular harmonics, per-frequency linear maps,
  tensor products, norm gates, equivariant Gram output and constraint projection) ->
  :func:`SO2GramNet`, :func:`rotation`.

Zero forms: ``max_det_gram`` refuses them (no strictly positive Gram matrix), training refuses
them (no normalisation by ||p|| = 0), and the networks map them to the zero matrix exactly (their
only PSD Gram matrix), never to NaN.

Out of reach / not done: MOSEK timings and large degrees (>= 14); the SL(2)-equivariant
(Clebsch-Gordan, transvectant) architecture is not built, so the paper's comparison of
augmentation with it is not a claim here; the min_poly task.
"""

from .certificates import (
    certification_rate,
    max_det_gram,
    max_det_gram_timed,
    project_gram_constraints,
)
from .equivariant import SO2GramNet, rotation
from .forms import (
    act_on_form,
    act_on_gram,
    antidiagonal_sums,
    induced_matrix,
    random_sos_binary_forms,
    sample_sl2,
)
from .models import GramMLP, predict_gram, train_gram_model

__all__ = [
    "GramMLP",
    "SO2GramNet",
    "act_on_form",
    "act_on_gram",
    "antidiagonal_sums",
    "certification_rate",
    "induced_matrix",
    "max_det_gram",
    "max_det_gram_timed",
    "predict_gram",
    "project_gram_constraints",
    "random_sos_binary_forms",
    "rotation",
    "sample_sl2",
    "train_gram_model",
]
