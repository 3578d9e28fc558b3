"""The three EX-Graph benchmark protocols (paper Sec. 4; official scripts in Persdre/EX-Graph).

Each takes a ``HeteroData`` with the schema of :func:`make_ex_graph_synthetic` (a user's own
Ethereum/X data in that schema works the same way) and returns a :class:`BenchmarkResult`
(per-run metrics; ``summary()`` gives mean ± std over runs, as the paper reports).

- :func:`ethereum_link_prediction` (Task 1): directed transfer pairs are split into
  train/validation/test; only the training pairs carry messages, and the Ethereum statistics
  (degrees, values, spans) are recomputed on the training transfers. Negatives are uniform
  ordered pairs that are no transfer in either split (direction respected: (v, u) may be a
  negative when only (u, v) exists), one per positive. Encoder → :class:`EdgeDecoder` ("linear"),
  BCE, Adam lr 1e-3, full batch, early stopping on validation loss. Input: 8-d ``x_eth`` without
  X, 25-d combined features with X.
- :func:`wash_trading_detection` (Task 2): addresses are split (stratified) into train/val/test
  node sets, each with its induced transfer graph plus self loops. ``protocol="official"``: each
  epoch trains on the induced subgraph of all positives and as many random negatives, validates
  and tests likewise on balanced induced subgraphs (the released protocol; precision is then
  measured at 50% prevalence and most edges vanish); the checkpoint is the epoch with the best
  validation loss. ``protocol="full_graph"``: whole split graphs, class-weighted cross entropy,
  metrics at the true prevalence (AP added).
- :func:`matching_link_prediction` (Task 3): one graph of addresses and accounts (transfers,
  follows, training matches in both directions); validation and test matches never carry
  messages. Addresses enter with their 8 features zero-padded to 16, accounts with their 16 X
  features. Decoder "mlp" on [z_x ‖ z_e]; negatives are (address, account) pairs that are no
  true match.

Differences from the official scripts, on purpose: the decoder is trained (the scripts build it
outside the model and give the optimiser only the GNN's parameters, so it stays at its random
initialisation; ``train_decoder=False`` reproduces that); held-out edges and matches are removed
from message passing and from the feature statistics (the scripts use the full graph); AUC of
the DeepWalk baselines is computed from scores (the scripts pass hard labels to
``roc_auc_score``). Runs differ in model initialisation (and, for Task 2, in the balanced
samples); the split and negatives are fixed per ``seed``, as the released pickles fix them.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from iclr24.kits.graphs import link_metrics, mean_std, sample_negative_edges, stratified_split

from .deepwalk import deepwalk_embeddings
from .models import ENCODERS, EdgeDecoder, GraphEncoder, RGCNEncoder, message_graph
from .synthetic import combined_features, ethereum_features

__all__ = [
    "BenchmarkResult",
    "LinkSplit",
    "MatchingGraph",
    "build_matching_graph",
    "ethereum_link_prediction",
    "fit_link_predictor",
    "link_optimizer",
    "link_prediction_features",
    "matching_link_prediction",
    "matching_oracle_auc",
    "split_transfers",
    "wash_trading_detection",
]

LINK_MODELS = ENCODERS + ("deepwalk",)
MATCHING_MODELS = ENCODERS + ("rgcn", "deepwalk")


@dataclass(frozen=True)
class BenchmarkResult:
    """Per-run test metrics of one (task, model, input) setting."""

    task: str
    model: str
    use_x: bool
    runs: list[dict[str, float]] = field(default_factory=list)

    def summary(self) -> dict[str, tuple[float, float]]:
        """metric -> (mean, std over runs)."""
        return {k: mean_std([r[k] for r in self.runs]) for k in self.runs[0]}


@dataclass(frozen=True)
class LinkSplit:
    """A split of the directed transfer pairs (all tensors (2, k) of address ids).

    ``train_mask`` (E,) marks the transfers whose pair is a training pair: the only transfers
    message passing and feature statistics may use.
    """

    message_edges: torch.Tensor
    train_mask: torch.Tensor
    train_pos: torch.Tensor
    val_pos: torch.Tensor
    test_pos: torch.Tensor
    train_neg: torch.Tensor
    val_neg: torch.Tensor
    test_neg: torch.Tensor


# ----------------------------------------------------------------------------- validation

def _check_hetero(data) -> None:
    from torch_geometric.data import HeteroData

    if not isinstance(data, HeteroData):
        raise TypeError(f"data must be a torch_geometric HeteroData; got {type(data).__name__}")
    need = [("eth", "transfers", "eth"), ("eth", "same_owner", "x")]
    for et in need:
        if et not in data.edge_types:
            raise ValueError(f"data lacks the edge type {et}")
    if "x_eth" not in data["eth"] or "x" not in data["x"]:
        raise ValueError("data needs data['eth'].x_eth and data['x'].x")


def _check_runs(runs: int) -> int:
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ValueError(f"runs must be a positive int; got {runs!r}")
    return runs


def _check_fractions(fractions: Sequence[float], name: str) -> tuple[float, float, float]:
    fr = tuple(float(f) for f in fractions)
    if len(fr) != 3 or min(fr) <= 0 or abs(sum(fr) - 1) > 1e-9:
        raise ValueError(f"{name} must be three positive numbers summing to 1; got {fractions!r}")
    return fr  # type: ignore[return-value]


def _check_epochs(epochs: int, patience: int | None) -> None:
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be a positive int; got {epochs!r}")
    if patience is not None and (isinstance(patience, bool) or not isinstance(patience, int)
                                 or patience < 1):
        raise ValueError(f"patience must be None or a positive int; got {patience!r}")


@contextlib.contextmanager
def _seeded(seed: int) -> Iterator[None]:
    """Model initialisation and dropout from ``seed``, leaving torch's global RNG untouched."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        yield


# ----------------------------------------------------------------------------- shared pieces

def link_optimizer(encoder: torch.nn.Module, decoder: torch.nn.Module, *,
                   train_decoder: bool = True, lr: float = 1e-3,
                   weight_decay: float = 0.0) -> torch.optim.Optimizer:
    """Adam over the encoder's parameters, plus the decoder's when ``train_decoder`` (the fix);
    ``train_decoder=False`` is the official scripts' behaviour (decoder left untrained)."""
    params = list(encoder.parameters()) + (list(decoder.parameters()) if train_decoder else [])
    if weight_decay:
        return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    return torch.optim.Adam(params, lr=lr)


def fit_link_predictor(encoder: torch.nn.Module, decoder: EdgeDecoder,
                       embed: Callable[[], torch.Tensor],
                       pairs: dict[str, tuple[torch.Tensor, torch.Tensor]], *, epochs: int = 200,
                       patience: int | None = 20, lr: float = 1e-3, weight_decay: float = 0.0,
                       train_decoder: bool = True) -> dict[str, float]:
    """Full-batch training of ``encoder`` (through ``embed() -> (N, d)``) and ``decoder`` on
    (pos, neg) pairs of node ids, BCE with logits; early stopping on validation BCE (patience
    None: all epochs); restores the best-validation state and returns its test link metrics.
    pairs["train" / "val" / "test"] = (pos (2, k), neg (2, k))."""
    opt = link_optimizer(encoder, decoder, train_decoder=train_decoder, lr=lr,
                         weight_decay=weight_decay)

    def logits(z: torch.Tensor, part: str) -> tuple[torch.Tensor, torch.Tensor]:
        pos, neg = pairs[part]
        return decoder(z[pos[0]], z[pos[1]]), decoder(z[neg[0]], z[neg[1]])

    def bce(lp: torch.Tensor, ln: torch.Tensor) -> torch.Tensor:
        out = torch.cat([lp, ln])
        target = torch.cat([torch.ones_like(lp), torch.zeros_like(ln)])
        return F.binary_cross_entropy_with_logits(out, target)

    best, best_state, stale = float("inf"), None, 0
    for _ in range(epochs):
        encoder.train()
        decoder.train()
        opt.zero_grad()
        loss = bce(*logits(embed(), "train"))
        loss.backward()
        opt.step()
        encoder.eval()
        decoder.eval()
        with torch.no_grad():
            val = float(bce(*logits(embed(), "val")))
        if val < best:
            best, stale = val, 0
            best_state = (copy.deepcopy(encoder.state_dict()), copy.deepcopy(decoder.state_dict()))
        else:
            stale += 1
            if patience is not None and stale >= patience:
                break
    encoder.load_state_dict(best_state[0])
    decoder.load_state_dict(best_state[1])
    encoder.eval()
    decoder.eval()
    with torch.no_grad():
        lp, ln = logits(embed(), "test")
    return link_metrics(lp, ln)


def _logreg_pairs(features: torch.Tensor, pairs: dict[str, tuple[torch.Tensor, torch.Tensor]],
                  seed: int) -> dict[str, float]:
    """The DeepWalk baselines' edge classifier: logistic regression on [f_u ‖ f_v]."""
    from sklearn.linear_model import LogisticRegression

    def design(part: str) -> tuple[np.ndarray, np.ndarray]:
        pos, neg = pairs[part]
        e = torch.cat([pos, neg], dim=1)
        x = torch.cat([features[e[0]], features[e[1]]], dim=1).numpy()
        return x, np.r_[np.ones(pos.shape[1]), np.zeros(neg.shape[1])]

    x, y = design("train")
    clf = LogisticRegression(max_iter=1000, random_state=seed).fit(x, y)
    xt, yt = design("test")
    score = torch.from_numpy(clf.decision_function(xt))
    return link_metrics(score[yt == 1], score[yt == 0])


# ----------------------------------------------------------------------------- task 1

def _unique_pairs(edge_index: torch.Tensor, n: int) -> tuple[np.ndarray, np.ndarray]:
    ei = edge_index.numpy()
    codes = ei[0].astype(np.int64) * n + ei[1]
    uniq, inverse = np.unique(codes, return_inverse=True)
    return uniq, inverse


def split_transfers(data, *, fractions: Sequence[float] = (0.85, 0.05, 0.10), seed: int = 0,
                    max_train_pos: int | None = None) -> LinkSplit:
    """Split the distinct directed transfer pairs into train/val/test (all transfers of a pair
    go to the same part, so a held-out pair never appears in the training graph); one uniform
    negative per positive, excluding every transfer pair. ``max_train_pos`` caps the
    supervised training positives (all training pairs still carry messages)."""
    _check_hetero(data)
    fr = _check_fractions(fractions, "fractions")
    store = data["eth", "transfers", "eth"]
    n = data["eth"].num_nodes
    ei = store.edge_index
    loops = ei[0] == ei[1]
    if bool(loops.any()):
        raise ValueError("transfers contain self loops; remove them before splitting")
    uniq, inverse = _unique_pairs(ei, n)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(uniq))
    n_val, n_test = round(fr[1] * len(uniq)), round(fr[2] * len(uniq))
    part = np.zeros(len(uniq), dtype=np.int64)
    part[perm[:n_val]] = 1
    part[perm[n_val:n_val + n_test]] = 2
    pairs = torch.from_numpy(np.stack([uniq // n, uniq % n]))
    train_all = pairs[:, torch.from_numpy(part == 0)]
    train_pos = train_all
    if max_train_pos is not None and train_all.shape[1] > max_train_pos:
        pick = torch.from_numpy(np.sort(rng.choice(train_all.shape[1], max_train_pos,
                                                   replace=False)))
        train_pos = train_all[:, pick]
    val_pos = pairs[:, torch.from_numpy(part == 1)]
    test_pos = pairs[:, torch.from_numpy(part == 2)]
    k = [train_pos.shape[1], val_pos.shape[1], test_pos.shape[1]]
    neg = sample_negative_edges(pairs, n, sum(k), seed=seed, directed=True)
    train_neg, val_neg, test_neg = torch.split(neg, k, dim=1)
    return LinkSplit(message_edges=train_all, train_mask=torch.from_numpy(part[inverse] == 0),
                     train_pos=train_pos, val_pos=val_pos, test_pos=test_pos,
                     train_neg=train_neg, val_neg=val_neg, test_neg=test_neg)


def link_prediction_features(data, train_mask: torch.Tensor, *, use_x: bool) -> torch.Tensor:
    """Model inputs computed from the training transfers only: (N, 8) ``x_eth`` statistics, or
    with ``use_x`` the (N, 25) [x_eth ‖ matched X features ‖ has-X] combination."""
    store = data["eth", "transfers", "eth"]
    ei, attr = store.edge_index[:, train_mask], store.edge_attr[train_mask]
    x_eth = ethereum_features(ei, attr[:, 0], attr[:, 1], data["eth"].num_nodes)
    if not use_x:
        return x_eth
    return combined_features(x_eth, data["x"].x, data["eth", "same_owner", "x"].edge_index)


def ethereum_link_prediction(data, model: str = "gcn", use_x: bool = True, runs: int = 5, *,
                             epochs: int = 200, patience: int | None = 20, lr: float = 1e-3,
                             weight_decay: float = 0.0, hidden: int = 128,
                             train_decoder: bool = True, dagnn_k: int = 10, seed: int = 0,
                             fractions: Sequence[float] = (0.85, 0.05, 0.10),
                             max_train_pos: int | None = None, decoder: str = "linear",
                             deepwalk_options: dict | None = None) -> BenchmarkResult:
    """Task 1 (module docstring). model in ``LINK_MODELS``; returns test AP/AUC/F1/precision/
    recall per run (threshold: logit 0, i.e. probability 0.5).

    ``decoder="linear"`` is the official Linear(256, 1) on [z_u ‖ z_v]: its score is a sum
    f(z_u) + g(z_v) of per-node terms, so it can rank pairs by how active their ends are but
    cannot tell whether u and v belong together (e.g. share a community); ``decoder="mlp"``
    (256 → 128 → 1, the official matching decoder) can."""
    _check_hetero(data)
    if model not in LINK_MODELS:
        raise ValueError(f"model must be one of {LINK_MODELS}; got {model!r}")
    if decoder not in ("linear", "mlp"):
        raise ValueError(f"decoder must be 'linear' or 'mlp'; got {decoder!r}")
    _check_runs(runs)
    _check_epochs(epochs, patience)
    split = split_transfers(data, fractions=fractions, seed=seed, max_train_pos=max_train_pos)
    x = link_prediction_features(data, split.train_mask, use_x=bool(use_x))
    pairs = {"train": (split.train_pos, split.train_neg), "val": (split.val_pos, split.val_neg),
             "test": (split.test_pos, split.test_neg)}
    n = data["eth"].num_nodes
    results = []
    for run in range(runs):
        run_seed = seed * 1000 + run
        if model == "deepwalk":
            emb = deepwalk_embeddings(split.message_edges, n, seed=run_seed,
                                      **(deepwalk_options or {}))
            results.append(_logreg_pairs(torch.cat([emb, x], 1), pairs, run_seed))
            continue
        with _seeded(run_seed):
            enc = GraphEncoder(model, x.shape[1], hidden, hidden, dagnn_k=dagnn_k, cached=True)
            dec = EdgeDecoder(decoder, hidden)
            graph = message_graph(model, split.message_edges, n)
            results.append(fit_link_predictor(
                enc, dec, lambda enc=enc, graph=graph: enc(x, graph), pairs, epochs=epochs,
                patience=patience, lr=lr, weight_decay=weight_decay,
                train_decoder=train_decoder))
    return BenchmarkResult("ethereum_link_prediction", model, bool(use_x), results)


# ----------------------------------------------------------------------------- task 2

def _split_graph(edge_index: torch.Tensor, nodes: torch.Tensor, n: int) -> torch.Tensor:
    """Induced subgraph on ``nodes`` (relabelled 0..len-1), distinct pairs, self loops added."""
    from torch_geometric.utils import add_remaining_self_loops, coalesce, subgraph

    ei, _ = subgraph(nodes, edge_index, relabel_nodes=True, num_nodes=n)
    ei = coalesce(ei, num_nodes=len(nodes))
    return add_remaining_self_loops(ei, num_nodes=len(nodes))[0]


def _balanced(labels: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    pos = torch.nonzero(labels == 1).view(-1)
    neg = torch.nonzero(labels == 0).view(-1)
    m = min(len(pos), len(neg))
    pick = torch.cat([pos[torch.randperm(len(pos), generator=gen)[:m]],
                      neg[torch.randperm(len(neg), generator=gen)[:m]]])
    return pick[torch.randperm(len(pick), generator=gen)]


def _node_metrics(prob: np.ndarray, y: np.ndarray) -> dict[str, float]:
    from sklearn.metrics import (
        accuracy_score,
        average_precision_score,
        f1_score,
        precision_score,
        recall_score,
        roc_auc_score,
    )

    pred = (prob > 0.5).astype(int)
    two = len(np.unique(y)) == 2
    return {"auc": float(roc_auc_score(y, prob)) if two else float("nan"),
            "ap": float(average_precision_score(y, prob)) if two else float("nan"),
            "precision": float(precision_score(y, pred, zero_division=0)),
            "recall": float(recall_score(y, pred, zero_division=0)),
            "f1": float(f1_score(y, pred, zero_division=0)),
            "accuracy": float(accuracy_score(y, pred))}


def wash_trading_detection(data, model: str = "gcn", use_x: bool = True,
                           protocol: str = "official", runs: int = 10, *, epochs: int = 200,
                           lr: float = 1e-3, hidden: int = 128, dagnn_k: int = 10, seed: int = 0,
                           fractions: Sequence[float] = (0.5, 0.2, 0.3),
                           deepwalk_options: dict | None = None) -> BenchmarkResult:
    """Task 2 (module docstring). Inputs: 8-d ``x_eth`` or 25-d ``x_combined``; labels
    ``data["eth"].y_wash``. Returns test AUC, AP, precision, recall, F1, accuracy per run
    (positive class: wash trading, threshold 0.5 on the softmax probability)."""
    _check_hetero(data)
    if model not in LINK_MODELS:
        raise ValueError(f"model must be one of {LINK_MODELS}; got {model!r}")
    if protocol not in ("official", "full_graph"):
        raise ValueError(f"protocol must be 'official' or 'full_graph'; got {protocol!r}")
    _check_runs(runs)
    _check_epochs(epochs, None)
    fr = _check_fractions(fractions, "fractions")
    y = data["eth"].y_wash.long()
    if int(y.sum()) < 3:
        raise ValueError("data needs at least three wash-trading addresses to split")
    x = (data["eth"].x_combined if use_x else data["eth"].x_eth).float()
    n = data["eth"].num_nodes
    store = data["eth", "transfers", "eth"]
    parts = [torch.from_numpy(p) for p in stratified_split(y.numpy(), fr, seed=seed)]
    graphs = [_split_graph(store.edge_index, p, n) for p in parts]
    results = []
    for run in range(runs):
        run_seed = seed * 1000 + run
        gen = torch.Generator().manual_seed(run_seed)
        if model == "deepwalk":
            results.append(_wash_deepwalk(store.edge_index, x, y, parts, protocol, gen, n,
                                          run_seed, deepwalk_options or {}))
            continue
        with _seeded(run_seed):
            enc = GraphEncoder(model, x.shape[1], hidden, 2, dagnn_k=dagnn_k)
            results.append(_fit_wash(enc, x, y, parts, graphs, protocol, gen, epochs, lr))
    return BenchmarkResult(f"wash_trading_detection[{protocol}]", model, bool(use_x), results)


def _induced(ei: torch.Tensor, nodes: torch.Tensor, n: int) -> torch.Tensor:
    from torch_geometric.utils import subgraph

    return subgraph(nodes, ei, relabel_nodes=True, num_nodes=n)[0]


def _wash_inputs(enc: GraphEncoder, part, graph, x, y, protocol, gen, cache: dict):
    """(features, graph in the encoder's format, labels); whole split graphs converted once."""
    if protocol == "full_graph":
        key = id(graph)
        if key not in cache:
            cache[key] = message_graph(enc.name, graph, len(part))
        return x[part], cache[key], y[part]
    xs, ys = x[part], y[part]
    pick = _balanced(ys, gen)  # the official balanced induced subgraph
    return xs[pick], message_graph(enc.name, _induced(graph, pick, len(part)), len(pick)), ys[pick]


def _fit_wash(enc: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, parts, graphs,
              protocol: str, gen: torch.Generator, epochs: int, lr: float) -> dict[str, float]:
    opt = torch.optim.Adam(enc.parameters(), lr=lr)
    prevalence = float(y[parts[0]].float().mean())
    # class-weighted loss for the full graph (weights n / (2 n_c)); none on balanced subgraphs
    w = torch.tensor([0.5 / (1 - prevalence), 0.5 / prevalence]) if protocol == "full_graph" \
        else None

    def loss_of(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        target = F.one_hot(labels, 2).float()
        return F.binary_cross_entropy_with_logits(logits, target, pos_weight=None,
                                                  weight=None if w is None else w[labels, None])

    best, best_state, cache = float("inf"), None, {}
    for _ in range(epochs):
        enc.train()
        opt.zero_grad()
        xb, gb, yb = _wash_inputs(enc, parts[0], graphs[0], x, y, protocol, gen, cache)
        loss_of(enc(xb, gb), yb).backward()
        opt.step()
        enc.eval()
        with torch.no_grad():
            xb, gb, yb = _wash_inputs(enc, parts[1], graphs[1], x, y, protocol, gen, cache)
            val = float(loss_of(enc(xb, gb), yb))
        if val < best:
            best, best_state = val, copy.deepcopy(enc.state_dict())
    enc.load_state_dict(best_state)
    enc.eval()
    with torch.no_grad():
        xb, gb, yb = _wash_inputs(enc, parts[2], graphs[2], x, y, protocol, gen, cache)
        prob = torch.softmax(enc(xb, gb), dim=1)[:, 1]
    return _node_metrics(prob.numpy(), yb.numpy())


def _wash_deepwalk(edge_index, x, y, parts, protocol, gen, n, seed, options) -> dict[str, float]:
    from sklearn.linear_model import LogisticRegression

    emb = deepwalk_embeddings(edge_index, n, seed=seed, **options)
    feats = torch.cat([emb, x], dim=1)
    train = parts[0] if protocol == "full_graph" else parts[0][_balanced(y[parts[0]], gen)]
    test = parts[2] if protocol == "full_graph" else parts[2][_balanced(y[parts[2]], gen)]
    clf = LogisticRegression(max_iter=1000, random_state=seed,
                             class_weight="balanced" if protocol == "full_graph" else None)
    clf.fit(feats[train].numpy(), y[train].numpy())
    return _node_metrics(clf.predict_proba(feats[test].numpy())[:, 1], y[test].numpy())


# ----------------------------------------------------------------------------- task 3

@dataclass(frozen=True)
class MatchingGraph:
    """The matching task's homogeneous graph: addresses are nodes 0..N_e-1, accounts
    N_e..N_e+N_x-1. ``edge_type``: 0 transfer, 1 follow, 2 address→account match, 3 the
    reverse. Pair tensors are (2, k) (address id, account id) in each node set's own ids."""

    x: torch.Tensor
    edge_index: torch.Tensor
    edge_type: torch.Tensor
    num_eth: int
    train_pos: torch.Tensor
    val_pos: torch.Tensor
    test_pos: torch.Tensor
    train_neg: torch.Tensor
    val_neg: torch.Tensor
    test_neg: torch.Tensor


def build_matching_graph(data, *, fractions: Sequence[float] = (0.7, 0.1, 0.2),
                         seed: int = 0) -> MatchingGraph:
    """Split the matches, build the message-passing graph from transfers, follows and the
    training matches only, and draw one non-match (address, account) pair per positive."""
    _check_hetero(data)
    fr = _check_fractions(fractions, "fractions")
    n_e, n_x = data["eth"].num_nodes, data["x"].num_nodes
    matches = data["eth", "same_owner", "x"].edge_index
    m = matches.shape[1]
    if m < 3:
        raise ValueError(f"the matching task needs at least three matches; got {m}")
    perm = torch.from_numpy(np.random.default_rng(seed).permutation(m))
    n_val = max(1, round(fr[1] * m))
    n_test = max(1, round(fr[2] * m))
    val_pos = matches[:, perm[:n_val]]
    test_pos = matches[:, perm[n_val:n_val + n_test]]
    train_pos = matches[:, perm[n_val + n_test:]]
    k = [train_pos.shape[1], val_pos.shape[1], test_pos.shape[1]]
    neg = sample_negative_edges(matches, (n_e, n_x), sum(k), seed=seed)
    train_neg, val_neg, test_neg = torch.split(neg, k, dim=1)
    uniq, _ = _unique_pairs(data["eth", "transfers", "eth"].edge_index, n_e)
    transfers = torch.from_numpy(np.stack([uniq // n_e, uniq % n_e]))
    follows = data["x", "follows", "x"].edge_index + n_e
    owner = torch.stack([train_pos[0], train_pos[1] + n_e])
    edge_index = torch.cat([transfers, follows, owner, owner.flip(0)], dim=1)
    edge_type = torch.cat([torch.full((transfers.shape[1],), 0), torch.full((follows.shape[1],), 1),
                           torch.full((owner.shape[1],), 2), torch.full((owner.shape[1],), 3)])
    x_eth = data["eth"].x_eth.float()
    x_x = data["x"].x.float()
    pad = torch.zeros(n_e, max(0, x_x.shape[1] - x_eth.shape[1]))
    x = torch.cat([torch.cat([x_eth, pad], dim=1), x_x], dim=0)
    return MatchingGraph(x=x, edge_index=edge_index, edge_type=edge_type.long(), num_eth=n_e,
                         train_pos=train_pos, val_pos=val_pos, test_pos=test_pos,
                         train_neg=train_neg, val_neg=val_neg, test_neg=test_neg)


def matching_link_prediction(data, model: str = "gcn", runs: int = 5, *, epochs: int = 200,
                             patience: int | None = 20, lr: float = 1e-3, hidden: int = 128,
                             train_decoder: bool = True, dagnn_k: int = 10, seed: int = 0,
                             fractions: Sequence[float] = (0.7, 0.1, 0.2),
                             deepwalk_options: dict | None = None) -> BenchmarkResult:
    """Task 3 (module docstring). model in ``MATCHING_MODELS`` (``rgcn`` uses the edge types).
    Returns test AP/AUC/F1/precision/recall of true vs random (address, account) pairs."""
    if model not in MATCHING_MODELS:
        raise ValueError(f"model must be one of {MATCHING_MODELS}; got {model!r}")
    _check_runs(runs)
    _check_epochs(epochs, patience)
    g = build_matching_graph(data, fractions=fractions, seed=seed)
    n_e = g.num_eth
    # node ids in the joint graph, ordered (account, address) as the decoder reads [z_x ‖ z_e]
    pairs = {part: tuple(torch.stack([p[1] + n_e, p[0]]) for p in (pos, neg))
             for part, pos, neg in (("train", g.train_pos, g.train_neg),
                                    ("val", g.val_pos, g.val_neg),
                                    ("test", g.test_pos, g.test_neg))}
    message = g.edge_index
    results = []
    for run in range(runs):
        run_seed = seed * 1000 + run
        if model == "deepwalk":
            emb = deepwalk_embeddings(message, g.x.shape[0], seed=run_seed,
                                      **(deepwalk_options or {}))
            results.append(_logreg_pairs(torch.cat([emb, g.x], 1), pairs, run_seed))
            continue
        with _seeded(run_seed):
            if model == "rgcn":
                enc = RGCNEncoder(g.x.shape[1], 4, hidden, hidden)

                def embed(enc=enc):
                    return enc(g.x, message, g.edge_type)
            else:
                enc = GraphEncoder(model, g.x.shape[1], hidden, hidden, dagnn_k=dagnn_k,
                                   cached=True)
                graph = message_graph(model, message, g.x.shape[0])

                def embed(enc=enc, graph=graph):
                    return enc(g.x, graph)
            dec = EdgeDecoder("mlp", hidden)
            results.append(fit_link_predictor(enc, dec, embed, pairs, epochs=epochs,
                                              patience=patience, lr=lr, weight_decay=0.0,
                                              train_decoder=train_decoder))
    return BenchmarkResult("matching_link_prediction", model, True, results)


def matching_oracle_auc(data, *, fractions: Sequence[float] = (0.7, 0.1, 0.2),
                        seed: int = 0) -> float:
    """Test AUC of the latent-community oracle on the matching task: a (address, account) pair
    scores 1 when the two share a generator community, else 0. Same split and negatives as
    :func:`matching_link_prediction` with this ``seed``. Synthetic data only (it reads
    ``data["eth"].community`` and ``data["x"].community``): the positive control of the
    matching claim, the best any model can draw from the ``coupling`` signal alone (AUC 0.5 +
    coupling (1 - 1/k) / 2 for k equal communities, apart from sampling noise)."""
    _check_hetero(data)
    if "community" not in data["eth"] or "community" not in data["x"]:
        raise ValueError("data needs data['eth'].community and data['x'].community (the "
                         "synthetic generator's latent communities)")
    g = build_matching_graph(data, fractions=fractions, seed=seed)
    c_e, c_x = data["eth"].community, data["x"].community

    def agree(pairs: torch.Tensor) -> torch.Tensor:
        return (c_e[pairs[0]] == c_x[pairs[1]]).float()

    return link_metrics(agree(g.test_pos), agree(g.test_neg))["auc"]
