"""The official success checks (with their quirks), the task generator, feedback providers."""

import pytest

from iclr24.papers.mint import (
    CodeGenerationTask,
    InteractionEnv,
    LMFeedback,
    MultipleChoiceTask,
    NumericReasoningTask,
    ScriptedFeedback,
    binary_verdict,
    feedback_prompt,
    make_mint_tasks,
    reasoning_success,
)


def test_reasoning_check_tolerance_and_substring_quirk():
    assert reasoning_success("100", "104.9") and reasoning_success("100", "95")
    assert not reasoning_success("100", "106")
    assert reasoning_success("1", "10 apples")  # substring fallback: "1" is in "10 apples"
    assert reasoning_success("Paris", " the city of paris ")
    t = NumericReasoningTask("What is 50 * 2?", "100")
    assert t.success("104") and not t.exact_match("104")
    assert t.exact_match("100.0") and t.exact_match(" 100 ")


def test_multiple_choice_official_quirks():
    t = MultipleChoiceTask("Which is a prime? Options: a) 4 , b) 7 , c) 9", {"a": "4", "b": "7",
                                                                            "c": "9"}, "b")
    assert t.success("b") and t.success("The answer is 7")
    assert not t.success("c) 9")       # the wrong option's text rejects it
    assert t.exact_match("(b)") and not t.exact_match("c")
    with pytest.raises(ValueError, match="reference must be one of"):
        MultipleChoiceTask("q", {"a": "x", "b": "y"}, "z")


def test_code_task_runs_hidden_tests_in_the_sandbox():
    t = make_mint_tasks(1, ["code"], seed=0)[0]
    assert isinstance(t, CodeGenerationTask) and t.success(t.reference)
    assert not t.success(f"def {t.entry_point}(*a):\n    return None")
    slow = CodeGenerationTask("p", "assert f() == 1", "def f():\n    return 1", timeout_s=0.5)
    assert not slow.success("def f():\n    while True:\n        pass")  # killed at its timeout


def test_generator_references_are_exact_and_seeded():
    tasks = make_mint_tasks(40, seed=3)
    assert [t.prompt for t in tasks] == [t.prompt for t in make_mint_tasks(40, seed=3)]
    for t in tasks:
        nums = [int(x) for x in t.prompt.replace("?", "").replace(",", " ").split()
                if x.isdigit()]
        if t.kind == "product":
            assert int(t.reference) == nums[0] * nums[1]
        elif t.kind == "sum":
            assert int(t.reference) == sum(nums) and 10 <= len(nums) <= 15
        elif t.kind == "modpow":
            assert int(t.reference) == pow(*nums)
        elif t.kind == "average":
            assert float(t.reference) == round(sum(nums[:-1]) / len(nums[:-1]), 2)
    with pytest.raises(ValueError, match="n must be"):
        make_mint_tasks(0)
    with pytest.raises(ValueError, match="kinds"):
        make_mint_tasks(3, ["division"])


def test_binary_verdict_parsing():
    assert binary_verdict("This is GOOD. Keep going.") == "This is GOOD."
    assert binary_verdict("Hmm, BAD. no") == "This is BAD."
    assert binary_verdict("Looks fine. GOOD") is None and binary_verdict("no period") is None


class _RecordingLM:
    def __init__(self, reply):
        self.reply, self.prompts = reply, []

    def generate(self, prompts, max_new_tokens, **kw):
        self.prompts += list(prompts)
        return [[self.reply] for _ in prompts]


def _product_task():
    return NumericReasoningTask("What is 1234 * 5678?", str(1234 * 5678))


def test_lm_feedback_without_ground_truth_never_holds_the_reference():
    task = _product_task()
    lm = _RecordingLM("This is BAD. Check the multiplication.")
    env = InteractionEnv(task, max_steps=5, feedback=LMFeedback(lm, form="textual"))
    env.reset()
    env.step("```python\nprint(1234 * 5679)\n```")
    (prompt,) = lm.prompts
    assert task.reference not in prompt and "NOT GIVEN" in prompt
    assert prompt.startswith("You are an expert") and "Task:\nWhat is 1234 * 5678?" in prompt
    assert "Expert feedback:\nThis is BAD. Check the multiplication." in \
        env.state.history[-1]["content"]
    lm_gt = _RecordingLM("BAD.")
    env = InteractionEnv(task, max_steps=5, feedback=LMFeedback(lm_gt, with_ground_truth=True))
    env.reset()
    env.step("```python\nprint(1)\n```")
    assert f"assistant): {task.reference}" in lm_gt.prompts[0]


def test_lm_feedback_unparsable_binary_is_counted_not_raised():
    fb = LMFeedback(_RecordingLM("I cannot judge this"), form="binary")
    env = InteractionEnv(_product_task(), max_steps=5, feedback=fb)
    env.reset()
    env.step("no action here")
    assert fb.n_unparsed == 1 and env.state.feedbacks == [""]
    with pytest.raises(ValueError, match="form"):
        LMFeedback(_RecordingLM(""), form="rating")
    with pytest.raises(TypeError, match="generate"):
        LMFeedback(object())


def test_scripted_feedback_without_ground_truth_never_holds_the_reference():
    seen = []

    class Spy(ScriptedFeedback):
        def feedback(self, state, observation, *, reference=None, **kw):
            seen.append(reference)
            return super().feedback(state, observation, reference=reference, **kw)

    env = InteractionEnv(_product_task(), max_steps=5,
                         feedback=Spy("textual", with_ground_truth=False))
    env.reset()
    env.step("```python\nprint(1234 * 5678)\n```")
    env.step("The answer is <solution> 1 </solution>")
    assert seen == [None, None]
    assert env.state.feedbacks[0].startswith("This is GOOD.")   # judged on form only
    assert env.state.feedbacks[1].startswith("This is BAD.")    # "Your answer is wrong."
    assert all(_product_task().reference not in f for f in env.state.feedbacks)


def test_scripted_feedback_with_ground_truth_judges_the_output():
    fb = ScriptedFeedback("binary", with_ground_truth=True)
    env = InteractionEnv(_product_task(), max_steps=5, feedback=fb)
    env.reset()
    env.step("```python\nprint(1234 * 5679)\n```")   # runs cleanly, wrong number
    env.step("```python\nprint(1234 * 5678)\n```")
    env.step("```python\nprint(reslt)\n```")
    assert env.state.feedbacks == ["This is BAD.", "This is GOOD.", "This is BAD."]


def test_feedback_prompt_layout():
    p = feedback_prompt("intro\n---\nTask:\nQ", "Observation:\n3\n", reference=None,
                        in_context_example="x\nTask:\nexample", tool_desc="")
    assert "intro" not in p and "Task:\nQ\nObservation:\n3" in p and "Task:\nexample" in p


def test_random_feedback_is_uninformative_seeded_and_binary():
    from iclr24.papers.mint import RandomFeedback

    def draw(fb, observation):
        return [fb.feedback(None, observation) for _ in range(200)]

    a = draw(RandomFeedback(3), "Observation:\n42\n")
    assert set(a) == {"This is GOOD.", "This is BAD."}
    assert 0.35 < a.count("This is GOOD.") / len(a) < 0.65
    # the same seed gives the same verdicts whatever the observation says
    assert draw(RandomFeedback(3), "Traceback (most recent call last):") == a
    assert draw(RandomFeedback(4), "Observation:\n42\n") != a
    assert RandomFeedback(0).with_ground_truth is False
    with pytest.raises(TypeError, match="seed"):
        RandomFeedback("3")
