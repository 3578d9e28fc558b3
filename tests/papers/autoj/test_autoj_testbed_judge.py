"""Taxonomy, synthetic testbed, teacher judgments, the judge harness and the tiny models."""

import math

import numpy as np
import pytest

from iclr24.papers.autoj import (
    KIND_QUALITY,
    SCENARIO_GROUPS,
    SCENARIOS,
    TESTBED_SCENARIOS,
    GenerativeJudge,
    TinyJudgeConfig,
    build_prompt,
    judge_tokenizer,
    make_bon_testbed,
    make_judge_sft_examples,
    make_judge_testbed,
    make_task,
    model_chat_format,
    new_tiny_lm,
    pairwise_judgment,
    parse_pairwise_verdict,
    parse_rating,
    rating_for_quality,
    scenario_group,
    train_reward_model,
)


def test_taxonomy_has_58_scenarios_in_8_groups():
    assert len(SCENARIO_GROUPS) == 8 and len(SCENARIOS) == 58 == len(set(SCENARIOS))
    sizes = {g: len(v) for g, v in SCENARIO_GROUPS.items()}
    assert sizes == {"Summarization": 3, "Exam Questions": 3, "Code": 5, "Rewriting": 5,
                     "Creative Writing": 9, "Functional Writing": 10,
                     "General Communication": 12, "NLP Tasks": 11}
    assert scenario_group("paraphrasing") == "Rewriting"
    assert all(s in SCENARIOS for s in TESTBED_SCENARIOS)
    with pytest.raises(ValueError, match="scenario"):
        scenario_group("poetry")


def test_testbed_labels_follow_quality_and_are_balanced():
    pairs = make_judge_testbed(100, seed=3)
    assert len(pairs) == 600
    for p in pairs:
        assert p.quality_1 == KIND_QUALITY[p.kind_1] and p.quality_2 == KIND_QUALITY[p.kind_2]
        want = 2 if abs(p.quality_1 - p.quality_2) < 0.25 else (0 if p.quality_1 > p.quality_2
                                                                else 1)
        assert p.label == want
        if p.kind_1 == "correct":
            assert p.response_1 == p.reference
        if p.kind_2 == "empty":
            assert p.response_2 == ""
        if p.kind_1 == "near_miss":
            assert p.response_1 != p.reference
    shares = np.bincount([p.label for p in pairs], minlength=3) / len(pairs)
    assert 0.33 < shares[0] < 0.47 and 0.33 < shares[1] < 0.47 and 0.14 < shares[2] < 0.27
    s = pairs[0].swapped()
    assert (s.response_1, s.response_2) == (pairs[0].response_2, pairs[0].response_1)
    assert s.label == {0: 1, 1: 0, 2: 2}[pairs[0].label] and s.swapped() == pairs[0]
    assert make_judge_testbed(5, seed=3) == make_judge_testbed(5, seed=3)  # deterministic


def test_tasks_have_exact_references():
    rng = np.random.default_rng(0)
    for _ in range(30):
        t = make_task("math_reasoning", rng)
        terms = t.query.split("is ")[1].split("?")[0].split(" + ")
        assert int(t.reference) == sum(map(int, terms))
        t = make_task("paraphrasing", rng)
        assert t.reference == t.query.split("'")[1][::-1]
        t = make_task("ranking", rng)
        nums = [int(x) for x in t.query.split(": ")[1].split()]
        assert t.reference == " ".join(map(str, sorted(nums)))
        t = make_task("keywords_extraction", rng)
        words = t.query.split(": ")[1].split()
        assert t.reference == " ".join(w for w in words if w[0].isupper())
        assert all(m != t.reference for m in t.near_misses)
    with pytest.raises(ValueError, match="scenario"):
        make_task("poetry", rng)
    with pytest.raises(ValueError, match="n_per_scenario"):
        make_judge_testbed(0)
    with pytest.raises(ValueError, match="scenarios"):
        make_judge_testbed(2, scenarios=["poetry"])


def test_teacher_judgments_parse_to_the_label():
    pairs = make_judge_testbed(20, seed=1)
    for p in pairs:
        assert parse_pairwise_verdict(pairwise_judgment(p)) == p.label
        assert parse_pairwise_verdict(pairwise_judgment(p.swapped())) == p.swapped().label
    assert [rating_for_quality(q) for q in (0.0, 0.5, 1.0)] == [1, 6, 10]
    ex = make_judge_sft_examples(pairs, swap=True)
    assert len(ex) == 2 * len(pairs)
    assert len(make_judge_sft_examples(pairs, swap=False)) == len(pairs)
    single = make_judge_sft_examples(pairs, "single")
    assert len(single) == 2 * len(pairs)
    assert parse_rating(single[0][1]) == rating_for_quality(pairs[0].quality_1)
    assert single[0][0].startswith("[INST] Write critiques")


def test_sft_filter_keeps_only_judgments_agreeing_with_the_label():
    pairs = make_judge_testbed(3, scenarios=["ranking"], seed=2)
    wrong = {0: "Response 2", 1: "Tie", 2: "Response 1"}
    texts = [f"So, the final decision is {wrong[p.label]}" for p in pairs]
    texts[0] = pairwise_judgment(pairs[0])
    kept = make_judge_sft_examples(pairs, swap=False, judgments=texts)
    assert len(kept) == 1 and kept[0][1].strip() == texts[0]
    with pytest.raises(ValueError, match="judgments"):
        make_judge_sft_examples(pairs, swap=False, judgments=texts[:1])
    with pytest.raises(ValueError, match="swap"):
        make_judge_sft_examples(pairs, swap=True, judgments=texts)


class ScriptedBackend:
    """A text backend that answers from a rule over the prompt (records every prompt)."""

    supports_generate = True
    supports_logprobs = False

    def __init__(self, rule):
        self.rule, self.prompts = rule, []

    def generate(self, prompts, max_new_tokens, *, temperature=0.0, top_p=1.0, n=1, stop=None,
                 seed=None):
        assert temperature == 0.0  # the judge decodes greedily
        self.prompts.extend(prompts)
        return [[self.rule(p)] for p in prompts]

    def logprobs(self, prompt, continuation):
        raise ValueError("no logprobs")


def _first_response(prompt):
    return prompt.split("[Response 1]: ")[1].split("\n")[0]


def test_judge_maps_the_swapped_verdict_back():
    # always prefers the response that says "good", wherever it sits
    judge = GenerativeJudge(ScriptedBackend(lambda p: "So, the final decision is Response 1"
                                            if _first_response(p) == "good" else
                                            "So, the final decision is Response 2"), 16)
    j = judge.compare("q", "good", "bad")
    assert (j.verdict, j.verdict_swapped, j.consistent) == (0, 0, True)
    j = judge.compare("q", "bad", "good")
    assert (j.verdict, j.verdict_swapped, j.consistent) == (1, 1, True)
    # a positional judge (always Response 1) is inconsistent
    pos = GenerativeJudge(ScriptedBackend(lambda p: "So, the final decision is Response 1"), 16)
    j = pos.compare("q", "good", "bad")
    assert (j.verdict, j.verdict_swapped, j.consistent) == (0, 1, False)
    assert pos.compare("q", "a", "b", swap=False).verdict_swapped is None


def test_judge_counts_unparsed_and_primes():
    backend = ScriptedBackend(lambda p: " Response 2" if p.endswith("is") else "I cannot.")
    judge = GenerativeJudge(backend, 8)
    js = judge.compare_many(["q1", "q2"], ["a", "b"], ["c", "d"])
    assert all(j.verdict == -1 and j.consistent is False for j in js)
    assert judge.stats.pairwise_requests == 4 and judge.stats.unparsed_verdicts == 4
    assert judge.stats.verdict_parse_rate == 0
    primed = GenerativeJudge(backend, 8, answer_prefix="So, the final decision is")
    j = primed.compare("q", "a", "b")
    assert j.text == "So, the final decision is Response 2" and j.verdict == 1
    rates = GenerativeJudge(ScriptedBackend(lambda p: "ok. Rating: [[7]]"), 8)
    r = rates.rate_many(["q", "q"], ["x", "y"])
    assert [x.rating for x in r] == [7.0, 7.0] and rates.stats.rating_parse_rate == 1
    bad = GenerativeJudge(ScriptedBackend(lambda p: "no rating"), 8).rate("q", "x")
    assert math.isnan(bad.rating) and not bad.parsed


def test_judge_bad_inputs():
    with pytest.raises(TypeError, match="lm"):
        GenerativeJudge(object())
    backend = ScriptedBackend(lambda p: "")
    with pytest.raises(ValueError, match="max_new_tokens"):
        GenerativeJudge(backend, 0)
    with pytest.raises(ValueError, match="chat_format"):
        GenerativeJudge(backend, 4, chat_format="vicuna")
    judge = GenerativeJudge(backend, 4)
    with pytest.raises(ValueError, match="responses_2"):
        judge.compare_many(["q"], ["a"], [])
    with pytest.raises(TypeError, match="queries"):
        judge.compare_many("q", ["a"], ["b"])


_TOY_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>"
                 "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}")


class ChatEndpoint(ScriptedBackend):
    """A backend whose server applies the chat template (an OpenAI-compatible chat endpoint)."""

    applies_chat_template = True


def test_default_chat_format_is_the_models_own_template():
    from types import SimpleNamespace

    decide = lambda p: "So, the final decision is Tie"
    # a local model whose tokenizer carries a chat template (as SmolLM2's does): that template
    tok = judge_tokenizer(["<|user|> hello <|end|> <|assistant|>"] * 3, 300)
    tok.chat_template = _TOY_TEMPLATE
    local = ScriptedBackend(decide)
    local.lm = SimpleNamespace(tokenizer=SimpleNamespace(hf=tok))  # as LocalTextModel holds it
    judge = GenerativeJudge(local, 8)
    assert callable(judge.chat_format) and model_chat_format(local) is not None
    assert judge.compare("q", "a", "b").verdict == 2
    assert local.prompts[0].startswith("<|user|>You are assessing two submitted responses")
    assert local.prompts[0].endswith("you've provided.<|end|><|assistant|>")
    assert "[INST]" not in local.prompts[0]
    # an explicit format still wins
    forced = ScriptedBackend(decide)
    forced.lm = local.lm
    GenerativeJudge(forced, 8, chat_format="llama2").compare("q", "a", "b")
    assert forced.prompts[0].startswith("[INST] You are assessing")
    # no template on the tokenizer (our tiny judges, Auto-J's LLaMA-2 tokenizer): LLaMA-2
    plain = ScriptedBackend(decide)
    plain.lm = SimpleNamespace(tokenizer=SimpleNamespace(hf=judge_tokenizer(["abc def"], 300)))
    assert model_chat_format(plain) == "llama2" == GenerativeJudge(plain, 8).chat_format
    assert model_chat_format(ScriptedBackend(decide)) == "llama2"
    # a chat endpoint applies the template itself: the bare user message goes out
    server = ChatEndpoint(decide)
    GenerativeJudge(server, 8).rate("q", "r")
    assert server.prompts[0] == build_prompt("single", "q", "r", chat_format="none")
    with pytest.raises(ValueError, match="answer_prefix"):
        GenerativeJudge(server, 8, answer_prefix="So, the final decision is")


@pytest.mark.usefixtures("one_torch_thread")
def test_auto_format_on_a_real_local_model_uses_its_tokenizer_template():
    from iclr24.kits.language_models import LocalTextModel

    tok = judge_tokenizer(["<|user|> You are assessing <|end|> <|assistant|>"] * 3, 300)
    tok.chat_template = _TOY_TEMPLATE
    cfg = TinyJudgeConfig(hidden_size=16, intermediate_size=32, n_layers=1, n_heads=2,
                          context_length=1024)
    backend = LocalTextModel(new_tiny_lm(tok, cfg, seed=0))
    fmt = model_chat_format(backend)
    assert fmt("hi") == "<|user|>hi<|end|><|assistant|>"
    j = GenerativeJudge(backend, 2).compare("q", "a", "b")
    assert j.verdict in (-1, 0, 1, 2)


@pytest.mark.usefixtures("one_torch_thread")
def test_tiny_judge_and_reward_model_run():
    pairs = make_judge_testbed(4, scenarios=["ranking"], seed=0)
    ex = make_judge_sft_examples(pairs)
    tok = judge_tokenizer([p + t for p, t in ex], 300)
    text = ex[0][0] + ex[0][1]
    assert tok.decode(tok(text, add_special_tokens=False)["input_ids"]) == text
    cfg = TinyJudgeConfig(hidden_size=16, intermediate_size=32, n_layers=1, n_heads=2,
                          sft_steps=3, batch_size=4)
    lm = new_tiny_lm(tok, cfg, seed=0)
    again = new_tiny_lm(tok, cfg, seed=0)
    assert all((a == b).all() for a, b in zip(lm.model.parameters(), again.model.parameters()))
    comps = [(p.query, p.response_1, p.response_2) for p in pairs if p.label == 0]
    comps = comps or [(pairs[0].query, pairs[0].reference, "")]
    rm, losses = train_reward_model(lm, comps, cfg, seed=0)
    assert len(losses) == 3 and all(np.isfinite(losses))
    s = rm.score([p.query for p in pairs], [p.response_1 for p in pairs])
    assert s.shape == (len(pairs),) and np.isfinite(s).all()
    with pytest.raises(ValueError, match="pretrain_steps"):
        TinyJudgeConfig(pretrain_steps=-1)
    with pytest.raises(TypeError, match="comparisons"):
        train_reward_model(lm, [("q", "a")], cfg)


def test_bon_testbed_shapes():
    bon = make_bon_testbed(7, 5, seed=0)
    assert len(bon) == 7
    _task, texts, kinds, q = bon[0]
    assert len(texts) == len(kinds) == 5 and q.shape == (5,)
    assert all(q[i] == KIND_QUALITY[k] for i, k in enumerate(kinds))
    assert [b[0].scenario for b in bon[:6]] == list(TESTBED_SCENARIOS)
