"""LRR: Look, Remember and Reason with one end-to-end model (paper Sec. 3).

Training (Sec. 3.2): next-token cross-entropy on the *answer* tokens of the interleaved
surrogate/final sequence, the video encoder, cross-attention and LM trained jointly:

    L = - sum_i m_i log p(w_i | w_<i, V) / sum_i m_i,    m_i = 1 iff w_i is an answer token.

Inference (Sec. 3.3): the model is prompted with the surrogate questions in temporal order and
answers them itself (Look), greedily; its own answers stay in the context (Remember); then the
final question is asked and answered from that context (Reason). :meth:`LRR.generate` does this
for a batch, :meth:`LRR.answer` for one video. :meth:`LRR.predict_final` also gives the
teacher-forced reading (ground-truth Look answers in the context), to measure exposure bias.

Decoding is greedy and *constrained to the answer grammar* (issue 38: unconstrained, an
untrained model answered "f8", not a cell): a Look answer is a relation word (``at`` /
``under``) then a cell token, the final answer a cell token; the argmax runs over those tokens
only (:attr:`Vocabulary.relation_ids`, :attr:`Vocabulary.cell_ids`), so every answer names a
cell. The teacher-forced reading of :meth:`LRR.predict_final` is constrained the same way.

What differs: the LM is trained from scratch (no pretrained OPT; the paper does not say how it
constrains decoding), and the optimiser is AdamW with linear warm-up and cosine decay at a CPU
budget (about a thousand steps, not the paper's GPU schedule).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .minicater import MiniCATERVideo
from .model import CrossAttentionLM, TwoStreamVideoEncoder
from .program import FINAL_QUESTION, SurrogateProgram, Vocabulary

__all__ = ["LRR", "FitConfig", "answer_loss", "videos_tensor"]


@dataclass(frozen=True)
class FitConfig:
    """Optimiser settings: AdamW, linear warm-up over ``warmup`` of the steps, cosine decay."""

    steps: int = 2500
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.01
    warmup: float = 0.05
    clip: float = 1.0

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")
        if not 0 <= self.warmup < 1:
            raise ValueError(f"warmup must be a fraction in [0, 1), got {self.warmup!r}")


def answer_loss(logits: Tensor, tokens: Tensor, mask: Tensor) -> Tensor:
    """Mean cross-entropy of the answer tokens only.

    logits: (B, L - 1, V), the LM's output on tokens[:, :-1]; tokens: (B, L) long;
    mask: (B, L) bool, True at answer tokens (position 0, the BOS, is never one).
    """
    if logits.shape[:2] != (tokens.shape[0], tokens.shape[1] - 1) or mask.shape != tokens.shape:
        raise ValueError(f"logits {tuple(logits.shape)} must be (B, L-1, V) for tokens "
                         f"{tuple(tokens.shape)} and mask {tuple(mask.shape)}")
    target, m = tokens[:, 1:], mask[:, 1:].to(logits.dtype)
    if not m.any():
        raise ValueError("mask selects no answer token")
    ce = F.cross_entropy(logits.transpose(1, 2), target, reduction="none")  # -log p(w_i | ...)
    return (ce * m).sum() / m.sum()  # L = sum_i m_i CE_i / sum_i m_i


def _greedy(logits: Tensor, allowed: Tensor) -> Tensor:
    """Greedy choice among the ``allowed`` token ids (K,) for logits (B, V) -> ids (B,)."""
    return allowed[logits[:, allowed].argmax(-1)]


def videos_tensor(videos: Sequence[MiniCATERVideo]) -> Tensor:
    """(N, T, C, H, W) float32 tensor of the videos' frames."""
    if not videos or not all(isinstance(v, MiniCATERVideo) for v in videos):
        raise TypeError("videos must be a non-empty list of MiniCATERVideo")
    return torch.from_numpy(np.stack([v.frames for v in videos]))


class LRR(nn.Module):
    """Two-stream encoder + cross-attention LM + word vocabulary.

    forward(video (B, T, C, H, W), tokens (B, L)) -> logits (B, L, V).
    """

    def __init__(self, encoder: TwoStreamVideoEncoder, lm: CrossAttentionLM,
                 vocab: Vocabulary) -> None:
        super().__init__()
        if not isinstance(encoder, TwoStreamVideoEncoder):
            raise TypeError(f"encoder must be a TwoStreamVideoEncoder, got {type(encoder).__name__}")
        if not isinstance(lm, CrossAttentionLM):
            raise TypeError(f"lm must be a CrossAttentionLM, got {type(lm).__name__}")
        if not isinstance(vocab, Vocabulary):
            raise TypeError(f"vocab must be a Vocabulary, got {type(vocab).__name__}")
        if lm.vocab_size != len(vocab):
            raise ValueError(f"lm.vocab_size {lm.vocab_size} != len(vocab) {len(vocab)}")
        if lm.memory_dim != encoder.dim:
            raise ValueError(f"lm.memory_dim {lm.memory_dim} != encoder.dim {encoder.dim}")
        self.encoder, self.lm, self.vocab = encoder, lm, vocab

    def forward(self, video: Tensor, tokens: Tensor) -> Tensor:
        return self.lm(tokens, self.encoder(video))

    def loss(self, video: Tensor, tokens: Tensor, mask: Tensor) -> Tensor:
        """Answer-token cross-entropy of :func:`answer_loss` on one batch."""
        return answer_loss(self(video, tokens[:, :-1]), tokens, mask)

    def fit(self, videos: Sequence[MiniCATERVideo], program: SurrogateProgram,
            config: FitConfig = FitConfig(), *, seed: int = 0,
            progress: Callable[[float, str], None] | None = None) -> list[float]:
        """Train on ``program``'s rendering of ``videos``; returns the loss of every step."""
        if not isinstance(program, SurrogateProgram) or program.vocab is not self.vocab:
            raise ValueError("program must be a SurrogateProgram over this model's vocabulary")
        frames = videos_tensor(videos)
        tok_np, mask_np = program.render_batch(list(videos))
        tokens, mask = torch.from_numpy(tok_np), torch.from_numpy(mask_np)
        gen = torch.Generator().manual_seed(seed)
        opt = torch.optim.AdamW(self.parameters(), lr=config.lr,
                                weight_decay=config.weight_decay)
        warm = max(1, int(config.warmup * config.steps))

        def lr_at(step: int) -> float:
            if step < warm:
                return (step + 1) / warm
            return 0.5 * (1 + np.cos(np.pi * (step - warm) / max(1, config.steps - warm)))

        sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
        self.train()
        losses = []
        for step in range(config.steps):
            idx = torch.randint(len(videos), (config.batch_size,), generator=gen)
            loss = self.loss(frames[idx], tokens[idx], mask[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(self.parameters(), config.clip)
            opt.step()
            sched.step()
            losses.append(float(loss.detach()))
            if progress is not None and (step + 1) % 50 == 0:
                progress((step + 1) / config.steps, f"step {step + 1}: loss {losses[-1]:.3f}")
        self.eval()
        return losses

    @torch.no_grad()
    def generate(self, video: Tensor, look_frames: Sequence[int],
                 question: str = FINAL_QUESTION) -> Tensor:
        """Look, Remember, Reason for a batch: the transcript (B, L) of token ids.

        For each look frame t the prompt 'look f{t} snitch ?' is appended and the model writes
        its answer greedily, a relation word then a cell (the argmax over those tokens only);
        the answers stay in the context; then ``question`` is appended and a cell is generated.
        """
        if video.dim() != 5:
            raise ValueError(f"video must be (B, T, C, H, W), got {tuple(video.shape)}")
        for t in look_frames:
            if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or \
                    not 0 <= t < video.shape[1]:
                raise ValueError(f"look frame {t!r} is not a frame of a {video.shape[1]}-frame video")
        was_training = self.training
        self.eval()
        memory = self.encoder(video)
        b = video.shape[0]
        seq = torch.full((b, 1), self.vocab.index["<bos>"], dtype=torch.long)

        relations, cells = self.vocab.relation_ids, self.vocab.cell_ids

        def extend(words: list[int], grammar: list[Tensor]) -> Tensor:
            out = torch.cat([seq, torch.tensor(words).expand(b, -1)], 1)
            for allowed in grammar:
                nxt = _greedy(self.lm(out, memory)[:, -1], allowed)
                out = torch.cat([out, nxt[:, None]], 1)
            return out

        for t in look_frames:
            seq = extend(self.vocab.encode(f"look f{int(t)} snitch ?"), [relations, cells])
        seq = extend(self.vocab.encode(question), [cells])
        self.train(was_training)
        return seq

    def answer(self, video: Tensor | MiniCATERVideo, question: str = FINAL_QUESTION,
               look_steps: Sequence[int] = (0, 3, 6, 9)) -> str:
        """The generated answer word (e.g. 'c21') for one video (T, C, H, W)."""
        if isinstance(video, MiniCATERVideo):
            video = torch.from_numpy(video.frames)
        if not isinstance(video, Tensor) or video.dim() != 4:
            raise ValueError("video must be a MiniCATERVideo or a (T, C, H, W) tensor")
        return self.vocab.decode(self.generate(video[None], look_steps, question)[0, -1:])

    @torch.no_grad()
    def predict_final(self, videos: Sequence[MiniCATERVideo], program: SurrogateProgram,
                      teacher_forced: bool = False, batch_size: int = 128
                      ) -> tuple[np.ndarray, np.ndarray]:
        """(final cells (N,), look cells (N, n_looks)) predicted (constrained decoding: always
        cells). Generated Look answers by default; ``teacher_forced`` puts the ground-truth Look
        answers in the context instead (the training condition)."""
        was_training = self.training
        self.eval()
        finals, looks = [], []
        n_looks = len(program.look_frames) if program.surrogates else 0
        for i in range(0, len(videos), batch_size):
            chunk = list(videos[i:i + batch_size])
            frames = videos_tensor(chunk)
            if teacher_forced or not program.surrogates:
                tok, _ = program.render_batch(chunk)
                tok = torch.from_numpy(tok)
                logits = self(frames, tok[:, :-1])
                pred = tok.clone()
                cells = self.vocab.cell_ids  # next-token prediction at every cell answer
                for pos in [6 * k + 6 for k in range(n_looks)] + [tok.shape[1] - 1]:
                    pred[:, pos] = _greedy(logits[:, pos - 1], cells)
            else:
                pred = self.generate(frames, program.look_frames)
            finals.append(pred[:, -1].numpy())
            looks.append(pred[:, [6 * k + 6 for k in range(n_looks)]].numpy())
        self.train(was_training)
        to_cell = np.vectorize(self.vocab.cell_of, otypes=[np.int64])
        final = to_cell(np.concatenate(finals))
        look = np.concatenate(looks)
        return final, (to_cell(look) if look.size else look.astype(np.int64))
