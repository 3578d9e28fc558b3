"""A synthetic stand-in for EX-Graph with the released schema (paper Sec. 3, official README).

The real data (an Ethereum transaction graph of 2.6M addresses / 29.6M transfers, an X follow
graph of 1.1M accounts / 3.8M follows, 30,667 OpenSea-verified address-account matches and Dune
wash-trading transfers) sits on Google Drive and is out of reach here, and so are the
leaderboard numbers measured on it. :func:`make_ex_graph_synthetic` draws a graph with the same
schema and the paper's ratios (mean out-degree 15 on Ethereum, 3 on X, 1.5% of addresses matched)
from a generator whose dependence between the two sides is a knob:

- Ethereum: directed degree-corrected stochastic block model, 20 latent communities, 80% of
  transfers inside a community, expected in/out activity Pareto-distributed (density exponent
  2.1, capped at 100x the minimum); ``weight`` ~ LogNormal(-1, 2); ``block_number`` sorted
  uniform over a 1.3M-block window.
- X: directed follow graph with the same 20 communities and 80% intra-community follows; the
  followed account is drawn by a Pareto "popularity" (power-law followers).
- Matching: 1.5% of addresses, drawn without replacement with probability proportional to
  (total degree)^0.5 (matched addresses are the more active ones: an assumption, the paper's
  direction was not retrieved). With probability ``coupling`` an address is matched to an X
  account of its own community, otherwise to a uniformly random account; ``coupling = 0``
  makes the X side independent of the Ethereum communities.
- X features (16 = 8 + 8): an 8-d "semantic" vector (stand-in for BERT + PCA of profile text):
  one of ten Gaussian clusters, nine topical ones tied to the account's community and one
  "bot-like" cluster holding 10% of accounts; and an 8-d structural embedding of the follow
  graph (the leading non-trivial eigenvectors of the symmetrised normalised adjacency, a
  spectral stand-in for the paper's DeepWalk embedding).
- Wash trading: 0.5% of addresses (inflated from reality for statistical power) form pairs and
  triads that pass a token back and forth 10-50 times at low value (LogNormal(-4, 0.5)).
  Matched wash traders' semantic X vectors are moved ``wash_shift`` cluster-spreads towards the
  bot-like cluster (``wash_shift = 0``: no X-side signal). ``wash_match_rate`` (default None:
  wash traders are matched like everyone else) makes a share of wash traders OpenSea-verified,
  which the real data suggests (they trade NFTs there) but does not quantify.

Node features follow the released names: ``x_eth`` (8-d log1p-transformed, standardised
per-address statistics, see :func:`ethereum_features`; the paper's exact eight statistics were not
retrieved), ``x`` on X accounts (16-d), and ``x_combined`` = [x_eth ‖ X features of the matched
account (zeros if none) ‖ has-X bit] (25-d: the released 24-d combination plus the indicator the
zero fill needs).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

__all__ = [
    "ETH_FEATURES",
    "ExGraphConfig",
    "combined_features",
    "ethereum_features",
    "make_ex_graph_synthetic",
    "spectral_embedding",
]

ETH_FEATURES = ("in_degree", "out_degree", "in_value", "out_value", "unique_in", "unique_out",
                "active_span", "mean_value")


@dataclass(frozen=True)
class ExGraphConfig:
    """Generator settings (``small``: 20k addresses, 10k accounts; ``smoke``: a tenth).

    num_eth / num_x: node counts; eth_out_degree / x_out_degree: mean edges per node (paper
    ratios 15 and 3); num_communities, intra: latent communities and the intra share of edges;
    pareto_density_exponent: tail of the activity distribution; match_share: matched share of
    addresses; wash_share: wash-trading share of addresses; coupling, wash_shift,
    wash_match_rate: the X-Ethereum dependence knobs (module docstring).
    """

    num_eth: int = 20_000
    num_x: int = 10_000
    eth_out_degree: float = 15.0
    x_out_degree: float = 3.0
    num_communities: int = 20
    intra: float = 0.8
    pareto_density_exponent: float = 2.1
    activity_cap: float = 100.0
    match_share: float = 0.015
    wash_share: float = 0.005
    coupling: float = 0.5
    wash_shift: float = 1.0
    wash_match_rate: float | None = None
    block_window: int = 1_300_000
    first_block: int = 15_000_000
    semantic_clusters: int = 10
    bot_share: float = 0.1

    def __post_init__(self) -> None:
        for name in ("num_eth", "num_x", "num_communities", "semantic_clusters"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 2:
                raise ValueError(f"{name} must be an int >= 2; got {v!r}")
        for name in ("coupling", "intra", "match_share", "wash_share", "bot_share"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
                raise ValueError(f"{name} must be a number in [0, 1]; got {v!r}")
        if self.wash_match_rate is not None and not 0 <= self.wash_match_rate <= 1:
            raise ValueError(f"wash_match_rate must be None or in [0, 1]; got "
                             f"{self.wash_match_rate!r}")
        if isinstance(self.wash_shift, bool) or not isinstance(self.wash_shift, (int, float)) \
                or not np.isfinite(self.wash_shift) or self.wash_shift < 0:
            raise ValueError(f"wash_shift must be a finite number >= 0; got {self.wash_shift!r}")
        if self.eth_out_degree <= 0 or self.x_out_degree <= 0:
            raise ValueError("eth_out_degree and x_out_degree must be > 0")
        if self.pareto_density_exponent <= 1:
            raise ValueError(f"pareto_density_exponent must be > 1; got "
                             f"{self.pareto_density_exponent!r}")
        if round(self.match_share * self.num_eth) > self.num_x:
            raise ValueError("match_share * num_eth exceeds num_x: matches are one-to-one")


_SCALES = {"smoke": {"num_eth": 2_000, "num_x": 1_000},
           "small": {"num_eth": 20_000, "num_x": 10_000}}


def _activity(rng: np.random.Generator, n: int, cfg: ExGraphConfig) -> np.ndarray:
    # p(theta) ∝ theta^-alpha on [1, cap]: numpy's Lomax with shape alpha - 1, shifted by one
    theta = 1.0 + rng.pareto(cfg.pareto_density_exponent - 1.0, size=n)
    return np.minimum(theta, cfg.activity_cap)


def _block_model_edges(rng: np.random.Generator, community: np.ndarray, out_w: np.ndarray,
                       in_w: np.ndarray, num_edges: int, intra: float) -> np.ndarray:
    """Directed degree-corrected SBM: source ∝ out_w; with prob. ``intra`` the target ∝ in_w
    inside the source's community, else ∝ in_w over all nodes; self loops dropped."""
    n = len(community)
    src = rng.choice(n, size=num_edges, p=out_w / out_w.sum())
    order = np.argsort(community, kind="stable")
    cum = np.concatenate([[0.0], np.cumsum(in_w[order])])
    counts = np.bincount(community, minlength=community.max() + 1)
    starts = np.concatenate([[0], np.cumsum(counts)])
    inside = rng.random(num_edges) < intra
    c = community[src]
    lo = np.where(inside, cum[starts[c]], 0.0)
    hi = np.where(inside, cum[starts[c + 1]], cum[-1])
    u = lo + rng.random(num_edges) * (hi - lo)
    pos = np.clip(np.searchsorted(cum, u, side="right") - 1, 0, n - 1)
    dst = order[pos]
    keep = src != dst
    return np.stack([src[keep], dst[keep]])


def ethereum_features(edge_index: torch.Tensor, weight: torch.Tensor, block_number: torch.Tensor,
                      num_nodes: int) -> torch.Tensor:
    """Per-address transfer statistics, log1p-transformed and standardised per column.

    edge_index: (2, E) transfers (multi-edges allowed), weight: (E,), block_number: (E,).
    Returns (num_nodes, 8) float32 in the order of ``ETH_FEATURES``: in/out transfer counts,
    in/out value, distinct senders/receivers, active span (last - first block), mean value.
    Columns with zero variance are zero. Compute it on the graph a model may see (the training
    graph in link prediction), never on held-out edges.
    """
    if not isinstance(num_nodes, (int, np.integer)) or isinstance(num_nodes, bool) \
            or num_nodes < 1:
        raise ValueError(f"num_nodes must be a positive int; got {num_nodes!r}")
    ei = torch.as_tensor(edge_index).long()
    if ei.dim() != 2 or ei.shape[0] != 2:
        raise ValueError(f"edge_index must have shape (2, E); got {tuple(ei.shape)}")
    w = torch.as_tensor(weight, dtype=torch.float64).reshape(-1)
    b = torch.as_tensor(block_number, dtype=torch.float64).reshape(-1)
    if len(w) != ei.shape[1] or len(b) != ei.shape[1]:
        raise ValueError(f"weight and block_number need one entry per edge ({ei.shape[1]}); "
                         f"got {len(w)} and {len(b)}")
    if ei.numel() and (ei.min() < 0 or ei.max() >= num_nodes):
        raise ValueError(f"edge_index holds node ids outside 0..{num_nodes - 1}")
    src, dst = ei[0].numpy(), ei[1].numpy()
    w, b = w.numpy(), b.numpy()
    n = int(num_nodes)
    in_deg = np.bincount(dst, minlength=n).astype(float)
    out_deg = np.bincount(src, minlength=n).astype(float)
    in_val = np.bincount(dst, weights=w, minlength=n)
    out_val = np.bincount(src, weights=w, minlength=n)
    pairs = np.unique(src.astype(np.int64) * n + dst) if len(src) else np.zeros(0, np.int64)
    unique_in = np.bincount(pairs % n, minlength=n).astype(float)
    unique_out = np.bincount(pairs // n, minlength=n).astype(float)
    ends = np.concatenate([src, dst])
    blocks = np.concatenate([b, b])
    first = np.full(n, np.inf)
    last = np.full(n, -np.inf)
    np.minimum.at(first, ends, blocks)
    np.maximum.at(last, ends, blocks)
    span = np.where(np.isfinite(first), last - first, 0.0)
    count = in_deg + out_deg
    mean_val = np.divide(in_val + out_val, count, out=np.zeros(n), where=count > 0)
    raw = np.stack([in_deg, out_deg, in_val, out_val, unique_in, unique_out, span, mean_val], 1)
    f = np.log1p(raw)
    std = f.std(axis=0)
    f = np.divide(f - f.mean(axis=0), std, out=np.zeros_like(f), where=std > 0)
    return torch.from_numpy(f).float()


def spectral_embedding(edge_index: torch.Tensor, num_nodes: int, dim: int = 8, *,
                       seed: int = 0) -> torch.Tensor:
    """(num_nodes, dim) leading non-trivial eigenvectors of the symmetrised normalised adjacency
    D^{-1/2} (A + Aᵀ + I) D^{-1/2}, each column standardised and its sign fixed (largest-|.|
    entry positive). A fast, deterministic stand-in for a DeepWalk embedding."""
    import scipy.sparse as sp
    from scipy.sparse.linalg import eigsh

    if not isinstance(dim, int) or isinstance(dim, bool) or not 1 <= dim < num_nodes - 1:
        raise ValueError(f"dim must be an int in [1, num_nodes - 2]; got {dim!r}")
    ei = torch.as_tensor(edge_index).long().numpy()
    a = sp.coo_matrix((np.ones(ei.shape[1]), (ei[0], ei[1])), shape=(num_nodes, num_nodes))
    a = ((a + a.T) > 0).astype(float) + sp.identity(num_nodes)
    d = np.asarray(a.sum(axis=1)).ravel() ** -0.5
    m = sp.diags(d) @ a @ sp.diags(d)
    v0 = np.random.default_rng(seed).standard_normal(num_nodes)
    vals, vecs = eigsh(m.tocsr(), k=dim + 1, which="LA", v0=v0, tol=1e-6)
    vecs = vecs[:, np.argsort(-vals)][:, 1:]
    idx = np.abs(vecs).argmax(axis=0)
    vecs = vecs * np.sign(vecs[idx, np.arange(dim)])
    vecs = (vecs - vecs.mean(0)) / np.maximum(vecs.std(0), 1e-12)
    return torch.from_numpy(vecs).float()


def combined_features(x_eth: torch.Tensor, x_x: torch.Tensor,
                      same_owner: torch.Tensor) -> torch.Tensor:
    """[x_eth ‖ X features of the matched account (zeros if unmatched) ‖ has-X bit].

    x_eth: (N_eth, 8), x_x: (N_x, 16), same_owner: (2, M) (eth id, x id) -> (N_eth, 8 + 16 + 1).
    """
    so = torch.as_tensor(same_owner).long()
    if so.dim() != 2 or so.shape[0] != 2:
        raise ValueError(f"same_owner must have shape (2, M); got {tuple(so.shape)}")
    out = torch.zeros(x_eth.shape[0], x_eth.shape[1] + x_x.shape[1] + 1, dtype=x_eth.dtype)
    out[:, :x_eth.shape[1]] = x_eth
    out[so[0], x_eth.shape[1]:-1] = x_x[so[1]].to(x_eth.dtype)
    out[so[0], -1] = 1.0
    return out


def _wash_groups(rng: np.random.Generator, n: int, share: float) -> list[np.ndarray]:
    k = max(2, round(share * n))
    members = rng.choice(n, size=k, replace=False)
    groups, i = [], 0
    while i < k:
        size = 3 if (k - i == 3 or (k - i > 4 and rng.random() < 0.3)) else 2
        size = min(size, k - i)
        if size < 2:  # a leftover single joins the previous group
            groups[-1] = np.concatenate([groups[-1], members[i:]])
            break
        groups.append(members[i:i + size])
        i += size
    return groups


def make_ex_graph_synthetic(scale: str = "smoke", *, coupling: float = 0.5,
                            wash_shift: float = 1.0, seed: int = 0,
                            wash_match_rate: float | None = None, **overrides: Any):
    """Draw a synthetic EX-Graph (see the module docstring) as a PyG ``HeteroData``.

    scale: "smoke" (2,000 addresses, 1,000 accounts) or "small" (20,000 / 10,000); any
    :class:`ExGraphConfig` field can be overridden by keyword. Returns

    - ``data["eth"]``: ``x_eth`` (N_e, 8), ``x_combined`` (N_e, 25), ``y_wash`` (N_e,) long,
      ``community`` (N_e,) (latent; for diagnostics, never a model input);
    - ``data["x"]``: ``x`` (N_x, 16), ``community``, ``semantic_cluster``;
    - ``data["eth", "transfers", "eth"]``: ``edge_index`` (2, E), ``edge_attr`` (E, 2) =
      [weight, block_number];
    - ``data["x", "follows", "x"]``: ``edge_index``;
    - ``data["eth", "same_owner", "x"]``: ``edge_index`` (2, M) (address, account).

    The same seed gives the same graph.
    """
    from torch_geometric.data import HeteroData

    if scale not in _SCALES:
        raise ValueError(f"scale must be one of {sorted(_SCALES)}; got {scale!r}")
    if isinstance(coupling, bool) or not isinstance(coupling, (int, float)) \
            or not 0 <= coupling <= 1:
        raise ValueError(f"coupling must be a number in [0, 1]; got {coupling!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int; got {seed!r}")
    unknown = set(overrides) - set(ExGraphConfig.__dataclass_fields__)
    if unknown:
        raise TypeError(f"unknown generator settings: {sorted(unknown)}")
    cfg = replace(ExGraphConfig(), **{**_SCALES[scale], **overrides}, coupling=coupling,
                  wash_shift=wash_shift, wash_match_rate=wash_match_rate)
    rng = np.random.default_rng(seed)
    n_e, n_x, k = cfg.num_eth, cfg.num_x, cfg.num_communities

    # --- Ethereum transfers: degree-corrected directed SBM + wash-trading loops
    c_eth = rng.integers(0, k, size=n_e)
    eth = _block_model_edges(rng, c_eth, _activity(rng, n_e, cfg), _activity(rng, n_e, cfg),
                             round(cfg.eth_out_degree * n_e), cfg.intra)
    weight = rng.lognormal(-1.0, 2.0, size=eth.shape[1])
    groups = _wash_groups(rng, n_e, cfg.wash_share)
    wash_edges, wash_w = [], []
    for g in groups:
        t = int(rng.integers(10, 51))
        a = rng.integers(0, len(g), size=t)
        b = (a + rng.integers(1, len(g), size=t)) % len(g)  # a different member
        wash_edges.append(np.stack([g[a], g[b]]))
        wash_w.append(rng.lognormal(-4.0, 0.5, size=t))
    eth = np.concatenate([eth] + wash_edges, axis=1)
    weight = np.concatenate([weight] + wash_w)
    perm = rng.permutation(eth.shape[1])  # wash transfers interleave with the others in time
    eth, weight = eth[:, perm], weight[perm]
    blocks = np.sort(rng.integers(0, cfg.block_window, size=eth.shape[1])) + cfg.first_block
    y_wash = np.zeros(n_e, dtype=np.int64)
    y_wash[np.concatenate(groups)] = 1

    # --- X follow graph: same communities, popularity-driven followers
    c_x = rng.integers(0, k, size=n_x)
    follows = _block_model_edges(rng, c_x, np.ones(n_x), _activity(rng, n_x, cfg),
                                 round(cfg.x_out_degree * n_x), cfg.intra)

    # --- matching: ∝ degree^0.5, same community with probability `coupling`
    n_match = round(cfg.match_share * n_e)
    degree = np.bincount(eth.ravel(), minlength=n_e).astype(float)
    p = np.sqrt(degree + 1.0)
    chosen: list[int] = []
    if cfg.wash_match_rate is not None:
        wash_ids = np.flatnonzero(y_wash)
        chosen = list(wash_ids[rng.random(len(wash_ids)) < cfg.wash_match_rate][:n_match])
        p[wash_ids] = 0.0
    rest = n_match - len(chosen)
    if rest > 0:
        chosen += list(rng.choice(n_e, size=rest, replace=False, p=p / p.sum()))
    eth_matched = np.asarray(chosen, dtype=np.int64)
    free = np.ones(n_x, dtype=bool)
    x_matched = np.empty(len(eth_matched), dtype=np.int64)
    aligned = rng.random(len(eth_matched)) < cfg.coupling
    for i, e in enumerate(eth_matched):
        pool = np.flatnonzero(free & (c_x == c_eth[e])) if aligned[i] else np.zeros(0, int)
        if len(pool) == 0:
            pool = np.flatnonzero(free)
        x_matched[i] = rng.choice(pool)
        free[x_matched[i]] = False

    # --- X features: semantic clusters (+ wash shift) and a structural embedding
    dim_sem = 8
    centres = rng.normal(0.0, 1.0, size=(cfg.semantic_clusters, dim_sem))
    bot = cfg.semantic_clusters - 1
    cluster = np.where(rng.random(n_x) < cfg.bot_share, bot, c_x % bot)
    sem = centres[cluster] + rng.normal(0.0, 0.5, size=(n_x, dim_sem))
    spread = float(np.linalg.norm(centres - centres.mean(0), axis=1).mean())
    towards_bot = centres[bot] - centres.mean(0)
    towards_bot /= np.linalg.norm(towards_bot)
    wash_accounts = x_matched[y_wash[eth_matched] == 1]
    sem[wash_accounts] += cfg.wash_shift * spread * towards_bot  # matched wash traders look bot-like
    struct = spectral_embedding(torch.from_numpy(follows), n_x, 8, seed=seed).numpy()
    x_feat = torch.from_numpy(np.concatenate([sem, struct], axis=1)).float()

    data = HeteroData()
    t_eth = torch.from_numpy(eth).long()
    attr = torch.from_numpy(np.stack([weight, blocks.astype(float)], 1)).float()
    data["eth"].num_nodes = n_e
    data["x"].num_nodes = n_x
    data["eth", "transfers", "eth"].edge_index = t_eth
    data["eth", "transfers", "eth"].edge_attr = attr
    data["x", "follows", "x"].edge_index = torch.from_numpy(follows).long()
    same_owner = torch.from_numpy(np.stack([eth_matched, x_matched])).long()
    data["eth", "same_owner", "x"].edge_index = same_owner
    x_eth = ethereum_features(t_eth, torch.from_numpy(weight), torch.from_numpy(blocks), n_e)
    data["eth"].x_eth = x_eth
    data["eth"].x_combined = combined_features(x_eth, x_feat, same_owner)
    data["eth"].y_wash = torch.from_numpy(y_wash)
    data["eth"].community = torch.from_numpy(c_eth).long()
    data["x"].x = x_feat
    data["x"].community = torch.from_numpy(c_x).long()
    data["x"].semantic_cluster = torch.from_numpy(cluster).long()
    return data
