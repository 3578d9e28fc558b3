"""The known-answer backend (the harness's positive control) and the agent's chat-endpoint
path (``prompt_format="messages"``)."""

import pytest

from iclr24.papers.mint import (
    AGENT_STOP_WORDS,
    NUMERIC_KINDS,
    AnswerKeyBackend,
    InteractionEnv,
    LMAgent,
    chat_formatter,
    evaluate,
    make_mint_tasks,
    run_episode,
    success_rates,
)


class _ToyChatTokenizer:
    """Stands in for a Hugging Face tokenizer's ``apply_chat_template``."""

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True):
        text = "".join(f"<|{m['role']}|>\n{m['content']}<|end|>\n" for m in messages)
        return text + ("<|assistant|>\n" if add_generation_prompt else "")


@pytest.mark.parametrize("fmt", ["completion", "task_view",
                                 chat_formatter(_ToyChatTokenizer())])
def test_answer_key_succeeds_at_every_k_in_every_format(fmt):
    tasks = make_mint_tasks(4, NUMERIC_KINDS, seed=3)
    agent = LMAgent(AnswerKeyBackend(tasks), prompt_format=fmt)
    df = evaluate(agent, tasks, ks=[1, 2], batch_size=4)
    assert success_rates(df).to_dict() == {1: 1.0, 2: 1.0}
    assert (df.n_propose == 1).all() and (df.n_invalid == 0).all() and (df.turns == 1).all()


def test_answer_key_picks_the_task_the_prompt_poses():
    tasks = make_mint_tasks(3, NUMERIC_KINDS, seed=4)
    backend = AnswerKeyBackend(tasks)
    prompts = [InteractionEnv(t, max_steps=2).first_message() for t in reversed(tasks)]
    out = backend.generate(prompts, 8, n=2)
    assert out == [[f"<solution> {t.reference} </solution>"] * 2 for t in reversed(tasks)]


def test_answer_key_bad_inputs():
    tasks = make_mint_tasks(2, NUMERIC_KINDS, seed=0)
    with pytest.raises(ValueError, match="tasks"):
        AnswerKeyBackend([])
    with pytest.raises(TypeError, match=r"tasks\[1\]"):
        AnswerKeyBackend([tasks[0], "What is 2 + 2?"])
    backend = AnswerKeyBackend(tasks)
    with pytest.raises(ValueError, match=r"prompts\[1\]: prompt poses none"):
        backend.generate([InteractionEnv(tasks[0], max_steps=1).first_message(), "hello"], 4)
    with pytest.raises(TypeError, match="not one str"):
        backend.generate("hello", 4)
    with pytest.raises(ValueError, match="n must be"):
        backend.generate(["x"], 4, n=0)


class _ChatServer:
    """A chat endpoint: takes message lists (records them) and answers from the answer key."""

    supports_generate = True
    applies_chat_template = True

    def __init__(self, tasks):
        self.key, self.calls = AnswerKeyBackend(tasks), []

    def generate(self, prompts, max_new_tokens, **kw):
        raise AssertionError("a 'messages' agent must call chat(), not generate()")

    def chat(self, conversations, max_new_tokens, **kw):
        self.calls.append((conversations, max_new_tokens, kw))
        # wrong on the first turn (code), right once an observation came back
        return [["```python\nprint(1)\n```"] if len(c) == 1 else
                [self.key.answer(c[0]["content"])] for c in conversations]


def test_messages_format_sends_the_message_list_to_a_chat_endpoint():
    tasks = make_mint_tasks(2, NUMERIC_KINDS, seed=5)
    server = _ChatServer(tasks)
    agent = LMAgent(server, prompt_format="messages", max_new_tokens=32)
    with InteractionEnv(tasks[0], max_steps=3) as env:
        state = run_episode(agent, env)
    assert state.success and state.turns == 2
    first, second = server.calls
    assert [m["role"] for m in first[0][0]] == ["user"]
    assert [m["role"] for m in second[0][0]] == ["user", "assistant", "user"]
    assert "Observation:" in second[0][0][2]["content"]
    assert first[1] == 32 and first[2]["stop"] == list(AGENT_STOP_WORDS)
    with pytest.raises(ValueError, match="message list"):
        agent.prompt(state)
    with pytest.raises(TypeError, match="chat"):
        LMAgent(AnswerKeyBackend(tasks), prompt_format="messages")
