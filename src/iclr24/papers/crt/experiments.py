"""One arm of the synthetic red-teaming comparison, end to end: the world of a seed, PPO with
the arm's rewards, and the paper's evaluation over the last half of the generated test cases
(quality at τ = 0.5, diversity among the toxic cases, trigger-cluster coverage).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .evaluation import evaluate_red_team
from .novelty import HashingEmbedder
from .ppo import CRTConfig, RedTeamPPO
from .world import WorldConfig, build_world

__all__ = ["ArmResult", "run_arm"]


@dataclass(frozen=True)
class ArmResult:
    """Metrics of one arm on the last ``fraction`` of its test cases (τ = threshold):
    quality, n_toxic, diversity_bleu, diversity_cos, coverage (of 10 clusters), unique (share
    of distinct test cases), final_toxicity (mean R(y) of the last iteration), examples (a few
    toxic test cases)."""

    quality: float
    n_toxic: int
    diversity_bleu: float
    diversity_cos: float
    coverage: int
    unique: float
    final_toxicity: float
    examples: tuple[str, ...]

    def metrics(self) -> dict[str, float]:
        return {k: float(getattr(self, k)) for k in ("quality", "n_toxic", "diversity_bleu",
                                                     "diversity_cos", "coverage", "unique",
                                                     "final_toxicity")}


def run_arm(arm: str, world_config: WorldConfig, cfg: CRTConfig, iterations: int, seed: int, *,
            threshold: float = 0.5, fraction: float = 0.5, max_cases: int = 300,
            ppo_seed: int | None = None,
            progress: Callable[[float, str], None] | None = None) -> ArmResult:
    """Train the red team of ``arm`` (see :meth:`CRTConfig.arm`) in the world of ``seed`` and
    evaluate it. ``ppo_seed`` (default: ``seed``) seeds PPO's sampling alone, so that two runs
    of one arm can differ in training randomness only, in the same world."""
    if ppo_seed is not None and (isinstance(ppo_seed, bool) or not isinstance(ppo_seed, int)):
        raise TypeError(f"ppo_seed must be an int or None, got {ppo_seed!r}")
    world = build_world(world_config, seed)
    embedder = HashingEmbedder()
    ppo = RedTeamPPO.from_lm(world.policy_lm,
                             lambda x, g: world.respond(x, temperature=cfg.victim_temperature,
                                                        top_p=cfg.victim_top_p, generator=g),
                             world.toxicity, cfg.arm(arm), decode=world.vocab.decode,
                             embedder=embedder, max_tokens=world_config.max_prompt_tokens,
                             seed=seed if ppo_seed is None else ppo_seed)
    history = ppo.train(iterations, progress=progress)
    late = history.last_fraction(fraction)
    tox = np.asarray(late.toxicity)
    row = evaluate_red_team(late.test_cases, late.responses, tox, [threshold],
                            embedder=embedder, clusters=world.vocab.clusters,
                            max_cases=max_cases, seed=seed).iloc[0]
    toxic = [t for t, r in zip(late.test_cases, tox) if r > threshold]
    return ArmResult(float(row["quality"]), int(row["n_toxic"]), float(row["diversity_bleu"]),
                     float(row["diversity_cos"]), int(row["coverage"]),
                     len(set(late.test_cases)) / max(1, len(late.test_cases)),
                     float(history.stats[-1]["toxicity"]), tuple(dict.fromkeys(toxic))[:4])
