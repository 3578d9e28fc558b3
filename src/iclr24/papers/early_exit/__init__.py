"""JEI-DNN: "Jointly-Learned Exit and Inference for a Dynamic Neural Network" (Regol,
Chataoui & Coates, ICLR 2024; arXiv 2310.09163; official code networkslab/dynn).

An early-exit network attaches inference modules (IMs) to a frozen backbone and gates that
decide per input where to stop. Usual practice trains the IMs and then exits when an IM's
confidence passes a threshold; JEI-DNN learns tiny gates on uncertainty statistics of each IM's
output and trains gates and IMs jointly by alternating: gates imitate an oracle exit that trades
cross-entropy against inference cost, IMs are trained with weights from where the gates send
each sample.

How the code maps to the paper:

- :mod:`.network`: :class:`EarlyExitNet` (blocks, IMs, final head, per-block costs,
  :meth:`~EarlyExitNet.exit_costs`) and a residual-MLP backbone;
- :mod:`.gates`: :func:`uncertainty_features` (max prob, entropy, margin, entropy of the
  squared softmax), :class:`UncertaintyGate`, :func:`exit_probabilities` (P_l and q_l),
  :func:`gated_exit`;
- :mod:`.training`: :func:`oracle_exit`, :func:`gate_targets`, :func:`positive_weights`,
  :func:`gate_loss`, :func:`weighted_im_loss` (``"intended"`` and the official no-op),
  :func:`warmup_exit_heads`, :class:`JEIDNNTrainer`;
- :mod:`.threshold`: :class:`ThresholdExit`, the max-probability baseline;
- :mod:`.conformal`: :func:`conformal_quantiles` and per-exit prediction sets;
- :mod:`.digits_experiment`: the laptop-scale experiment of the claims.

Out of reach here: T2T-ViT-7/14 backbones and CIFAR-10/100, SVHN, CIFAR-100-LT (and the
BoostedNets / L2W-DEN baselines); the claims use a 6-block residual MLP on shifted digits with
the paper's frozen-backbone protocol, gates, oracle targets and alternation.

Usage::

    net = EarlyExitNet(blocks, ims, head, block_costs=[b.macs for b in blocks])
    trainer = JEIDNNTrainer(net, default_gates(len(ims)), lam=0.5).fit(Xtr, ytr, Xva, yva)
    pred, exit_index, probs = trainer.predict(Xte)
    trainer.average_cost(exit_index)
"""

from .conformal import (
    conformal_quantile,
    conformal_quantiles,
    conformal_sets,
    nonconformity_scores,
    set_coverage,
)
from .gates import UncertaintyGate, exit_probabilities, gated_exit, uncertainty_features
from .network import EarlyExitNet, ResidualMLPBlock, residual_mlp_backbone
from .threshold import ThresholdExit
from .training import (
    JEIDNNTrainer,
    default_gates,
    gate_loss,
    gate_targets,
    oracle_exit,
    positive_weights,
    warmup_exit_heads,
    weighted_im_loss,
)

__all__ = [
    "EarlyExitNet",
    "JEIDNNTrainer",
    "ResidualMLPBlock",
    "ThresholdExit",
    "UncertaintyGate",
    "conformal_quantile",
    "conformal_quantiles",
    "conformal_sets",
    "default_gates",
    "exit_probabilities",
    "gate_loss",
    "gate_targets",
    "gated_exit",
    "nonconformity_scores",
    "oracle_exit",
    "positive_weights",
    "residual_mlp_backbone",
    "set_coverage",
    "uncertainty_features",
    "warmup_exit_heads",
    "weighted_im_loss",
]
