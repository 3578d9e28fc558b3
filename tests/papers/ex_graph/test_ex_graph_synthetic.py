"""The synthetic EX-Graph: schema, determinism, the coupling / wash knobs, features, errors."""

import numpy as np
import pytest
import torch

from iclr24.papers.ex_graph import (
    combined_features,
    ethereum_features,
    make_ex_graph_synthetic,
    spectral_embedding,
)

TINY = {"num_eth": 400, "num_x": 200}


@pytest.fixture(scope="module")
def tiny():
    return make_ex_graph_synthetic("smoke", seed=3, **TINY)


def test_schema(tiny):
    d = tiny
    n_e, n_x = 400, 200
    assert d["eth"].x_eth.shape == (n_e, 8)
    assert d["eth"].x_combined.shape == (n_e, 25)
    assert d["x"].x.shape == (n_x, 16)
    assert d["eth"].y_wash.dtype == torch.long and d["eth"].y_wash.shape == (n_e,)
    t = d["eth", "transfers", "eth"]
    assert t.edge_index.shape[0] == 2 and t.edge_attr.shape == (t.edge_index.shape[1], 2)
    assert bool((t.edge_index[0] != t.edge_index[1]).all())
    # mean out-degree ≈ 15 (plus the wash loops), X ≈ 3
    assert 12 < t.edge_index.shape[1] / n_e < 17
    assert 2.5 < d["x", "follows", "x"].edge_index.shape[1] / n_x < 3.1
    m = d["eth", "same_owner", "x"].edge_index
    assert m.shape == (2, 6)  # 1.5% of 400
    assert len(set(m[0].tolist())) == 6 and len(set(m[1].tolist())) == 6  # one-to-one
    blocks = t.edge_attr[:, 1]
    assert bool((blocks[1:] >= blocks[:-1]).all())  # sorted block numbers
    assert float(blocks.max() - blocks.min()) <= 1_300_000
    assert int(d["eth"].y_wash.sum()) == 2  # 0.5% of 400


def test_deterministic_and_seed_dependent(tiny):
    again = make_ex_graph_synthetic("smoke", seed=3, **TINY)
    other = make_ex_graph_synthetic("smoke", seed=4, **TINY)
    t = ("eth", "transfers", "eth")
    assert torch.equal(again[t].edge_index, tiny[t].edge_index)
    assert torch.equal(again["x"].x, tiny["x"].x)
    assert not torch.equal(other["eth"].x_eth, tiny["eth"].x_eth)


def test_combined_features_layout(tiny):
    d = tiny
    xc = d["eth"].x_combined
    m = d["eth", "same_owner", "x"].edge_index
    assert torch.equal(xc[:, :8], d["eth"].x_eth)
    assert torch.equal(xc[m[0], 8:24], d["x"].x[m[1]])
    has = torch.zeros(400, dtype=torch.bool)
    has[m[0]] = True
    assert torch.equal(xc[:, 24] == 1, has)
    assert float(xc[~has, 8:].abs().sum()) == 0.0
    with pytest.raises(ValueError, match="same_owner"):
        combined_features(d["eth"].x_eth, d["x"].x, m[0])


@pytest.mark.parametrize("coupling", [0.0, 1.0])
def test_coupling_aligns_communities(coupling):
    d = make_ex_graph_synthetic("smoke", coupling=coupling, seed=0, num_eth=4000, num_x=2000)
    m = d["eth", "same_owner", "x"].edge_index
    same = (d["eth"].community[m[0]] == d["x"].community[m[1]]).float().mean()
    if coupling == 1.0:
        assert float(same) == 1.0
    else:
        assert float(same) < 0.25  # chance level is 1/20


def test_matched_addresses_are_more_active():
    d = make_ex_graph_synthetic("smoke", seed=1, num_eth=6000, num_x=3000)
    deg = torch.bincount(d["eth", "transfers", "eth"].edge_index.reshape(-1), minlength=6000)
    m = d["eth", "same_owner", "x"].edge_index[0]
    assert float(deg[m].float().mean()) > float(deg.float().mean())


def test_wash_shift_moves_only_matched_wash_accounts():
    kw = {"seed": 2, "num_eth": 2000, "num_x": 1000, "wash_match_rate": 1.0}
    a = make_ex_graph_synthetic("smoke", wash_shift=0.0, **kw)
    b = make_ex_graph_synthetic("smoke", wash_shift=1.0, **kw)
    m = a["eth", "same_owner", "x"].edge_index
    wash_acc = m[1][a["eth"].y_wash[m[0]] == 1]
    assert len(wash_acc) == 10  # every wash trader matched at rate 1
    changed = (a["x"].x != b["x"].x).any(dim=1)
    assert set(torch.nonzero(changed).view(-1).tolist()) == set(wash_acc.tolist())
    assert torch.equal(a["x"].x[:, 8:], b["x"].x[:, 8:])  # structural part untouched
    # wash traders pass tokens back and forth: every wash trader has a wash partner edge
    ei = a["eth", "transfers", "eth"].edge_index
    y = a["eth"].y_wash
    both = (y[ei[0]] == 1) & (y[ei[1]] == 1)
    assert set(ei[0, both].tolist()) == set(torch.nonzero(y).view(-1).tolist())


def test_ethereum_features_known_answer():
    # 0 -> 1 twice (values 1, 3; blocks 10, 20), 1 -> 2 once (value 2; block 40); node 3 idle
    ei = torch.tensor([[0, 0, 1], [1, 1, 2]])
    w = torch.tensor([1.0, 3.0, 2.0])
    b = torch.tensor([10.0, 20.0, 40.0])
    f = ethereum_features(ei, w, b, 4)
    raw = np.array([  # in_deg, out_deg, in_val, out_val, uniq_in, uniq_out, span, mean_val
        [0, 2, 0, 4, 0, 1, 10, 2.0],
        [2, 1, 4, 2, 1, 1, 30, 2.0],
        [1, 0, 2, 0, 1, 0, 0, 2.0],
        [0, 0, 0, 0, 0, 0, 0, 0.0]])
    g = np.log1p(raw)
    g = (g - g.mean(0)) / g.std(0)
    assert np.allclose(f.numpy(), g, atol=1e-5)
    with pytest.raises(ValueError, match="one entry per edge"):
        ethereum_features(ei, w[:2], b, 4)
    with pytest.raises(ValueError, match="outside"):
        ethereum_features(ei, w, b, 2)


def test_spectral_embedding_separates_components():
    # two disjoint 6-cliques: the first non-trivial eigenvector is constant on each clique
    a = [(i, j) for i in range(6) for j in range(6) if i != j]
    ei = torch.tensor(a + [(i + 6, j + 6) for i, j in a]).T
    z = spectral_embedding(ei, 12, 1).numpy()[:, 0]
    assert np.allclose(z[:6], z[0], atol=1e-4) and np.allclose(z[6:], z[6], atol=1e-4)
    assert abs(z[0] - z[6]) > 1.0


def test_errors():
    with pytest.raises(ValueError, match="coupling"):
        make_ex_graph_synthetic("smoke", coupling=1.5)
    with pytest.raises(ValueError, match="coupling"):
        make_ex_graph_synthetic("smoke", coupling=-0.1)
    with pytest.raises(ValueError, match="scale"):
        make_ex_graph_synthetic("huge")
    with pytest.raises(ValueError, match="wash_shift"):
        make_ex_graph_synthetic("smoke", wash_shift=-1.0)
    with pytest.raises(ValueError, match="wash_match_rate"):
        make_ex_graph_synthetic("smoke", wash_match_rate=2.0)
    with pytest.raises(ValueError, match="seed"):
        make_ex_graph_synthetic("smoke", seed=-1)
    with pytest.raises(TypeError, match="unknown generator settings"):
        make_ex_graph_synthetic("smoke", nodes=5)
