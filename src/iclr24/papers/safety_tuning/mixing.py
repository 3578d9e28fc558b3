"""The data recipe of "Safety-Tuned LLaMAs" (Bianchi et al., ICLR 2024; Sec. 3): a fixed
general instruction set plus X safety demonstrations ("saferpaca_X", X in {0, 100, 300, 500,
1000, 1500, 2000} on top of 20k Alpaca examples), and the Alpaca prompt the models are trained
and evaluated with.

The share is counted in examples, not tokens: a share s of the mixture means
``n_safety = round(s * n_general / (1 - s))`` safety examples added to the untouched general set
(the paper's "3%" is ~500-600 of ~20.5k). :func:`mix_safety` takes either the count or the share.
Keeping the number of optimisation steps fixed across mixtures is the trainer's job
(:func:`~.tuning.finetune` with one :class:`~.tuning.SafetyTuneConfig`), so the comparison does not
confound data amount with safety share.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from iclr24.kits.language_models import alpaca_prompt as _kit_alpaca_prompt

from .world import Example

__all__ = ["alpaca_prompt", "mix_safety", "render_for_reward_model", "safety_count"]


def alpaca_prompt(instruction: str, input: str | None = None, response: str | None = None
                  ) -> str:
    """The Alpaca template (official ``configs/alpaca.json``): ``prompt_no_input`` or, when
    ``input`` is non-empty, ``prompt_input``; with ``response`` the training text (prompt +
    response), as the official ``Prompter.generate_prompt(instruction, input, label)``."""
    prompt = _kit_alpaca_prompt(instruction, input)
    if response is not None and not isinstance(response, str):
        raise TypeError(f"response must be a str or None, got {type(response).__name__}")
    return prompt + response if response else prompt


def render_for_reward_model(instruction: str, response: str) -> str:
    """The harmfulness reward model's input (official ``ConversationBuilder.build``):
    ``"\\n\\nHuman: {instruction}\\n\\nAssistant: {response}"``."""
    if not isinstance(instruction, str) or not isinstance(response, str):
        raise TypeError("instruction and response must be str")
    return f"\n\nHuman: {instruction}\n\nAssistant: {response}"


def safety_count(share: float, n_general: int) -> int:
    """Safety examples that make a fraction ``share`` of a mixture with ``n_general`` general
    examples: round(s * n / (1 - s)). ``share`` must lie in [0, 1)."""
    if isinstance(share, bool) or not isinstance(share, (int, float, np.floating)):
        raise TypeError(f"share must be a number in [0, 1), got {share!r}")
    if not 0 <= float(share) < 1:
        raise ValueError(f"share must be in [0, 1) (a fraction of the mixture's examples), got "
                         f"{share!r}")
    if isinstance(n_general, bool) or not isinstance(n_general, (int, np.integer)) \
            or n_general < 1:
        raise ValueError(f"n_general must be a positive int, got {n_general!r}")
    s = float(share)
    return round(s * n_general / (1 - s))  # s = X / (n + X)  =>  X = s n / (1 - s)


def mix_safety(general: Sequence[Example], safety: Sequence[Example],
               n_safety: int | None = None, seed: int = 0, *, share: float | None = None
               ) -> list[Example]:
    """The training mixture: every general example plus the first ``n_safety`` of a seeded
    permutation of the safety pool, shuffled together (seeded).

    Give exactly one of ``n_safety`` (the paper's X) and ``share`` (a fraction in [0, 1) of the
    mixture's examples, see :func:`safety_count`). Raises ``ValueError`` when the request needs
    more safety examples than the pool holds.
    """
    general, safety = list(general), list(safety)
    if not general:
        raise ValueError("general must be a non-empty sequence of Example")
    for name, pool in (("general", general), ("safety", safety)):
        for i, ex in enumerate(pool):
            if not isinstance(ex, Example):
                raise TypeError(f"{name}[{i}] must be an Example, got {type(ex).__name__}")
    if (n_safety is None) == (share is None):
        raise ValueError("give exactly one of n_safety (a count) and share (a fraction)")
    if share is not None:
        n_safety = safety_count(share, len(general))
    if isinstance(n_safety, bool) or not isinstance(n_safety, (int, np.integer)) or n_safety < 0:
        raise ValueError(f"n_safety must be an int >= 0, got {n_safety!r}")
    if n_safety > len(safety):
        asked = f"share={share!r} needs {n_safety}" if share is not None else f"n_safety={n_safety}"
        raise ValueError(f"{asked} safety examples, above the safety pool of {len(safety)}")
    rng = np.random.default_rng([int(seed), 30])
    chosen = [safety[i] for i in rng.permutation(len(safety))[:int(n_safety)]]
    mixture = general + chosen
    return [mixture[i] for i in rng.permutation(len(mixture))]
