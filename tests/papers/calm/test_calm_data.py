"""The KV-arithmetic data, the exact-match evaluation and the two-tokenisation batches."""

import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.calm import (
    VOCAB,
    CharVocab,
    char_tokenize,
    encode_examples,
    encode_text_batch,
    exact_match,
    kv_arithmetic_data,
)


def _value(expr: str, values: dict) -> int:
    return eval(re.sub(r"[a-z]+", lambda m: str(values[m.group()]), expr))


@settings(max_examples=15)
@given(st.integers(0, 10_000), st.sampled_from([(0, 9), (0, 99)]), st.sampled_from(["+", "+-"]))
def test_answers_are_correct_and_heldout_keys_absent_from_dc(seed, value_range, ops):
    d = kv_arithmetic_data(30, value_range, (2, 3), 0.2, seed, ops=ops, n_arith=50,
                           n_kv_arith_train=50, n_test=20)
    assert len(d.train_keys) == 6 and len(d.heldout_keys) == 24
    assert set(d.train_keys).isdisjoint(d.heldout_keys)
    assert all(value_range[0] <= v <= value_range[1] for v in d.values.values())
    for split in (d.arith, d.arith_test, d.kv_arith_train, d.kv_arith_test):
        for prompt, answer in split:
            assert prompt.endswith("=") and answer.endswith(";")
            assert set(prompt[:-1]) - set("abcdefghijklmnopqrstuvwxyz0123456789") <= set(ops)
            assert _value(prompt[:-1], d.values) == int(answer[:-1])
    used = {k for p, _ in d.kv_arith_train for k in re.findall(r"[a-z]+", p)}
    tested = {k for p, _ in d.kv_arith_test for k in re.findall(r"[a-z]+", p)}
    assert used <= set(d.train_keys) and tested <= set(d.heldout_keys)
    assert {p[:-1] for p, _ in d.kv_sub} == set(d.keys)
    memorised = {p.rstrip("=?") for p, _ in d.memorisation()}
    assert memorised == set(d.keys) and len(d.memorisation()) == 3 * len(d.keys)
    assert all(3 <= len(k) <= 5 for k in d.keys) and len(set(d.keys)) == len(d.keys)


def test_same_seed_same_data():
    a, b = kv_arithmetic_data(20, seed=3, n_arith=10), kv_arithmetic_data(20, seed=3, n_arith=10)
    assert a == b
    assert a != kv_arithmetic_data(20, seed=4, n_arith=10)


@pytest.mark.parametrize("kwargs, name", [
    ({"n_keys": 0}, "n_keys"), ({"value_range": (5, 2)}, "value_range"),
    ({"value_range": (-1, 3)}, "value_range"), ({"n_operands": (1, 2)}, "n_operands"),
    ({"train_key_frac": 1.0}, "train_key_frac"), ({"train_key_frac": 0.01}, "train_key_frac"),
    ({"ops": "*"}, "ops"), ({"key_length": (0, 3)}, "key_length"),
    ({"key_length": (4, 3)}, "key_length"), ({"key_length": 3}, "key_length"),
    ({"key_length": (1, 1), "n_keys": 30}, "key_length"), ({"number_width": 0}, "number_width"),
    ({"n_context": -1}, "n_context")])
def test_bad_data_arguments(kwargs, name):
    args = {"n_keys": 20, **kwargs}
    with pytest.raises(ValueError, match=name):
        kv_arithmetic_data(**args)


def test_vocab_round_trip_and_errors():
    text = "abc+kq-7=12;x?3;"
    assert VOCAB.decode(VOCAB.encode(text)) == text and len(VOCAB) == 41
    with pytest.raises(ValueError, match="not in the vocabulary"):
        VOCAB.encode("A")
    with pytest.raises(ValueError):
        CharVocab("aa")


def test_encode_examples_masks_the_prompt():
    bos = len(VOCAB)
    x, y = encode_examples([("ab=", "7;"), ("a+b=", "12;")], bos)
    assert x.shape == y.shape == (2, 7)
    assert x[0, 0] == bos and VOCAB.decode(x[0, 1:5]) == "ab=7"
    assert y[0].tolist() == [-100] * 3 + VOCAB.encode("7;") + [-100] * 2
    assert y[1].tolist() == [-100] * 4 + VOCAB.encode("12;")
    _, full = encode_examples([("ab=", "7;")], bos, train_on_inputs=True)
    assert full[0].tolist() == VOCAB.encode("ab=7;")


def test_exact_match_is_greedy_exact_match():
    bos = len(VOCAB)
    examples = [("ab=", "7;"), ("c+d=", "12;")]
    _, labels = encode_examples(examples, bos)

    def oracle(x, wrong_last=False):
        logits = torch.zeros(*x.shape, len(VOCAB))
        target = labels.clamp(min=0)
        logits.scatter_(2, target[..., None], 1.0)
        if wrong_last:  # the terminator of row 1 is wrong
            logits[1, 6] = 0
            logits[1, 6, VOCAB.index["0"]] = 1.0
        return logits

    assert exact_match(oracle, examples, bos) == [True, True]
    assert exact_match(lambda x: oracle(x, True), examples, bos) == [True, False]


def test_exact_match_does_not_depend_on_batching():
    from iclr24.papers.calm import char_model

    model = char_model(16, 1, 2, 0)
    d = kv_arithmetic_data(20, seed=1, n_arith=30, n_test=5)
    assert exact_match(model, d.arith, len(VOCAB)) == exact_match(model, d.arith, len(VOCAB),
                                                                  batch_size=7)


def test_text_batch_ends_and_mask():
    def pairs(text):  # a toy tokenizer: two characters per token
        ids = VOCAB.encode(text)
        return [(ids[i], min(i + 2, len(text))) for i in range(0, len(text), 2)]

    batch = encode_text_batch([("abc?", "7;")], pairs, 50, char_tokenize(), 41)
    # anchor tokens "ab","c?","7;": positions read 0, 2, 4 characters; labels on "7;"
    assert batch.ends[0].tolist() == [0, 2, 4]
    assert batch.labels[0].tolist() == [-100, -100, VOCAB.index["7"]]
    assert batch.aug_ends[0].tolist() == [0, 1, 2, 3, 4, 5]
    assert batch.cross_mask[0].tolist() == [[True] + [False] * 5, [True] * 3 + [False] * 3,
                                            [True] * 5 + [False]]
    with pytest.raises(ValueError):
        encode_text_batch([], pairs, 50, char_tokenize(), 41)


def test_fixed_layout_keys_fill_the_slots_of_padded_numbers():
    d = kv_arithmetic_data(40, (0, 9), (2, 2), 0.2, 5, n_arith=50, n_kv_arith_train=50,
                           n_test=20, key_length=(3, 3), number_width=3)
    assert all(len(k) == 3 for k in d.keys)
    for prompt, answer in d.arith + d.arith_test:
        operands = re.split(r"[+-]", prompt[:-1])
        assert len(operands) == 2 and all(len(o) == 3 and o.isdigit() for o in operands)
        plain = re.sub(r"\d+", lambda m: str(int(m.group())), prompt[:-1])
        assert eval(plain) == int(answer[:-1])
        assert answer == "0;" or not answer.lstrip("-").startswith("0")  # answers unpadded
    # a key expression and a numeric one have the same layout
    assert {len(p) for p, _ in d.kv_arith_test} == {len(p) for p, _ in d.arith_test} == {8}


def test_in_context_lines_hold_values_and_leave_the_other_splits_alone():
    base = kv_arithmetic_data(30, (0, 9), (2, 3), 0.2, 7, n_arith=40, n_kv_arith_train=40,
                              n_test=10)
    d = kv_arithmetic_data(30, (0, 9), (2, 3), 0.2, 7, n_arith=40, n_kv_arith_train=40,
                           n_test=10, n_context=50)
    assert base.kv_context == [] and len(d.kv_context) == 50
    for split in ("keys", "values", "arith", "arith_test", "kv_arith_train", "kv_arith_test",
                  "kv_arith_train_keys_test"):
        assert getattr(d, split) == getattr(base, split)
    assert d.memorisation() == base.memorisation() + d.kv_context
    followed = 0
    for prompt, line in d.kv_context:
        assert prompt == "" and line.endswith(";") and "=" not in line and "?" not in line
        items = re.split(r"[+-]", line[:-1])
        assert 2 <= len(items) <= 3
        for item in items:
            key, digits = re.fullmatch(r"([a-z]+)(\d*)", item).groups()
            assert key in d.values
            if digits:
                followed += 1
                assert int(digits) == d.values[key]
    assert 0 < followed < sum(len(re.split(r"[+-]", line)) for _, line in d.kv_context)
