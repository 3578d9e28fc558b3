"""A synthetic meta-evaluation testbed whose ground-truth preference is computable (the
laptop-scale stand-in for Auto-J's 1,392 human-labelled pairs, Li et al., ICLR 2024, Sec. 4).

Six task families are mapped onto taxonomy scenarios (:data:`TESTBED_SCENARIOS`):
``math_reasoning`` (sum of 2-3 digits), ``code_generation`` (what ``print(a * b)`` prints),
``paraphasing`` -> reverse a word, ``ranking`` (sort 4-5 distinct numbers),
``keywords_extraction`` (the capitalised words of a sentence), ``text_summarization`` (the
first of three sentences). Each query states its answer format. Candidate responses come in
five kinds with a true quality q in [0, 1] (:data:`KIND_QUALITY`): the exact answer (1), an
incomplete one (the first half of its letters / items / words; 0.5), the right answer in the
wrong format (number words, upper case, commas; 0.5), a near miss (off by one, two adjacent
items swapped, a wrong item, the wrong sentence; 0) and an empty response (0). The numeric
scenarios have no incomplete kind.

The "human" label of a pair is the better response, or a tie when |q1 - q2| < 0.25; labels are
drawn balanced (about 40 / 40 / 20 % for Response 1 / Response 2 / tie, as the spec asks).
Real queries (Chatbot Arena et al.), human labels and GPT-4 ratings are out of reach: the
synthetic quality function stands in for both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .scenarios import scenario_group

__all__ = [
    "KINDS",
    "KIND_QUALITY",
    "TESTBED_SCENARIOS",
    "JudgePair",
    "JudgeTask",
    "make_bon_testbed",
    "make_judge_testbed",
    "make_task",
    "render_response",
    "sample_candidates",
]

TESTBED_SCENARIOS = ("math_reasoning", "code_generation", "paraphrasing", "ranking",
                     "keywords_extraction", "text_summarization")
KINDS = ("correct", "truncated", "wrong_format", "near_miss", "empty")
KIND_QUALITY = {"correct": 1.0, "truncated": 0.5, "wrong_format": 0.5, "near_miss": 0.0,
                "empty": 0.0}
_NUMERIC = ("math_reasoning", "code_generation")
TIE_MARGIN = 0.25  # tie when |q1 - q2| < 0.25

_WORDS = ("plant", "stone", "river", "cloud", "bread", "light", "mouse", "table", "green",
          "house", "train", "apple", "night", "water", "sugar", "tiger", "chair", "music",
          "paper", "smile", "honey", "lemon", "storm", "grape")
_NAMES = ("Anna", "Bob", "Paris", "Rome", "Clara", "Diego", "Oslo", "Maria", "Tokyo", "Ivan",
          "Lima", "Sara", "Kenya", "Omar", "Nile", "Emma")
_FILLER = ("the", "dog", "met", "and", "at", "near", "saw", "with", "a", "cat", "in", "from")
_SUBJECTS = ("The sun", "A dog", "The river", "My friend", "The train", "A bird", "The shop",
             "Our team", "The wind", "A child")
_PREDICATES = ("is warm", "runs fast", "sings softly", "was late", "looks calm", "opens early",
               "grew tall", "stays home", "feels tired", "moves slowly")
_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")


def _number_words(n: int) -> str:
    if not 0 <= n < 100:
        raise ValueError(f"number words are defined for 0..99, got {n}")
    if n < 20:
        return _ONES[n]
    return _TENS[n // 10] + ("" if n % 10 == 0 else "-" + _ONES[n % 10])


@dataclass(frozen=True)
class JudgeTask:
    """One query with its exact answer and every deterministic response variant.

    items: the answer's units (letters, numbers, words) that truncation and swaps act on.
    variants: kind -> response text for the kinds that do not need randomness.
    near_misses: the near-miss responses to draw from.
    """

    scenario: str
    query: str
    reference: str
    variants: dict[str, str] = field(default_factory=dict)
    near_misses: tuple[str, ...] = ()

    @property
    def group(self) -> str:
        return scenario_group(self.scenario)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(k for k in KINDS if k in self.variants or k == "near_miss")


@dataclass(frozen=True)
class JudgePair:
    """A testbed pair: the query, two responses, their kinds and true qualities, and the label
    (0: Response 1 better, 1: Response 2 better, 2: tie)."""

    scenario: str
    query: str
    reference: str
    response_1: str
    response_2: str
    kind_1: str
    kind_2: str
    quality_1: float
    quality_2: float
    label: int

    @property
    def group(self) -> str:
        return scenario_group(self.scenario)

    def swapped(self) -> JudgePair:
        """The same pair with Response 1 and 2 exchanged (label 0 <-> 1, tie stays)."""
        return JudgePair(self.scenario, self.query, self.reference, self.response_2,
                         self.response_1, self.kind_2, self.kind_1, self.quality_2,
                         self.quality_1, {0: 1, 1: 0}.get(self.label, self.label))


def _swap_adjacent(items: list[str], rng: np.random.Generator) -> list[str] | None:
    spots = [i for i in range(len(items) - 1) if items[i] != items[i + 1]]
    if not spots:
        return None
    i = int(rng.choice(spots))
    out = list(items)
    out[i], out[i + 1] = out[i + 1], out[i]
    return out


def make_task(scenario: str, rng: np.random.Generator) -> JudgeTask:
    """A fresh query of ``scenario`` (one of :data:`TESTBED_SCENARIOS`) drawn with ``rng``."""
    if scenario not in TESTBED_SCENARIOS:
        raise ValueError(f"scenario must be one of {TESTBED_SCENARIOS}, got {scenario!r}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    if scenario in _NUMERIC:
        if scenario == "math_reasoning":
            terms = [int(x) for x in rng.integers(1, 10, size=int(rng.integers(2, 4)))]
            value = sum(terms)
            query = f"What is {' + '.join(map(str, terms))}? Answer with digits only."
        else:
            a, b = (int(x) for x in rng.integers(2, 10, size=2))
            value = a * b
            query = f"What does this Python code print? print({a} * {b})"
        misses = tuple(str(v) for v in (value - 1, value + 1) if v >= 0)
        return JudgeTask(scenario, query, str(value),
                         {"correct": str(value), "wrong_format": _number_words(value),
                          "empty": ""}, misses)
    if scenario == "paraphrasing":
        word = str(rng.choice(_WORDS))
        query = f"Reverse the letters of the word '{word}'. Answer in lower case."
        items, sep = list(word[::-1]), ""
        wrong_format = word[::-1].upper()
    elif scenario == "ranking":
        nums = [int(x) for x in rng.choice(np.arange(1, 30), size=int(rng.integers(4, 6)),
                                           replace=False)]
        query = f"Sort these numbers in ascending order: {' '.join(map(str, nums))}"
        items, sep = [str(x) for x in sorted(nums)], " "
        wrong_format = ", ".join(items)
    elif scenario == "keywords_extraction":
        names = [str(x) for x in rng.choice(_NAMES, size=int(rng.integers(2, 4)), replace=False)]
        filler = [str(x) for x in rng.choice(_FILLER, size=4, replace=False)]
        words = list(filler)
        for j, name in enumerate(names):
            words.insert(int(rng.integers(j, len(words) + 1)), name)
        names = [w for w in words if w[0].isupper()]
        query = f"List the capitalised words in: {' '.join(words)}"
        items, sep = names, " "
        wrong_format = ", ".join(items)
    else:  # text_summarization
        idx = rng.choice(len(_SUBJECTS), size=3, replace=False)
        sentences = [f"{_SUBJECTS[i]} {_PREDICATES[int(rng.integers(len(_PREDICATES)))]}."
                     for i in idx]
        query = f"Give the first sentence of this text: {' '.join(sentences)}"
        reference = sentences[0]
        words = reference[:-1].split()
        return JudgeTask(scenario, query, reference,
                         {"correct": reference, "truncated": " ".join(words[:len(words) // 2]),
                          "wrong_format": reference.upper(), "empty": ""},
                         (sentences[1], sentences[2]))
    reference = sep.join(items)
    misses = []
    for _ in range(3):
        swapped = _swap_adjacent(items, rng)
        if swapped is not None:
            misses.append(sep.join(swapped))
    if scenario == "keywords_extraction":  # a wrong item: a lower-case word in a name's place
        j = int(rng.integers(len(items)))
        misses.append(sep.join(items[:j] + [filler[0]] + items[j + 1:]))
    misses = tuple(m for m in dict.fromkeys(misses) if m != reference)
    truncated = sep.join(items[:max(1, len(items) // 2)])
    return JudgeTask(scenario, query, reference,
                     {"correct": reference, "truncated": truncated,
                      "wrong_format": wrong_format, "empty": ""}, misses)


def render_response(task: JudgeTask, kind: str, rng: np.random.Generator) -> str:
    """The response text of ``kind`` for ``task`` (a near miss is drawn with ``rng``)."""
    if kind == "near_miss":
        return str(rng.choice(task.near_misses))
    if kind not in task.variants:
        raise ValueError(f"kind must be one of {task.kinds} for {task.scenario}, got {kind!r}")
    return task.variants[kind]


def _check_scenarios(scenarios: Sequence[str]) -> tuple[str, ...]:
    if isinstance(scenarios, str):
        raise TypeError("scenarios must be a sequence of names, not one str")
    out = tuple(scenarios)
    bad = [s for s in out if s not in TESTBED_SCENARIOS]
    if not out or bad:
        raise ValueError(f"scenarios must be a non-empty subset of {TESTBED_SCENARIOS}, "
                         f"got {bad or out!r}")
    return out


def _positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def make_judge_testbed(n_per_scenario: int, scenarios: Sequence[str] = TESTBED_SCENARIOS,
                       seed: int = 0, tie_share: float = 0.2) -> list[JudgePair]:
    """``n_per_scenario`` labelled pairs per scenario, balanced like the paper's testbed
    (every scenario equally represented). A pair is a tie with probability ``tie_share``
    (two kinds of equal quality), else a better and a worse kind (q differing by >= 0.5) in a
    random order, so labels are about 40 / 40 / 20 %."""
    n = _positive_int(n_per_scenario, "n_per_scenario")
    names = _check_scenarios(scenarios)
    if not 0 <= tie_share <= 1:
        raise ValueError(f"tie_share must be in [0, 1], got {tie_share!r}")
    rng = np.random.default_rng([int(seed), 19])
    pairs = []
    for scenario in names:
        for _ in range(n):
            task = make_task(scenario, rng)
            kinds = task.kinds
            if rng.random() < tie_share:
                combos = [(a, b) for a in kinds for b in kinds
                          if abs(KIND_QUALITY[a] - KIND_QUALITY[b]) < TIE_MARGIN]
            else:
                combos = [(a, b) for a in kinds for b in kinds
                          if KIND_QUALITY[a] - KIND_QUALITY[b] >= 0.5]
            k1, k2 = combos[int(rng.integers(len(combos)))]
            if KIND_QUALITY[k1] != KIND_QUALITY[k2] and rng.random() < 0.5:
                k1, k2 = k2, k1
            r1, r2 = render_response(task, k1, rng), render_response(task, k2, rng)
            q1, q2 = KIND_QUALITY[k1], KIND_QUALITY[k2]
            label = 2 if abs(q1 - q2) < TIE_MARGIN else (0 if q1 > q2 else 1)
            pairs.append(JudgePair(scenario, task.query, task.reference, r1, r2, k1, k2, q1, q2,
                                   label))
    return pairs


_SAMPLER_PROBS = {"correct": 0.2, "truncated": 0.2, "wrong_format": 0.2, "near_miss": 0.25,
                  "empty": 0.15}


def sample_candidates(task: JudgeTask, m: int, rng: np.random.Generator
                      ) -> tuple[list[str], list[str], np.ndarray]:
    """``m`` i.i.d. candidate responses from the generator's noise model (kinds drawn with
    probabilities renormalised over the kinds ``task`` has): (texts, kinds, qualities (m,))."""
    m = _positive_int(m, "m")
    kinds = task.kinds
    p = np.array([_SAMPLER_PROBS[k] for k in kinds])
    drawn = [kinds[int(i)] for i in rng.choice(len(kinds), size=m, p=p / p.sum())]
    return ([render_response(task, k, rng) for k in drawn], drawn,
            np.array([KIND_QUALITY[k] for k in drawn]))


def make_bon_testbed(n_queries: int, m: int, scenarios: Sequence[str] = TESTBED_SCENARIOS,
                     seed: int = 0) -> list[tuple[JudgeTask, list[str], list[str], np.ndarray]]:
    """Best-of-N testbed: ``n_queries`` tasks (scenarios in turn), each with ``m`` sampled
    candidates: a list of (task, texts, kinds, qualities (m,))."""
    n = _positive_int(n_queries, "n_queries")
    names = _check_scenarios(scenarios)
    rng = np.random.default_rng([int(seed), 23])
    out = []
    for i in range(n):
        task = make_task(names[i % len(names)], rng)
        out.append((task, *sample_candidates(task, m, rng)))
    return out
