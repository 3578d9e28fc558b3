"""The sandboxed runner, the arithmetic generator and the prompt templates."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.kits.language_models.arithmetic import arithmetic_problems
from iclr24.kits.language_models.chat_templates import alpaca_prompt, llama2_chat_prompt
from iclr24.kits.language_models.sandbox import PythonSession, run_python


def test_sandbox_output_errors_and_working_directory():
    r = run_python("import os\nprint(6 * 7)\nopen('x.txt', 'w').write('hi')\nprint(os.getcwd())")
    assert r.ok and r.stdout.splitlines()[0] == "42"
    assert "iclr24-sandbox-" in r.stdout.splitlines()[1]  # ran in its own temporary directory
    r = run_python("raise ValueError('boom')")
    assert not r.ok and r.returncode == 1 and "ValueError: boom" in r.stderr
    assert run_python("print(input())", stdin="echo\n").stdout == "echo\n"


def test_sandbox_kills_endless_code_at_its_timeout():
    r = run_python("while True:\n    pass", timeout=1.0)
    assert r.timed_out and r.returncode is None and not r.ok
    assert r.seconds < 5
    r = run_python("import time\nprint('started', flush=True)\ntime.sleep(30)", timeout=1.0)
    assert r.timed_out and r.stdout == "started\n"


def test_python_session_keeps_its_namespace_across_cells():
    with PythonSession(preamble="def add(a, b):\n    return a + b\n") as repl:
        assert repl.run("x = add(2, 3)\nprint(x)").stdout == "5\n"
        r = repl.run("print(x * 10)")
        assert r.ok and r.stdout == "50\n"
        r = repl.run("print('before')\n1 / 0")
        assert r.returncode == 1 and r.stdout == "before\n"
        assert r.stderr.startswith("Traceback") and '"<cell>", line 2' in r.stderr
        assert "ZeroDivisionError" in r.stderr and "exec(" not in r.stderr  # no REPL frames
        # writes to the raw file descriptors cannot break the protocol
        assert repl.run("import os\nos.write(1, b'junk')\nprint('ok')").stdout == "ok\n"
        repl.reset()
        r = repl.run("print('x' in dir(), add(1, 1))")  # fresh namespace, preamble again
        assert r.stdout == "False 2\n"


def test_python_session_recovers_from_timeouts_and_crashes():
    with PythonSession(timeout=1.0, memory_mb=256) as repl:
        repl.run("y = 7")
        r = repl.run("while True:\n    pass")
        assert r.timed_out and r.returncode is None and r.seconds < 5
        r = repl.run("print(y)")  # a fresh interpreter, and the result says the state is lost
        assert "state is lost" in r.stderr and "NameError" in r.stderr
        r = repl.run("import os\nos._exit(3)")
        assert r.returncode == -1 and not r.timed_out and "died" in r.stderr
        assert repl.run("print('back')").stdout == "back\n"
        assert "MemoryError" in repl.run("b = bytearray(600 * 2**20)").stderr
    with pytest.raises(ValueError, match="preamble failed"):
        PythonSession(preamble="raise RuntimeError('no tools')").run("pass")
    with pytest.raises(ValueError, match="timeout"):
        PythonSession(timeout=-1)
    with pytest.raises(TypeError, match="code"):
        PythonSession().run(3)


def test_sandbox_limits_memory_and_output():
    r = run_python("x = bytearray(600 * 2**20)", memory_mb=256)
    assert not r.ok and "MemoryError" in r.stderr
    r = run_python("print('a' * 100000)", max_output=100)
    assert r.ok and len(r.stdout) == 100
    with pytest.raises(ValueError, match="timeout"):
        run_python("pass", timeout=0)
    with pytest.raises(TypeError, match="code"):
        run_python(b"print(1)")


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000))
def test_arithmetic_answers_are_exact(seed):
    for p in arithmetic_problems(5, seed=seed, digits=(1, 4), n_terms=(2, 5)):
        assert p.answer == eval(p.expression)  # generated digits and + - * only
        assert p.expression in p.question


def test_arithmetic_is_seeded_and_checks_its_arguments():
    assert arithmetic_problems(10, seed=3) == arithmetic_problems(10, seed=3)
    assert arithmetic_problems(10, seed=3) != arithmetic_problems(10, seed=4)
    assert all("*" not in p.expression for p in arithmetic_problems(20, ops=("+", "-")))
    with pytest.raises(ValueError, match="ops"):
        arithmetic_problems(3, ops=("/",))
    with pytest.raises(ValueError, match="n_terms"):
        arithmetic_problems(3, n_terms=(1, 2))
    with pytest.raises(ValueError, match="template"):
        arithmetic_problems(3, template="Compute this")


def test_llama2_and_alpaca_layouts():
    text = llama2_chat_prompt([{"role": "system", "content": "Be brief."},
                               {"role": "user", "content": "Hi"},
                               {"role": "assistant", "content": "Hello."},
                               {"role": "user", "content": "2+2?"}])
    assert text == ("<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello. </s>"
                    "<s>[INST] 2+2? [/INST]")
    assert llama2_chat_prompt([{"role": "user", "content": "x"}], bos="") == "[INST] x [/INST]"
    with pytest.raises(ValueError, match="alternate"):
        llama2_chat_prompt([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
    with pytest.raises(ValueError, match="alternate"):
        llama2_chat_prompt([{"role": "user", "content": "a"},
                            {"role": "assistant", "content": "b"}])
    assert alpaca_prompt("Add the numbers.").endswith("### Instruction:\nAdd the numbers.\n\n"
                                                      "### Response:\n")
    assert "### Input:\n3 4\n\n### Response:\n" in alpaca_prompt("Add the numbers.", "3 4")
    with pytest.raises(ValueError, match="instruction"):
        alpaca_prompt("  ")
