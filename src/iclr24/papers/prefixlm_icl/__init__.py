"""CausalLM is not optimal for in-context learning (Ding, Levinboim, Wu, Goodman, Soricut;
ICLR 2024; arXiv 2308.06912; official code google-research/causallm_icl).

What the paper does. In-context learning of linear regression by transformers whose in-context
examples either all see each other (prefixLM) or only see earlier ones (causalLM). With the
construction in which each linear-self-attention layer is one gradient step, a deep prefixLM
stack converges linearly in depth to the least-squares solution, a causalLM stack to one pass of
normalised online gradient descent, which stays suboptimal as n grows. Trained softmax
transformers confirm prefixLM < causalLM in query error.

How the code maps to it.
- :mod:`.lsa_dynamics`: the exact coefficient recursion for both masks
  (:func:`lsa_icl_coefficients`, :func:`lsa_icl_predict`), the closed-form fixed points
  (:func:`stationary_point`, :func:`stationary_weights`) and the step-size bound
  (:func:`lsa_stability_bound`).
- :mod:`.icl_tasks`: :func:`sample_icl_batch`, prompts [y_j, x_j] ... [0, x_q] for the linear,
  sigmoid (N-LR) and multiclass tasks.
- :mod:`.icl_transformer`: :func:`make_icl_mask` and :class:`ICLTransformer` (pre-LN softmax
  transformer, boolean mask into ``scaled_dot_product_attention``, loss on queries only),
  :func:`train_icl_transformer`, :func:`query_mse`.
- ``claims.py``: ``lsa_convergence`` (query MSE per layer, Fig. 1), ``stationary_vs_n``
  (stationary-point error vs n and x offset, Fig. 2), ``trained_prefix_vs_causal`` (Sec. 5.2).

What is scaled down: the trained transformer. The classes default to the spec's laptop
setting (d_model 64, 4 layers, 4 heads, d = 8, 24 + 8 prompts, 3 000 steps); the claim runs
d_model 32, 3 layers, 2 heads, d = 5, 16 examples + 4 queries, 1 400 AdamW steps, three arms
over three seeds (the official model is 512 wide, 12 layers, 5000 x 100 steps; see
:mod:`.icl_transformer`); the N-LR and multiclass tasks are implemented but not run by a claim. The T5 / PaLM-2 / PaLI-X experiments (Sec. 5.3)
need large pre-trained models and are not imitated. The LSA dynamics are exact.

Usage::

    from iclr24.papers.prefixlm_icl import sample_icl_batch, lsa_icl_predict
    b = sample_icl_batch(64, 40, 20, 16, x_dist="uniform", rng=0)
    X, y, Xq = b.x[:, :40], b.y[:, :40, 0], b.x[:, 40:]
    pred = lsa_icl_predict(X, y, Xq, n_layers=200, eta=0.04, mode="causal")   # (64, 201, 20)
"""

from .icl_tasks import ICLBatch, sample_icl_batch
from .lsa_dynamics import (
    lsa_icl_coefficients,
    lsa_icl_predict,
    lsa_stability_bound,
    stationary_point,
    stationary_weights,
)


def __getattr__(name: str):
    # torch is imported only when the trained transformer is used
    if name in ("ICLTransformer", "ICLTrainConfig", "make_icl_mask", "query_mse",
                "train_icl_transformer"):
        from . import icl_transformer

        return getattr(icl_transformer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ICLBatch",
    "ICLTrainConfig",
    "ICLTransformer",
    "lsa_icl_coefficients",
    "lsa_icl_predict",
    "lsa_stability_bound",
    "make_icl_mask",
    "query_mse",
    "sample_icl_batch",
    "stationary_point",
    "stationary_weights",
    "train_icl_transformer",
]
