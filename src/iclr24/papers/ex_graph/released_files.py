"""Readers for the EX-Graph files in their released text formats, and a loader that assembles
them into the package's ``HeteroData`` schema (the one :func:`make_ex_graph_synthetic` draws).

What the official repository (Persdre/EX-Graph) ships as text, and what is read here:

- ``twitter_matching.csv`` (README: ``X_matching.csv``): header ``node_id,ethereum_address``,
  one row per verified match; ``node_id`` is the anonymised numeric X account id, the address a
  0x-prefixed 40-hex-digit string. An earlier release named the columns
  ``Twitter_Handle,Wallet_Address``; both headers are accepted, the account column holding
  the numeric (anonymised) id in either. The released file repeats one
  row verbatim: exact duplicates are dropped, while an account matched to two addresses (or the
  reverse) is refused, as the tasks assume one owner per pair.
- ``dune_wash_trade_tx.csv``: header ``nft_name,token_id,tx_hash,from_addr,to_addr``, one row
  per wash-trading NFT transfer from Dune; every address in it is a wash-trading address (the
  positive class of Task 2).

The Ethereum and X graphs themselves are released only as pickled DGL graphs on Google Drive
(``from_address, to_address, weight, block_number`` on the transfers); unpickling them needs DGL
and runs arbitrary code, so they are read here as CSV exports of the same fields:

- transfers: header ``from_address,to_address,weight,block_number`` (addresses as above, weight a
  finite number >= 0, block number an int >= 0);
- follows (optional): header ``follower_id,followee_id``, numeric X account ids;
- X features (optional): header ``node_id`` followed by the feature columns (16 in the paper:
  8 semantic + 8 structural), one row per account.

Every reader raises ``ValueError`` naming the file, the line and what was expected for a missing
or wrong header, a short row, a malformed address or id, a non-finite or negative number.
"""

from __future__ import annotations

import csv
import math
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .synthetic import combined_features, ethereum_features

__all__ = [
    "FOLLOWS_HEADER",
    "MATCHING_HEADERS",
    "TRANSFERS_HEADER",
    "WASH_TRADE_HEADER",
    "Transfers",
    "WashTrades",
    "load_ex_graph",
    "read_follows_csv",
    "read_matching_csv",
    "read_transfers_csv",
    "read_wash_trades_csv",
    "read_x_features_csv",
]

MATCHING_HEADERS = (("node_id", "ethereum_address"), ("Twitter_Handle", "Wallet_Address"))
WASH_TRADE_HEADER = ("nft_name", "token_id", "tx_hash", "from_addr", "to_addr")
TRANSFERS_HEADER = ("from_address", "to_address", "weight", "block_number")
FOLLOWS_HEADER = ("follower_id", "followee_id")
_X_FEATURE_DIM = 16  # 8 semantic + 8 structural (paper Sec. 3)

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")

PathLike = str | os.PathLike


@dataclass(frozen=True)
class WashTrades:
    """The Dune wash-trading transfers: per row the NFT, token id, transaction hash, sender and
    receiver (addresses lower-cased)."""

    nft_name: list[str]
    token_id: list[str]
    tx_hash: list[str]
    from_addr: list[str]
    to_addr: list[str]

    @property
    def addresses(self) -> list[str]:
        """Every address that takes part in a wash trade, sorted."""
        return sorted(set(self.from_addr) | set(self.to_addr))


@dataclass(frozen=True)
class Transfers:
    """Ethereum transfers: sender and receiver addresses (lower-cased), weight (E,) float64 and
    block number (E,) int64."""

    from_address: list[str]
    to_address: list[str]
    weight: np.ndarray
    block_number: np.ndarray


def _rows(path: PathLike, headers: Sequence[Sequence[str]],
          prefix: bool = False) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of each data row after checking the header against ``headers``
    (``prefix``: the header only has to start with one of them)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike; got {type(path).__name__}")
    name = os.fspath(path)
    with open(name, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None:
            raise ValueError(f"{name}: empty file; expected the header "
                             f"{','.join(headers[0])}")
        header = [h.strip() for h in header]
        if header and header[0].startswith("\ufeff"):
            header[0] = header[0][1:]
        ok = any(header[:len(h)] == list(h) if prefix else header == list(h) for h in headers)
        if not ok:
            want = " or ".join(",".join(h) for h in headers)
            raise ValueError(f"{name}:1: header {','.join(header)!r} is not {want}")
        width = len(header)
        for row in reader:
            line = reader.line_num
            if not row or all(not field.strip() for field in row):
                continue
            if len(row) != width:
                raise ValueError(f"{name}:{line}: expected {width} fields, got {len(row)}")
            yield line, [field.strip() for field in row]


def _address(value: str, where: str, column: str) -> str:
    if not _ADDRESS.fullmatch(value):
        raise ValueError(f"{where}: {column} {value!r} is not an Ethereum address "
                         f"(0x followed by 40 hex digits)")
    return value.lower()


def _int(value: str, where: str, column: str) -> int:
    try:
        out = int(value)
    except ValueError:
        raise ValueError(f"{where}: {column} {value!r} is not an integer") from None
    if out < 0:
        raise ValueError(f"{where}: {column} must be >= 0; got {out}")
    return out


def _float(value: str, where: str, column: str) -> float:
    try:
        out = float(value)
    except ValueError:
        raise ValueError(f"{where}: {column} {value!r} is not a number") from None
    if not math.isfinite(out) or out < 0:
        raise ValueError(f"{where}: {column} must be a finite number >= 0; got {value!r}")
    return out


def read_matching_csv(path: PathLike) -> tuple[np.ndarray, list[str]]:
    """The verified matches: (X account ids (M,) int64, addresses (M,) lower-cased), one pair
    per distinct row. Raises ``ValueError`` for an account with two addresses or the reverse."""
    ids: list[int] = []
    addresses: list[str] = []
    seen_id: dict[int, str] = {}
    seen_addr: dict[str, int] = {}
    for line, (raw_id, raw_addr) in _rows(path, MATCHING_HEADERS):
        where = f"{os.fspath(path)}:{line}"
        x_id = _int(raw_id, where, "X account id")
        addr = _address(raw_addr, where, "address")
        if seen_id.get(x_id) == addr:
            continue  # the released file repeats a row verbatim
        if x_id in seen_id:
            raise ValueError(f"{where}: X account {x_id} is matched to both {seen_id[x_id]} "
                             f"and {addr}")
        if addr in seen_addr:
            raise ValueError(f"{where}: address {addr} is matched to both X accounts "
                             f"{seen_addr[addr]} and {x_id}")
        seen_id[x_id], seen_addr[addr] = addr, x_id
        ids.append(x_id)
        addresses.append(addr)
    return np.asarray(ids, dtype=np.int64), addresses


def read_wash_trades_csv(path: PathLike) -> WashTrades:
    """The Dune wash-trading transfers (module docstring)."""
    cols: list[list[str]] = [[] for _ in WASH_TRADE_HEADER]
    for line, row in _rows(path, (WASH_TRADE_HEADER,)):
        where = f"{os.fspath(path)}:{line}"
        row[3] = _address(row[3], where, "from_addr")
        row[4] = _address(row[4], where, "to_addr")
        for col, value in zip(cols, row):
            col.append(value)
    return WashTrades(*cols)


def read_transfers_csv(path: PathLike) -> Transfers:
    """Ethereum transfers exported as CSV (module docstring)."""
    src: list[str] = []
    dst: list[str] = []
    weight: list[float] = []
    block: list[int] = []
    for line, (a, b, w, k) in _rows(path, (TRANSFERS_HEADER,)):
        where = f"{os.fspath(path)}:{line}"
        src.append(_address(a, where, "from_address"))
        dst.append(_address(b, where, "to_address"))
        weight.append(_float(w, where, "weight"))
        block.append(_int(k, where, "block_number"))
    return Transfers(src, dst, np.asarray(weight, dtype=np.float64),
                     np.asarray(block, dtype=np.int64))


def read_follows_csv(path: PathLike) -> np.ndarray:
    """X follow edges exported as CSV: (2, F) int64 (follower id, followee id)."""
    pairs = [(_int(a, f"{os.fspath(path)}:{line}", "follower_id"),
              _int(b, f"{os.fspath(path)}:{line}", "followee_id"))
             for line, (a, b) in _rows(path, (FOLLOWS_HEADER,))]
    return np.asarray(pairs, dtype=np.int64).reshape(-1, 2).T


def read_x_features_csv(path: PathLike) -> tuple[np.ndarray, np.ndarray]:
    """X account features exported as CSV: (ids (N,) int64, features (N, d) float32); every
    value finite, every id once."""
    ids: list[int] = []
    feats: list[list[float]] = []
    for line, row in _rows(path, (("node_id",),), prefix=True):
        where = f"{os.fspath(path)}:{line}"
        ids.append(_int(row[0], where, "node_id"))
        try:
            values = [float(v) for v in row[1:]]
        except ValueError:
            raise ValueError(f"{where}: a feature is not a number") from None
        if not all(math.isfinite(v) for v in values):
            raise ValueError(f"{where}: features must be finite")
        feats.append(values)
    if len(set(ids)) != len(ids):
        raise ValueError(f"{os.fspath(path)}: node_id repeats; one row per account expected")
    width = len(feats[0]) if feats else 0
    return np.asarray(ids, dtype=np.int64), np.asarray(feats, dtype=np.float32).reshape(-1, width)


def load_ex_graph(transfers_csv: PathLike, matching_csv: PathLike, *,
                  wash_trades_csv: PathLike | None = None, follows_csv: PathLike | None = None,
                  x_features_csv: PathLike | None = None):
    """Assemble released files into the package's ``HeteroData`` schema, ready for the three
    protocols.

    Addresses: every address in the transfers, the matches and the wash trades, sorted (node i
    is ``data["eth"].address[i]``). Accounts: every id in the matches and the follows, sorted
    (``data["x"].node_id``). ``x_eth`` are the 8 statistics of :func:`ethereum_features` on the
    transfers; ``y_wash`` is 1 for the addresses in ``wash_trades_csv`` (all 0 without it);
    ``data["x"].x`` are the X features (accounts without a row, or all of them when no feature
    file is given, get zeros: the has-X bit of ``x_combined`` still marks matched addresses).
    Transfers must not be self loops (the link-prediction split refuses them): they are dropped.
    """
    from torch_geometric.data import HeteroData

    transfers = read_transfers_csv(transfers_csv)
    x_ids, matched = read_matching_csv(matching_csv)
    wash = read_wash_trades_csv(wash_trades_csv) if wash_trades_csv is not None else None
    follows = read_follows_csv(follows_csv) if follows_csv is not None \
        else np.zeros((2, 0), dtype=np.int64)

    addresses = sorted(set(transfers.from_address) | set(transfers.to_address) | set(matched)
                       | set(wash.addresses if wash else ()))
    if len(addresses) < 2:
        raise ValueError(f"{os.fspath(transfers_csv)}: at least two addresses are needed")
    eth_index = {a: i for i, a in enumerate(addresses)}
    accounts = np.unique(np.concatenate([x_ids, follows.ravel()]))
    x_index = {int(a): i for i, a in enumerate(accounts)}

    src = np.asarray([eth_index[a] for a in transfers.from_address], dtype=np.int64)
    dst = np.asarray([eth_index[a] for a in transfers.to_address], dtype=np.int64)
    keep = src != dst
    ei = torch.from_numpy(np.stack([src[keep], dst[keep]]))
    weight = torch.from_numpy(transfers.weight[keep])
    block = torch.from_numpy(transfers.block_number[keep].astype(np.float64))

    n_e, n_x = len(addresses), len(accounts)
    x_feat = torch.zeros(n_x, _X_FEATURE_DIM)
    if x_features_csv is not None:
        f_ids, f = read_x_features_csv(x_features_csv)
        unknown = [int(i) for i in f_ids if int(i) not in x_index]
        if unknown:
            raise ValueError(f"{os.fspath(x_features_csv)}: node_id {unknown[0]} is in no "
                             f"match or follow")
        x_feat = torch.zeros(n_x, f.shape[1])
        x_feat[[x_index[int(i)] for i in f_ids]] = torch.from_numpy(f)

    data = HeteroData()
    data["eth"].num_nodes = n_e
    data["x"].num_nodes = n_x
    data["eth"].address = addresses
    data["x"].node_id = torch.from_numpy(accounts)
    data["eth", "transfers", "eth"].edge_index = ei
    data["eth", "transfers", "eth"].edge_attr = torch.stack([weight, block], 1).float()
    data["x", "follows", "x"].edge_index = torch.tensor(
        [[x_index[int(a)] for a in follows[0]], [x_index[int(b)] for b in follows[1]]],
        dtype=torch.long).reshape(2, -1)
    same_owner = torch.tensor([[eth_index[a] for a in matched],
                               [x_index[int(i)] for i in x_ids]], dtype=torch.long).reshape(2, -1)
    data["eth", "same_owner", "x"].edge_index = same_owner
    x_eth = ethereum_features(ei, weight, block, n_e)
    data["eth"].x_eth = x_eth
    data["eth"].x_combined = combined_features(x_eth, x_feat, same_owner)
    y = torch.zeros(n_e, dtype=torch.long)
    if wash is not None:
        y[[eth_index[a] for a in wash.addresses]] = 1
    data["eth"].y_wash = y
    data["x"].x = x_feat
    return data
