"""A synthetic user-item interaction stream whose next event depends on the most recent ones.

Stands in for the JODIE streams of the paper (Wikipedia, Reddit, MOOC, LastFM), which PyG and TGB
download at run time and so are out of reach here. Items have fixed clusters; each user has a
current interest cluster that switches (to another cluster, uniformly) with probability
``p_switch`` at each of the user's events. An event picks its user by Zipf activity
(p(user of rank r) ~ r^-zipf_a over a random ranking), then the item: with probability
``p_repeat`` the user's last item, else with probability ``p_in_cluster`` a uniform item of the
user's current cluster, else a uniform item. Inter-event times are exponential with rate 1 and
are stored as integers t = floor(10 tau) (TGNMemory keeps integer times). The edge feature is
the item cluster's mean vector (N(0, 1) entries) plus N(0, 0.5^2) noise.

Active users therefore have several events inside one large temporal batch, and their next item
depends on their most recent items: the setting in which a stale memory hurts.

Node ids: users 0..num_users-1, items num_users..num_users+num_items-1 (bipartite, as in JODIE).
"""

from __future__ import annotations

import numpy as np

__all__ = ["make_drifting_stream"]


def _positive_int(value: object, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return int(value)


def _probability(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")
    return float(value)


def make_drifting_stream(num_users: int = 300, num_items: int = 150, num_events: int = 20_000,
                         num_clusters: int = 10, p_switch: float = 0.02,
                         p_in_cluster: float = 0.85, p_repeat: float = 0.3, edge_dim: int = 8,
                         zipf_a: float = 1.2, *, seed: int = 0):
    """The drifting-interest stream as a ``torch_geometric.data.TemporalData``.

    Returns ``TemporalData(src (E,), dst (E,), t (E,) long non-decreasing, msg (E, edge_dim))``
    with E = num_events, sorted by time.
    """
    import torch
    from torch_geometric.data import TemporalData

    num_users = _positive_int(num_users, "num_users")
    num_items = _positive_int(num_items, "num_items")
    num_events = _positive_int(num_events, "num_events")
    num_clusters = _positive_int(num_clusters, "num_clusters")
    edge_dim = _positive_int(edge_dim, "edge_dim")
    if num_clusters > num_items:
        raise ValueError(f"num_clusters ({num_clusters}) must not exceed num_items ({num_items})")
    p_switch = _probability(p_switch, "p_switch")
    p_in_cluster = _probability(p_in_cluster, "p_in_cluster")
    p_repeat = _probability(p_repeat, "p_repeat")
    if isinstance(zipf_a, bool) or not isinstance(zipf_a, (int, float)) \
            or not 0 <= zipf_a < np.inf:
        raise ValueError(f"zipf_a must be a finite number >= 0, got {zipf_a!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")

    rng = np.random.default_rng(seed)
    item_cluster = rng.permutation(np.arange(num_items) % num_clusters)  # balanced clusters
    members = [np.flatnonzero(item_cluster == c) for c in range(num_clusters)]
    centers = rng.normal(0.0, 1.0, size=(num_clusters, edge_dim))
    activity = rng.permutation(np.arange(1, num_users + 1, dtype=np.float64) ** -float(zipf_a))
    users = rng.choice(num_users, size=num_events, p=activity / activity.sum())

    interest = rng.integers(0, num_clusters, size=num_users)
    last_item = np.full(num_users, -1)
    u_switch, u_repeat, u_cluster = rng.random((3, num_events))
    items = np.empty(num_events, dtype=np.int64)
    for k, u in enumerate(users):
        if num_clusters > 1 and u_switch[k] < p_switch:  # switch to another cluster
            interest[u] = (interest[u] + rng.integers(1, num_clusters)) % num_clusters
        if last_item[u] >= 0 and u_repeat[k] < p_repeat:
            item = last_item[u]
        elif u_cluster[k] < p_in_cluster:
            pool = members[interest[u]]
            item = pool[rng.integers(0, pool.size)]
        else:
            item = rng.integers(0, num_items)
        items[k] = item
        last_item[u] = item

    tau = np.cumsum(rng.exponential(1.0, size=num_events))
    msg = centers[item_cluster[items]] + rng.normal(0.0, 0.5, size=(num_events, edge_dim))
    return TemporalData(
        src=torch.as_tensor(users, dtype=torch.long),
        dst=torch.as_tensor(items + num_users, dtype=torch.long),
        t=torch.as_tensor(np.floor(10.0 * tau), dtype=torch.long),
        msg=torch.as_tensor(msg, dtype=torch.float32),
    )
