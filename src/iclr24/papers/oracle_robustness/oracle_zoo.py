"""The surrogate oracle: a zoo of pretrained models mapped to the task's label set.

Foundation Model-oriented Robustness (Zhang et al., ICLR 2024) replaces the human annotator who
would say "this perturbed image is still a 3" by a zoo O = {h_1..h_M} of large pretrained
models (CLIP zero-shot heads, big classifiers finetuned on the task). The zoo plays two parts:

- the *penalty* of the generation objective, (1/M) sum_m CE(h_m(x'), y) (our reading of
  Algorithm 1): it needs gradients through every member, so only differentiable members may take
  part in it;
- the *acceptance* rule: x' is kept only if the ensemble (the mean of the members'
  probabilities) predicts y with probability >= ``accept_threshold``. Any member, differentiable
  or not (a scikit-learn model, a thresholded detector), may filter.

Here the members are small CNNs trained by the project on more data than the evaluated models;
ImageNet-scale zoos (CLIP / ViT / ConvNeXt heads) are out of reach on CPU and their weights are
not available offline, but any callable ``images (B, C, H, W) -> logits (B, K)`` plugs in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
from torch.nn import functional as F

__all__ = ["OracleZoo"]

Member = Callable[[torch.Tensor], torch.Tensor]


class OracleZoo:
    """A zoo of oracle members over the label set ``classes``.

    members:          callables ``x (B, C, H, W) -> logits (B, K)`` with K = ``len(classes)``
                      (usually frozen ``nn.Module``\\ s; a non-differentiable member may only
                      filter, see :meth:`penalty`).
    classes:          the task's label names (or ids), in logit order; label y indexes it.
    accept_threshold: minimum ensemble probability of y for :meth:`accepts` (in [0, 1)); the
                      ensemble must also rank y first.
    """

    def __init__(self, members: Sequence[Member], classes: Sequence[object],
                 accept_threshold: float = 0.5) -> None:
        if isinstance(members, (str, bytes)) or not isinstance(members, Sequence):
            raise TypeError(f"members must be a sequence of callables, got "
                            f"{type(members).__name__}")
        if len(members) == 0:
            raise ValueError("members must hold at least one oracle model, got an empty list")
        for i, m in enumerate(members):
            if not callable(m):
                raise TypeError(f"members[{i}] must be callable (images -> logits), got "
                                f"{type(m).__name__}")
        if isinstance(classes, (str, bytes)) or not isinstance(classes, Sequence):
            raise TypeError(f"classes must be a sequence of label names, got "
                            f"{type(classes).__name__}")
        if len(classes) < 2:
            raise ValueError(f"classes must name at least 2 labels, got {list(classes)!r}")
        if len(set(classes)) != len(classes):
            raise ValueError(f"classes must be distinct, got {list(classes)!r}")
        if isinstance(accept_threshold, bool) or not isinstance(accept_threshold, (int, float)) \
                or not 0 <= accept_threshold < 1:
            raise ValueError(f"accept_threshold must be a number in [0, 1), got "
                             f"{accept_threshold!r}")
        self.members = list(members)
        self.classes = list(classes)
        self.accept_threshold = float(accept_threshold)

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    def __len__(self) -> int:
        return len(self.members)

    def _check_labels(self, y: torch.Tensor, batch: int) -> torch.Tensor:
        if not isinstance(y, torch.Tensor) or y.dtype not in (torch.int64, torch.int32):
            raise TypeError("y must be an integer torch.Tensor of labels")
        if y.shape != (batch,):
            raise ValueError(f"y must have shape ({batch},), got {tuple(y.shape)}")
        if batch and (int(y.min()) < 0 or int(y.max()) >= self.n_classes):
            raise ValueError(f"y must hold labels in [0, {self.n_classes}) (one per class of "
                             f"the zoo), got range [{int(y.min())}, {int(y.max())}]")
        return y.long()

    def member_logits(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Each member's logits on ``x``: a list of M tensors (B, K)."""
        if not isinstance(x, torch.Tensor) or x.dim() != 4 or not x.is_floating_point():
            raise ValueError("x must be a floating-point image tensor of shape (B, C, H, W)")
        out = []
        for i, member in enumerate(self.members):
            logits = member(x)
            if not isinstance(logits, torch.Tensor) or logits.shape != (len(x), self.n_classes):
                shape = tuple(logits.shape) if isinstance(logits, torch.Tensor) else logits
                raise ValueError(f"oracle member {i} must return logits of shape "
                                 f"({len(x)}, {self.n_classes}) for the zoo's classes, got "
                                 f"{shape}")
            out.append(logits)
        return out

    @staticmethod
    def _ensemble_log_probs(logits: list[torch.Tensor]) -> torch.Tensor:
        # log p(k|x) = log (1/M) sum_m softmax(h_m(x))_k
        lp = torch.stack([F.log_softmax(lg, dim=1) for lg in logits])
        return torch.logsumexp(lp, dim=0) - math.log(len(logits))

    def log_probs(self, x: torch.Tensor) -> torch.Tensor:
        """Log of the ensemble's mean class probability, (B, K)."""
        return self._ensemble_log_probs(self.member_logits(x))

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """The ensemble's label, (B,)."""
        with torch.no_grad():
            return self.log_probs(x).argmax(dim=1)

    def _accepts_from(self, logits: list[torch.Tensor], y: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            lp = self._ensemble_log_probs([lg.detach() for lg in logits])
            top = lp.argmax(dim=1) == y
            return top & (lp.gather(1, y[:, None])[:, 0].exp() >= self.accept_threshold)

    def accepts(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """BoolTensor (B,): the ensemble ranks y first with probability >= accept_threshold."""
        logits = self.member_logits(x)
        return self._accepts_from(logits, self._check_labels(y, len(x)))

    def penalty(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """(1/M) sum_m CE(h_m(x), y) per sample, (B,), differentiable in ``x``.

        Raises ValueError if ``x`` requires grad and a member's output does not (such a member
        can filter in :meth:`accepts` but cannot take part in generation).
        """
        return self.score(x, y)[0]

    def score(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(penalty (B,), accepted (B,)) from one pass of the members over ``x``; see
        :meth:`penalty` and :meth:`accepts`."""
        y = self._check_labels(y, len(x))
        logits = self.member_logits(x)
        if x.requires_grad:
            for i, lg in enumerate(logits):
                if not lg.requires_grad:
                    raise self._not_differentiable(i)
        # (1/M) sum_m CE(h_m(x'), y)
        pen = torch.stack([F.cross_entropy(lg, y, reduction="none") for lg in logits]).mean(0)
        return pen, self._accepts_from(logits, y)

    def label_shifted(self, shift: int) -> OracleZoo:
        """The null oracle of the label-preservation claim: the same members and acceptance
        threshold, but label k is read from the members' class (k + shift) mod K, so the zoo
        "preserves" and accepts a different digit than y. It keeps the whole mechanism
        (penalty, acceptance, fallback) and removes only the oracle's knowledge of the label.

        Raises TypeError if ``shift`` is not an int, ValueError if it is 0 mod K (no shift).
        """
        if isinstance(shift, bool) or not isinstance(shift, int):
            raise TypeError(f"shift must be an int, got {type(shift).__name__}")
        k = self.n_classes
        if shift % k == 0:
            raise ValueError(f"shift must not be a multiple of the {k} classes (that is the "
                             f"zoo itself), got {shift}")
        order = [(c + shift) % k for c in range(k)]  # shifted logit c = member logit (c + s) mod K

        def shifted(member: Member) -> Member:
            return lambda x: member(x)[:, order]

        return OracleZoo([shifted(m) for m in self.members], self.classes,
                         self.accept_threshold)

    def check_differentiable(self, x: torch.Tensor) -> None:
        """Raise ValueError naming the first member whose logits carry no gradient back to
        ``x`` (a scikit-learn model, a detached or thresholded output). Generation with a
        penalty (lam > 0) calls this once before its first step."""
        x = x.detach().requires_grad_(True)
        for i, lg in enumerate(self.member_logits(x)):
            grad = None
            if lg.requires_grad:
                grad = torch.autograd.grad(lg.sum(), x, allow_unused=True)[0]
            if grad is None:
                raise self._not_differentiable(i)

    def _not_differentiable(self, i: int) -> ValueError:
        return ValueError(
            f"oracle member {i} ({type(self.members[i]).__name__}) is not differentiable in its "
            "input, so it cannot take part in generation (the penalty term needs its gradient); "
            "use it only to filter (lam=0) or as a judge")
