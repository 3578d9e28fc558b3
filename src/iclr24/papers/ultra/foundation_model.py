"""The ULTRA model: relation graph -> relation NBFNet -> entity NBFNet -> scores (Sec. 4).

``Ultra(dim, num_layers)`` owns no entity or relation embedding: its ~O(L d^2) parameters are
the per-layer 4 x d interaction tables and linear maps of the two networks, so one set of
weights runs on any KG. A graph is prepared once with :func:`prepare_graph` (inverse edges,
relation graph G_R); the model then scores

- ``forward(data, batch)`` for training batches (B, 1+K, 3) of (head, relation, tail) ids whose
  rows share an anchor and a relation (tail- or head-corrupted, see the kit's
  ``sample_negatives``); head-corrupted rows become tail queries of the inverse relation
  ``(t, r + |R|, ?)``. In training mode the positive edge and its inverse are removed from the
  message-passing graph ("remove easy edges") so the model cannot learn a 1-hop lookup.
- ``score_all_tails(data, anchors, relations)`` for evaluation: (B, |V|) logits.

As in the official code, the relation graph is conditioned on the *direct* relation ``r`` of a
query (all-ones boundary on node r) also for head queries, which read ``R_q[r + |R|]``.

Checkpoints (:func:`save_checkpoint`, :func:`load_checkpoint`) are a local ``torch.save`` file
holding the architecture (dim, layers) and the state dict; loading uses ``weights_only=True``.
:meth:`Ultra.from_official` loads the released weights of the official repository
(DeepGraphLearning/ULTRA, ``ckpts/ultra_3g.pth`` / ``ultra_4g.pth``: a ``{"model": state_dict,
"optimizer": ...}`` file) from a path the user passes (nothing is downloaded): every official
key and shape matches ``Ultra(64, 6)``.

Ids are validated at the boundary: float ids raise ``TypeError`` (a cast to long would
truncate 1.7 to 1 silently), out-of-range ids ``ValueError``.
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch_geometric.data import Data

from iclr24.kits.knowledge_graphs import KnowledgeGraph, add_inverse_edges

from .conditional_message_passing import EntityNBFNet, RelationNBFNet
from .relation_graph import build_relation_graph

__all__ = ["Ultra", "as_id_tensor", "load_checkpoint", "prepare_graph", "remove_query_edges",
           "save_checkpoint"]

_CHECKPOINT_FORMAT = "iclr24.ultra/1"


def as_id_tensor(ids: Any, name: str, device: torch.device | None = None) -> torch.Tensor:
    """``ids`` (a tensor, array or sequence of ints) as a LongTensor; float, complex or bool
    ids raise ``TypeError`` naming ``name`` instead of being truncated."""
    t = torch.as_tensor(ids, device=device)
    if t.dtype == torch.bool or t.is_floating_point() or t.is_complex():
        raise TypeError(f"{name} must hold integer ids; got dtype {t.dtype}")
    return t.long()


def prepare_graph(graph: KnowledgeGraph | torch.Tensor, num_entities: int | None = None,
                  num_relations: int | None = None) -> Data:
    """The message-passing graph of a KG's training split (or of given (N, 3) id triples).

    Returns a PyG ``Data`` with ``edge_index`` (2, 2N) and ``edge_type`` (2N,) including inverse
    edges, ``num_nodes`` = |V|, ``num_relations`` = 2|R|, ``relation_graph`` (a ``Data`` with the
    G_R edges and their 4 interaction types) and ``target_triples`` (N, 3) (the original facts).
    """
    if isinstance(graph, KnowledgeGraph):
        triples, num_entities, num_relations = graph.train, graph.num_entities, graph.num_relations
    else:
        triples = torch.as_tensor(graph, dtype=torch.long)
        if num_entities is None or num_relations is None:
            raise ValueError("num_entities and num_relations are required with raw triples")
        if triples.dim() != 2 or triples.shape[1] != 3:
            raise ValueError(f"triples must have shape (N, 3); got {tuple(triples.shape)}")
    if len(triples) == 0:
        raise ValueError("the graph has no triples: ULTRA needs edges to pass messages over")
    edge_index, edge_type = add_inverse_edges(triples, num_relations)  # (t, r + |R|, h)
    rel_ei, rel_et = build_relation_graph(edge_index, edge_type, 2 * num_relations, num_entities)
    rel_graph = Data(edge_index=rel_ei, edge_type=rel_et, num_nodes=2 * num_relations)
    return Data(edge_index=edge_index, edge_type=edge_type, num_nodes=num_entities,
                num_relations=2 * num_relations, relation_graph=rel_graph,
                target_triples=triples)


def remove_query_edges(data: Data, triples: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(edge_index, edge_type)`` of ``data`` without the facts ``triples`` (N, 3) and their
    inverses: the official "remove easy edges" edge dropout of training."""
    num_rel = data.num_relations
    num_direct = num_rel // 2
    n = data.num_nodes
    h, r, t = triples.reshape(-1, 3).t()
    drop_src = torch.cat([h, t])
    drop_dst = torch.cat([t, h])
    drop_rel = torch.cat([r, r + num_direct])
    key = lambda s, k, d: (s * num_rel + k) * n + d
    edge_keys = key(data.edge_index[0], data.edge_type, data.edge_index[1])
    keep = ~torch.isin(edge_keys, key(drop_src, drop_rel, drop_dst))
    return data.edge_index[:, keep], data.edge_type[keep]


class Ultra(nn.Module):
    """ULTRA: a relation-vocabulary-free link predictor.

    dim: width d of both networks (paper 64). num_layers: layers of the relation NBFNet (paper
    6). num_entity_layers: layers of the entity NBFNet (defaults to ``num_layers``).
    """

    def __init__(self, dim: int = 64, num_layers: int = 6,
                 num_entity_layers: int | None = None) -> None:
        super().__init__()
        if not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim must be a positive int; got {dim!r}")
        if not isinstance(num_layers, int) or num_layers < 1:
            raise ValueError(f"num_layers must be a positive int; got {num_layers!r}")
        num_entity_layers = num_layers if num_entity_layers is None else num_entity_layers
        if not isinstance(num_entity_layers, int) or num_entity_layers < 1:
            raise ValueError(f"num_entity_layers must be a positive int; got {num_entity_layers!r}")
        self.dim, self.num_layers, self.num_entity_layers = dim, num_layers, num_entity_layers
        self.relation_model = RelationNBFNet(dim, num_layers)
        self.entity_model = EntityNBFNet(dim, num_entity_layers)

    @classmethod
    def from_official(cls, path: str | PathLike, *, dim: int = 64, num_layers: int = 6,
                      map_location: str | torch.device = "cpu") -> Ultra:
        """The released weights of the official code (``ckpts/ultra_3g.pth``, ``ultra_4g.pth``,
        ``ultra_50g.pth``) in an :class:`Ultra` of the official size (d = 64, 6 + 6 layers).

        path: a local file in the official layout, ``{"model": state_dict, ...}`` (the
        optimizer state beside it is ignored) or the bare state dict. Missing or unexpected
        keys and wrong shapes raise ``ValueError`` naming them; nothing is downloaded.
        """
        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(f"official checkpoint not found: {p}")
        try:
            blob = torch.load(p, map_location=map_location, weights_only=True)
        except Exception as exc:  # pickle/zip errors: say which file is unreadable
            raise ValueError(f"{p} is not a readable torch checkpoint: {exc}") from exc
        if isinstance(blob, dict) and isinstance(blob.get("model"), dict):
            state = blob["model"]  # the official run.py saves {"model": ..., "optimizer": ...}
        elif isinstance(blob, dict) and all(isinstance(v, torch.Tensor) for v in blob.values()):
            state = blob
        else:
            raise ValueError(f"{p} holds neither the official {{'model': state_dict}} layout "
                             "nor a state dict")
        model = cls(dim, num_layers)
        expected = model.state_dict()
        missing = sorted(set(expected) - set(state))
        unexpected = sorted(set(state) - set(expected))
        wrong = [f"{k}: file {tuple(state[k].shape)}, model {tuple(expected[k].shape)}"
                 for k in expected if k in state and state[k].shape != expected[k].shape]
        problems = []
        if missing:
            problems.append(f"missing keys {missing}")
        if unexpected:
            problems.append(f"unexpected keys {unexpected}")
        if wrong:
            problems.append(f"wrong shapes {wrong}")
        if problems:
            raise ValueError(f"{p} does not match the official ULTRA(dim={dim}, "
                             f"num_layers={num_layers}) layout: " + "; ".join(problems))
        model.load_state_dict(state)
        return model.eval()

    def config(self) -> dict[str, int]:
        return {"dim": self.dim, "num_layers": self.num_layers,
                "num_entity_layers": self.num_entity_layers}

    def relation_representations(self, data: Data, query_relations: torch.Tensor) -> torch.Tensor:
        """R_q for direct query relations (B,): (B, 2|R|, d)."""
        rg = data.relation_graph
        return self.relation_model(rg.edge_index, rg.edge_type, data.num_relations,
                                   query_relations)

    def _check_ids(self, data: Data, anchors: torch.Tensor, relations: torch.Tensor) -> None:
        if len(anchors) and (int(anchors.min()) < 0 or int(anchors.max()) >= data.num_nodes):
            raise ValueError(f"entity ids must lie in [0, {data.num_nodes})")
        if len(relations) and (int(relations.min()) < 0
                               or int(relations.max()) >= data.num_relations):
            raise ValueError(f"relation ids must lie in [0, {data.num_relations}) "
                             "(inverse relations included)")

    def forward(self, data: Data, batch: torch.Tensor) -> torch.Tensor:
        """batch: (B, 1+K, 3) (head, relation, tail) ids, each row sharing its anchor and
        relation (tail- or head-corrupted). Returns logits (B, 1+K)."""
        batch = as_id_tensor(batch, "batch")
        if batch.dim() != 3 or batch.shape[-1] != 3:
            raise ValueError(f"batch must have shape (B, 1+K, 3); got {tuple(batch.shape)}")
        h, r, t = batch.unbind(-1)
        self._check_ids(data, torch.cat([h.flatten(), t.flatten()]), r.flatten())
        num_direct = data.num_relations // 2
        if bool((r >= num_direct).any()):
            raise ValueError(f"batch relations must be direct relations in [0, {num_direct})")
        edge_index, edge_type = data.edge_index, data.edge_type
        if self.training:  # remove easy edges: the positive fact and its inverse
            edge_index, edge_type = remove_query_edges(data, batch[:, 0, :])
        is_tail = (h == h[:, :1]).all(dim=1, keepdim=True)  # tail-corrupted rows
        if not bool((r == r[:, :1]).all()) or not bool(
                (is_tail.squeeze(1) | (t == t[:, :1]).all(dim=1)).all()):
            raise ValueError("each batch row must share its relation and its head (tail "
                             "corruption) or its tail (head corruption)")
        anchor = torch.where(is_tail, h, t)[:, 0]  # (?, r, t) -> (t, r + |R|, ?)
        cand = torch.where(is_tail, t, h)
        rel = torch.where(is_tail, r, r + num_direct)[:, 0]
        reprs = self.relation_representations(data, r[:, 0])  # conditioned on direct r
        feats = self.entity_model.node_features(edge_index, edge_type, data.num_nodes, reprs,
                                                anchor, rel)
        picked = feats.gather(1, cand.unsqueeze(-1).expand(-1, -1, feats.shape[-1]))
        return self.entity_model.score(picked)

    def score_all_tails(self, data: Data, anchors: torch.Tensor,
                        relations: torch.Tensor) -> torch.Tensor:
        """Logits of every entity as the answer of (anchor, relation, ?): (B, |V|).

        anchors, relations: (B,); relations in [0, 2|R|), ids >= |R| are inverse (head) queries.
        """
        anchors = as_id_tensor(anchors, "anchors", data.edge_index.device)
        relations = as_id_tensor(relations, "relations", data.edge_index.device)
        if anchors.shape != relations.shape or anchors.dim() != 1:
            raise ValueError("anchors and relations must be 1-D tensors of equal length")
        self._check_ids(data, anchors, relations)
        num_direct = data.num_relations // 2
        reprs = self.relation_representations(data, relations % num_direct)
        feats = self.entity_model.node_features(data.edge_index, data.edge_type, data.num_nodes,
                                                reprs, anchors, relations)
        return self.entity_model.score(feats)


def save_checkpoint(model: Ultra, path: str | PathLike) -> Path:
    """Write the architecture and weights of ``model`` to a local file; returns the path."""
    if not isinstance(model, Ultra):
        raise TypeError(f"model must be an Ultra, got {type(model).__name__}")
    p = Path(path)
    if p.parent and not p.parent.exists():
        raise FileNotFoundError(f"directory does not exist: {p.parent}")
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    torch.save({"format": _CHECKPOINT_FORMAT, "config": model.config(), "state_dict": state}, p)
    return p


def load_checkpoint(path: str | PathLike, map_location: str | torch.device = "cpu") -> Ultra:
    """Rebuild an :class:`Ultra` from :func:`save_checkpoint`'s file (``weights_only`` load)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"checkpoint not found: {p}")
    try:
        blob = torch.load(p, map_location=map_location, weights_only=True)
    except Exception as exc:  # pickle/zip errors: say which file is unreadable
        raise ValueError(f"{p} is not a readable ULTRA checkpoint: {exc}") from exc
    if not isinstance(blob, dict) or blob.get("format") != _CHECKPOINT_FORMAT:
        raise ValueError(f"{p} is not an ULTRA checkpoint written by save_checkpoint")
    model = Ultra(**blob["config"])
    model.load_state_dict(blob["state_dict"])
    return model.eval()
