"""The relation graph G_R against its definition (dense E_hᵀE_h etc.) and a hand example."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.kits.knowledge_graphs import add_inverse_edges
from iclr24.papers.ultra import INTERACTION_TYPES, build_relation_graph


def _dense_reference(edge_index, edge_type, num_nodes, num_rel):
    e_h = torch.zeros(num_nodes, num_rel)
    e_t = torch.zeros(num_nodes, num_rel)
    e_h[edge_index[0], edge_type] = 1
    e_t[edge_index[1], edge_type] = 1
    mats = [e_h.T @ e_h, e_t.T @ e_t, e_h.T @ e_t, e_t.T @ e_h]  # hh, tt, ht, th
    return {(int(a), int(b), k) for k, m in enumerate(mats) for a, b in (m > 0).nonzero()}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 3), st.integers(0, 7)),
                min_size=1, max_size=30))
def test_matches_dense_definition(triples):
    t = torch.tensor(triples)
    ei, et = add_inverse_edges(t, 4)
    rel_ei, rel_et = build_relation_graph(ei, et, 8, num_nodes=8)
    got = {(a, b, k) for (a, b), k in zip(rel_ei.t().tolist(), rel_et.tolist())}
    assert len(got) == rel_ei.shape[1]  # no duplicate edges
    assert got == _dense_reference(ei, et, 8, 8)


def test_hand_example():
    # a -r0-> b -r1-> c: r0 and r1 meet at b (tail of r0, head of r1)
    ei, et = add_inverse_edges(torch.tensor([[0, 0, 1], [1, 1, 2]]), 2)
    rel_ei, rel_et = build_relation_graph(ei, et, 4)
    edges = {(a, b, INTERACTION_TYPES[k])
             for (a, b), k in zip(rel_ei.t().tolist(), rel_et.tolist())}
    assert (0, 1, "tail_to_head") in edges  # some entity is a tail of r0 and a head of r1
    assert (1, 0, "head_to_tail") in edges
    assert (0, 0, "head_to_head") in edges and (0, 0, "tail_to_tail") in edges  # self pairs kept
    assert (0, 1, "head_to_head") not in edges  # a is not a head of r1
    # inverses: r0⁻¹ = 2 has head b, so r0⁻¹ and r1 share a head
    assert (2, 1, "head_to_head") in edges


def test_errors():
    with pytest.raises(ValueError, match="empty"):
        build_relation_graph(torch.empty(2, 0, dtype=torch.long),
                             torch.empty(0, dtype=torch.long), 2)
    with pytest.raises(ValueError, match="edge_type"):
        build_relation_graph(torch.tensor([[0], [1]]), torch.tensor([5]), 2)
    with pytest.raises(ValueError, match="shape"):
        build_relation_graph(torch.tensor([0, 1]), torch.tensor([0]), 2)
