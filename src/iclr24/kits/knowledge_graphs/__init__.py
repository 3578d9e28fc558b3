"""Knowledge-graph kit: containers, TSV/DataFrame loading, filtered ranking, negative sampling.

Generic pieces that knowledge-graph papers share (first user: ``iclr24.papers.ultra``):

- :class:`KnowledgeGraph` (``triples.py``): train/valid/test id triples ``(N, 3)`` of
  (head, relation, tail) plus the entity/relation label vocabularies; built from label triples,
  a pandas DataFrame or TSV files; ``message_passing_graph()`` adds inverse edges (``r + |R|``).
- ``read_triples_tsv`` / ``triples_from_dataframe`` (``tsv_loading.py``): errors name the file
  and line (or the DataFrame row) of a malformed triple.
- :class:`KnownAnswers`, :func:`filtered_ranks`, :func:`rank_metrics` (``filtered_ranking.py``):
  filtered MRR and Hits@k over both directions.
- :func:`sample_negatives` (``negative_sampling.py``): ``(B, 1+K, 3)`` batches, half tail- and
  half head-corrupted, optionally strict (no known fact among the negatives).
- :func:`train_kge`, :func:`kge_score_fn` (``shallow_embeddings.py``): PyG's DistMult & co.
  trained by a seeded loop and wrapped for filtered ranking.

Only torch is imported here; pandas and PyG are imported where they are used.
"""

from .filtered_ranking import (
    KnownAnswers,
    ScoreFn,
    evaluate_link_prediction,
    filtered_ranks,
    rank_metrics,
)
from .negative_sampling import sample_negatives, tail_corrupted_rows
from .shallow_embeddings import KGETrainConfig, kge_score_fn, train_kge
from .triples import SPLITS, KnowledgeGraph, add_inverse_edges
from .tsv_loading import read_triples_tsv, triples_from_dataframe

__all__ = [
    "SPLITS",
    "KGETrainConfig",
    "KnowledgeGraph",
    "KnownAnswers",
    "ScoreFn",
    "add_inverse_edges",
    "evaluate_link_prediction",
    "filtered_ranks",
    "kge_score_fn",
    "rank_metrics",
    "read_triples_tsv",
    "sample_negatives",
    "tail_corrupted_rows",
    "train_kge",
    "triples_from_dataframe",
]
