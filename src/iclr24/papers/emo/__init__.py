"""EMO: Earth Mover Distance Optimization for Auto-Regressive Language Modeling
(S. Ren, Z. Wu, K. Q. Zhu; ICLR 2024; arXiv 2310.04691; official code DRSY/EMO, PyPI
``emoloss``).

What the paper does. MLE (forward cross-entropy) is recall-prioritising and blind to *which*
wrong token receives probability. EMO trains the next-token distribution q = softmax(z) with an
earth mover distance to the data distribution, where moving mass from token i to j costs
C(i, j) = 1 − cos(e_i, e_j) for a *frozen* copy of a pretrained output embedding. The exact EMD
is replaced by the upper bound DEMD(q, p) = qᵀCp, which is tight for one-hot targets
(DEMD = Σ_i q_i C(i, y) = 1 − ê_yᵀÊᵀq) and combined with MLE per token,
ℓ_t = ½ (NLL_t + sg(NLL_t / DEMD_t) · DEMD_t). Used as a brief fine-tuning ("calibration")
objective it improves MAUVE of ancestral samples and downstream few-shot accuracy.

How the code maps to it.
- :mod:`.demd`: :func:`cosine_cost_embedding` (frozen normalised copy of an LM head),
  :func:`cosine_cost_matrix`, :func:`demd` (one-hot targets, one matmul), :func:`demd_soft`
  (qᵀCp for soft targets), :func:`demd_logit_gradient` (the closed-form gradient
  q_i (C(i, y) − Σ_j q_j C(j, y))), :func:`earth_movers_distance` (exact EMD via POT).
- :mod:`.objectives`: ``loss(logits, labels, ...)`` functions with the official code's shifting
  and −100 masking: :func:`mle_loss`, :func:`emo_loss` (modes 1 and 2, with
  :func:`emo_dynamic_weight`), the baselines :func:`mixce_loss` and :func:`tailr_loss` as the
  official code writes them, :class:`EMOLoss` (an ``nn.Module`` holding the frozen cost), and
  :func:`make_objective`.
- :mod:`.synthetic_language`: :class:`SyntheticLanguage` — clusters of synonyms, a Markov chain
  over clusters, Zipf synonyms, a uniform floor — with its exact next-token distribution.
- :mod:`.finetuning`: :func:`finetune` (1 epoch, AdamW, linear decay, no warm-up, fixed order).
- :mod:`.evaluation`: :func:`ancestral_sample` (KV-cached), :func:`exact_kl_metrics` (forward
  and reverse KL per token, wrong-cluster mass).
- :mod:`.comparison`: the whole protocol (pretrain with the kit's trainer, copy the head as the
  cost, fine-tune MLE / EMO / MixCE / TaiLr and the shuffled-cost EMO null arm from the same
  checkpoint, score), and a bootstrap.
- ``claims.py``: ``reverse_kl`` and ``bound_exact``.

What is scaled down / differs.
- No GPT-2/OPT/LLaMA weights and no web text offline: the model is the shared kit's tiny causal
  transformer (2 layers, d = 64), the data a synthetic language whose true distribution is known,
  and MAUVE is replaced by exact reverse KL (precision) and forward KL (recall).
- Fine-tuning lr 5e-4 instead of 5e-5 (a tiny model moves too little otherwise); everything else
  follows ``run_lm_gpt2.sh`` (AdamW, batch 32, 1 epoch, linear schedule, no warm-up). The
  claim's epoch is sized to the paper's optimiser steps (about 290 for WikiText-2): 9,216 fresh
  sequences of 64 tokens, a quarter of the paper's tokens per step.
- The live-head ``adaptive_emo`` variant of the official snapshot (broken there) is not provided.

Usage::

    from iclr24.papers.emo import EMOLoss, emo_loss, cosine_cost_embedding
    criterion = EMOLoss(model.head.weight)          # frozen copy taken now
    loss = criterion(model(input_ids), input_ids)   # logits (B, T, V), labels (B, T), shifted
"""

from .comparison import (
    METHODS,
    ComparisonConfig,
    ComparisonResult,
    bootstrap_mean_interval,
    pretrain_on_language,
    run_finetuning_comparison,
)
from .demd import (
    cosine_cost_embedding,
    cosine_cost_matrix,
    demd,
    demd_logit_gradient,
    demd_soft,
    earth_movers_distance,
)
from .evaluation import ancestral_sample, exact_kl_metrics, predictive_log_probs
from .finetuning import FinetuneConfig, finetune, sequence_logits
from .objectives import (
    OBJECTIVES,
    EMOLoss,
    emo_dynamic_weight,
    emo_loss,
    emo_token_loss,
    make_objective,
    mixce_loss,
    mle_loss,
    tailr_loss,
    token_nll,
)
from .synthetic_language import SyntheticLanguage, make_language

__all__ = [
    "METHODS",
    "OBJECTIVES",
    "ComparisonConfig",
    "ComparisonResult",
    "EMOLoss",
    "FinetuneConfig",
    "SyntheticLanguage",
    "ancestral_sample",
    "bootstrap_mean_interval",
    "cosine_cost_embedding",
    "cosine_cost_matrix",
    "demd",
    "demd_logit_gradient",
    "demd_soft",
    "earth_movers_distance",
    "emo_dynamic_weight",
    "emo_loss",
    "emo_token_loss",
    "exact_kl_metrics",
    "finetune",
    "make_language",
    "make_objective",
    "mixce_loss",
    "mle_loss",
    "predictive_log_probs",
    "pretrain_on_language",
    "run_finetuning_comparison",
    "sequence_logits",
    "tailr_loss",
    "token_nll",
]
