"""Minerva-style answer extraction and normalisation (Llemma Sec. 3.1; Minerva, Lewkowycz et
al. 2022, appendix D), as in the Llemma evaluation fork (wellecks/lm-evaluation-harness,
``lm_eval/mixins.py``: ``SymbolicMathMixin.normalize_tex``; ``unsafe_score_minerva_math.py``:
``get_unnormalized_answer``).

Every worked solution of the 4-shot MATH prompt ends with the line
``Final Answer: The final answer is $X$. I hope it is correct.``; :func:`extract_final_answer`
takes the text between ``The final answer is`` and ``. I hope it is correct.`` (after appending
that end sequence, which generation stops at and cuts off), or the sentinel
:data:`INVALID_ANSWER`. :func:`normalize_tex` then applies Minerva's lossy, order-dependent
normaliser, step for step in the official order (checked against the fork and against
EleutherAI's ``lm_eval/tasks/minerva_math/utils.py``, which carry the same lists):

1. keep the text after the last ``=``;
2. the :data:`SUBSTITUTIONS`, in order (``"an "`` and ``"a "`` dropped, ``.$`` -> ``$`` ...);
3. delete each of the :data:`REMOVED_EXPRESSIONS`, in order (units, filler words, TeX spacing);
4. keep only the content of the first ``$...$`` pair;
5. unwrap ``\\text{}``, ``\\textbf{}``, ``\\overline{}`` (non-greedy) and ``\\boxed{}`` (greedy,
   to the last ``}``);
6. expand the shorthands ``\\fracab`` -> ``\\frac{a}{b}``, ``\\sqrta`` -> ``\\sqrt{a}``; drop ``$``;
7. strip thousands commas when what is left is otherwise all digits.

Gold answers of MATH come from the reference solution's last ``\\boxed{...}``:
:func:`extract_boxed_answer` (EleutherAI's ``minerva_math`` reader: balanced braces, the
brace-less ``\\boxed 5`` form; ``\\fbox{}`` also read, where the official code fails on it).

The lists are plain data (facts of the procedure); the code is ours. The normaliser is
deliberately lossy: ``"a "`` is removed anywhere (``"a b"`` -> ``"b"``), ``"ft"`` inside a word
too; these are the paper's behaviour and tests pin them.
"""

from __future__ import annotations

import re

__all__ = [
    "END_OF_SOLUTION",
    "INVALID_ANSWER",
    "REMOVED_EXPRESSIONS",
    "SUBSTITUTIONS",
    "extract_boxed_answer",
    "extract_final_answer",
    "format_final_answer",
    "normalize_tex",
]

INVALID_ANSWER = "[invalidanswer]"
END_OF_SOLUTION = "I hope it is correct."

# Minerva appendix D, step 2: (before, after) pairs applied in this order
SUBSTITUTIONS: tuple[tuple[str, str], ...] = (
    ("an ", ""), ("a ", ""), (".$", "$"), ("\\$", ""), ("\\ ", ""), (" ", ""),
    ("mbox", "text"), (",\\text{and}", ","), ("\\text{and}", ","), ("\\text{m}", "\\text{}"),
)

# Minerva appendix D, step 3: deleted in this order ("\n" is a newline character)
REMOVED_EXPRESSIONS: tuple[str, ...] = (
    "square", "ways", "integers", "dollars", "mph", "inches", "ft", "hours", "km", "units",
    "\\ldots", "sue", "points", "feet", "minutes", "digits", "cents", "degrees", "cm", "gm",
    "pounds", "meters", "meals", "edges", "students", "childrentickets", "multiples",
    "\\text{s}", "\\text{.}", "\\text{\ns}", "\\text{}^2", "\\text{}^3", "\\text{\n}",
    "\\text{}", "\\mathrm{th}", "^\\circ", "^{\\circ}", "\\;", ",\\!", "{,}", '"', "\\dots",
)

# As the official patterns: no DOTALL (an answer never spans lines), and each '.' is any
# character (so "$5$! I hope it is correct." matches too)
_FINAL_ANSWER = re.compile(r"Final Answer: The final answer is(.*?). I hope it is correct.")
_FIRST_MATH = re.compile(r"(.*?)(\$)(.*?)(\$)(.*)")
_UNWRAP_NONGREEDY = tuple(re.compile(r"(\\" + cmd + r"\{)(.*?)(\})")
                          for cmd in ("text", "textbf", "overline"))
_UNWRAP_BOXED = re.compile(r"(\\boxed\{)(.*)(\})")
_FRAC_SHORTHAND = re.compile(r"(frac)([^{])(.)")
_SQRT_SHORTHAND = re.compile(r"(sqrt)([^{])")


def extract_final_answer(text: str) -> str:
    """The unnormalised final answer of a Minerva-format solution, or :data:`INVALID_ANSWER`.

    >>> extract_final_answer("... Final Answer: The final answer is $893$. I hope it is correct.")
    '$893$'
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    # the generation stops at (and cuts off) the end sequence: put it back before matching
    match = _FINAL_ANSWER.search(text + END_OF_SOLUTION)
    return match.group(1).strip() if match else INVALID_ANSWER


def extract_boxed_answer(solution: str) -> str:
    r"""The gold answer of a MATH reference solution: the content of its last ``\boxed{...}``
    (braces balanced), as the Minerva/Llemma evaluation reads it (EleutherAI's
    ``minerva_math``: ``last_boxed_only_string`` then ``remove_boxed``); normalise it with
    :func:`normalize_tex` (``MathEvaluator`` does) before comparing.

    Like the official reader: the brace-less form ``\boxed 5`` takes the text after the last
    ``"\boxed "`` up to the next ``$``; without ``\boxed`` the last ``\fbox{...}`` is used
    (the official code finds it but then fails on it). Raises ``ValueError`` naming
    ``solution`` when it has no boxed answer or the braces after the last one do not close.

    >>> extract_boxed_answer(r"so $x = \boxed{\frac{1}{2}}$.")
    '\\frac{1}{2}'
    """
    if not isinstance(solution, str):
        raise TypeError(f"solution must be a str, got {type(solution).__name__}")
    if "\\boxed " in solution:
        return solution.split("\\boxed ")[-1].split("$")[0].strip()
    start = solution.rfind("\\boxed")
    command = "\\boxed"
    if start < 0:
        start, command = solution.rfind("\\fbox"), "\\fbox"
        if start < 0:
            raise ValueError("solution has no \\boxed{...} (or \\fbox{...}) answer")
    depth = 0
    for i in range(start, len(solution)):
        if solution[i] == "{":
            depth += 1
        elif solution[i] == "}":
            depth -= 1
            if depth == 0:
                boxed = solution[start:i + 1]
                if not boxed.startswith(command + "{"):
                    raise ValueError(f"solution's last {command} is not followed by a brace: "
                                     f"{boxed[:40]!r}")
                return boxed[len(command) + 1:-1]
    raise ValueError(f"solution's last {command}{{ is never closed (unbalanced braces)")


def format_final_answer(answer: str) -> str:
    """The closing line of a Minerva worked solution for ``answer`` (a TeX string)."""
    return f"Final Answer: The final answer is ${answer}$. {END_OF_SOLUTION}"


def normalize_tex(answer: str) -> str:
    """Minerva's normaliser (appendix D), steps 1-7 of the module docstring, in that order.

    The sentinel :data:`INVALID_ANSWER` passes through unchanged (no rule touches it).
    """
    if not isinstance(answer, str):
        raise TypeError(f"answer must be a str, got {type(answer).__name__}")
    s = answer.split("=")[-1]                                      # 1. after the last '='
    for before, after in SUBSTITUTIONS:                            # 2. substitutions
        s = s.replace(before, after)
    for expr in REMOVED_EXPRESSIONS:                               # 3. removals
        s = s.replace(expr, "")
    s = _FIRST_MATH.sub(r"$\3$", s)                                # 4. first $...$ only
    for pattern in _UNWRAP_NONGREEDY:                              # 5. \text{..} etc.
        s = pattern.sub(r"\2", s)
    s = _UNWRAP_BOXED.sub(r"\2", s)                                #    \boxed{..} greedy
    s = _FRAC_SHORTHAND.sub(r"frac{\2}{\3}", s)                    # 6. \fracab -> \frac{a}{b}
    s = _SQRT_SHORTHAND.sub(r"sqrt{\2}", s)                        #    \sqrta -> \sqrt{a}
    s = s.replace("$", "")
    if s.replace(",", "").isdigit():                               # 7. 100,000 -> 100000
        s = s.replace(",", "")
    return s
