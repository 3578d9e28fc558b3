"""Readers of the released EX-Graph text formats and the loader, on small files written here
(the first rows mimic the official twitter_matching.csv and dune_wash_trade_tx.csv)."""

import math

import numpy as np
import pytest
import torch

from iclr24.papers.ex_graph import (
    ethereum_features,
    ethereum_link_prediction,
    load_ex_graph,
    read_follows_csv,
    read_matching_csv,
    read_transfers_csv,
    read_wash_trades_csv,
    read_x_features_csv,
    wash_trading_detection,
)

A = "0xd71530de416fd7ea8cfe502e9e40cb7ce3501d4c"
B = "0x13a7d2fb3f73b57ef539c35c4ec59ed49b1833ca"
C = "0x94FF1E7D124C10126A5133E389DEECDAC6185590"  # mixed case: read lower-cased
D = "0xbb4dd36645cac4c15e1ef2b29cc958226981dbb6"


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_read_matching_both_headers_and_duplicate_rows(tmp_path):
    p = _write(tmp_path, "twitter_matching.csv",
               f"node_id,ethereum_address\n62728,{A}\n50336,{C}\n62728,{A}\n\n")
    ids, addrs = read_matching_csv(p)
    assert ids.tolist() == [62728, 50336] and ids.dtype == np.int64
    assert addrs == [A, C.lower()]  # the verbatim repeat is dropped
    old = _write(tmp_path, "old.csv", f"Twitter_Handle,Wallet_Address\n7,{B}\n")
    ids, addrs = read_matching_csv(old)
    assert ids.tolist() == [7] and addrs == [B]


@pytest.mark.parametrize("text, message", [
    ("", "empty file"),
    (f"id,address\n1,{A}\n", "header"),
    (f"node_id,ethereum_address\n1,{A},extra\n", r":2: expected 2 fields"),
    ("node_id,ethereum_address\n1,0x1234\n", r":2: address '0x1234' is not an Ethereum"),
    (f"node_id,ethereum_address\nabc,{A}\n", r":2: X account id 'abc' is not an integer"),
    (f"node_id,ethereum_address\n-3,{A}\n", "must be >= 0"),
    (f"node_id,ethereum_address\n1,{A}\n1,{B}\n", r":3: X account 1 is matched to both"),
    (f"node_id,ethereum_address\n1,{A}\n2,{A}\n", r":3: address .* matched to both"),
])
def test_read_matching_malformed(tmp_path, text, message):
    p = _write(tmp_path, "m.csv", text)
    with pytest.raises(ValueError, match=message):
        read_matching_csv(p)


def test_reader_argument_type():
    with pytest.raises(TypeError, match="path"):
        read_matching_csv(3)


def test_read_wash_trades(tmp_path):
    p = _write(tmp_path, "dune_wash_trade_tx.csv",
               "nft_name,token_id,tx_hash,from_addr,to_addr\n"
               f'"Ethereum_Name_Service_(ENS), v2",#220818,0xab,{A},{C}\n'
               f"dementorstown.wtf,#4533,0xcd,{C},{A}\n")
    w = read_wash_trades_csv(p)
    assert w.nft_name == ["Ethereum_Name_Service_(ENS), v2", "dementorstown.wtf"]
    assert w.token_id == ["#220818", "#4533"]
    assert w.from_addr == [A, C.lower()] and w.to_addr == [C.lower(), A]
    assert w.addresses == sorted([A, C.lower()])
    bad = _write(tmp_path, "bad.csv", "nft_name,token_id,tx_hash,from_addr,to_addr\n"
                                      f"x,#1,0xab,{A},not-an-address\n")
    with pytest.raises(ValueError, match=r"bad.csv:2: to_addr"):
        read_wash_trades_csv(bad)


def test_read_transfers_follows_features(tmp_path):
    p = _write(tmp_path, "t.csv", "from_address,to_address,weight,block_number\n"
                                  f"{A},{B},0.5,15000001\n{B},{C},2e-3,15000002\n")
    t = read_transfers_csv(p)
    assert t.from_address == [A, B] and t.to_address == [B, C.lower()]
    assert t.weight.tolist() == [0.5, 0.002] and t.block_number.tolist() == [15000001, 15000002]
    for row, message in ((f"{A},{B},nan,1", "weight must be a finite"),
                         (f"{A},{B},-1,1", "weight must be a finite"),
                         (f"{A},{B},x,1", "weight 'x' is not a number"),
                         (f"{A},{B},1,1.5", "block_number '1.5' is not an integer")):
        bad = _write(tmp_path, "bad.csv", f"from_address,to_address,weight,block_number\n{row}\n")
        with pytest.raises(ValueError, match=message):
            read_transfers_csv(bad)
    f = _write(tmp_path, "f.csv", "follower_id,followee_id\n1,2\n3,1\n")
    assert read_follows_csv(f).tolist() == [[1, 3], [2, 1]]
    empty = _write(tmp_path, "f0.csv", "follower_id,followee_id\n")
    assert read_follows_csv(empty).shape == (2, 0)
    x = _write(tmp_path, "x.csv", "node_id,s0,s1\n5,0.5,-1\n2,1,2\n")
    ids, feats = read_x_features_csv(x)
    assert ids.tolist() == [5, 2] and feats.tolist() == [[0.5, -1.0], [1.0, 2.0]]
    for text, message in (("node_id,s0\n5,inf\n", "finite"), ("node_id,s0\n5,a\n", "number"),
                          ("node_id,s0\n5,1\n5,2\n", "node_id repeats"),
                          ("id,s0\n5,1\n", "header")):
        with pytest.raises(ValueError, match=message):
            read_x_features_csv(_write(tmp_path, "xb.csv", text))


@pytest.fixture
def released(tmp_path):
    """A tiny release: 12 addresses, 2 matches, one wash pair, 3 accounts, 16-d X features."""
    rng = np.random.default_rng(0)
    rows = ["from_address,to_address,weight,block_number"]
    addrs = [A, B, C.lower(), D] + ["0x" + "".join(rng.choice(list("0123456789abcdef"), 40))
                                    for _ in range(8)]
    for k in range(60):
        i, j = rng.choice(12, size=2, replace=False)
        rows.append(f"{addrs[i]},{addrs[j]},{rng.lognormal(-1, 2):.6g},{15_000_000 + k}")
    rows.append(f"{A},{A},1.0,15000099")  # a self transfer: dropped
    feats = ["node_id," + ",".join(f"f{k}" for k in range(16))]
    for node in (62728, 50336, 900):
        feats.append(f"{node}," + ",".join(f"{v:.4f}" for v in rng.normal(size=16)))
    return {
        "transfers_csv": _write(tmp_path, "transfers.csv", "\n".join(rows) + "\n"),
        "matching_csv": _write(tmp_path, "twitter_matching.csv",
                               f"node_id,ethereum_address\n62728,{A}\n50336,{C}\n"),
        "wash_trades_csv": _write(tmp_path, "dune.csv",
                                  "nft_name,token_id,tx_hash,from_addr,to_addr\n"
                                  f"n,#1,0x1,{B},{D}\nn,#1,0x2,{D},{B}\n"),
        "follows_csv": _write(tmp_path, "follows.csv",
                              "follower_id,followee_id\n62728,900\n900,50336\n"),
        "x_features_csv": _write(tmp_path, "x.csv", "\n".join(feats) + "\n"),
    }


def test_load_ex_graph_schema(released):
    data = load_ex_graph(released["transfers_csv"], released["matching_csv"],
                         wash_trades_csv=released["wash_trades_csv"],
                         follows_csv=released["follows_csv"],
                         x_features_csv=released["x_features_csv"])
    addrs = data["eth"].address
    assert addrs == sorted(addrs) and {A, B, C.lower(), D} <= set(addrs)
    assert data["eth"].num_nodes == 12
    assert data["x"].node_id.tolist() == [900, 50336, 62728]
    ei = data["eth", "transfers", "eth"].edge_index
    assert ei.shape == (2, 60) and bool((ei[0] != ei[1]).all())
    attr = data["eth", "transfers", "eth"].edge_attr
    assert attr.shape == (60, 2) and float(attr[:, 1].min()) == 15_000_000
    # matches in node ids: A <-> 62728, C <-> 50336
    so = data["eth", "same_owner", "x"].edge_index.tolist()
    assert so == [[addrs.index(A), addrs.index(C.lower())], [2, 1]]
    assert data["x", "follows", "x"].edge_index.tolist() == [[2, 0], [0, 1]]
    assert data["eth"].y_wash.tolist() == [int(a in (B, D)) for a in addrs]
    # features: the 8 statistics of the transfers, the account's 16 X features on its address
    t = read_transfers_csv(released["transfers_csv"])
    keep = np.asarray(t.from_address) != np.asarray(t.to_address)
    assert np.allclose(attr[:, 0].numpy(), t.weight[keep], rtol=1e-6)
    assert torch.equal(data["eth"].x_eth, ethereum_features(
        ei, torch.from_numpy(t.weight[keep]), torch.from_numpy(t.block_number[keep] * 1.0), 12))
    xf = read_x_features_csv(released["x_features_csv"])[1]
    xc = data["eth"].x_combined
    assert xc.shape == (12, 25)
    assert torch.allclose(xc[addrs.index(A), 8:24], torch.from_numpy(xf[0]))
    assert xc[:, 24].tolist() == [float(a in (A, C.lower())) for a in addrs]
    assert float(xc[addrs.index(B), 8:].abs().sum()) == 0.0


def test_loaded_graph_runs_the_protocols(released, one_torch_thread):
    data = load_ex_graph(released["transfers_csv"], released["matching_csv"],
                         wash_trades_csv=released["wash_trades_csv"])
    assert data["x"].x.shape == (2, 16) and float(data["x"].x.abs().sum()) == 0.0
    r = ethereum_link_prediction(data, "gcn", True, runs=1, epochs=2, hidden=8,
                                 fractions=(0.6, 0.2, 0.2))
    assert math.isfinite(r.runs[0]["auc"])
    with pytest.raises(ValueError, match="at least three wash-trading"):
        wash_trading_detection(data, "gcn", True)  # two labelled addresses cannot be split


def test_load_ex_graph_errors(released, tmp_path):
    stray = _write(tmp_path, "x_stray.csv", "node_id,f0\n12345,1.0\n")
    with pytest.raises(ValueError, match="node_id 12345 is in no match or follow"):
        load_ex_graph(released["transfers_csv"], released["matching_csv"],
                      x_features_csv=stray)
    with pytest.raises(FileNotFoundError):
        load_ex_graph(tmp_path / "missing.csv", released["matching_csv"])
