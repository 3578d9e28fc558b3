"""Token strings, edit distance and the MinED vocabulary mapping."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.kits.language_models import ByteTokenizer, train_subword_tokenizer
from iclr24.papers.fusellm import (
    BYTE_LEVEL_MARKER,
    SENTENCEPIECE_MARKER,
    TokenVocab,
    build_vocab_mapping,
    byte_level_alphabet,
    token_edit_distance,
)


def _levenshtein(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def test_byte_level_alphabet_is_gpt2s():
    table = byte_level_alphabet()
    assert len(set(table)) == 256
    assert table[ord(" ")] == BYTE_LEVEL_MARKER and table[ord("a")] == "a"
    assert table[ord("\n")] == "\u010a"  # "Ċ"


def test_byte_vocab_spells_bytes_like_byte_level_bpe():
    texts = ["the grey zorvik hunts two fish.", "x=3;y=x+2;print(y)#5"] * 20
    bpe = TokenVocab.of(train_subword_tokenizer(texts, vocab_size=280, kind="bpe"))
    byte = TokenVocab.of(ByteTokenizer())
    for text in texts[:2]:
        assert "".join(byte.tokens(byte.encode(text))) == "".join(bpe.tokens(bpe.encode(text)))
    assert byte.marker == bpe.marker == BYTE_LEVEL_MARKER
    assert byte.token_to_id[BYTE_LEVEL_MARKER] == ord(" ")


def test_token_vocab_rejects_unknown_tokenizer():
    with pytest.raises(TypeError, match="tokenizer must be"):
        TokenVocab.of(object())
    with pytest.raises(TypeError, match="text must be a str"):
        TokenVocab.of(ByteTokenizer()).encode(b"bytes")
    with pytest.raises(ValueError, match="outside"):
        TokenVocab.of(ByteTokenizer()).tokens([256])


def test_token_edit_distance_strips_markers():
    assert token_edit_distance("\u0120hello", "\u2581hello") == 0
    assert token_edit_distance("\u0120get_", "get") == 1
    assert token_edit_distance("kitten", "sitting") == 3
    with pytest.raises(TypeError):
        token_edit_distance("a", 3)


@settings(max_examples=60)
@given(st.text("abĠ▁c", max_size=8), st.text("abĠ▁c", max_size=8))
def test_token_edit_distance_is_levenshtein_without_markers(a, b):
    strip = lambda s: s.replace("Ġ", "").replace("▁", "")
    assert token_edit_distance(a, b) == _levenshtein(strip(a), strip(b))
    assert token_edit_distance(a, b) == token_edit_distance(b, a)


def test_vocab_mapping_hand_cases():
    tgt = ["Ġthe", "Ġcat", "ca", "t", "Ġdog"]
    m = build_vocab_mapping(["▁the", "▁cats", "cat", "▁do"], tgt, SENTENCEPIECE_MARKER,
                            BYTE_LEVEL_MARKER)
    assert m["▁the"] == "Ġthe"  # marker translated, present: maps to itself
    assert m["▁cats"] == "Ġcat"  # one deletion
    assert m["cat"] == "Ġcat"  # distance 1 to "Ġcat" (id 1) and "ca" (id 2): lowest id
    assert m["▁do"] == "Ġdog"


def test_vocab_mapping_ties_go_to_lowest_target_id():
    m = build_vocab_mapping(["ab"], ["xb", "ax", "ab_"], "▁", "Ġ")
    assert m["ab"] == "xb"  # all at distance 1: the first wins, as the official min()


@settings(max_examples=40)
@given(st.lists(st.text("abcĠ", min_size=1, max_size=5), min_size=1, max_size=6),
       st.lists(st.text("abcĠ", min_size=1, max_size=5), min_size=1, max_size=8, unique=True))
def test_vocab_mapping_is_the_brute_force_argmin(src, tgt):
    m = build_vocab_mapping(src, tgt, "Ġ", "Ġ")
    for s in src:
        best = min(range(len(tgt)), key=lambda i: (_levenshtein(s, tgt[i]), i))
        expected = s if s in tgt else tgt[best]
        assert _levenshtein(s, m[s]) == _levenshtein(s, expected)
        assert m[s] == expected


def test_vocab_mapping_bad_inputs():
    with pytest.raises(TypeError, match="src_vocab"):
        build_vocab_mapping("abc", ["a"])
    with pytest.raises(ValueError, match="tgt_vocab"):
        build_vocab_mapping(["a"], [])
