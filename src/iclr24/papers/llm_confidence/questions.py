"""Questions with computable truth for running the elicitation protocol on a real model.

- :data:`FACTUAL_QUESTIONS`: 40 short factual questions with one unambiguous integer answer,
  written for this package (common knowledge: counts, dates, constants), in the spirit of the
  paper's open-number tasks (GSM8K, Object Counting).
- :func:`arithmetic_questions`: seeded arithmetic from the language-model kit
  (:func:`~iclr24.kits.language_models.arithmetic_problems`), easy by default (two 1-digit
  terms, ``+``), since the target is a 135M model.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FACTUAL_QUESTIONS", "Question", "arithmetic_questions", "factual_questions"]


@dataclass(frozen=True)
class Question:
    """A question, its exact answer (a canonical number string) and its task (``factual`` or
    ``arithmetic``)."""

    text: str
    answer: str
    task: str


FACTUAL_QUESTIONS: tuple[tuple[str, int], ...] = (
    ("How many legs does a spider have?", 8),
    ("How many days are there in a week?", 7),
    ("How many sides does a hexagon have?", 6),
    ("How many continents are there on Earth?", 7),
    ("How many minutes are there in an hour?", 60),
    ("How many hours are there in a day?", 24),
    ("How many months are there in a year?", 12),
    ("In which year did World War II end?", 1945),
    ("How many legs does an insect have?", 6),
    ("How many sides does a triangle have?", 3),
    ("How many planets are there in the Solar System?", 8),
    ("How many seconds are there in a minute?", 60),
    ("How many days are there in a leap year?", 366),
    ("How many days are there in a non-leap year?", 365),
    ("At what temperature in degrees Celsius does water boil at sea level?", 100),
    ("At what temperature in degrees Celsius does water freeze?", 0),
    ("How many players are on the field for one soccer team?", 11),
    ("How many strings does a standard guitar have?", 6),
    ("How many keys does a standard piano have?", 88),
    ("How many cards are in a standard deck without jokers?", 52),
    ("How many sides does an octagon have?", 8),
    ("How many weeks are there in a year?", 52),
    ("In which year did the first person walk on the Moon?", 1969),
    ("How many US states are there?", 50),
    ("How many letters are there in the English alphabet?", 26),
    ("How many colors are there in a rainbow?", 7),
    ("How many wheels does a bicycle have?", 2),
    ("How many hearts does an octopus have?", 3),
    ("How many bones are in the adult human body?", 206),
    ("How many teeth does an adult human normally have?", 32),
    ("How many centimeters are in a meter?", 100),
    ("How many grams are in a kilogram?", 1000),
    ("How many years are there in a century?", 100),
    ("How many years are there in a decade?", 10),
    ("How many sides does a square have?", 4),
    ("How many degrees are there in a right angle?", 90),
    ("How many degrees are there in a full circle?", 360),
    ("In which year did Christopher Columbus first reach the Americas?", 1492),
    ("How many chambers does the human heart have?", 4),
    ("How many zeros are there in one million?", 6),
)


def factual_questions() -> list[Question]:
    """The 40 factual questions as :class:`Question` objects."""
    return [Question(q, str(a), "factual") for q, a in FACTUAL_QUESTIONS]


def arithmetic_questions(n: int, seed: int = 0, ops: tuple[str, ...] = ("+",),
                         digits: tuple[int, int] = (1, 1)) -> list[Question]:
    """``n`` seeded arithmetic questions (two terms) with exact answers."""
    from iclr24.kits.language_models import arithmetic_problems

    return [Question(p.question, str(p.answer), "arithmetic")
            for p in arithmetic_problems(n, seed=seed, ops=ops, digits=digits, n_terms=(2, 2))]
