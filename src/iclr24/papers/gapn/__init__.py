"""GAPN: Deep reinforcement learning for modelling protein complexes (T. Feng, Z. Gao, J. You,
C. Zi, Y. Zhou, C. Zhang, J. Li; ICLR 2024; arXiv 2405.02299, also titled "Generative
Adversarial Policy Network for Modelling Protein Complexes"; no official code was found).

What the paper does. Large complexes are assembled from pairwise dimer structures by adding
chains one at a time; the docking path is a spanning tree over the N chains (N^(N−2)
candidates), which MoLPC searches per complex with Monte Carlo tree search. GAPN instead learns
a GCN policy over the chain graph that picks the next assembly edge (i placed, j not) directly,
trained with PPO on a docking reward plus an adversarial reward log D_φ(s, a) from a
discriminator that separates ground-truth assembly actions, pooled over complexes of all chain
numbers, from the policy's. Inference is one rollout of N − 1 steps (≈ 600× faster than MoLPC,
up to 27% better TM-score).

How the code maps to it.
- :mod:`.complexes`: the synthetic benchmark (chains, native complexes, the dimer "predictor"
  in GT or AFM-like mode): ``generate_complex(es)``, ``AssemblyProblem``, ``SyntheticComplex``,
  ``complex_from_native``.
- :mod:`.pdb_files`: ``load_pdb_complex`` / ``read_ca_chains``, the same complex type from the
  Cα atoms of a local PDB file (a minimal reader; dimers from the benchmark's predictor).
- :mod:`.environment`: the MDP (Sec. 3): ``AssemblyEnv`` (gymnasium API, placement
  T_global(j) = T_global(i) ∘ T_ij), the docking reward ``DockingReward`` / ``PairScorer``.
- :mod:`.policy`: ``GCNEncoder`` (Eq. 4), ``GAPNPolicy``, ``ValueNetwork``,
  ``AssemblyDiscriminator`` (Eq. 3).
- :mod:`.training`: ``GAPNConfig``, ``train_gapn`` (PPO, Eqs. 6–7, with the RL kit's GAE and
  clipped losses, alternating with discriminator updates), ``gapn_assemble``.
- :mod:`.search`: the baselines ``mcts_assemble`` (MoLPC-style), ``greedy_assemble``,
  ``random_assemble``, ``exhaustive_assemble`` (Prüfer enumeration, N <= 7).
- :mod:`.rigid`: ``tm_score`` (known correspondence), ``kabsch_rmsd``, ``kabsch``, transforms.
- ``claims.py``: ``reward_alignment``, ``assembly_quality``, ``search_cost``.

What is out of reach / differs. Real PDB complexes (the paper's 3–30-chain set), ground-truth
and AlphaFold-Multimer dimers, ESMFold/AF-Multimer/Multi-LZerD baselines and MM-align cannot be
used (no downloads, no weights, no GPU): chains are rigid point clouds, dimers come from a
seeded noisy "predictor", and the docking reward is the spec's contact/confidence/clash stand-in
for the paper's Eq. 2 (not retrieved). Node features are chain size, radius and mean dimer
confidence instead of protein-language-model embeddings. Hyper-parameters are the spec's
defaults (the paper's were not retrieved). MoLPC's cost includes AFM sub-structure prediction,
which is not modelled: ``search_cost`` therefore counts cost in distinct interface scorings
(the stand-in scorer's calls, the unit an AFM-based pipeline pays in) and reports CPU time of
the search beside it. Real complexes can be read from local PDB files (``load_pdb_complex``),
with dimers from the same predictor, since AFM dimers cannot be computed here.
"""

from .complexes import (
    AssemblyProblem,
    ComplexConfig,
    Dimer,
    SyntheticComplex,
    complex_from_native,
    generate_complex,
    generate_complexes,
    sample_chain,
)
from .environment import AssemblyEnv, DockingReward, PairScorer, tree_path
from .pdb_files import load_pdb_complex, read_ca_chains
from .policy import (
    AssemblyDiscriminator,
    EdgeScorer,
    GAPNPolicy,
    GCNEncoder,
    ValueNetwork,
    batch_observations,
    normalized_adjacency,
)
from .rigid import (
    apply_transform,
    compose,
    invert,
    kabsch,
    kabsch_rmsd,
    random_rotation,
    tm_d0,
    tm_score,
)
from .search import (
    MAX_EXHAUSTIVE_CHAINS,
    AssemblyResult,
    assemble_tree,
    exhaustive_assemble,
    greedy_assemble,
    mcts_assemble,
    prufer_to_edges,
    random_assemble,
    spanning_trees,
)
from .training import GAPNConfig, GAPNModel, gapn_assemble, train_gapn

__all__ = [
    "MAX_EXHAUSTIVE_CHAINS",
    "AssemblyDiscriminator",
    "AssemblyEnv",
    "AssemblyProblem",
    "AssemblyResult",
    "ComplexConfig",
    "Dimer",
    "DockingReward",
    "EdgeScorer",
    "GAPNConfig",
    "GAPNModel",
    "GAPNPolicy",
    "GCNEncoder",
    "PairScorer",
    "SyntheticComplex",
    "ValueNetwork",
    "apply_transform",
    "assemble_tree",
    "batch_observations",
    "complex_from_native",
    "compose",
    "exhaustive_assemble",
    "gapn_assemble",
    "generate_complex",
    "generate_complexes",
    "greedy_assemble",
    "invert",
    "kabsch",
    "kabsch_rmsd",
    "load_pdb_complex",
    "mcts_assemble",
    "normalized_adjacency",
    "prufer_to_edges",
    "random_assemble",
    "random_rotation",
    "read_ca_chains",
    "sample_chain",
    "spanning_trees",
    "tm_d0",
    "tm_score",
    "train_gapn",
    "tree_path",
]
