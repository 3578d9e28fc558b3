"""KnowledgeGraph container and TSV/DataFrame loading."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.kits.knowledge_graphs import (
    KnowledgeGraph,
    add_inverse_edges,
    read_triples_tsv,
    triples_from_dataframe,
)

FACTS = [("alice", "knows", "bob"), ("bob", "knows", "carol"), ("carol", "likes", "alice")]


def test_from_labeled_triples_sorted_vocab_and_ids():
    kg = KnowledgeGraph.from_labeled_triples(FACTS, test=[("alice", "likes", "dave")])
    assert kg.entities == ("alice", "bob", "carol", "dave")
    assert kg.relations == ("knows", "likes")
    assert kg.train.tolist() == [[0, 0, 1], [1, 0, 2], [2, 1, 0]]
    assert kg.test.tolist() == [[0, 1, 3]]
    assert kg.valid.shape == (0, 3)
    assert kg.decode(kg.train) == FACTS
    assert kg.all_triples().shape == (4, 3)


def test_message_passing_graph_adds_inverses():
    kg = KnowledgeGraph.from_labeled_triples(FACTS)
    ei, et = kg.message_passing_graph()
    assert ei.shape == (2, 6) and et.tolist() == [0, 0, 1, 2, 2, 3]
    # inverse edge of (h, r, t) is t -> h with type r + |R|
    assert ei[:, 3].tolist() == [1, 0]
    ei2, et2 = add_inverse_edges(kg.train, kg.num_relations)
    assert torch.equal(ei, ei2) and torch.equal(et, et2)


def test_unknown_labels_are_named():
    kg = KnowledgeGraph.from_labeled_triples(FACTS)
    with pytest.raises(ValueError, match="unknown entity 'zoe'"):
        kg.entity_id("zoe")
    with pytest.raises(ValueError, match="unknown relation 'hates'"):
        kg.relation_id("hates")
    with pytest.raises(ValueError, match="unknown relation 'hates'"):
        kg.encode([("alice", "hates", "bob")])


def test_empty_graphs_rejected():
    with pytest.raises(ValueError, match="train split is empty"):
        KnowledgeGraph.from_labeled_triples([])
    with pytest.raises(ValueError, match="train split is empty"):
        KnowledgeGraph.from_id_triples(torch.empty(0, 3, dtype=torch.long), num_entities=3,
                                       num_relations=1)
    with pytest.raises(ValueError, match="entities must not be empty"):
        KnowledgeGraph((), ("r",), torch.empty(0, 3, dtype=torch.long))


def test_bad_ids_and_shapes():
    with pytest.raises(ValueError, match="entity ids must lie"):
        KnowledgeGraph(("a", "b"), ("r",), torch.tensor([[0, 0, 2]]))
    with pytest.raises(ValueError, match="relation ids must lie"):
        KnowledgeGraph(("a", "b"), ("r",), torch.tensor([[0, 1, 1]]))
    with pytest.raises(ValueError, match="shape"):
        KnowledgeGraph(("a", "b"), ("r",), torch.tensor([[0, 0]]))
    with pytest.raises(ValueError, match="triple 0"):
        KnowledgeGraph.from_labeled_triples([("a", "r")])
    with pytest.raises(ValueError, match="split must be one of"):
        KnowledgeGraph.from_labeled_triples(FACTS).split("dev")


def test_tsv_roundtrip_and_errors(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text("alice\tknows\tbob\n\nbob\tknows\tcarol\ncarol\tlikes\talice\n")
    assert read_triples_tsv(path) == FACTS
    kg = KnowledgeGraph.from_tsv(path)
    assert kg.decode(kg.train) == FACTS

    bad = tmp_path / "bad.tsv"
    bad.write_text("alice\tknows\tbob\nbob knows carol\n")
    with pytest.raises(ValueError, match=r"bad\.tsv:2: expected 3 tab-separated fields.*got 1"):
        read_triples_tsv(bad)
    bad.write_text("alice\tknows\tbob\tx\n")
    with pytest.raises(ValueError, match=r"bad\.tsv:1: .*got 4"):
        KnowledgeGraph.from_tsv(bad)
    bad.write_text("a\tr\tb\n\n\ta\t\tb\n")
    with pytest.raises(ValueError, match=r"bad\.tsv:3: .*got 4|bad\.tsv:3: empty"):
        read_triples_tsv(bad)
    bad.write_text("a\t\tb\n")
    with pytest.raises(ValueError, match=r"bad\.tsv:1: empty relation field"):
        read_triples_tsv(bad)
    with pytest.raises(FileNotFoundError):
        read_triples_tsv(tmp_path / "missing.tsv")
    with pytest.raises(TypeError, match="path"):
        read_triples_tsv(3)  # type: ignore[arg-type]


def test_dataframe_loading_and_errors():
    df = pd.DataFrame(FACTS, columns=["head", "relation", "tail"])
    kg = KnowledgeGraph.from_dataframe(df, test=df.iloc[:1])
    assert kg.decode(kg.train) == FACTS and len(kg.test) == 1
    assert triples_from_dataframe(df.rename(columns={"head": "h"}),
                                  columns=("h", "relation", "tail")) == FACTS
    with pytest.raises(ValueError, match="lacks column"):
        triples_from_dataframe(df.drop(columns="tail"))
    bad = df.copy()
    bad.loc[1, "relation"] = None
    with pytest.raises(ValueError, match="row 1: missing value in column 'relation'"):
        KnowledgeGraph.from_dataframe(bad)
    with pytest.raises(TypeError, match="DataFrame"):
        triples_from_dataframe(FACTS)
    assert KnowledgeGraph.from_dataframe(df).to_dataframes()["train"].values.tolist() == [
        list(f) for f in FACTS]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcdefg"), st.sampled_from(["p", "q", "s"]),
                          st.sampled_from("abcdefg")), min_size=1, max_size=30),
       st.randoms(use_true_random=False))
def test_encode_decode_and_relabel_roundtrip(facts, rnd):
    kg = KnowledgeGraph.from_labeled_triples(facts)
    assert kg.decode(kg.encode(facts)) == facts
    ep = list(range(kg.num_entities))
    rp = list(range(kg.num_relations))
    rnd.shuffle(ep)
    rnd.shuffle(rp)
    moved = kg.relabel(torch.tensor(ep), torch.tensor(rp))
    assert moved.decode(moved.train) == kg.decode(kg.train)
    assert moved.entity_id(kg.entities[0]) == ep[0]


def test_relabel_rejects_non_permutations():
    kg = KnowledgeGraph.from_labeled_triples(FACTS)
    with pytest.raises(ValueError, match="entity_perm must be a permutation"):
        kg.relabel(torch.tensor([0, 0, 1]))
