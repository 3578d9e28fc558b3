"""JEI-DNN training (Sec. 3.3-3.4; official ``gate_training_helper.py``,
``classifier_training_helper.py``, ``learning_helper.py``, ``our_train_helper.py``).

- Warm-up (:func:`warmup_exit_heads`): IMs on the frozen backbone with CE scaled by (L - l)
  for 0-based IM l (earlier IMs get larger gradients), each IM frozen at its best validation
  accuracy once it has not improved for ``patience`` epochs (the official dynamic warm-up).
  These IMs are also the threshold baseline's.
- Oracle (:func:`oracle_exit`): l* = argmin_l CE_l + lambda IC_l over all L exits, IC_l the
  exit's cost normalised so the final head costs 1.
- Gate phase (:func:`gate_loss`): BCE with logits against the oracle targets (EXIT_SUBSEQUENT:
  1 for gates l >= l*, IGNORE_SUBSEQUENT: gates after l* unsupervised), positive terms weighted
  per gate by (#total - #exit_l) / #exit_l from the last validation pass, capped at 5
  (:func:`positive_weights`).
- Classifier phase (:func:`weighted_im_loss`): gates frozen, IMs trained on CE weighted by the
  exit probabilities P_l, rescaled per sample to the unweighted sum's size.
- :class:`JEIDNNTrainer` alternates the phases every ``alternate_every`` batches (SGD, lr 0.01,
  momentum 0.9, weight decay 5e-4, cosine to 2e-4: the official defaults) and resets the
  positive weights after each epoch from the validation oracle counts.

Differences from the official code, all at our scale: the frozen backbone's block outputs are
computed once and cached (the same numbers, far cheaper); the alternation counter runs across
epochs (the official counter restarts each epoch, so with fewer than ``alternate_every``
batches per epoch, as on digits, it would never leave the gate phase); warm-up and joint
training use separate optimizers; the last epoch's model is kept (the official code stores the
epoch with the best validation gated accuracy).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from .gates import UncertaintyGate, exit_probabilities, gated_exit, uncertainty_features
from .network import EarlyExitNet

__all__ = [
    "GATE_SCHEMES",
    "IM_LOSSES",
    "JEIDNNTrainer",
    "as_features",
    "as_labels",
    "default_gates",
    "gate_loss",
    "gate_targets",
    "oracle_exit",
    "positive_weights",
    "warmup_exit_heads",
    "weighted_im_loss",
]

GATE_SCHEMES = ("exit_subsequent", "ignore_subsequent")
IM_LOSSES = ("intended", "official")


def _lam(lam: float) -> float:
    if isinstance(lam, bool) or not isinstance(lam, (int, float, np.floating)) \
            or not np.isfinite(lam) or lam < 0:
        raise ValueError(f"lam (the CE / inference-cost trade-off) must be a finite number "
                         f">= 0, got {lam!r}")
    return float(lam)


def oracle_exit(ce_per_exit: torch.Tensor, costs: torch.Tensor | Sequence[float], lam: float
                ) -> torch.Tensor:
    """l* = argmin_l CE_l(x, y) + lam * IC_l (official ``GateTrainingHelper.get_loss``).

    ce_per_exit: (B, L) cross-entropy of every exit (the final head last); costs: (L,)
    normalised inference costs (final = 1); lam >= 0. Returns (B,) int64; ties go to the
    earliest exit (``torch.argmin``'s first index)."""
    lam = _lam(lam)
    if not isinstance(ce_per_exit, torch.Tensor) or ce_per_exit.ndim != 2:
        raise ValueError(f"ce_per_exit must be a (B, L) tensor, got "
                         f"{getattr(ce_per_exit, 'shape', ce_per_exit)!r}")
    c = torch.as_tensor(costs, dtype=ce_per_exit.dtype, device=ce_per_exit.device)
    if c.shape != (ce_per_exit.shape[1],):
        raise ValueError(f"costs must have one entry per exit ({ce_per_exit.shape[1]}), got "
                         f"shape {tuple(c.shape)}")
    return torch.argmin(ce_per_exit + lam * c, dim=1)     # cost_l = CE_l + lambda IC_l


def gate_targets(oracle: torch.Tensor, num_gates: int, scheme: str = "exit_subsequent"
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Targets and mask (B, num_gates) for the gates from oracle exits (B,) in 0..num_gates
    (num_gates = the final head, which has no gate). exit_subsequent: target 1 at gates
    l >= l*, 0 before, all supervised; ignore_subsequent: the same targets, only gates
    l <= l* supervised."""
    if scheme not in GATE_SCHEMES:
        raise ValueError(f"gate_scheme must be one of {GATE_SCHEMES}, got {scheme!r}")
    idx = torch.arange(num_gates, device=oracle.device)[None, :]
    target = (idx >= oracle[:, None]).to(torch.float32)
    mask = torch.ones_like(target) if scheme == "exit_subsequent" \
        else (idx <= oracle[:, None]).to(torch.float32)
    return target, mask


def positive_weights(oracle: torch.Tensor, num_gates: int, cap: float = 5.0) -> torch.Tensor:
    """(num_gates,) per-gate positive weights (total - count_l) / count_l, count_l the number
    of samples whose oracle exit is l (at least 0.1), capped at ``cap`` (official
    ``set_from_validation``)."""
    if not cap > 0:
        raise ValueError(f"cap must be positive, got {cap!r}")
    counts = torch.bincount(oracle, minlength=num_gates + 1)[:num_gates].to(torch.float64)
    counts = torch.clamp(counts, min=0.1)
    return torch.clamp((oracle.numel() - counts) / counts, max=cap).to(torch.float32)


def gate_loss(gate_logits: torch.Tensor, target: torch.Tensor, mask: torch.Tensor,
              pos_weight: torch.Tensor) -> torch.Tensor:
    """mean over supervised entries of BCE-with-logits, each positive term weighted by its
    gate's ``pos_weight``. gate_logits, target, mask: (B, G); pos_weight: (G,)."""
    bce = nn.functional.binary_cross_entropy_with_logits(gate_logits, target, reduction="none")
    weight = (target * pos_weight[None, :] + (1 - target)) * mask
    return (bce * weight).sum() / mask.sum().clamp(min=1)


def weighted_im_loss(ce: torch.Tensor, P: torch.Tensor, mode: str = "intended") -> torch.Tensor:
    """The classifier-phase loss. ce: (B, L-1) per-IM cross-entropies; P: (B, L-1) exit
    probabilities (no gradient). With r = sum_l CE_l / sum_l P_l CE_l per sample, both modes
    return mean_{b,l} P_l CE_l r (official ``_compute_weighted_loss``):

    - ``"official"``: r is differentiated, so sum_l P_l CE_l r == sum_l CE_l identically: the
      value *and* the gradient equal the plain unweighted CE sum; the weighting is a no-op.
    - ``"intended"``: r is detached, so the weights P_l r are constants: each sample keeps the
      unweighted sum's size while its IMs are weighted by where the gates send it.

    Samples with sum_l P_l CE_l = 0 (every gate closed) get r = 0 (the official code gives NaN).
    """
    if mode not in IM_LOSSES:
        raise ValueError(f"im_loss must be one of {IM_LOSSES}, got {mode!r}")
    if ce.shape != P.shape or ce.ndim != 2:
        raise ValueError(f"ce and P must both be (B, L-1), got {tuple(ce.shape)} and "
                         f"{tuple(P.shape)}")
    weighted = P * ce
    den = weighted.sum(dim=1, keepdim=True)
    safe = torch.where(den > 0, den, torch.ones_like(den))
    ratio = torch.where(den > 0, ce.sum(dim=1, keepdim=True) / safe, torch.zeros_like(den))
    if mode == "intended":
        ratio = ratio.detach()
    return torch.mean(weighted * ratio)              # mean(P * L * ratio)


def as_features(X, name: str = "X") -> torch.Tensor:
    """X: array-like (n, d) with n > 0 -> float32 tensor; NaN or infinite entries are refused
    (a NaN input would otherwise flow through the network and silently predict class 0)."""
    try:
        Xt = torch.as_tensor(np.asarray(X) if not isinstance(X, torch.Tensor) else X,
                             dtype=torch.float32)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a numeric array (n, d), got {type(X).__name__}") from None
    if Xt.ndim != 2 or Xt.shape[0] == 0:
        raise ValueError(f"{name} must be (n, d) with n > 0, got shape {tuple(Xt.shape)}")
    if not bool(torch.isfinite(Xt).all()):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return Xt


def as_labels(y, n: int, num_classes: int, name: str = "y") -> torch.Tensor:
    """y: array-like (n,) of integer class labels in [0, num_classes) -> int64 tensor."""
    a = y.numpy() if isinstance(y, torch.Tensor) else np.asarray(y)
    if not (np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.floating)
            or a.dtype == bool):
        raise TypeError(f"{name} must hold integer class labels, got dtype {a.dtype}")
    if a.shape != (n,):
        raise ValueError(f"{name} must be ({n},), one label per row of X, got {a.shape}")
    if np.issubdtype(a.dtype, np.floating) and not np.all(np.isfinite(a) & (a == np.round(a))):
        raise ValueError(f"{name} must hold integer class labels, got non-integer values")
    if a.min() < 0 or a.max() >= num_classes:
        raise ValueError(f"{name} must hold labels in [0, {num_classes}) (the network's "
                         f"classes), got values in [{a.min():g}, {a.max():g}]")
    return torch.as_tensor(a.astype(np.int64))


def _as_xy(X, y, name: str, net: EarlyExitNet) -> tuple[torch.Tensor, torch.Tensor]:
    Xt = as_features(X, f"X_{name}")
    with torch.no_grad():                       # C = the final head's width
        num_classes = net.forward_all(Xt[:1])[-1].shape[1]
    return Xt, as_labels(y, Xt.shape[0], num_classes, f"y_{name}")


def _sgd(params, lr: float, momentum: float, weight_decay: float) -> torch.optim.SGD:
    return torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay)


def warmup_exit_heads(net: EarlyExitNet, X_train, y_train, X_val, y_val, *, max_epochs: int = 20,
                      patience: int = 2, batch_size: int = 32, lr: float = 0.01,
                      momentum: float = 0.9, weight_decay: float = 5e-4,
                      generator: torch.Generator | None = None) -> list[int]:
    """Train the IMs in place (official dynamic warm-up): loss = sum_l (L - l) CE_l for 0-based
    IM l; after each epoch an IM whose validation accuracy did not improve for ``patience``
    epochs is restored to its best state and frozen; at the end every IM holds its best state.
    Returns each IM's number of epochs trained."""
    if not isinstance(net, EarlyExitNet):
        raise TypeError(f"net must be an EarlyExitNet, got {type(net).__name__}")
    Xt, yt = _as_xy(X_train, y_train, "train", net)
    Xv, yv = _as_xy(X_val, y_val, "val", net)
    with torch.no_grad():
        feats, feats_val = net.block_outputs(Xt), net.block_outputs(Xv)
    heads = list(net.exit_heads)
    L = net.num_exits
    opt = _sgd([p for h in heads for p in h.parameters()], lr, momentum, weight_decay)
    best = [-1.0] * len(heads)
    best_state = [copy.deepcopy(h.state_dict()) for h in heads]
    stale, frozen, trained = [0] * len(heads), [False] * len(heads), [0] * len(heads)
    n = Xt.shape[0]
    for _ in range(max_epochs):
        if all(frozen):
            break
        order = torch.randperm(n, generator=generator)
        for start in range(0, n, batch_size):
            rows = order[start:start + batch_size]
            opt.zero_grad()
            loss = sum((L - l) * nn.functional.cross_entropy(h(feats[l][rows]), yt[rows])
                       for l, h in enumerate(heads) if not frozen[l])   # (G - l) CE_l
            loss.backward()
            opt.step()
        with torch.no_grad():
            for l, h in enumerate(heads):
                if frozen[l]:
                    continue
                trained[l] += 1
                acc = float((h(feats_val[l]).argmax(1) == yv).float().mean())
                if acc > best[l]:
                    best[l], stale[l] = acc, 0
                    best_state[l] = copy.deepcopy(h.state_dict())
                else:
                    stale[l] += 1
                    frozen[l] = stale[l] >= patience
    for h, state in zip(heads, best_state):
        h.load_state_dict(state)
    return trained


class JEIDNNTrainer:
    """Joint training of the IMs and gates of ``net`` (whose backbone is frozen).

    net: an :class:`EarlyExitNet` with L exits; gates: L-1 :class:`UncertaintyGate` s (or any
    module mapping IM logits (B, C) to a gate logit (B, 1)); lam: the CE / cost trade-off
    lambda >= 0 (one model per lambda traces the accuracy-cost curve). exit_overhead: cost of
    an IM plus its gate, in the units of ``net.block_costs`` (the oracle's IC_l includes it).
    warmup_epochs: maximum epochs of :func:`warmup_exit_heads` (0 to keep the IMs as given);
    epochs: joint epochs after it. im_loss: ``"intended"`` (detached ratio) or ``"official"``
    (the official no-op weighting; see :func:`weighted_im_loss`).

    After ``fit(X_train, y_train, X_val, y_val)``: ``predict(X)`` -> (pred (n,), exit_index
    (n,), probs (n, C) of the exit taken); ``average_cost(exit_index)`` -> mean exit cost
    (plain backbone = 1); ``history`` holds per-epoch validation numbers.
    """

    def __init__(self, net: EarlyExitNet, gates: Sequence[nn.Module], lam: float, *,
                 alternate_every: int = 20, warmup_epochs: int = 20, epochs: int = 20,
                 batch_size: int = 32, lr: float = 0.01, min_lr: float = 2e-4,
                 momentum: float = 0.9, weight_decay: float = 5e-4, patience: int = 2,
                 gate_scheme: str = "exit_subsequent", im_loss: str = "intended",
                 pos_weight_cap: float = 5.0, exit_overhead: float = 0.0,
                 train_exit_mode: str = "deterministic", seed: int = 0) -> None:
        if not isinstance(net, EarlyExitNet):
            raise TypeError(f"net must be an EarlyExitNet, got {type(net).__name__}")
        if not net.freeze_backbone:
            raise ValueError("JEIDNNTrainer trains IMs and gates on a frozen backbone: build the "
                             "EarlyExitNet with freeze_backbone=True")
        gates = list(gates)
        if len(gates) != net.num_exits - 1 or not all(isinstance(g, nn.Module) for g in gates):
            raise ValueError(f"gates must hold {net.num_exits - 1} nn.Modules (one per IM), "
                             f"got {len(gates)}")
        self.lam = _lam(lam)
        for name, v, lo in (("alternate_every", alternate_every, 1), ("batch_size", batch_size, 1),
                            ("warmup_epochs", warmup_epochs, 0), ("epochs", epochs, 0),
                            ("patience", patience, 1)):
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")
        if gate_scheme not in GATE_SCHEMES:
            raise ValueError(f"gate_scheme must be one of {GATE_SCHEMES}, got {gate_scheme!r}")
        if im_loss not in IM_LOSSES:
            raise ValueError(f"im_loss must be one of {IM_LOSSES}, got {im_loss!r}")
        if train_exit_mode not in ("deterministic", "probabilistic"):
            raise ValueError(f"train_exit_mode must be 'deterministic' or 'probabilistic', got "
                             f"{train_exit_mode!r}")
        if not (lr > 0 and min_lr >= 0 and momentum >= 0 and weight_decay >= 0):
            raise ValueError("lr must be > 0 and min_lr, momentum, weight_decay >= 0")
        self.net, self.gates = net, nn.ModuleList(gates)
        self.alternate_every, self.warmup_epochs, self.epochs = alternate_every, warmup_epochs, epochs
        self.batch_size, self.patience = batch_size, patience
        self.lr, self.min_lr, self.momentum, self.weight_decay = lr, min_lr, momentum, weight_decay
        self.gate_scheme, self.im_loss, self.pos_weight_cap = gate_scheme, im_loss, pos_weight_cap
        self.costs = net.exit_costs(exit_overhead).to(torch.float32)
        self.ic = self.costs / self.costs[-1]          # IC_l, the final head's = 1
        self.train_exit_mode, self.seed = train_exit_mode, int(seed)
        self.history: list[dict[str, float]] = []

    def _im_logits(self, feats: torch.Tensor, rows: torch.Tensor | None) -> torch.Tensor:
        """(G, B, C) logits of the G IMs on cached block outputs ``feats`` (G, n, w)."""
        f = feats if rows is None else feats[:, rows]
        heads = list(self.net.exit_heads)
        if all(type(h) is nn.Linear for h in heads) and \
                len({tuple(h.weight.shape) for h in heads}) == 1:   # one batched matmul
            W = torch.stack([h.weight for h in heads])
            b = torch.stack([h.bias for h in heads])
            return torch.einsum("gbw,gcw->gbc", f, W) + b[:, None, :]
        return torch.stack([h(z) for h, z in zip(heads, f)])

    def _gate_logits(self, im_logits: torch.Tensor) -> torch.Tensor:
        """(B, G) gate logits from IM logits (G, B, C)."""
        G, B, C = im_logits.shape
        if all(type(g) is UncertaintyGate for g in self.gates):  # batched Linear(4, 1)
            u = uncertainty_features(im_logits.reshape(G * B, C)).view(G, B, 4)
            W = torch.stack([g.linear.weight[0] for g in self.gates])
            b = torch.cat([g.linear.bias for g in self.gates])
            return torch.einsum("gbk,gk->bg", u, W) + b
        return torch.cat([gate(z) for gate, z in zip(self.gates, im_logits)], dim=1)

    @staticmethod
    def _ce(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """(B, K) per-exit CE from logits (K, B, C) and labels (B,)."""
        K, B, C = logits.shape
        return nn.functional.cross_entropy(logits.reshape(K * B, C), y.repeat(K),
                                           reduction="none").view(K, B).T

    def fit(self, X_train, y_train, X_val, y_val) -> JEIDNNTrainer:
        """Warm up the IMs, then alternate classifier and gate phases (see the module doc)."""
        gen = torch.Generator().manual_seed(self.seed)
        if self.warmup_epochs:
            warmup_exit_heads(self.net, X_train, y_train, X_val, y_val,
                              max_epochs=self.warmup_epochs, patience=self.patience,
                              batch_size=self.batch_size, lr=self.lr, momentum=self.momentum,
                              weight_decay=self.weight_decay, generator=gen)
        Xt, yt = _as_xy(X_train, y_train, "train", self.net)
        Xv, yv = _as_xy(X_val, y_val, "val", self.net)
        with torch.no_grad():        # frozen backbone: block outputs and final logits once
            out, out_v = self.net.block_outputs(Xt), self.net.block_outputs(Xv)
            feats, feats_v = torch.stack(out[:-1]), torch.stack(out_v[:-1])
            final, final_v = self.net.final_head(out[-1]), self.net.final_head(out_v[-1])
        G = self.net.num_exits - 1
        pos_w = torch.ones(G)                         # official: 1 until the first validation
        params = [*self.net.exit_heads.parameters(), *self.gates.parameters()]
        opt = _sgd(params, self.lr, self.momentum, self.weight_decay)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(self.epochs, 1),
                                                           eta_min=self.min_lr)
        n, step, phase = Xt.shape[0], 0, "classifier"
        self.net.train()
        for epoch in range(self.epochs):
            order = torch.randperm(n, generator=gen)
            for start in range(0, n, self.batch_size):
                rows = order[start:start + self.batch_size]
                if step % self.alternate_every == 0:   # switch every alternate_every batches
                    phase = "gate" if phase == "classifier" else "classifier"
                step += 1
                opt.zero_grad()
                im = self._im_logits(feats, rows)
                if phase == "gate":
                    with torch.no_grad():
                        all_logits = torch.cat([im, final[rows][None]])
                        oracle = oracle_exit(self._ce(all_logits, yt[rows]), self.ic, self.lam)
                    target, mask = gate_targets(oracle, G, self.gate_scheme)
                    loss = gate_loss(self._gate_logits(im), target, mask, pos_w)
                else:
                    with torch.no_grad():                  # gates frozen in this phase
                        P, _ = exit_probabilities(torch.sigmoid(self._gate_logits(im)))
                    loss = weighted_im_loss(self._ce(im, yt[rows]), P, self.im_loss)
                loss.backward()
                opt.step()
            sched.step()
            with torch.no_grad():                          # official set_from_validation
                all_v = torch.cat([self._im_logits(feats_v, None), final_v[None]])
                oracle_v = oracle_exit(self._ce(all_v, yv), self.ic, self.lam)
                pos_w = positive_weights(oracle_v, G, self.pos_weight_cap)
                exits = gated_exit(list(all_v), self.gates)
                pred = all_v[exits, torch.arange(len(yv))].argmax(1)
                self.history.append({"epoch": epoch,
                                     "val_gated_acc": float((pred == yv).float().mean()),
                                     "val_cost": float(self.costs[exits].mean())})
        self.net.eval()
        return self

    def predict(self, X, mode: str = "deterministic", generator: torch.Generator | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """X: (n, d) -> (pred (n,), exit_index (n,) in 0..L-1, probs (n, C) at the exit)."""
        Xt = as_features(X)
        with torch.no_grad():
            logits = self.net.forward_all(Xt)
            exits = gated_exit(logits, self.gates, mode=mode, generator=generator)
            z = torch.stack(logits, 1)[torch.arange(Xt.shape[0]), exits]
            probs = torch.softmax(z, dim=1)
        return probs.argmax(1).numpy(), exits.numpy(), probs.numpy().astype(np.float64)

    def average_cost(self, exit_index) -> float:
        """Mean cost of the exits taken (plain backbone = 1, IM and gate overhead included)."""
        return _average_cost(self.costs, exit_index)


def _average_cost(costs: torch.Tensor, exit_index) -> float:
    e = np.asarray(exit_index)
    if e.ndim != 1 or e.size == 0 or not np.issubdtype(e.dtype, np.integer) \
            or e.min() < 0 or e.max() >= costs.numel():
        raise ValueError(f"exit_index must be a non-empty (n,) int array in [0, {costs.numel()})")
    return float(costs.numpy()[e].mean())


def default_gates(num_gates: int, seed: int = 0) -> list[UncertaintyGate]:
    """``num_gates`` freshly initialised :class:`UncertaintyGate` s from one seeded stream."""
    gen = torch.Generator().manual_seed(int(seed))
    return [UncertaintyGate(generator=gen) for _ in range(num_gates)]
