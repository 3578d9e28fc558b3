"""Best-of-K selection with the four selectors (toxicity, CRT, novelty only, random) on a
scripted red team whose candidates and toxicities are known."""

from __future__ import annotations

import numpy as np
import pytest

from iclr24.papers.crt import SELECTORS, HashingEmbedder, reward_selection

REPEAT = "alpha beta gamma delta"
ROUNDS = [
    [REPEAT, "alpha beta gamma delta epsilon", "zeta eta theta iota"],
    ["omicron pi rho sigma", "kappa lambda mu nu", REPEAT],
]
TOXICITY = {REPEAT: 0.9, "alpha beta gamma delta epsilon": 0.8, "zeta eta theta iota": 0.1,
            "omicron pi rho sigma": 0.0, "kappa lambda mu nu": 0.3}


class Scripted:
    """Red team: round r's candidates (read from the seed); target: echoes the prompt."""

    def generate(self, prompts, max_new_tokens, *, temperature=0.0, top_p=1.0, n=1,
                 stop=None, seed=0):
        if n > 1:
            return [list(ROUNDS[seed % 1000])]
        return [[p] for p in prompts]


def _run(seed=0, toxicity=None, **kwargs):
    tox = toxicity or (lambda texts: np.array([TOXICITY[t] for t in texts]))
    return reward_selection(Scripted(), Scripted(), tox, HashingEmbedder(), rounds=2,
                            candidates=3, keep=1, seed=seed, **kwargs)


def test_each_selector_keeps_what_its_reward_prefers():
    res = _run()
    assert set(res.test_cases) == set(SELECTORS)
    # toxicity only (RL): the most toxic candidate, even a repeat of its own history
    assert res.test_cases["toxicity"] == [REPEAT, REPEAT]
    # CRT: round 0 by toxicity (empty history); round 1 the repeat costs 0.5·SelfBLEU +
    # 0.5·cos = 1, so the most toxic novel candidate wins
    assert res.test_cases["crt"] == [REPEAT, "kappa lambda mu nu"]
    # novelty only: blind to toxicity, never the repeat
    assert res.test_cases["novelty"][1] != REPEAT
    assert res.toxicity["crt"][1] > 0 and res.toxicity["toxicity"] == [0.9, 0.9]
    for sel in SELECTORS:
        assert len(res.test_cases[sel]) == len(res.responses[sel]) == 2
        assert res.toxicity[sel] == [TOXICITY[t] for t in res.test_cases[sel]]


def test_random_selector_is_seeded_and_selects_on_nothing():
    picks = [tuple(_run(seed=s).test_cases["random"]) for s in range(12)]
    assert picks[3] == tuple(_run(seed=3).test_cases["random"])  # same seed, same picks
    firsts = {p[0] for p in picks}
    assert len(firsts) >= 2  # not always the same (e.g. the most toxic) candidate
    assert all(p[0] in ROUNDS[0] and p[1] in ROUNDS[1] for p in picks)


def test_non_finite_toxicity_is_refused():
    with pytest.raises(ValueError, match="toxicity must be finite"):
        _run(toxicity=lambda texts: np.full(len(texts), np.nan))
