"""Surrogate tasks written as text: the word vocabulary and the program that renders a video's
ground truth into an interleaved question/answer sequence with an answer-only loss mask.

Paper (Sec. 3.2): low-level surrogate tasks (detection, re-identification, tracking) are posed
as questions in natural language at chosen frames, their answers come from simulator metadata,
and the LM is trained with next-token cross-entropy on the answer tokens. For CATER the
surrogate answer is where the snitch is at frame t, and - when it is hidden - what contains it.

Here the sequence of one video, with look frames (0, 3, 6, 9) of a 12-frame video, is::

    <bos> look f0 snitch ? at c14  look f3 snitch ? under c20  ...  where snitch end ? c21

"at c" says the snitch is visible in cell c; "under c" says it is contained by the cone standing
in cell c (cones look alike, so a cone is named by where it stands). The final question is CATER
task 3 (the snitch's cell in the last frame, 36 classes). Answer tokens (``at``/``under``, the
cell after each look question and the final cell) are the only ones the loss sees. With
``surrogates=False`` the same program renders only ``<bos> where snitch end ? c21`` (the
final-answer-only ablation). Cells are single tokens, never digits of pixel values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .minicater import MiniCATERVideo

__all__ = ["FINAL_QUESTION", "SurrogateProgram", "Vocabulary"]

FINAL_QUESTION = "where snitch end ?"
_WORDS = ["<pad>", "<bos>", "look", "snitch", "?", "at", "under", "where", "end"]


class Vocabulary:
    """Word-level vocabulary: markers, frame ids f0..f{T-1} and cell ids c0..c{n_cells-1}.

    ``cell_ids`` / ``relation_ids`` (long tensors) are the tokens an answer may use: the cells,
    and the relation words of a Look answer (``at``, ``under``)."""

    def __init__(self, n_frames: int, n_cells: int) -> None:
        for name, v in (("n_frames", n_frames), ("n_cells", n_cells)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        self.n_frames, self.n_cells = n_frames, n_cells
        self.words = _WORDS + [f"f{t}" for t in range(n_frames)] + [f"c{c}" for c in range(n_cells)]
        self.index = {w: i for i, w in enumerate(self.words)}
        self.cell_ids = torch.tensor([self.index[f"c{c}"] for c in range(n_cells)])
        self.relation_ids = torch.tensor([self.index["at"], self.index["under"]])

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, text: str) -> list[int]:
        """Space-separated words -> ids (an unknown word is a ValueError naming it)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        try:
            return [self.index[w] for w in text.split()]
        except KeyError as exc:
            raise ValueError(f"word {exc.args[0]!r} is not in the vocabulary") from None

    def decode(self, ids) -> str:
        return " ".join(self.words[int(i)] for i in ids)

    def cell_of(self, token_id: int) -> int:
        """The cell a cell token names, -1 for any other token."""
        word = self.words[int(token_id)]
        return int(word[1:]) if word.startswith("c") and word[1:].isdigit() else -1


@dataclass(frozen=True)
class SurrogateProgram:
    """Renders videos into token sequences for training and into prompts for Look-Remember-
    Reason decoding.

    look_frames: frames at which a surrogate question is asked, in temporal order.
    surrogates: False renders only the final question (the final-answer-only ablation).
    """

    vocab: Vocabulary
    look_frames: tuple[int, ...] = (0, 3, 6, 9)
    surrogates: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.vocab, Vocabulary):
            raise TypeError(f"vocab must be a Vocabulary, got {type(self.vocab).__name__}")
        frames = tuple(self.look_frames)
        if any(isinstance(t, bool) or not isinstance(t, (int, np.integer)) for t in frames):
            raise TypeError(f"look_frames must be ints, got {self.look_frames!r}")
        if list(frames) != sorted(set(frames)) or (frames and not
                                                   0 <= frames[0] <= frames[-1] < self.vocab.n_frames):
            raise ValueError(f"look_frames must be increasing frames in [0, {self.vocab.n_frames}),"
                             f" got {self.look_frames!r}")
        object.__setattr__(self, "look_frames", tuple(int(t) for t in frames))

    def look_question(self, t: int) -> list[int]:
        return self.vocab.encode(f"look f{t} snitch ?")

    def look_answer(self, video: MiniCATERVideo, t: int) -> list[int]:
        """'at c' (visible) or 'under c' (contained by the cone in cell c) at frame t."""
        rel = "under" if video.contained_by[t] >= 0 else "at"
        return self.vocab.encode(f"{rel} c{video.snitch_cell(t)}")

    def final_question(self) -> list[int]:
        return self.vocab.encode(FINAL_QUESTION)

    def final_answer(self, video: MiniCATERVideo) -> list[int]:
        return self.vocab.encode(f"c{video.final_cell}")

    @property
    def length(self) -> int:
        """Tokens in a rendered sequence (the same for every video)."""
        return 1 + (6 * len(self.look_frames) if self.surrogates else 0) + 5

    def render(self, video: MiniCATERVideo) -> tuple[np.ndarray, np.ndarray]:
        """(tokens (L,), answer mask (L,) bool): mask[i] says token i is an answer token."""
        if video.frames.shape[0] != self.vocab.n_frames:
            raise ValueError(f"video has {video.frames.shape[0]} frames, the vocabulary "
                             f"{self.vocab.n_frames}")
        if video.grid ** 2 != self.vocab.n_cells:
            raise ValueError(f"video grid has {video.grid ** 2} cells, the vocabulary "
                             f"{self.vocab.n_cells}")
        if self.look_frames and self.look_frames[-1] >= video.frames.shape[0]:
            raise ValueError("look_frames reach past the video's last frame")
        tokens, mask = [self.vocab.index["<bos>"]], [False]
        pieces = []
        if self.surrogates:
            pieces += [(self.look_question(t), self.look_answer(video, t))
                       for t in self.look_frames]
        pieces.append((self.final_question(), self.final_answer(video)))
        for question, answer in pieces:
            tokens += question + answer
            mask += [False] * len(question) + [True] * len(answer)
        return np.asarray(tokens, dtype=np.int64), np.asarray(mask, dtype=bool)

    def render_batch(self, videos: list[MiniCATERVideo]) -> tuple[np.ndarray, np.ndarray]:
        """(tokens (N, L), mask (N, L)) for a list of videos."""
        rows = [self.render(v) for v in videos]
        return np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows])
