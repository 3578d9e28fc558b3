"""The protocols: no held-out edge or match in message passing or features, the decoder in the
optimiser (and the official untrained-decoder flag), balanced sampling, errors, tiny end-to-end
runs."""

import math

import pytest
import torch

from iclr24.papers.ex_graph import (
    EdgeDecoder,
    GraphEncoder,
    build_matching_graph,
    ethereum_features,
    ethereum_link_prediction,
    fit_link_predictor,
    link_optimizer,
    link_prediction_features,
    make_ex_graph_synthetic,
    matching_link_prediction,
    matching_oracle_auc,
    message_graph,
    split_transfers,
    wash_trading_detection,
)

TINY = {"num_eth": 300, "num_x": 150, "wash_share": 0.03, "match_share": 0.1}


@pytest.fixture(scope="module")
def data():
    return make_ex_graph_synthetic("smoke", seed=5, **TINY)


def _codes(ei, n):
    return set((ei[0] * n + ei[1]).tolist())


def test_split_keeps_test_edges_out_of_message_passing(data):
    n = 300
    sp = split_transfers(data, seed=1)
    msg, val, test = _codes(sp.message_edges, n), _codes(sp.val_pos, n), _codes(sp.test_pos, n)
    assert not (msg & val) and not (msg & test) and not (val & test)
    ei = data["eth", "transfers", "eth"].edge_index
    all_pairs = _codes(ei, n)
    assert msg | val | test == all_pairs
    # every transfer the model may see belongs to a training pair, and all of them are seen
    assert _codes(ei[:, sp.train_mask], n) == msg
    assert not (_codes(ei[:, ~sp.train_mask], n) & msg)
    # negatives are no transfer pair at all, no self loops, one per positive
    for pos, neg in ((sp.train_pos, sp.train_neg), (sp.val_pos, sp.val_neg),
                     (sp.test_pos, sp.test_neg)):
        assert pos.shape == neg.shape
        assert not (_codes(neg, n) & all_pairs)
        assert bool((neg[0] != neg[1]).all())
    capped = split_transfers(data, seed=1, max_train_pos=100)
    assert capped.train_pos.shape == (2, 100)
    assert torch.equal(capped.message_edges, sp.message_edges)


def test_features_come_from_training_transfers_only(data):
    sp = split_transfers(data, seed=1)
    store = data["eth", "transfers", "eth"]
    x = link_prediction_features(data, sp.train_mask, use_x=False)
    ei, attr = store.edge_index[:, sp.train_mask], store.edge_attr[sp.train_mask]
    assert torch.equal(x, ethereum_features(ei, attr[:, 0], attr[:, 1], 300))
    assert not torch.allclose(x, data["eth"].x_eth)  # the full-graph statistics differ
    # changing held-out transfers' values and blocks leaves the features unchanged
    poked = data.clone()
    held = ~sp.train_mask
    poked["eth", "transfers", "eth"].edge_attr[held] *= 7.0
    assert torch.equal(link_prediction_features(poked, sp.train_mask, use_x=True),
                       link_prediction_features(data, sp.train_mask, use_x=True))
    xc = link_prediction_features(data, sp.train_mask, use_x=True)
    assert xc.shape == (300, 25) and torch.equal(xc[:, :8], x)


def test_decoder_parameters_in_optimiser_unless_official():
    enc, dec = GraphEncoder("gcn", 8, 16, 16), EdgeDecoder("linear", 16)
    ids = lambda opt: {id(p) for g in opt.param_groups for p in g["params"]}
    fixed = ids(link_optimizer(enc, dec))
    assert {id(p) for p in dec.parameters()} <= fixed
    assert {id(p) for p in enc.parameters()} <= fixed
    official = ids(link_optimizer(enc, dec, train_decoder=False))
    assert not ({id(p) for p in dec.parameters()} & official)
    assert isinstance(link_optimizer(enc, dec, weight_decay=5e-4), torch.optim.AdamW)


@pytest.mark.parametrize("train_decoder", [True, False])
def test_official_flag_leaves_decoder_untrained(data, train_decoder, one_torch_thread):
    sp = split_transfers(data, seed=0)
    x = link_prediction_features(data, sp.train_mask, use_x=False)
    torch.manual_seed(0)
    enc, dec = GraphEncoder("gcn", 8, 16, 16), EdgeDecoder("linear", 16)
    before = [p.detach().clone() for p in dec.parameters()]
    enc_before = [p.detach().clone() for p in enc.parameters()]
    graph = message_graph("gcn", sp.message_edges, 300)
    pairs = {"train": (sp.train_pos, sp.train_neg), "val": (sp.val_pos, sp.val_neg),
             "test": (sp.test_pos, sp.test_neg)}
    m = fit_link_predictor(enc, dec, lambda: enc(x, graph), pairs, epochs=3, patience=None,
                           train_decoder=train_decoder)
    assert set(m) == {"ap", "auc", "f1", "precision", "recall"}
    same = all(torch.equal(a, b) for a, b in zip(before, dec.parameters(), strict=True))
    assert same is (not train_decoder)
    assert not all(torch.equal(a, b) for a, b in zip(enc_before, enc.parameters(), strict=True))


def test_matching_graph_keeps_held_out_matches_out(data):
    g = build_matching_graph(data, seed=2)
    n_e = g.num_eth
    owner = g.edge_index[:, g.edge_type == 2]
    rev = g.edge_index[:, g.edge_type == 3]
    train = torch.stack([g.train_pos[0], g.train_pos[1] + n_e])
    assert _codes(owner, 10**6) == _codes(train, 10**6)
    assert _codes(rev.flip(0), 10**6) == _codes(train, 10**6)
    # no address-account edge besides the training matches
    cross = (g.edge_index[0] < n_e) != (g.edge_index[1] < n_e)
    assert int(cross.sum()) == 2 * g.train_pos.shape[1]
    held = torch.cat([g.val_pos, g.test_pos], dim=1)
    held = torch.stack([held[0], held[1] + n_e])
    assert not (_codes(held, 10**6) & _codes(g.edge_index, 10**6))
    assert not (_codes(held.flip(0), 10**6) & _codes(g.edge_index, 10**6))
    matches = data["eth", "same_owner", "x"].edge_index
    for neg in (g.train_neg, g.val_neg, g.test_neg):
        assert not (_codes(neg, 10**6) & _codes(matches, 10**6))
    assert g.x.shape == (300 + 150, 16)
    assert float(g.x[:n_e, 8:].abs().sum()) == 0.0  # addresses: 8 features zero-padded


@pytest.mark.parametrize("protocol", ["official", "full_graph"])
def test_wash_protocols_run(data, protocol, one_torch_thread):
    r = wash_trading_detection(data, "gcn", True, protocol, runs=2, epochs=3, hidden=16, seed=0)
    assert len(r.runs) == 2
    assert set(r.runs[0]) == {"auc", "ap", "precision", "recall", "f1", "accuracy"}
    assert all(math.isfinite(v) for run in r.runs for v in run.values())
    mean, std = r.summary()["auc"]
    assert 0 <= mean <= 1 and std >= 0
    again = wash_trading_detection(data, "gcn", True, protocol, runs=2, epochs=3, hidden=16,
                                   seed=0)
    assert again.runs == r.runs  # seeded


@pytest.mark.parametrize("model", ["sage", "deepwalk"])
def test_link_and_matching_tiny_end_to_end(data, model, one_torch_thread):
    dw = {"walks_per_node": 1, "walk_length": 5, "dim": 8}
    r = ethereum_link_prediction(data, model, True, runs=1, epochs=2, hidden=16,
                                 deepwalk_options=dw)
    assert all(math.isfinite(v) for v in r.runs[0].values())
    m = matching_link_prediction(data, model, runs=1, epochs=2, hidden=16, deepwalk_options=dw)
    assert 0 <= m.runs[0]["auc"] <= 1
    rg = matching_link_prediction(data, "rgcn", runs=1, epochs=2, hidden=16)
    assert math.isfinite(rg.runs[0]["ap"])


def test_protocol_errors(data):
    with pytest.raises(ValueError, match="model must be one of"):
        ethereum_link_prediction(data, "gin")
    with pytest.raises(ValueError, match="protocol"):
        wash_trading_detection(data, "gcn", protocol="induced")
    with pytest.raises(ValueError, match="runs"):
        wash_trading_detection(data, "gcn", runs=0)
    with pytest.raises(ValueError, match="epochs"):
        matching_link_prediction(data, "gcn", epochs=0)
    with pytest.raises(ValueError, match="fractions"):
        split_transfers(data, fractions=(0.5, 0.5, 0.5))
    with pytest.raises(TypeError, match="HeteroData"):
        ethereum_link_prediction({"eth": 1})
    with pytest.raises(ValueError, match="model must be one of"):
        matching_link_prediction(data, "hin2vec")


@pytest.mark.parametrize("coupling", [0.0, 1.0])
def test_matching_oracle_auc_known_answer(coupling):
    # AUC of a 0/1 score = 0.5 + (P(agree | match) - P(agree | non-match)) / 2, with
    # P(agree | match) = coupling + (1 - coupling) / k and P(agree | non-match) = 1 / k
    g = make_ex_graph_synthetic("smoke", coupling=coupling, seed=3, num_eth=10_000,
                                num_x=5_000, match_share=0.1, num_communities=4)
    fractions = (0.1, 0.1, 0.8)  # 800 test matches: standard error of the AUC ~0.011
    auc = matching_oracle_auc(g, seed=1, fractions=fractions)
    expected = 0.5 + coupling * (1 - 1 / 4) / 2
    assert auc == pytest.approx(expected, abs=0.04)
    # the oracle scores exactly the split matching_link_prediction uses
    mg = build_matching_graph(g, seed=1, fractions=fractions)
    agree = lambda p: (g["eth"].community[p[0]] == g["x"].community[p[1]]).float()
    from iclr24.kits.graphs import link_metrics
    assert auc == link_metrics(agree(mg.test_pos), agree(mg.test_neg))["auc"]


def test_matching_oracle_needs_latent_communities(data):
    stripped = data.clone()
    del stripped["eth"].community
    with pytest.raises(ValueError, match="community"):
        matching_oracle_auc(stripped)
