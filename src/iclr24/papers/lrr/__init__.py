"""LRR: Look, Remember and Reason - grounded reasoning in videos with language models
(A. Bhattacharyya, S. Panchal, M. Lee, R. Pourreza, P. Madan, R. Memisevic; ICLR 2024;
arXiv 2306.17778; no official code found).

What the paper does. A multi-modal LM answers video questions whose answers hinge on low-level
detail (where an object went, what covers what) by being trained end to end on *surrogate
tasks* posed as text (detection, re-identification, tracking) with ground truth from simulator
metadata, over a two-stream (spatial + motion) video encoder read through cross-attention. At
inference it answers the surrogate questions itself, frame by frame (Look), keeps those answers
in its context (Remember) and then answers the real question (Reason). It reports state of the
art on ACRE, CATER, Something-Else and STAR; removing surrogate training or the motion stream
hurts most where tracking under occlusion/containment is needed (CATER).

How the code maps to it.
- :mod:`.minicater`: :func:`generate_minicater`, a CATER-like procedural world (6x6 grid, a
  snitch, look-alike cones that contain and carry it, distractor cubes) with per-frame truth and
  about half the videos ending with the snitch hidden.
- :mod:`.model`: :class:`TwoStreamVideoEncoder` (spatial stream: per-frame attention over patch
  tokens; motion stream: divided space-time attention over patch tokens of frame differences)
  and :class:`CrossAttentionLM` (causal decoder with cross-attention to the visual tokens).
- :mod:`.program`: :class:`Vocabulary` (words, frame ids, cell ids) and
  :class:`SurrogateProgram` (video truth -> "look f3 snitch ? under c20 ... where snitch end ?
  c21" with a loss mask on answer tokens only).
- :mod:`.lrr`: :class:`LRR` (``fit`` with the answer-only loss :func:`answer_loss`;
  ``generate``/``answer``: Look-Remember-Reason greedy decoding with the model's own answers in
  context; ``predict_final`` also teacher-forced).
- :mod:`.experiment`: :func:`run_arm` for the three arms (LRR, final-answer-only, spatial-only).
- ``claims.py``: ``surrogate_tasks`` (LRR vs final-answer-only, overall and on the
  contained-at-end subset) and ``motion_stream`` (two streams vs spatial only).

What is out of reach and differs.
- Pretrained OPT: no download, no GPU; the LM is a two-layer decoder trained from scratch.
- Real videos (CATER's renders, its moving camera, Something-Else, STAR, ACRE): replaced by
  24x24 px MiniCATER videos of 12 frames; CATER itself is not used.
- Large encoders and the paper's schedule: one layer per stream at d = 64 and 800 AdamW steps
  per model at small (the spec asks ~2,500; issue 38 raised them from 300 as far as a claim's
  six trainings fit its 5-minute CPU budget); decoding constrained to the answer grammar.
- Cones are named by the cell they stand in (cones look alike), not by attributes.

Usage::

    from iclr24.papers.lrr import (LRR, CrossAttentionLM, FitConfig, SurrogateProgram,
                                   TwoStreamVideoEncoder, Vocabulary, generate_minicater)
    videos = generate_minicater(1000, seed=0)
    vocab = Vocabulary(12, 36)
    program = SurrogateProgram(vocab, look_frames=(0, 3, 6, 9))
    model = LRR(TwoStreamVideoEncoder(24, 8, 64, 1, 1), CrossAttentionLM(len(vocab), 64, 2,
                memory_dim=64, max_len=program.length), vocab)
    model.fit(videos, program, FitConfig(steps=400, batch_size=16, lr=3e-3))
    model.answer(videos[0])          # e.g. 'c21'
"""

from .experiment import ARMS, ExperimentConfig, build_model, majority_floor, make_data, run_arm
from .lrr import LRR, FitConfig, answer_loss, videos_tensor
from .minicater import (
    MiniCATERConfig,
    MiniCATERVideo,
    generate_minicater,
    render_frame,
    segment_bounds,
)
from .model import CrossAttentionLM, TwoStreamVideoEncoder, count_parameters, patchify
from .program import FINAL_QUESTION, SurrogateProgram, Vocabulary

__all__ = [
    "ARMS",
    "FINAL_QUESTION",
    "LRR",
    "CrossAttentionLM",
    "ExperimentConfig",
    "FitConfig",
    "MiniCATERConfig",
    "MiniCATERVideo",
    "SurrogateProgram",
    "TwoStreamVideoEncoder",
    "Vocabulary",
    "answer_loss",
    "build_model",
    "count_parameters",
    "generate_minicater",
    "majority_floor",
    "make_data",
    "patchify",
    "render_frame",
    "run_arm",
    "segment_bounds",
    "videos_tensor",
]
