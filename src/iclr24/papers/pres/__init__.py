"""PRES: Toward Scalable Memory-Based Dynamic Graph Neural Networks (J. Su, D. Zou, C. Wu;
ICLR 2024; official code jwsu825/MDGNN_BS, a TGN fork with ``--use_pres``).

What the paper does. Memory-based dynamic GNNs (TGN, JODIE, APAN) keep a memory vector per node
and train on the chronological event stream in *temporal batches*; events inside one batch read
the memory as it was before the batch ("temporal discontinuity"), so accuracy drops as the batch
grows, which caps data parallelism. The paper bounds the effect of the temporal batch size on
convergence through *memory coherence* and proposes PRES: (1) an iterative prediction-correction
of memory states from a per-node statistical model of memory transitions, and (2) a training term
that rewards memory coherence. It reports up to 4x larger temporal batches (3.4x faster training)
at similar accuracy.

How the code maps to it.
- :mod:`.transition_stats`: :class:`MemoryTransitionStats`, exact per-node running mean and
  variance of memory changes as registered buffers (the paper's transition model, one Gaussian
  per node instead of a mixture).
- :mod:`.pres_memory`: :class:`PRESMemory`, prediction s_hat = s_prev + mu, correction
  s = gamma s_hat + (1 - gamma) s_til around PyG's ``TGNMemory`` (gamma fixed or learnable).
- :mod:`.coherence`: :func:`coherence_loss`, beta (1 - coh(s_prev, s_new)) with cosine or inner
  product, with gradient (``detach=True`` mimics the official code's detached term).
- :mod:`.tgn_model`: TGN from PyG parts (``TGNMemory``, ``IdentityMessage``, ``LastAggregator``,
  ``LastNeighborLoader``, ``TransformerConv``), :class:`TGNConfig` with the official defaults.
- :mod:`.training`: :func:`train_tgn` (chronological temporal batches, memory and neighbour
  loader reset each epoch, detach after each batch) and :func:`evaluate_ap` (fixed-seed negatives,
  AP/AUC from ``iclr24.kits.graphs.link_metrics``).
- :mod:`.drifting_stream`: :func:`make_drifting_stream`, the synthetic drifting-interest stream.
- ``claims.py``: ``large_batch_ap`` (AP and epoch time for b in {200, 400, 800, 1600}, with
  and without PRES, a re-seeded TGN as the null arm) and ``memory_statistics_exact``.

What is out of reach or differs.
- The JODIE streams (Wikipedia, Reddit, MOOC, LastFM) and TGB are downloaded at run time, so the
  claims run on the synthetic stream; JODIE and APAN (the paper's other MDGNNs) are not built,
  only TGN; only transductive link prediction (no new-node split), no early stopping.
- Small models on CPU (memory dim 16-32 instead of 172) and few epochs.
- Where this differs from the official code (see the module docstrings): the transition
  statistics' count is never incremented there; the coherence term is detached there. The
  fusion is placed as there by default (it feeds only the current batch's embeddings);
  ``store_fused=True`` is this project's variant that stores the fused state.

Usage::

    from iclr24.papers.pres import make_drifting_stream, train_tgn, evaluate_ap, TGNConfig
    data = make_drifting_stream(num_events=20_000, seed=0)
    run = train_tgn(data, batch_size=200, epochs=3, use_pres=True, gamma=0.9,
                    config=TGNConfig(memory_dim=32, time_dim=32, embedding_dim=32))
    evaluate_ap(run, data, "test")["ap"]             # 0.785 (chance is 0.5), ~6 s of CPU

At b = 1600 the same three epochs are only 27 optimiser steps and the AP stays near chance
(an earlier version of this example, b = 1600 with the stored-fusion variant, gave 0.52);
``claims.large_batch_ap`` trains the official 10 epochs.
"""

from .coherence import COHERENCE_KINDS, coherence_loss
from .drifting_stream import make_drifting_stream
from .pres_memory import PRESMemory, pending_messages
from .tgn_model import GraphAttentionEmbedding, LinkPredictor, TGNConfig, TGNLinkModel
from .training import (
    SPLITS,
    TGNTrainResult,
    check_temporal_data,
    evaluate_ap,
    split_sizes,
    train_tgn,
)
from .transition_stats import MemoryTransitionStats

__all__ = [
    "COHERENCE_KINDS",
    "SPLITS",
    "GraphAttentionEmbedding",
    "LinkPredictor",
    "MemoryTransitionStats",
    "PRESMemory",
    "TGNConfig",
    "TGNLinkModel",
    "TGNTrainResult",
    "check_temporal_data",
    "coherence_loss",
    "evaluate_ap",
    "make_drifting_stream",
    "pending_messages",
    "split_sizes",
    "train_tgn",
]
