"""parse_action's rules and precedence; the persistent, sandboxed Python tool."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iclr24.papers.mint import NO_OUTPUT, TRUNCATED, PythonREPL, Tool, parse_action
from iclr24.papers.mint.repl import _echo_last_expression, toolset_description


def test_parse_code_block():
    a = parse_action("<thought> add </thought>\n```python\nprint(1 + 1)\n```")
    assert (a.kind, a.content, a.consumes_proposal) == ("code", "print(1 + 1)", False)


def test_parse_execute_tag_and_several_blocks_joined():
    assert parse_action("<execute> x = 2 </execute>").content == "x = 2"
    a = parse_action("```python\na = 1\n```\ntext\n```python\nprint(a)\n```")
    assert a.content == "a = 1\nprint(a)"


def test_parse_solution_and_precedence_over_code():
    assert parse_action("The answer is <solution> 42 </solution>.") .content == "42"
    both = parse_action("```python\nprint(2)\n```\n<solution> 7 </solution>")
    assert (both.kind, both.content) == ("solution", "7")  # the official agent's precedence


def test_parse_invalid_and_unclosed_solution_consumes_a_proposal():
    assert parse_action("I think it is 42.").kind == "invalid"
    assert not parse_action("I think it is 42.").consumes_proposal
    bad = parse_action("The answer is <solution> 42")
    assert bad.kind == "invalid" and bad.consumes_proposal
    assert parse_action("<solution>   </solution>").consumes_proposal
    assert parse_action("```python\n\n```").kind == "invalid"


@given(st.text(alphabet=st.characters(blacklist_characters="<>`"), min_size=1).filter(
    lambda s: s.strip()))
def test_parse_round_trip_of_solution_content(text):
    assert parse_action(f"<solution>{text}</solution>").content == text.strip()


def test_parse_rejects_non_text():
    with pytest.raises(TypeError, match="text must be a str"):
        parse_action(None)


def test_echo_last_expression():
    assert _echo_last_expression("x = 1") == "x = 1"
    assert "print(repr(_mint_out))" in _echo_last_expression("print(1); 2 + 3")
    assert _echo_last_expression("print(1); 2 + 3").startswith("print(1)\n")
    assert _echo_last_expression("def f(:") == "def f(:"


def test_toolset_description_lists_tools():
    tool = Tool("add", "add(a: int, b: int) -> int", "Add two numbers.", "def add(a, b):\n"
                "    return a + b\n")
    text = toolset_description([tool])
    assert "[1] add(a: int, b: int) -> int\nAdd two numbers." in text
    assert toolset_description([]) == ""
    with pytest.raises(ValueError, match="identifier"):
        Tool("not a name", "", "", "")


def test_repl_persists_resets_and_injects_tools():
    tool = Tool("add", "add(a, b)", "Add.", "def add(a, b):\n    return a + b\n")
    with PythonREPL(timeout_s=5, tools=[tool]) as repl:
        assert repl.run("x = add(2, 3)") == NO_OUTPUT
        assert repl.run("x * 10").strip() == "50"          # IPython-style echo, state kept
        assert "NameError" in repl.run("print(y)")          # traceback is the observation
        repl.reset()
        assert "NameError: name 'x'" in repl.run("print(x)")
        assert repl.run("print(add(1, 1))").strip() == "2"  # tools are back after reset


def test_repl_kills_code_that_never_ends_and_recovers():
    with PythonREPL(timeout_s=0.5) as repl:
        repl.run("x = 1")
        out = repl.run("while True:\n    pass")
        assert out.startswith("TimeoutError: Timed out after 0.5 seconds")
        assert "NameError" in repl.run("print(x)")  # a fresh interpreter: the state is lost
        repl.reset()
        assert repl.run("print('ok')").strip() == "ok"


def test_repl_truncates_long_output():
    with PythonREPL(max_output_chars=100) as repl:
        out = repl.run("print('a' * 5000)")
    assert out == "a" * 100 + TRUNCATED


def test_repl_bad_arguments():
    with pytest.raises(ValueError, match="timeout_s"):
        PythonREPL(timeout_s=0)
    with pytest.raises(ValueError, match="max_output_chars"):
        PythonREPL(max_output_chars=0)
    with pytest.raises(TypeError, match="tools"):
        PythonREPL(tools=["print"])
    with PythonREPL() as repl, pytest.raises(TypeError, match="code must be a str"):
        repl.run(b"print(1)")
