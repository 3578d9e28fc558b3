"""constraint_attention / sat_features / labels on a tiny byte model and a tiny Llama."""

from __future__ import annotations

import numpy as np
import pytest

from iclr24.kits.language_models import LocalTextModel, OpenAICompatibleClient, trace
from iclr24.papers.sat_probe import (
    SatRecord,
    answer_token_count,
    collect_records,
    constraint_attention,
    is_correct,
    locate_constraint,
    normalize_answer,
    sat_features,
)

PROMPT = "User: Tell me the year the person Xanmopa was born in.\nAssistant: The person was born in"


def test_query_position_is_the_last_prompt_token(byte_lm, one_torch_thread):
    rec = constraint_attention(byte_lm, PROMPT, ["Xanmopa", "year"], completion=" 1957.")
    ids = list(PROMPT.encode())
    assert rec.num_prompt_tokens == len(ids)
    tr = trace(byte_lm, ids + list(b" 1957."))
    s, e = locate_constraint(PROMPT, "Xanmopa", byte_lm.tokenizer)
    t = len(ids)  # trace position of the last prompt token (0 is the start token)
    np.testing.assert_allclose(rec.attention[0], tr.attentions[:, :, t, s + 1:e + 1])
    assert rec.attention[0].shape == (2, 2, len("Xanmopa"))
    assert not np.allclose(rec.attention[0], tr.attentions[:, :, t + 1, s + 1:e + 1])
    # causal attention: the row at T does not depend on the completion
    other = constraint_attention(byte_lm, PROMPT, ["Xanmopa", "year"], completion=" 1900!")
    np.testing.assert_allclose(other.attention[0], rec.attention[0], atol=1e-6)
    np.testing.assert_allclose(other.attention[1], rec.attention[1], atol=1e-6)


def test_completion_logprobs_match_the_text_backend(byte_lm, one_torch_thread):
    rec = constraint_attention(byte_lm, PROMPT, "Xanmopa", completion=" 1957.")
    ref = LocalTextModel(byte_lm).logprobs(PROMPT, " 1957.")
    np.testing.assert_allclose(rec.token_logprobs, ref, atol=1e-5)
    assert rec.confidence(5) == pytest.approx(sum(ref[:5]))  # truncated to |gt| = " 1957"
    assert rec.confidence(99) == pytest.approx(sum(ref))
    with pytest.raises(ValueError, match="n_tokens"):
        rec.confidence(0)


def test_greedy_completion_and_first_logprob(byte_lm, one_torch_thread):
    rec = constraint_attention(byte_lm, PROMPT, "Xanmopa", max_new_tokens=4, stop=())
    greedy = LocalTextModel(byte_lm).generate([PROMPT], 4, temperature=0.0)[0][0]
    assert rec.completion == greedy
    ids = list(PROMPT.encode())
    assert rec.first_logprob == pytest.approx(trace(byte_lm, ids).log_probs[len(ids)].max())
    empty = constraint_attention(byte_lm, PROMPT, "Xanmopa", completion="")
    assert empty.token_logprobs.size == 0
    assert empty.confidence(3) == pytest.approx(rec.first_logprob)


def test_hugging_face_backend_with_grouped_query_attention(hf_lm, one_torch_thread):
    prompt = ("User: Tell me the capital city of the country Burkina Faso.\n"
              "Assistant: The capital city is")
    rec = constraint_attention(hf_lm, prompt, ["Burkina Faso", "capital"], completion=" Paris")
    s, e = rec.spans[0]
    assert e - s >= 2
    assert rec.attention[0].shape == (2, 4, e - s)  # (layers, query heads, constraint tokens)
    ids = hf_lm.tokenizer.encode(prompt.encode())
    tr = trace(hf_lm, ids + hf_lm.tokenizer.encode(b" Paris"))
    np.testing.assert_allclose(rec.attention[0], tr.attentions[:, :, len(ids), s + 1:e + 1],
                               atol=1e-6)
    assert np.all(rec.attention[0] >= 0) and np.all(rec.attention[0] <= 1)


def test_collect_records_matches_single_calls(byte_lm, one_torch_thread):
    prompts = [PROMPT, PROMPT.replace("Xanmopa", "Korita")]
    recs = collect_records(byte_lm, prompts, ["Xanmopa", ["Korita", "year"]], max_new_tokens=3)
    assert [len(r.attention) for r in recs] == [1, 2]
    one = constraint_attention(byte_lm, prompts[1], ["Korita", "year"], max_new_tokens=3)
    assert recs[1].completion == one.completion
    np.testing.assert_allclose(recs[1].attention[1], one.attention[1], atol=1e-6)
    with pytest.raises(ValueError, match="one entry per prompt"):
        collect_records(byte_lm, prompts, ["Xanmopa"])
    with pytest.raises(ValueError, match="does not occur"):
        collect_records(byte_lm, prompts, ["Xanmopa", "Nobody"])


def test_backend_without_attention_is_refused_by_name(byte_lm):
    for backend in (LocalTextModel(byte_lm), OpenAICompatibleClient("http://localhost:1", "m")):
        with pytest.raises(TypeError, match=type(backend).__name__):
            constraint_attention(backend, PROMPT, "Xanmopa", completion=" 1957")
    with pytest.raises(ValueError, match="does not occur in the prompt"):
        constraint_attention(byte_lm, PROMPT, "Michael Jordan", completion=" 1963")
    with pytest.raises(ValueError, match="at least one"):
        constraint_attention(byte_lm, PROMPT, [], completion=" 1963")
    with pytest.raises(ValueError, match="max_new_tokens"):
        constraint_attention(byte_lm, PROMPT, "Xanmopa", max_new_tokens=0)


def _record(att, n_layers=3, n_heads=2):
    arrays = tuple(np.asarray(a, dtype=np.float32).reshape(n_layers, n_heads, -1) for a in att)
    return SatRecord(prompt="p", completion="c", constraints=("a",) * len(arrays),
                     spans=((0, 1),) * len(arrays), attention=arrays,
                     token_logprobs=np.zeros(1), first_logprob=0.0, num_prompt_tokens=1)


def test_sat_features_max_layout_and_layers():
    a = np.arange(3 * 2 * 4, dtype=float).reshape(3, 2, 4) / 100
    rec = _record([a, a[:, :, :1] * 0 + 0.5])
    x = sat_features([rec, rec])
    assert x.shape == (2, 6)
    np.testing.assert_allclose(x[0], a.max(axis=2).ravel(), rtol=1e-6)  # column l*H + h
    assert x[0, 1 * 2 + 1] == pytest.approx(a[1, 1].max())
    np.testing.assert_allclose(sat_features([rec], agg="mean")[0], a.mean(axis=2).ravel(),
                               rtol=1e-6)
    np.testing.assert_allclose(sat_features([rec], layers=[2])[0], a[2].max(axis=1), rtol=1e-6)
    np.testing.assert_allclose(sat_features([rec], constraint=1)[0], 0.5)
    with pytest.raises(ValueError, match="layers"):
        sat_features([rec], layers=[3])
    with pytest.raises(ValueError, match="agg"):
        sat_features([rec], agg="median")
    with pytest.raises(ValueError, match="out of range"):
        sat_features([rec], constraint=2)
    with pytest.raises(ValueError, match="non-empty"):
        sat_features([])
    with pytest.raises(ValueError, match="one model"):
        sat_features([rec, _record([np.zeros((2, 3, 1))], 2, 3)])


@pytest.mark.parametrize(("completion", "answer", "ok"), [
    (" 1963.", "1963", True), ("1963", "1963", True), (" 19634", "1963", False),
    (" Rabatit.", "Rabat", False), (" rabat, the city", "Rabat", True),
    (" Mexico City.", "Mexico City", True), (" Mexico.", "Mexico City", False),
    (" Paris", "Paris.", True), ("", "Paris", False), (" Lyon", "Paris", False)])
def test_is_correct(completion, answer, ok):
    assert is_correct(completion, answer) is ok


def test_normalize_and_answer_tokens(byte_lm):
    assert normalize_answer("  Paris. ") == "paris"
    assert answer_token_count(byte_lm, PROMPT, " 1900.", "1957") == 5  # " 1957" in bytes
    assert answer_token_count(byte_lm, PROMPT, "", "1957") == 5
    with pytest.raises(ValueError, match="answer"):
        answer_token_count(byte_lm, PROMPT, " 1957", " ")
    with pytest.raises(ValueError, match="answer"):
        is_correct(" 1957", ".")
