"""DTW token alignment and the transfer of top-k lists onto the target's tokens."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.fusellm import (
    SparseDist,
    TokenVocab,
    TopKRecord,
    dtw_align,
    own_distribution,
    token_edit_distance,
    transfer_topk,
)


def _official_dtw(series_1, series_2, norm_func):
    """A direct numpy transcription of the official ``dtw`` (FuseLLM/src/utils/others.py),
    returning mappings_series_2 (target position -> source positions)."""
    matrix = np.zeros((len(series_1) + 1, len(series_2) + 1))
    matrix[0, :] = np.inf
    matrix[:, 0] = np.inf
    matrix[0, 0] = 0
    for i, v1 in enumerate(series_1):
        for j, v2 in enumerate(series_2):
            matrix[i + 1, j + 1] = norm_func(v1, v2) + min(matrix[i, j + 1], matrix[i + 1, j],
                                                           matrix[i, j])
    matrix = matrix[1:, 1:]
    i, j = matrix.shape[0] - 1, matrix.shape[1] - 1
    maps = [[] for _ in range(matrix.shape[1])]
    while i > 0 or j > 0:
        maps[j].append(i)
        diag = matrix[i - 1, j - 1] if i > 0 and j > 0 else np.inf
        up = matrix[i - 1, j] if i > 0 else np.inf
        left = matrix[i, j - 1] if j > 0 else np.inf
        move = int(np.argmin([diag, up, left]))
        if move == 0:
            i, j = i - 1, j - 1
        elif move == 1:
            i -= 1
        else:
            j -= 1
    maps[0].append(0)
    return [sorted(m) for m in maps]


tokens = st.lists(st.sampled_from(["a", "b", "ab", "Ġa", "ba", "abc", "c", "Ġ"]), min_size=1,
                  max_size=7)


@settings(max_examples=80)
@given(tokens)
def test_identical_tokenisations_align_to_the_identity(seq):
    assert dtw_align(seq, seq) == [[i] for i in range(len(seq))]


@settings(max_examples=80)
@given(tokens, tokens)
def test_dtw_matches_the_official_recursion_and_covers_both_sides(src, tgt):
    got = dtw_align(src, tgt)
    assert got == _official_dtw(src, tgt, token_edit_distance)
    assert len(got) == len(tgt)
    assert sorted({j for js in got for j in js}) == list(range(len(src)))  # every source pos
    for a, b in itertools.pairwise(got):  # a monotone path: later targets never map earlier
        assert max(a) <= min(b)


def test_dtw_hand_cases():
    assert dtw_align(["he", "llo"], ["hello"]) == [[0, 1]]  # one target <- two sources
    assert dtw_align(["hello"], ["he", "llo"]) == [[0], [0]]
    assert dtw_align(["▁the", "▁cat"], ["Ġthe", "Ġca", "t"]) == [[0], [1], [1]]
    custom = dtw_align(["x", "y"], ["y", "x"], cost=lambda a, b: float(a != b))
    assert len(custom) == 2


def test_dtw_bad_inputs():
    with pytest.raises(ValueError, match="src_tokens"):
        dtw_align([], ["a"])
    with pytest.raises(TypeError, match="tgt_tokens"):
        dtw_align(["a"], "ab")
    with pytest.raises(TypeError, match="cost"):
        dtw_align(["a"], ["a"], cost=3)


def _vocab(strings, marker="Ġ"):
    table = {s: i for i, s in enumerate(strings)}
    return TokenVocab(tuple(strings), marker, lambda text: [table[text]], "test")


SRC = _vocab(["Ġthe", "Ġcat", "Ġcats", "Ġdog", "Ġca", "zzz", "t"])
TGT = _vocab(["Ġthe", "Ġcat", "Ġdog", "Ġca", "t", "Ġcow"])


def _record(token_ids, topk_ids, topk_logits):
    return TopKRecord("text", np.asarray(token_ids), np.asarray(topk_ids),
                      np.asarray(topk_logits, dtype=np.float32), 1.0)


def test_kept_topk_is_renormalised_after_dropped_ids():
    # source "Ġthe Ġcat", target the same; at position 1 the source's top-3 are
    # Ġcat (kept), zzz (absent from the target: dropped), Ġdog (kept)
    rec = _record([0, 1], [[0, 1, 3], [1, 5, 3]], [[-0.1, -3, -4], [-0.5, -1.0, -2.0]])
    dist = transfer_topk(rec, [[0], [1]], SRC, TGT, [0, 1])
    ids, p = dist.ids[1], dist.probs[1]
    keep = p > 0
    assert list(ids[keep]) == [1, 2]  # Ġcat, Ġdog in target ids
    e = np.exp([-0.5, -2.0])
    np.testing.assert_allclose(p[keep], e / e.sum(), rtol=1e-6)  # softmax over kept only
    assert dist.transferred.all()
    np.testing.assert_allclose(dist.probs.sum(1), 1.0, rtol=1e-6)


def test_duplicates_keep_the_first_highest_logit():
    mapping = {"Ġcats": "Ġcat", "Ġcat": "Ġcat", "Ġthe": "Ġthe", "Ġdog": "Ġdog"}
    rec = _record([1], [[1, 2, 3]], [[-0.2, -0.9, -3.0]])  # Ġcat, Ġcats -> Ġcat, Ġdog
    dist = transfer_topk(rec, [[0]], SRC, TGT, [1], mapping=mapping)
    keep = dist.probs[0] > 0
    assert list(dist.ids[0][keep]) == [1, 2]
    e = np.exp([-0.2, -3.0])
    np.testing.assert_allclose(dist.probs[0][keep], e / e.sum(), rtol=1e-6)


def test_hard_vs_soft_alignment_and_the_one_hot_fallback():
    # source "Ġcats" aligned 1-1 to target "Ġcat": no exact match, but MinED maps it
    rec = _record([2], [[2, 3]], [[-0.1, -2.5]])
    hard = transfer_topk(rec, [[0]], SRC, TGT, [1])
    assert not hard.transferred[0] and hard.ids[0, 0] == 1 and hard.probs[0, 0] == 1.0
    soft = transfer_topk(rec, [[0]], SRC, TGT, [1], mapping={"Ġcats": "Ġcat", "Ġdog": "Ġdog"})
    assert soft.transferred[0]
    assert dict(zip(soft.ids[0], soft.probs[0])).keys() == {1, 2}
    # one target token covering two source tokens: one-hot on the target token
    rec2 = _record([4, 6], [[4, 1], [6, 3]], [[-0.1, -1], [-0.1, -1]])
    many = transfer_topk(rec2, [[0, 1]], SRC, TGT, [1])
    assert not many.transferred[0] and many.ids[0, 0] == 1


def test_first_token_marker_special_case():
    src = _vocab(["the", "Ġcat"])
    rec = _record([0], [[0, 1]], [[-0.1, -1.0]])
    dist = transfer_topk(rec, [[0]], src, TGT, [0])  # "the" vs target "Ġthe" at position 0
    assert dist.transferred[0]


def test_transfer_bad_inputs():
    rec = _record([0, 1], [[0, 1], [1, 3]], [[-0.1, -3], [-0.5, -1.0]])
    with pytest.raises(ValueError, match="alignment has 2 entries but the text has 3"):
        transfer_topk(rec, [[0], [1]], SRC, TGT, [0, 1, 2])
    with pytest.raises(ValueError, match="outside the record"):
        transfer_topk(rec, [[0], [5]], SRC, TGT, [0, 1])
    with pytest.raises(ValueError, match="temperature"):
        transfer_topk(rec, [[0], [1]], SRC, TGT, [0, 1], temperature=0)
    with pytest.raises(TypeError, match="mapping"):
        transfer_topk(rec, [[0], [1]], SRC, TGT, [0, 1], mapping=[("a", "b")])


def test_record_rows_must_match_the_text_length():
    with pytest.raises(ValueError, match="one row per token"):
        TopKRecord("t", np.array([0, 1, 2]), np.zeros((2, 3)), np.zeros((2, 3)), 1.0)
    with pytest.raises(ValueError, match=r"\(T, k\)"):
        TopKRecord("t", np.array([0, 1]), np.zeros((2, 3)), np.zeros((2, 2)), 1.0)


def test_own_distribution_is_the_softmax_of_the_kept_logits():
    rec = _record([0, 1], [[0, 1, 2], [2, 1, 0]], [[0.0, -1.0, -2.0], [-0.3, -0.4, -5.0]])
    d = own_distribution(rec, temperature=2.0)
    z = np.array([0.0, -1.0, -2.0]) / 2.0
    np.testing.assert_allclose(d.probs[0], np.exp(z) / np.exp(z).sum(), rtol=1e-6)
    assert d.coverage == 1.0
    dense = d.dense(6)
    np.testing.assert_allclose(dense.sum(1), 1.0, rtol=1e-6)
    assert dense[1, 2] == pytest.approx(d.probs[1, 0])


def test_sparse_dist_validates_rows():
    with pytest.raises(ValueError, match="summing to 1"):
        SparseDist(np.zeros((1, 2)), np.array([[0.5, 0.1]]), np.array([True]))
    with pytest.raises(ValueError, match="beyond vocab_size"):
        SparseDist.one_hot([7]).dense(5)


def _row(d, t):
    keep = d.probs[t] > 0
    return tuple(sorted(zip(d.ids[t][keep].tolist(), np.round(d.probs[t][keep], 6).tolist())))


def test_permute_rows_moves_only_the_marked_rows_and_keeps_them_all():
    from iclr24.papers.fusellm import permute_rows

    rng = np.random.default_rng(0)
    dists, masks = [], []
    for n in (5, 7, 4):
        rows = []
        for _ in range(n):
            k = int(rng.integers(1, 4))
            p = rng.random(k)
            rows.append((rng.choice(50, k, replace=False).tolist(), (p / p.sum()).tolist()))
        flags = rng.random(n) < 0.5
        dists.append(SparseDist.from_rows(rows, flags))
        masks.append(flags & (rng.random(n) < 0.8))
    out = permute_rows(dists, masks, seed=3)
    marked = sorted(_row(d, t) for d, w in zip(dists, masks) for t in np.flatnonzero(w))
    assert sorted(_row(d, t) for d, w in zip(out, masks) for t in np.flatnonzero(w)) == marked
    for d, o, w in zip(dists, out, masks):
        assert np.array_equal(o.transferred, d.transferred)
        for t in np.flatnonzero(~w):
            assert _row(o, t) == _row(d, t)
    moved = sum(_row(o, t) != _row(d, t) for d, o, w in zip(dists, out, masks)
                for t in np.flatnonzero(w))
    assert moved >= len(marked) // 2  # a permutation of ~10 distinct rows moves most of them
    again = permute_rows(dists, masks, seed=3)
    assert all(np.array_equal(a.ids, b.ids) and np.array_equal(a.probs, b.probs)
               for a, b in zip(out, again))
    with pytest.raises(ValueError, match="where has 2 masks for 3"):
        permute_rows(dists, masks[:2], seed=0)
    with pytest.raises(ValueError, match=r"where\[1\] must be a bool mask of shape \(7,\)"):
        permute_rows(dists, [masks[0], masks[1][:3], masks[2]], seed=0)
    with pytest.raises(TypeError, match=r"dists\[0\]"):
        permute_rows([None], [np.zeros(1, bool)], seed=0)
