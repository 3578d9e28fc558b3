"""The synthetic rule-KG generator and the pykeen-shipped KGs (read with no network)."""

from __future__ import annotations

import os
import socket

import pytest
import torch

from iclr24.papers.ultra import PYKEEN_KGS, load_pykeen_kg, make_rule_kg


def test_rule_kg_deterministic_and_split():
    a = make_rule_kg(60, 3, 4, seed=3)
    b = make_rule_kg(60, 3, 4, seed=3)
    for split in ("train", "valid", "test"):
        assert torch.equal(a.split(split), b.split(split))
    assert a.num_entities == 60 and a.num_relations == 7
    facts = [set(map(tuple, a.split(s).tolist())) for s in ("train", "valid", "test")]
    assert not (facts[0] & facts[1]) and not (facts[0] & facts[2]) and not (facts[1] & facts[2])
    # valid/test hold only derived relations; every relation has training facts
    assert set(a.train[:, 1].tolist()) == set(range(7))
    held = set(a.valid[:, 1].tolist()) | set(a.test[:, 1].tolist())
    base_only = set(range(7)) - held
    assert len(base_only) >= 3  # the 3 base relations never appear in valid/test
    assert len(a.valid) == len(a.test) > 0  # 10% / 10% of each derived relation
    assert (a.train[:, 0] != a.train[:, 2]).all()


def test_rule_kg_vocabularies_differ_across_seeds():
    a, b = make_rule_kg(60, 3, 4, seed=1), make_rule_kg(60, 3, 4, seed=2)
    assert not torch.equal(a.train[:50], b.train[:50])
    with pytest.raises(ValueError, match="num_entities"):
        make_rule_kg(5)
    with pytest.raises(ValueError, match="num_derived"):
        make_rule_kg(50, 3, 0)
    with pytest.raises(ValueError, match="degree"):
        make_rule_kg(50, degree=0)


def test_inverse_rule_is_materialised():
    # a derived relation whose facts are exactly the reversed facts of a base relation
    kg = make_rule_kg(80, 4, 6, seed=0)
    by_rel = {}
    for h, r, t in kg.all_triples().tolist():
        by_rel.setdefault(r, set()).add((h, t))
    found_rule = False
    for r1, f1 in by_rel.items():
        for r2, f2 in by_rel.items():
            if r1 != r2 and {(t, h) for h, t in f1} == f2:
                found_rule = True
            if r1 != r2 and f1 <= (f2 | {(t, h) for h, t in f2}) and f2 <= f1:
                found_rule = True  # symmetric closure contains its base relation
    assert found_rule


@pytest.fixture()
def offline(monkeypatch, tmp_path):
    monkeypatch.setenv("PYSTOW_HOME", str(tmp_path / "pystow"))

    def refuse(*args, **kwargs):
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    return tmp_path


def test_pykeen_kgs_load_offline(offline):
    sizes = {"nations": (14, 55, 1592, 199, 201), "kinships": (104, 25, 8544, 1068, 1074),
             "umls": (135, 46, 5216, 652, 661)}
    for name in PYKEEN_KGS:
        kg = load_pykeen_kg(name)
        assert (kg.num_entities, kg.num_relations, len(kg.train), len(kg.valid),
                len(kg.test)) == sizes[name]
    with pytest.raises(ValueError, match="name must be one of"):
        load_pykeen_kg("fb15k")


def test_pykeen_nations_equals_pykeen_loader(offline):
    from pykeen.datasets import Nations

    ours = load_pykeen_kg("nations")
    ds = Nations()
    theirs = ds.training.triples  # (N, 3) label array
    assert sorted(map(tuple, theirs.tolist())) == sorted(ours.decode(ours.train))
    assert sorted(map(tuple, ds.testing.triples.tolist())) == sorted(ours.decode(ours.test))
    assert os.environ["PYSTOW_HOME"].startswith(str(offline))
