"""NfgTransformer: Equivariant Representation Learning for Normal-form Games (S. Liu, L. Marris,
G. Piliouras, I. Gemp, N. Heess; ICLR 2024; arXiv 2402.08393; official code
google-deepmind/nfg_transformer, JAX/haiku).

What the paper does. A normal-form game is a payoff tensor G in R^{N x T_1 x ... x T_N};
relabelling a player's actions gives the same game, so a representation should be equivariant
to permutations of each action axis and not depend on the game size. The NfgTransformer encodes
G (and an optional mask of observed joint actions) into one embedding per (player, action) by
repeated attention between actions and joint actions (a2j, a2p, a2a) with QK-normalised
attention and no positional encodings. Small heads then solve for Nash equilibria (unsupervised,
by minimising NashConv), regress the max deviation gain per joint action, or predict missing
payoffs of partially observed empirical games.

How the code maps to it.
- :mod:`.network`: :class:`NfgTransformer` (blocks of a2j, a2p, a2a), :class:`NashHead`,
  :class:`DeviationGainHead`, :class:`PayoffHead`.
- :mod:`.equilibria`: :func:`deviation_gains`, :func:`nash_conv` (``reduce="max"`` is the
  official loss, ``"sum"`` the textbook NashConv), :func:`max_deviation_gain`.
- :mod:`.games`: :func:`l2_invariant_games`, :func:`disc_games`.
- :mod:`.training`: :class:`NfgNashSolver`, :class:`NfgPayoffPredictor`, training loops.
- :mod:`.baselines`: non-equivariant :class:`PayoffMLP`, :func:`replicator_dynamics`,
  nashpy Lemke-Howson ground truth, Elo / mElo rating fits.
- ``claims.py``: ``nash_solving``, ``equivariance``, ``payoff_inpainting``.

What is out of reach here. Paper-size runs (16x16 and 3-player games, D=64, K=8, A=2, 20 000
updates) are for the ``full`` scale only; the laptop claims use 2-player 4x4 / 8x8 games, small
models and a few hundred to a few thousand updates. The paper's NES baseline is not
reimplemented; an MLP, replicator dynamics and exact Lemke-Howson equilibria stand in.

Usage::

    import torch
    from iclr24.papers.nfg_transformer import NfgNashSolver, l2_invariant_games, nash_conv
    g = l2_invariant_games(4, (8, 8), torch.Generator().manual_seed(0))
    model = NfgNashSolver(d_model=32, n_blocks=3, n_heads=4, qkv_dim=32, n_action_self_attn=1)
    nash_conv(g, [lg.softmax(-1) for lg in model(g)], reduce="max")
"""

from .baselines import (
                        PayoffMLP,
                        fit_ratings,
                        fit_ratings_cv,
                        nashpy_equilibria,
                        predict_ratings,
                        replicator_dynamics,
)
from .equilibria import deviation_gains, max_deviation_gain, nash_conv
from .games import disc_games, l2_invariant_games
from .network import (
                        DeviationGainHead,
                        NashHead,
                        NfgTransformer,
                        NfgTransformerBlock,
                        PayoffHead,
                        action_masks,
                        check_game,
                        joint_embeddings,
)
from .training import (
                        NfgNashSolver,
                        NfgPayoffPredictor,
                        TrainConfig,
                        make_optimizer,
                        train_nash_solver,
                        train_payoff_predictor,
)

__all__ = [
                        "DeviationGainHead",
                        "NashHead",
                        "NfgNashSolver",
                        "NfgPayoffPredictor",
                        "NfgTransformer",
                        "NfgTransformerBlock",
                        "PayoffHead",
                        "PayoffMLP",
                        "TrainConfig",
                        "action_masks",
                        "check_game",
                        "deviation_gains",
                        "disc_games",
                        "fit_ratings",
                        "fit_ratings_cv",
                        "joint_embeddings",
                        "l2_invariant_games",
                        "make_optimizer",
                        "max_deviation_gain",
                        "nash_conv",
                        "nashpy_equilibria",
                        "predict_ratings",
                        "replicator_dynamics",
                        "train_nash_solver",
                        "train_payoff_predictor",
]
