"""locate_constraint: character offsets, leading spaces, multi-token constraints."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iclr24.kits.language_models import ByteTokenizer, HFTokenizer
from iclr24.papers.sat_probe import locate_constraint, token_char_spans

PROMPT = ("User: Tell me the capital city of the country Burkina Faso.\n"
          "Assistant: The capital city is")


def test_byte_tokenizer_span_is_the_constraint_bytes():
    s, e = locate_constraint(PROMPT, "Burkina Faso", ByteTokenizer())
    i = PROMPT.index(" Burkina") + 1
    assert (s, e) == (i, i + len("Burkina Faso"))


def test_non_ascii_characters_map_to_their_bytes():
    prompt = "Tell me about Curaçao now"
    ids, spans = token_char_spans(prompt, ByteTokenizer())
    assert len(ids) == len(prompt.encode()) == len(spans)
    s, e = locate_constraint(prompt, "Curaçao", ByteTokenizer())
    assert bytes(ids[s:e]).decode() == "Curaçao"


def test_multi_token_constraint_with_leading_space_is_located(subword_tokenizer):
    tk = subword_tokenizer
    toks = tk.tokens(PROMPT)
    s, e = locate_constraint(PROMPT, "Burkina Faso", tk)
    assert e - s >= 2  # split into several BPE tokens
    assert toks[s].startswith("Ġ")  # the first one carries the leading space
    assert tk.decode(tk.encode(PROMPT)[s:e]).decode() == " Burkina Faso"
    assert toks[e] == "."  # the neighbours are left out


def test_hf_offsets_agree_with_subword_spans(subword_tokenizer, hf_fast_tokenizer):
    for tok in (hf_fast_tokenizer, HFTokenizer(hf_fast_tokenizer)):
        ids, _ = token_char_spans(PROMPT, tok)
        assert ids == subword_tokenizer.encode(PROMPT)
        assert locate_constraint(PROMPT, "Burkina Faso", tok) == \
            locate_constraint(PROMPT, "Burkina Faso", subword_tokenizer)


def test_occurrence_after_a_space_is_preferred():
    prompt = "Parisian life: the city Paris"
    s, _ = locate_constraint(prompt, "Paris", ByteTokenizer())
    assert s == prompt.rindex("Paris")
    assert locate_constraint("Paris is big", "Paris", ByteTokenizer()) == (0, 5)  # at the start


def test_bad_inputs():
    with pytest.raises(ValueError, match="does not occur in the prompt"):
        locate_constraint(PROMPT, "Ouagadougou", ByteTokenizer())
    with pytest.raises(ValueError, match="non-empty"):
        locate_constraint(PROMPT, " ", ByteTokenizer())
    with pytest.raises(TypeError, match="constraint must be a str"):
        locate_constraint(PROMPT, 3, ByteTokenizer())
    with pytest.raises(TypeError, match="tokenizer must be"):
        locate_constraint(PROMPT, "Faso", object())


words = st.lists(st.text(alphabet="abcdefgXYZ", min_size=1, max_size=6), min_size=2,
                 max_size=8)


@given(words, st.data())
def test_span_decodes_to_the_constraint(ws, data):
    prompt = " ".join(ws)
    i = data.draw(st.integers(0, len(ws) - 1))
    j = data.draw(st.integers(i + 1, len(ws)))
    constraint = " ".join(ws[i:j])
    s, e = locate_constraint(prompt, constraint, ByteTokenizer())
    found = bytes(ByteTokenizer().encode(prompt.encode())[s:e]).decode()
    assert found == constraint
    # the first match preceded by a space (or at the start) is the one located
    starts = [k for k in range(len(prompt)) if prompt.startswith(constraint, k)
              and (k == 0 or prompt[k - 1] == " ")]
    if starts and starts[0] > 0:
        assert s == prompt.find(" " + constraint) + 1
