"""MathEvaluator over a scripted backend, the synthetic sources, MixtureSampler and
continue_pretraining."""

import numpy as np
import pytest

from iclr24.kits.language_models import ArithmeticProblem, arithmetic_problems
from iclr24.papers.llemma import (
    LLEMMA_WEIGHTS,
    MINERVA_ARITHMETIC_FEWSHOT,
    MathEvaluator,
    MixtureSampler,
    continue_pretraining,
    extract_final_answer,
    maj_at_k,
    minerva_prompt,
    python_solution,
    run_python,
    solution_steps,
    worked_solution,
)


class Scripted:
    """A TextBackend that answers from a table {prompt suffix: [completions]}."""

    supports_generate = True
    supports_logprobs = False

    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def generate(self, prompts, max_new_tokens, *, temperature=0.0, top_p=1.0, n=1, stop=None,
                 seed=None):
        self.calls.append({"n": n, "temperature": temperature, "stop": stop})
        out = []
        for p in prompts:
            key = next(k for k in self.answers if p.endswith(k))
            out.append(list(self.answers[key])[:n])
        return out


def _fa(x):
    return f" {x} = {x}.\nFinal Answer: The final answer is ${x}$. "


def test_prompt_layout():
    p = minerva_prompt("What is 1 + 1?", "EX")
    assert p == "EX\n\nProblem:\nWhat is 1 + 1?\n\nSolution:"
    assert minerva_prompt("Q", "").startswith("Problem:\nQ")
    assert minerva_prompt("Q", tool="python").endswith("Solution:\n```python\n")
    assert MINERVA_ARITHMETIC_FEWSHOT.count("I hope it is correct.") == 4
    assert extract_final_answer(MINERVA_ARITHMETIC_FEWSHOT) == "$81$"


def test_evaluator_votes_over_samples():
    lm = Scripted({"What is 2 + 2?\n\nSolution:": [_fa(4), _fa(5), _fa(4), "garbage"],
                   "What is 3 * 3?\n\nSolution:": [_fa(8), _fa(8), _fa(9), _fa("\\frac{18}{2}")]})
    ev = MathEvaluator(lm, "", k=4, temperature=0.6, top_p=0.95)
    df = ev.evaluate([("What is 2 + 2?", "4"), ArithmeticProblem("What is 3 * 3?", "3 * 3", 9)],
                     ks=[1, 2, 4])
    assert list(df.acc) == [1, 0] and list(df.n_invalid) == [1, 0]
    assert df.pass_rate.tolist() == [0.5, 0.5]  # 9 and 18/2 are one group
    assert df["acc@1"].tolist() == [1, 0] and df["acc@2"].tolist() == [1, 0]
    assert lm.calls[0]["stop"][0] == "I hope it is correct." and lm.calls[0]["n"] == 4


def test_evaluator_python_tool():
    lm = Scripted({"```python\n": ["x = 6 * 7\nprint(x)\n", "print(1/0)\n"]})
    ev = MathEvaluator(lm, "", k=2, temperature=0.6, tool="python", timeout=5.0)
    df = ev.evaluate([("What is 6 * 7?", "42")])
    assert df.answers[0] == ["42", "[invalidanswer]"] and df.acc[0] == 1
    assert df.pass_rate[0] == 0.5


def test_evaluator_bad_input():
    lm = Scripted({})
    with pytest.raises(ValueError, match="k > 1 needs temperature > 0"):
        MathEvaluator(lm, k=4)
    with pytest.raises(ValueError, match="tool must be"):
        MathEvaluator(lm, tool="lean")
    with pytest.raises(TypeError, match="lm must be a TextBackend"):
        MathEvaluator(object())
    with pytest.raises(ValueError, match="problems must be non-empty"):
        MathEvaluator(lm).evaluate([])
    with pytest.raises(TypeError, match=r"problems\[0\]"):
        MathEvaluator(lm).evaluate([42])
    with pytest.raises(ValueError, match="ks must be ints"):
        maj_at_k(["1"], "1", [2])


def test_solution_steps_follow_precedence():
    assert solution_steps("37 * 24 + 5") == [("37 * 24", 888), ("888 + 5", 893)]
    assert solution_steps("2 + 3 * 4 - 1") == [("3 * 4", 12), ("2 + 12", 14), ("14 - 1", 13)]
    for p in arithmetic_problems(50, seed=3):
        assert solution_steps(p.expression)[-1][1] == p.answer
        assert extract_final_answer(worked_solution(p)) == f"${p.answer}$"
    with pytest.raises(ValueError, match="expression must be"):
        solution_steps("5")


def test_python_solutions_compute_the_answer():
    p = arithmetic_problems(1, seed=5, n_terms=(3, 3))[0]
    res = run_python(python_solution(p) + "\nprint(solve())\n")
    assert res.error is None and res.stdout.strip() == str(p.answer)


def test_mixture_sampler_proportions_and_epochs():
    s = MixtureSampler({"a": ["x"] * 3, "b": ["y1", "y2"], "c": ["z"]}, {"a": 2, "b": 1, "c": 0},
                       seed=0)
    names = [s.sample()[0] for _ in range(3000)]
    assert "c" not in names
    assert abs(names.count("a") / 3000 - 2 / 3) < 0.03
    s2 = MixtureSampler({"b": ["y1", "y2"]}, {"b": 1.0}, seed=1)
    first = sorted(s2.sample()[1] for _ in range(2))
    assert first == ["y1", "y2"]  # each epoch visits every document once


def test_mixture_sampler_is_seeded_and_streams_bytes():
    src = {"a": ["alpha"], "b": ["beta"]}
    s1 = MixtureSampler(src, {"a": 1, "b": 1}, seed=4).token_stream(200)
    s2 = MixtureSampler(src, {"a": 1, "b": 1}, seed=4).token_stream(200)
    assert s1 == s2 and len(s1) == 200
    assert s1 != MixtureSampler(src, {"a": 1, "b": 1}, seed=5).token_stream(200)


def test_mixture_sampler_bad_input():
    with pytest.raises(ValueError, match="sources must be a non-empty mapping"):
        MixtureSampler({}, {})
    with pytest.raises(ValueError, match="unknown sources"):
        MixtureSampler({"a": ["x"]}, {"b": 1})
    with pytest.raises(ValueError, match="must not all be zero"):
        MixtureSampler({"a": ["x"]}, {"a": 0})
    with pytest.raises(ValueError, match=r"weights\['a'\] must be a number >= 0"):
        MixtureSampler({"a": ["x"]}, {"a": -1})
    with pytest.raises(ValueError, match="is empty but has weight"):
        MixtureSampler({"a": []}, {"a": 1})


def test_official_weights():
    total = sum(LLEMMA_WEIGHTS.values())
    general = LLEMMA_WEIGHTS["general_text"] + LLEMMA_WEIGHTS["general_code"]
    assert general / total == pytest.approx(0.05, abs=1e-4)
    assert LLEMMA_WEIGHTS["arxiv"] / LLEMMA_WEIGHTS["code"] == 2


@pytest.mark.usefixtures("one_torch_thread")
def test_continue_pretraining_lowers_loss_on_the_mixture():
    import torch

    from iclr24.kits.language_models import CausalTransformer, TransformerConfig

    torch.manual_seed(0)
    model = CausalTransformer(TransformerConfig(d_model=32, n_layers=1, n_heads=2,
                                                context_length=64))
    sampler = MixtureSampler({"a": ["abcabcabc"], "b": ["xyzxyz"]}, {"a": 1, "b": 1}, seed=0)
    rep = continue_pretraining(model, sampler, steps=40, lr=3e-3, batch_size=8, seq_len=32)
    assert np.mean(rep.losses[-5:]) < 0.5 * np.mean(rep.losses[:5])
    assert set(rep.document_counts) == {"a", "b"} and sum(rep.token_shares.values()) == \
        pytest.approx(1.0)
    with pytest.raises(TypeError, match="lm must be a CausalTransformer"):
        continue_pretraining(object(), sampler, 1)
    with pytest.raises(ValueError, match="steps must be a positive int"):
        continue_pretraining(model, sampler, 0)
