"""The episode protocol (budgets, count-down, feedback timing), the evaluation loop, metrics,
and the tiny agent's teacher and padded backend."""

import numpy as np
import pandas as pd
import pytest

from iclr24.papers.mint import (
    INVALID_INPUT_MESSAGE,
    NUMERIC_KINDS,
    InteractionEnv,
    LMAgent,
    NumericReasoningTask,
    PythonREPL,
    ScriptedFeedback,
    TeacherAgent,
    evaluate,
    improvement_slope,
    make_mint_tasks,
    max_propose_for,
    render_observation,
    run_episode,
    success_rates,
    teacher_examples,
)
from iclr24.papers.mint.tiny_agent import ScriptedTeacher, TeacherREPL, _program


def _task():
    return NumericReasoningTask("What is 12 * 34?", "408", kind="product", task_id="t0")


def test_p_is_one_at_k_one_and_two_otherwise():
    assert max_propose_for(1) == 1 and all(max_propose_for(k) == 2 for k in range(2, 6))
    env = InteractionEnv(_task(), max_steps=1)
    env.reset()
    st = env.step("<solution> 1 </solution>")
    assert st.finished and not st.success and st.terminate_reason == "max_propose_steps"
    with pytest.raises(ValueError, match="k must be a positive int"):
        max_propose_for(0)


def test_proposals_run_out_before_turns():
    env = InteractionEnv(_task(), max_steps=5)
    env.reset()
    env.step("<solution> 1 </solution>")
    assert not env.state.finished
    assert "Your answer is wrong.\nYou have 4 steps left and 1 chances" in \
        env.state.history[-1]["content"]
    st = env.step("<solution> 2 </solution>")
    assert st.finished and st.terminate_reason == "max_propose_steps" and st.turns == 2


def test_invalid_actions_use_up_turns():
    env = InteractionEnv(_task(), max_steps=3)
    env.reset()
    env.step("hello")
    assert INVALID_INPUT_MESSAGE in env.state.history[-1]["content"]
    env.step("still no action")
    assert "You have 1 steps left" in env.state.history[-1]["content"]
    assert "You should take the last step to propose a solution." in \
        env.state.history[-1]["content"]
    st = env.step("and again")
    assert st.finished and st.terminate_reason == "max_steps"
    assert st.action_count == {"propose_solution": 0, "use_tool": 0, "invalid_action": 3}


def test_code_then_correct_solution_succeeds():
    with InteractionEnv(_task(), max_steps=5) as env:
        env.reset()
        env.step("```python\nprint(12 * 34)\n```")
        assert env.state.history[-1]["content"].startswith("Observation:\n408\nYou have 4")
        st = env.step("The answer is <solution> 408 </solution>.")
    assert st.success and st.exact_success and st.terminate_reason == "task_success"
    assert len(st.history) == 4  # the finished turn's message is not logged (official)


def test_feedback_only_while_unfinished_and_count_down_off():
    calls = []

    class Counting(ScriptedFeedback):
        def feedback(self, state, observation, **kw):
            calls.append(observation)
            return super().feedback(state, observation, **kw)

    env = InteractionEnv(_task(), max_steps=2, feedback=Counting(), count_down=False)
    env.reset()
    env.step("no action")
    env.step("<solution> 408 </solution>")
    assert len(calls) == 1 and "steps left" not in calls[0]
    assert "Expert feedback:\nThis is BAD." in env.state.history[-2]["content"]


def test_answer_only_mode_does_not_run_code():
    env = InteractionEnv(_task(), max_steps=3, use_tools=False)
    first = env.reset().history[0]["content"]
    assert "```python" not in first.split("---")[0] and "You can only propose a solution 2" in first
    env.step("```python\nprint(12 * 34)\n```")
    assert env.state.action_count["invalid_action"] == 1 and env._repl is None


def test_environment_bad_inputs():
    with pytest.raises(TypeError, match="Task protocol"):
        InteractionEnv("not a task")
    with pytest.raises(ValueError, match="max_steps"):
        InteractionEnv(_task(), max_steps=0)
    with pytest.raises(ValueError, match="max_propose"):
        InteractionEnv(_task(), max_steps=2, max_propose=3)
    env = InteractionEnv(_task(), max_steps=1)
    with pytest.raises(ValueError, match="reset"):
        env.step("x")
    env.reset()
    env.step("<solution> 408 </solution>")
    with pytest.raises(ValueError, match="finished"):
        env.step("x")


def test_render_observation_matches_official_layout():
    assert render_observation("3", turn_info=(2, 1), feedback="This is GOOD.") == (
        "Observation:\n3\nYou have 2 steps left and 1 chances to propose solution left.\n"
        "\nExpert feedback:\nThis is GOOD.\n")


class _ScriptLM:
    """Code first, then propose the printed number; 'wrong' tasks copy a digit wrongly."""

    def generate(self, prompts, max_new_tokens, **kw):
        out = []
        for p in prompts:
            task = p[p.rfind("Task:"):].split("\n")[1]
            a, b = (int(x) for x in task.replace("?", "").split()[2::2])
            if "Observation:" not in p[p.rfind("Task:"):]:
                out.append([f"```python\nprint({a} * {b + (b % 2)})\n```"])
            else:
                printed = p.rsplit("Observation:\n", 1)[1].split("\n")[0]
                out.append([f"<solution> {printed} </solution>"])
        return out


def test_evaluate_and_metrics_on_a_scripted_agent():
    tasks = [NumericReasoningTask(f"What is {a} * {b}?", str(a * b), kind="product",
                                  task_id=str(i)) for i, (a, b) in
             enumerate([(12, 34), (50, 21), (70, 40), (33, 11)])]
    agent = LMAgent(_ScriptLM(), prompt_format="task_view")
    df = evaluate(agent, tasks, ks=[1, 2, 3], batch_size=3)
    sr = success_rates(df)
    # k = 1: the only turn is code -> all fail; k >= 2: odd b is mis-copied (b + 1);
    # 50 * 22 = 1100 is within 5% of 1050 (the official tolerance), 33 * 12 is not
    assert sr.to_dict() == {1: 0.0, 2: 0.75, 3: 0.75}
    assert success_rates(df, "exact_success").to_dict() == {1: 0.0, 2: 0.5, 3: 0.5}
    assert set(df.terminate_reason[df.k == 1]) == {"max_steps"}
    assert success_rates(df, by_kind=True).shape == (1, 3)
    state = run_episode(agent, InteractionEnv(tasks[0], max_steps=2))
    assert state.success and state.turns == 2


def test_improvement_slope_closed_form():
    assert improvement_slope([0.1, 0.2, 0.3, 0.4, 0.5]) == pytest.approx(0.1)
    assert improvement_slope({1: 0.3, 3: 0.3}) == pytest.approx(0.0)
    sr = pd.Series([0.2, 0.25, 0.4], index=[1, 2, 3])
    assert improvement_slope(sr) == pytest.approx(np.polyfit([1, 2, 3], sr, 1)[0])
    with pytest.raises(ValueError, match="two or more"):
        improvement_slope([0.5])


def test_evaluate_bad_inputs():
    agent = LMAgent(_ScriptLM())
    with pytest.raises(ValueError, match="ks"):
        evaluate(agent, [_task()], ks=[0])
    with pytest.raises(ValueError, match="tasks"):
        evaluate(agent, [])
    with pytest.raises(ValueError, match="prompt_format"):
        LMAgent(_ScriptLM(), prompt_format="xml")


def test_teacher_observations_match_the_real_repl():
    """Known-answer check: the teacher's simulated outputs are the interpreter's own text."""
    task = NumericReasoningTask("What is the sum of 11, 22, 33?", "66", kind="sum")
    with PythonREPL() as repl:
        for crash in (False, True):
            code, printed = _program(task, [11, 22, 33], crash)
            assert repl.run(code).strip() == printed


def test_teacher_transcripts_follow_the_protocol():
    pairs = teacher_examples(30, seed=0)
    assert len(pairs) >= 30 and all(t.endswith("\n\nObservation:") for _, t in pairs)
    assert any("```python" in t for _, t in pairs) and any("<solution>" in t for _, t in pairs)
    assert pairs == teacher_examples(30, seed=0)
    env = InteractionEnv(_task(), max_steps=1)
    env.attach_repl(TeacherREPL())
    env.reset()
    assert "<solution>" in ScriptedTeacher(np.random.default_rng(0)).act(env, TeacherREPL())


def test_mental_slips_fail_the_official_check():
    """A wrong answer in the head is 10-50% off: outside the official check's 5% tolerance,
    so answer-only episodes cannot pass by a changed digit."""
    from iclr24.papers.mint.tiny_agent import _mental_slip

    rng = np.random.default_rng(0)
    for ref in ("38080349", "7", "412.37", "-55", "1000"):
        task = NumericReasoningTask("What is it?", ref, kind="product", task_id="t")
        for _ in range(50):
            guess = _mental_slip(ref, rng)
            assert guess != ref and not task.success(guess)
            if "." in ref:
                assert len(guess.split(".")[1]) == len(ref.split(".")[1])


def test_teacher_agent_gains_from_turns_in_the_real_repl():
    """The known-answer reference of turn_budget: the scripted teacher as an agent, its
    programs run by the real interpreter, succeeds more with more turns and beats answer-only."""
    tasks = make_mint_tasks(24, NUMERIC_KINDS, seed=5)
    sr = success_rates(evaluate(TeacherAgent(0), tasks, [1, 3, 5], seed=0))
    ao = success_rates(evaluate(TeacherAgent(0, use_tools=False), tasks, [5],
                                use_tools=False, seed=0)).iloc[0]
    assert sr[5] >= 0.95 and sr[5] - sr[1] >= 0.3 and sr[5] > ao
