"""LocalTextModel (text in, text out over a local backend) and nucleus sampling."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr24.kits.language_models import CausalTransformer, TransformerConfig, TransformerLM
from iclr24.kits.language_models.openai_client import OpenAICompatibleClient
from iclr24.kits.language_models.text_backend import LocalTextModel, TextBackend, nucleus_sample


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    model = CausalTransformer(TransformerConfig(d_model=32, n_layers=1, n_heads=2,
                                                context_length=64))
    return TransformerLM(model)


def test_both_backends_satisfy_the_protocol(tiny):
    assert isinstance(LocalTextModel(tiny), TextBackend)
    assert isinstance(OpenAICompatibleClient("http://127.0.0.1:1/v1", "m"), TextBackend)


def test_greedy_generation_matches_the_token_level_generator(tiny):
    tm = LocalTextModel(tiny)
    ids = tiny.generate(list(b"abc"), 12, temperature=0.0)
    expect = tiny.tokenizer.decode(ids).decode("utf-8", errors="replace")
    assert tm.generate(["abc"], 12) == [[expect]]
    out = tm.generate(["abc", "xy", "def"], 12)  # "abc" and "def" share a lockstep session
    assert out[0] == [expect] and len(out) == 3


def test_sampling_is_seeded_per_row_and_stops_cut_the_text(tiny):
    tm = LocalTextModel(tiny)
    a = tm.generate(["ab", "xyz"], 10, temperature=1.0, n=3, seed=5)
    b = tm.generate(["ab"], 10, temperature=1.0, n=3, seed=5)
    assert a[0] == b[0] and len(a[1]) == 3
    assert a != tm.generate(["ab", "xyz"], 10, temperature=1.0, n=3, seed=6)
    full = tm.generate(["q"], 20, temperature=1.0, seed=1)[0][0]
    if len(full) > 3:
        cut = tm.generate(["q"], 20, temperature=1.0, seed=1, stop=[full[3]])[0][0]
        assert cut == full[:full.index(full[3])]


def test_logprobs_are_the_backend_rows(tiny):
    tm = LocalTextModel(tiny)
    lp = tiny.log_probs(list(b"hello world"))
    got = tm.logprobs("hello ", "world")
    assert np.allclose(got, [lp[6 + k, c] for k, c in enumerate(b"world")])
    assert sum(got) < 0


def test_nucleus_sampling_keeps_the_top_p_set():
    lp = np.log(np.array([0.5, 0.3, 0.2]))
    rng = np.random.default_rng(0)
    draws = np.array([nucleus_sample(lp, 1.0, 0.6, rng) for _ in range(4000)])
    assert set(draws) == {0, 1}
    assert abs((draws == 0).mean() - 0.5 / 0.8) < 0.03
    assert nucleus_sample(lp, 0.0, 1.0, rng) == 0
    assert {nucleus_sample(lp, 1.0, 1e-6, rng) for _ in range(50)} == {0}


def test_bad_input(tiny):
    tm = LocalTextModel(tiny)
    with pytest.raises(ValueError, match="context_length=64"):
        tm.generate(["a" * 60], 10)
    with pytest.raises(ValueError, match="context_length"):
        tm.logprobs("a" * 40, "b" * 30)
    with pytest.raises(ValueError, match="n must"):
        tm.generate(["a"], 3, n=0)
    with pytest.raises(ValueError, match="top_p"):
        tm.generate(["a"], 3, top_p=0)
    with pytest.raises(TypeError, match="prompts"):
        tm.generate([b"a"], 3)
    with pytest.raises(TypeError, match="next-token backend"):
        LocalTextModel(object())
    with pytest.raises(ValueError, match="continuation"):
        tm.logprobs("a", "")
