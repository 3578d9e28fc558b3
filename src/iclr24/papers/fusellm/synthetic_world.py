"""The three text domains of the laptop-scale FuseLLM reproduction, with exact generators.

FuseLLM's premise (Wan et al., ICLR 2024, Sec. 1 and 4) is that source LLMs trained on
different data are experts in different things (Llama-2 in general text, OpenLLaMA, MPT-7B in
code), and fusing their distributions into one target transfers those strengths. MiniPile and
7B sources are out of reach; three synthetic domains play their part:

- ``"arith"`` (A): arithmetic facts, ``"17+25=42."`` / ``"61-19=42."`` (operands 0-99); the
  answer after ``=`` is what greedy accuracy checks.
- ``"grammar"`` (B): sentences of a small probabilistic grammar about invented entities,
  ``"the grey zorvik of ulmar hunts three fish."``: the place fixes the colour (p = 0.8), the
  creature restricts its verbs, the verb its objects.
- ``"code"`` (C): code-like lines whose comment holds the correct printed value,
  ``"x=3;y=x+2;print(y)#5"``.

Every generator takes a ``numpy.random.Generator`` and is deterministic given it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["DOMAINS", "arith_prompt", "domain_texts", "mixture_texts", "split_arith"]

DOMAINS = ("arith", "grammar", "code")

_CREATURES = {"zorvik": ("hunts", "guards"), "blenna": ("sings", "carries"),
              "quastor": ("builds", "hunts"), "mirrel": ("carries", "paints"),
              "tovan": ("guards", "sings"), "skelp": ("paints", "builds")}
_OBJECTS = {"hunts": ("fish", "moths"), "guards": ("gates", "eggs"),
            "sings": ("songs", "chants"), "carries": ("stones", "eggs"),
            "builds": ("towers", "gates"), "paints": ("walls", "stones")}
_PLACES = {"ulmar": "grey", "drevin": "red", "caspo": "blue", "vell": "green"}
_COLOURS = ("grey", "red", "blue", "green")
_NUMBERS = ("two", "three", "four", "five")
_VARS = ("x", "y", "z", "a", "b")


def _arith(rng: np.random.Generator) -> str:
    a, b = int(rng.integers(0, 100)), int(rng.integers(0, 100))
    if rng.random() < 0.5:
        return f"{a}+{b}={a + b}."
    a, b = max(a, b), min(a, b)
    return f"{a}-{b}={a - b}."


def _grammar(rng: np.random.Generator) -> str:
    creature = list(_CREATURES)[int(rng.integers(len(_CREATURES)))]
    place = list(_PLACES)[int(rng.integers(len(_PLACES)))]
    colour = _PLACES[place] if rng.random() < 0.8 else _COLOURS[int(rng.integers(4))]
    verb = _CREATURES[creature][int(rng.integers(2))]
    obj = _OBJECTS[verb][int(rng.integers(2))]
    num = _NUMBERS[int(rng.integers(len(_NUMBERS)))]
    return f"the {colour} {creature} of {place} {verb} {num} {obj}."


def _code(rng: np.random.Generator) -> str:
    v1, v2 = rng.choice(len(_VARS), size=2, replace=False)
    x, y = _VARS[int(v1)], _VARS[int(v2)]
    a, c = int(rng.integers(0, 10)), int(rng.integers(1, 10))
    op = "+-*"[int(rng.integers(3))]
    val = a + c if op == "+" else a - c if op == "-" else a * c
    return f"{x}={a};{y}={x}{op}{c};print({y})#{val}"


_GENERATORS = {"arith": _arith, "grammar": _grammar, "code": _code}


def domain_texts(domain: str, n: int, rng: np.random.Generator) -> list[str]:
    """``n`` texts of ``domain`` ("arith", "grammar" or "code")."""
    if domain not in _GENERATORS:
        raise ValueError(f"domain must be one of {DOMAINS}, got {domain!r}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}")
    return [_GENERATORS[domain](rng) for _ in range(n)]


def mixture_texts(weights: Mapping[str, float], n: int, rng: np.random.Generator) -> list[str]:
    """``n`` texts, each from a domain drawn with probability ∝ ``weights[domain]``."""
    names = list(weights)
    for d in names:
        if d not in _GENERATORS:
            raise ValueError(f"weights keys must be domains {DOMAINS}, got {d!r}")
    p = np.asarray([float(weights[d]) for d in names])
    if (p < 0).any() or p.sum() <= 0:
        raise ValueError(f"weights must be >= 0 with a positive sum, got {dict(weights)}")
    picks = rng.choice(len(names), size=n, p=p / p.sum())
    return [_GENERATORS[names[int(i)]](rng) for i in picks]


def split_arith(text: str) -> tuple[str, str]:
    """``"17+25=42."`` -> (``"17+25="``, ``"42"``)."""
    if "=" not in text or not text.endswith("."):
        raise ValueError(f"not an arithmetic fact: {text!r}")
    q, a = text.split("=", 1)
    return q + "=", a[:-1]


def arith_prompt(text: str) -> str:
    """The question part of an arithmetic fact (up to and including ``=``)."""
    return split_arith(text)[0]
