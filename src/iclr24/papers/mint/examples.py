"""MINT's prompt templates and in-context examples (Wang et al., ICLR 2024, Sec. 2.1 and App.;
official ``mint/prompt/templates/*.txt`` and ``mint/tasks/in_context_examples``).

The instruction templates are the official ones (the paper-era version whose code blocks are
```` ```python ```` fenced). The in-context examples are ours, in the official layout (``Task:``,
``Assistant:`` turns with ``<thought>``, ``Observation:``, ``Expert feedback:``), since the
official ones call a Wikipedia tool we cannot offer offline. The feedback-agent template is the
official one.
"""

from __future__ import annotations

__all__ = [
    "FEEDBACK_TEMPLATE",
    "TEMPLATE_WITHOUT_TOOL",
    "TEMPLATE_WITH_TOOL",
    "in_context_example",
]

TEMPLATE_WITH_TOOL = """\
You are a helpful assistant assigned with the task of problem-solving. To achieve this, you \
will be using an interactive coding environment equipped with a variety of tool functions to \
assist you throughout the process.

At each turn, you should first provide your step-by-step thinking for solving the task. Your \
thought process should be enclosed using "<thought>" tag, for example: <thought> I need to \
print "Hello World!" </thought>.

After that, you have two options:

1) Interact with a Python programming environment and receive the corresponding output. Your \
code should be enclosed using "```python" tag, for example: ```python
print("Hello World!")
```.
2) Directly provide a solution that adheres to the required format for the given task. Your \
solution should be enclosed using "<solution>" tag, for example: The answer is <solution> A \
</solution>.

You have {max_total_steps} chances to interact with the environment or propose a solution. \
You can only propose a solution {max_propose_solution} times.

{tool_desc}

---

{in_context_example}

---

{task_prompt}
"""

TEMPLATE_WITHOUT_TOOL = """\
You are a helpful assistant assigned with the task of problem-solving.

At each turn, you should first provide your step-by-step thinking for solving the task. Your \
thought process should be enclosed using "<thought>" tag, for example: <thought> I need to \
print "Hello World!" </thought>.

After that, you can directly provide a solution that adheres to the required format for the \
given task. Your solution should be enclosed using "<solution>" tag, for example: The answer \
is <solution> A </solution>.

You can only propose a solution {max_propose_solution} times.

{tool_desc}

---

{in_context_example}

---

{task_prompt}
"""

FEEDBACK_TEMPLATE = """\
You are an expert tasked with evaluating and providing feedback on an assistant's performance.

---
Here is an example. Please follow the format as the following expert acts.

{in_context_example}

---

{tool_desc}

{trajectory}

{correct_solution}

Please provide concise and constructive feedback. Remember, your role is similar to a \
teacher. Rather than giving away the solution or details about the answer, guide the \
assistant toward understanding how to arrive at the correct answer. Your feedback should \
focus on enhancing the assistant's ability to think critically and respond accurately. Now \
provide your feedback.
Expert feedback:"""

_REASONING_TOOL = """\
Task:
What is 3 ** 100 mod 7, plus 1250 * 31?

Assistant:
<thought> I will compute both parts with Python. </thought>
```python
a = pow(3, 100, 7)
b = 1250 * 31
print(a + b)
```

Observation:
38754
{fb1}
Assistant:
The answer is <solution> 38754 </solution>.
"""

_REASONING_TOOL_FIRST_FB = """
Expert feedback:
This is GOOD. The code computed both parts correctly. You can submit the result now.
"""

_REASONING_DIRECT = """\
Task:
What is 12 * 11?

Assistant:
<thought> 12 * 11 = 132. </thought>
The answer is <solution> 132 </solution>.
"""

_CODE_TOOL = """\
Task:
Write a Python function double_all that returns the list xs with every element doubled.

Assistant:
<thought> I will write the function and test it on a small list. </thought>
```python
def double_all(xs):
    return [2 * x for x in xs]
print(double_all([1, 2, 3]))
```

Observation:
[2, 4, 6]
{fb1}
Assistant:
The function works. <solution>
def double_all(xs):
    return [2 * x for x in xs]
</solution>
"""

_CODE_TOOL_FIRST_FB = """
Expert feedback:
This is GOOD. The function returns the expected list. You can submit it now.
"""

_CODE_DIRECT = """\
Task:
Write a Python function double_all that returns the list xs with every element doubled.

Assistant:
<thought> A list comprehension doubles each element. </thought>
<solution>
def double_all(xs):
    return [2 * x for x in xs]
</solution>
"""


def in_context_example(task_type: str, use_tool: bool, with_feedback: bool) -> str:
    """The one in-context example for a task type ("reasoning" or "code_generation"), in its
    tool / no-tool and feedback / no-feedback variants (as the official
    ``Task.in_context_example(use_tool, with_feedback)``)."""
    if task_type not in ("reasoning", "code_generation"):
        raise ValueError(f"task_type must be 'reasoning' or 'code_generation', got "
                         f"{task_type!r}")
    if not use_tool:
        return _REASONING_DIRECT if task_type == "reasoning" else _CODE_DIRECT
    if task_type == "reasoning":
        return _REASONING_TOOL.format(fb1=_REASONING_TOOL_FIRST_FB if with_feedback else "")
    return _CODE_TOOL.format(fb1=_CODE_TOOL_FIRST_FB if with_feedback else "")
