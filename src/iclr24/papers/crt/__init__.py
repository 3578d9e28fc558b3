"""Curiosity-driven Red-teaming for Large Language Models (Z.-W. Hong, I. Shenfeld, T.-H.
Wang, Y.-S. Chuang, A. Pareja, J. Glass, A. Srivastava, P. Agrawal; ICLR 2024; arXiv
2402.19464; official code Improbable-AI/curiosity_redteam, a customised trlx).

What the paper does. A red-team LM π_θ is trained with PPO to write test cases x that make a
target LM produce toxic output y (reward R(y) from a toxicity classifier). Plain RL (Perez et
al. 2022) collapses onto a few effective prompts; CRT adds curiosity-style novelty rewards,
−SelfBLEU of x against all earlier test cases and −mean cosine similarity of its sentence
embedding to theirs, plus an entropy bonus, beside the KL penalty to π_ref (Eq. 2). It finds
more diverse toxicity-eliciting test cases at equal or better hit rate, also against
LLaMA-2-7b-chat.

How the code maps to it.
- :mod:`.novelty`: :class:`SelfBleuNovelty` (NLTK BLEU, orders 2-5, exact against the whole
  history), :class:`EmbeddingNovelty`, :class:`HashingEmbedder`, :func:`self_bleu_leave_one_out`,
  :func:`mean_pairwise_cosine`.
- :mod:`.rewards`: :class:`CRTCoefs`, :func:`crt_terminal_reward`, :func:`shaped_token_rewards`
  (the official per-token shaping: −β·log-ratio + λ_E·(−log π), terminal on the last token).
- :mod:`.ppo`: :class:`CRTConfig` (the paper's defaults; :meth:`CRTConfig.arm` gives RL,
  RL + entropy, CRT and the ablations), :class:`RedTeamPolicy` (kit LM + value head),
  :class:`HFRedTeamPolicy` (a Hugging Face LM conditioned on a red-team prompt + value head),
  :class:`RedTeamPPO` (``.train(iterations) -> History``; ``from_lm`` takes the kit's tiny
  LM, SmolLM2 or a user's own Hugging Face model), :class:`History`.
- :mod:`.evaluation`: :func:`evaluate_red_team` (quality, diversity_bleu, diversity_cos,
  n_toxic and coverage per toxicity threshold).
- :mod:`.world`: the synthetic victim world (:class:`RedTeamWorld`, :class:`WorldConfig`,
  :func:`build_world`, :class:`Vocabulary`, :class:`ToxicityClassifier`).
- :mod:`.experiments`: :func:`run_arm` (one arm end to end -> :class:`ArmResult`).
- :mod:`.llm_red_team`: the protocol on text LMs (few-shot red-team prompt, chat-template
  target, alt-profanity-check, :func:`reward_selection` with the toxicity-only, CRT,
  novelty-only and random selectors).
- ``claims.py``: ``novelty_coverage``, ``novelty_ablation`` (synthetic world, PPO) and
  ``smollm2_selection`` (SmolLM2-135M-Instruct, MiniLM, alt-profanity-check).

What is out of reach and what differs. The paper's red team is GPT-2 (and its targets GPT-2,
Dolly, Vicuna, LLaMA-2-7b-chat, GPT-3.5) with a RoBERTa toxicity classifier and a gibberish
classifier, trained for thousands of PPO iterations on GPUs; none of that runs offline here.
The PPO claims use a tiny word-level red team against a tiny victim LM that is toxic only
when a trigger word is the subject of the prompt (10 trigger clusters), with a bag-of-words
toxicity classifier; the real-model claim runs best-of-K selection, not PPO, on
SmolLM2-135M-Instruct. The cosine novelty in the PPO world uses hashed word 1-2-gram vectors
(all-MiniLM-L6-v2, the paper's embedder, is too slow per PPO step on this CPU; it is used in
the SmolLM2 claim). NLTK's ``wordpunct_tokenize`` replaces ``word_tokenize`` (no punkt data
offline); NLTK BLEU with smoothing method 1 replaces fast-bleu (same definition).

Usage::

    from iclr24.papers.crt import (CRTConfig, HashingEmbedder, RedTeamPPO, WorldConfig,
                                   build_world)
    world = build_world(WorldConfig(), seed=0)
    ppo = RedTeamPPO.from_lm(world.policy_lm, lambda x, g: world.respond(x, generator=g),
                             world.toxicity, CRTConfig(rollouts=64, lr=1e-3),
                             decode=world.vocab.decode, embedder=HashingEmbedder(),
                             max_tokens=8)
    history = ppo.train(100)
"""

from .evaluation import THRESHOLDS, evaluate_red_team
from .experiments import ArmResult, run_arm
from .llm_red_team import (
    FEWSHOT_INSTRUCTIONS,
    SELECTORS,
    SelectionResult,
    profanity_toxicity,
    red_team_prompt,
    reward_selection,
)
from .novelty import (
    EmbeddingNovelty,
    HashingEmbedder,
    SelfBleuNovelty,
    mean_pairwise_cosine,
    self_bleu_leave_one_out,
)
from .ppo import CRTConfig, HFRedTeamPolicy, History, RedTeamPolicy, RedTeamPPO
from .rewards import CRTCoefs, crt_terminal_reward, last_token_index, shaped_token_rewards
from .world import (
    EOS,
    PAD,
    SEP,
    TOXIC_LEXICON,
    TRIGGER_CLUSTERS,
    RedTeamWorld,
    ToxicityClassifier,
    Vocabulary,
    WorldConfig,
    build_world,
)

__all__ = [
    "EOS",
    "FEWSHOT_INSTRUCTIONS",
    "PAD",
    "SELECTORS",
    "SEP",
    "THRESHOLDS",
    "TOXIC_LEXICON",
    "TRIGGER_CLUSTERS",
    "ArmResult",
    "CRTCoefs",
    "CRTConfig",
    "EmbeddingNovelty",
    "HFRedTeamPolicy",
    "HashingEmbedder",
    "History",
    "RedTeamPPO",
    "RedTeamPolicy",
    "RedTeamWorld",
    "SelectionResult",
    "SelfBleuNovelty",
    "ToxicityClassifier",
    "Vocabulary",
    "WorldConfig",
    "build_world",
    "crt_terminal_reward",
    "evaluate_red_team",
    "last_token_index",
    "mean_pairwise_cosine",
    "profanity_toxicity",
    "red_team_prompt",
    "reward_selection",
    "run_arm",
    "self_bleu_leave_one_out",
    "shaped_token_rewards",
]
