"""KVOracle: exact key -> value features in m_A's place (the KV claims' positive control)."""

import pytest
import torch

from iclr24.papers.calm import CALM, VOCAB, KVOracle, char_model, encode_examples

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BOS = len(VOCAB)


def _ids(text: str) -> torch.Tensor:
    return torch.tensor([[BOS, *VOCAB.encode(text)]])


def test_features_flag_each_key_at_its_last_letter_with_its_value():
    oracle = KVOracle({"abc": 3, "kqz": 7, "ab": 1}, (0, 9))
    assert oracle.config.d_model == len(VOCAB) + 1 + 10
    f = oracle.features(_ids("abc+kqz=x"))
    assert f.shape == (1, 10, oracle.config.d_model)
    tokens, value = f[0, :, :len(VOCAB) + 1], f[0, :, len(VOCAB) + 1:]
    assert torch.equal(tokens.argmax(-1), _ids("abc+kqz=x")[0]) and torch.all(tokens.sum(-1) == 1)
    # positions: 0 BOS, 1 a, 2 b (key "ab"), 3 c (key "abc"), 4 +, 5 k, 6 q, 7 z (key), 8 =, 9 x
    flagged = {j: int(value[j].argmax()) for j in range(10) if value[j].sum() > 0}
    assert flagged == {2: 1, 3: 3, 7: 7}
    assert torch.all(value.sum(-1) <= 1)
    # a letter run that merely ends in a key is not that key
    assert oracle.features(_ids("zabc"))[0, :, len(VOCAB) + 1:].sum() == 0


def test_value_offset_by_the_range_low_end():
    oracle = KVOracle({"abc": 12}, (10, 14))
    f = oracle.features(_ids("abc"))[0, 3, len(VOCAB) + 1:]
    assert f.tolist() == [0, 0, 1, 0, 0]


def test_calm_reads_the_features_through_the_blocks():
    oracle = KVOracle({"abc": 3, "kqz": 7}, (0, 9), n_layers=2)
    anchor = char_model(32, 2, 4, 0)
    x, _ = encode_examples([("abc+kqz=", "10;")], BOS)
    calm = CALM(anchor, oracle, [0, 1], [0, 1])
    states = calm.augment_states(x)
    assert len(states) == 2 and all(torch.equal(s, oracle.features(x)) for s in states)
    torch.testing.assert_close(calm(x).logits, anchor(x), rtol=0, atol=0)  # zero W_O
    assert calm.num_trainable_parameters > 0


@pytest.mark.parametrize("kwargs, error, name", [
    ({"values": {}}, TypeError, "values"),
    ({"values": [("abc", 1)]}, TypeError, "values"),
    ({"values": {"abc": 12}}, ValueError, "value_range"),
    ({"values": {"aBc": 1}}, ValueError, "values keys"),
    ({"values": {"ab1": 1}}, ValueError, "values keys"),
    ({"values": {"abc": 1.0}}, ValueError, "values"),
    ({"value_range": (5, 1)}, ValueError, "value_range"),
    ({"value_range": [0, 9]}, ValueError, "value_range"),
    ({"n_layers": 0}, ValueError, "n_layers"),
])
def test_bad_arguments(kwargs, error, name):
    args = {"values": {"abc": 1}, "value_range": (0, 9), **kwargs}
    with pytest.raises(error, match=name):
        KVOracle(**args)


def test_bad_ids():
    oracle = KVOracle({"abc": 1}, (0, 9))
    with pytest.raises(TypeError, match="ids"):
        oracle.features(torch.zeros(1, 3))
    with pytest.raises(ValueError, match="ids must lie"):
        oracle.features(torch.tensor([[BOS + 1]]))
