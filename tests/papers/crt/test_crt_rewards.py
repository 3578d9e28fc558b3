"""CRT's terminal reward and the official per-token reward shaping."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr24.papers.crt import CRTCoefs, crt_terminal_reward, last_token_index, shaped_token_rewards


def test_terminal_reward_formula_and_signs():
    c = CRTCoefs(toxicity=1.0, bleu=-0.5, cos=-1.0, gibberish=2.0)
    got = crt_terminal_reward([0.9, 0.1], [0.2, 1.0], [0.4, 0.0], [0.0, 0.5], c)
    assert got == pytest.approx([0.9 - 0.1 - 0.4, 0.1 - 0.5 + 1.0])
    # more similar to the history -> less reward (novelty = -similarity)
    a, b = crt_terminal_reward([0.5, 0.5], [0.1, 0.9], [0.1, 0.9])
    assert a > b


def test_absent_terms_and_clip():
    assert crt_terminal_reward([0.3]) == pytest.approx([0.3])
    big = crt_terminal_reward([1.0], gibberish=[100.0], coefs=CRTCoefs(gibberish=1.0))
    assert big == pytest.approx([10.0])


def test_terminal_reward_bad_inputs():
    with pytest.raises(ValueError, match="toxicity"):
        crt_terminal_reward([1.5])
    with pytest.raises(ValueError, match="selfbleu"):
        crt_terminal_reward([0.5, 0.5], [0.1])
    with pytest.raises(TypeError, match="coefs"):
        crt_terminal_reward([0.5], coefs={"bleu": -1})
    with pytest.raises(ValueError, match="<= 0"):
        CRTCoefs(bleu=0.5)
    with pytest.raises(ValueError, match="clip"):
        CRTCoefs(clip=0.0)


@pytest.mark.parametrize("term", ["toxicity", "selfbleu", "cos", "gibberish"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_scores_are_refused_not_turned_into_a_nan_reward(term, bad):
    args = {"toxicity": [0.2, 0.4], "selfbleu": [0.1, 0.2], "cos": [0.3, 0.1],
            "gibberish": [0.0, 0.5]}
    args[term] = [args[term][0], bad]
    with pytest.raises(ValueError, match=f"{term} must be finite.*index 1"):
        crt_terminal_reward(**args, coefs=CRTCoefs(gibberish=1.0))


def test_terminal_reward_sits_on_the_last_generated_token():
    logp = torch.zeros(3, 5)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 1, 1, 1, 0]])
    r = shaped_token_rewards(logp, logp, mask, [1.0, 2.0, 3.0], kl_coef=0.1, ent_coef=0.0)
    want = torch.zeros(3, 5)
    want[0, 2], want[1, 4], want[2, 3] = 1.0, 2.0, 3.0  # the last 1 of each row (EOS included)
    assert torch.equal(r, want)
    assert last_token_index(mask).tolist() == [2, 4, 3]


def test_kl_and_entropy_terms_per_token():
    logp = torch.tensor([[-1.0, -2.0, -0.5, -3.0]])
    ref = torch.tensor([[-1.5, -1.0, -0.5, -9.0]])
    mask = torch.tensor([[1, 1, 1, 0]])
    r = shaped_token_rewards(logp, ref, mask, [0.7], kl_coef=0.2, ent_coef=0.01)
    # r_t = -β (logp - ref) + λ_E (-logp), terminal on t = 2, nothing off the mask
    want = [-0.2 * 0.5 + 0.01, -0.2 * -1.0 + 0.02, 0.0 + 0.005 + 0.7, 0.0]
    assert r[0].tolist() == pytest.approx(want)


def test_short_rows_get_no_reward():
    logp = -torch.ones(2, 4)
    mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 0]])
    r = shaped_token_rewards(logp, logp, mask, [5.0, 5.0], ent_coef=0.1)
    assert torch.equal(r[0], torch.zeros(4))  # two generated tokens: zero shaped reward
    assert r[1, 2] == pytest.approx(5.1)


def test_shaping_bad_inputs():
    x = torch.zeros(2, 3)
    with pytest.raises(TypeError, match="logp"):
        shaped_token_rewards(np.zeros((2, 3)), x, x, [0, 0])
    with pytest.raises(ValueError, match="share"):
        shaped_token_rewards(x, torch.zeros(2, 4), x, [0, 0])
    with pytest.raises(ValueError, match="mask"):
        shaped_token_rewards(x, x, torch.ones(3, 3), [0, 0])
    with pytest.raises(ValueError, match="left-aligned"):
        shaped_token_rewards(x, x, torch.tensor([[0, 1, 1], [1, 0, 0]]), [0, 0])
    with pytest.raises(ValueError, match="terminal"):
        shaped_token_rewards(x, x, torch.ones(2, 3), [0, 0, 0])
    with pytest.raises(ValueError, match="kl_coef"):
        shaped_token_rewards(x, x, torch.ones(2, 3), [0, 0], kl_coef=-1.0)
