"""ULTRA: Towards Foundation Models for Knowledge Graph Reasoning (Galkin et al., ICLR 2024).

A link predictor for multi-relational knowledge graphs that owns no entity or relation
embedding, so one set of weights runs zero-shot on any KG. Relations are represented relative
to each other: a parameter-free *graph of relations* records four interactions (head-to-head,
tail-to-tail, head-to-tail, tail-to-head); an NBFNet conditioned on the query relation (all-ones
boundary, never a learned relation vector) produces a vector per relation, and an NBFNet on the
entity graph uses those vectors to score every candidate answer.

How the code maps to the paper
- ``relation_graph.py``: G_R with its four interaction types (Sec. 4.1, Eq. 1).
- ``conditional_message_passing.py``: ``GeneralizedRelationalConv`` (DistMult message, sum +
  boundary, LayerNorm/ReLU, residual), ``RelationNBFNet`` (Sec. 4.2) and ``EntityNBFNet``
  (Sec. 4.3, per-layer relation projection, 2-layer scoring MLP).
- ``foundation_model.py``: ``Ultra``, graph preparation (inverse relations r + |R|), the
  training-time removal of query edges, checkpoints to a local file, and
  ``Ultra.from_official`` for the released weights of the official repository (a local
  ``ultra_3g.pth`` / ``ultra_4g.pth``; every official key matches ``Ultra(64, 6)``).
- ``training.py``: self-adversarial BCE, strict negatives (half tail / half head corruption),
  multi-graph pre-training, fine-tuning.
- ``evaluation.py``: filtered ranking (MRR, Hits@1/3/10, both directions), zero-shot inference.
- ``link_predictor.py``: ``UltraLinkPredictor``, the user-facing API by labels; its
  predictions are filtered (known true answers removed), as in the paper's evaluation.
- ``synthetic_kg.py``: the rule-based KG generator of claim U1; ``pykeen_datasets.py``: the
  Nations / Kinships / UMLS graphs that ship inside the pykeen wheel (claim U2; read offline).
- Generic KG pieces (containers, TSV/DataFrame loading, filtered ranking, negative sampling,
  PyG DistMult baseline) live in ``iclr24.kits.knowledge_graphs``.

Usage::

    from iclr24.papers.ultra import KnowledgeGraph, TrainConfig, UltraLinkPredictor
    kg = KnowledgeGraph.from_dataframe(train_df, test=test_df)      # head/relation/tail labels
    ultra = UltraLinkPredictor.pretrain([g1, g2, g3], TrainConfig(steps=2000), dim=32)
    ultra.save("ultra.pt"); ultra = UltraLinkPredictor.load("ultra.pt")
    official = UltraLinkPredictor.from_official("ckpts/ultra_3g.pth")  # released weights (local)
    ultra.predict_tails(kg, "paris", "capital_of", top_k=5)         # zero-shot on kg, filtered
    ultra.evaluate(kg)                                               # {"mrr": ..., "hits@10": ...}
    tuned = ultra.fine_tune(kg, TrainConfig(steps=200))

What is scaled down (CPU, minutes instead of 800k steps on 4 A100s)
- Width 8-32 and 2-4 layers per network instead of 64 and 6 (the defaults of ``Ultra`` are
  the paper's); K <= 32 negatives instead of 512; batch 4-8 instead of 64; 10^1-10^3 steps.
- The synthetic generator nests entity types (3 per entity) instead of drawing 3-5
  independent ones, which made the relation graph complete (see ``synthetic_kg.py``).
- The claims run torch with one intra-op thread (small tensors, shared 2-core machines).
- Pre-training graphs are small synthetic rule KGs or two of {Nations, Kinships, UMLS} instead
  of FB15k-237 + WN18RR + CoDEx-M (which need downloads); evaluation on large graphs is
  subsampled to a fixed set of test facts, the same for every method.
- Message passing is plain PyG (O(|E| d) memory per query), not the custom rspmm kernel.
"""

from iclr24.kits.knowledge_graphs import KnowledgeGraph, rank_metrics

from .conditional_message_passing import EntityNBFNet, GeneralizedRelationalConv, RelationNBFNet
from .evaluation import check_triples, evaluate, filtered_ranks, ultra_score_fn, unseen_facts
from .foundation_model import (
    Ultra,
    as_id_tensor,
    load_checkpoint,
    prepare_graph,
    remove_query_edges,
    save_checkpoint,
)
from .link_predictor import UltraLinkPredictor
from .pykeen_datasets import PYKEEN_KGS, load_pykeen_kg
from .relation_graph import INTERACTION_TYPES, build_relation_graph
from .synthetic_kg import make_rule_kg
from .training import TrainConfig, fine_tune, pretrain, self_adversarial_bce, train_ultra

__all__ = [
    "INTERACTION_TYPES",
    "PYKEEN_KGS",
    "EntityNBFNet",
    "GeneralizedRelationalConv",
    "KnowledgeGraph",
    "RelationNBFNet",
    "TrainConfig",
    "Ultra",
    "UltraLinkPredictor",
    "as_id_tensor",
    "build_relation_graph",
    "check_triples",
    "evaluate",
    "filtered_ranks",
    "fine_tune",
    "load_checkpoint",
    "load_pykeen_kg",
    "make_rule_kg",
    "prepare_graph",
    "pretrain",
    "rank_metrics",
    "remove_query_edges",
    "save_checkpoint",
    "self_adversarial_bce",
    "train_ultra",
    "ultra_score_fn",
    "unseen_facts",
]
