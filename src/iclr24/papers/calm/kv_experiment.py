"""The KV-arithmetic experiment in miniature: pretrain m_A and m_B, compose, compare (Sec. 4.1).

Scaled down from the spec (m_A 4x128, m_B 6x192, K = 500, values 0-99) to m_A 2x64, m_B 3x64,
values 0-9 and two operands at small, so that three seeds of six arms fit a shared 2-core CPU.

The test bed is ours where the paper's would not fit (:class:`KVConfig`'s defaults). An audit
of the earlier version (keys of 3-5 letters, plain numbers, m_A trained on single facts, 2,000
D_C expressions) found it could not show composition at all: CALM and LoRA stayed at chance even
on new expressions over the *training* keys, CALM memorised D_C, m_A barely encoded the second
operand (linear probe 24%), and even exact oracle features lifted CALM only to 0.30-0.37. So,
decided before running this version: (i) keys have exactly 3 letters and m_B's numbers are
zero-padded to 3 digits, so a key fills the slot of a number (``abc+kqz=`` vs ``007+003=``) and
the composer can feed the tiny anchor's position-bound arithmetic where it reads digits;
(ii) m_A also learns keys inside expression-shaped lines (``kv_context``, no results), so it
holds the value of a key wherever the key stands; (iii) D_C has 4,000 expressions (100 train
keys, 20,000 possible expressions) so that memorising it does not pay; (iv) a positive-control
arm, CALM with :class:`~.kv_oracle.KVOracle` (exact value features) in m_A's place, says
whether the anchor and composers can turn known values into arithmetic at this size at all.
Budgets, set after one run of this design at the old budgets (m_A 800 steps, composers 400),
from the positive control and m_A's own test only, before CALM ran at the new budgets: at 400
composer steps the oracle arm reached 0.27 on held-out keys (3 seeds) and m_A 0.555
KV-substitution, so the test bed could not tell; a one-seed pilot gave the oracle arm 0.24 /
0.505 / 0.575 at 400 / 1000 / 1200 steps (lr 1e-3 and other anchor layers were worse at 400)
and m_A 0.995 at 1,600 steps. Hence m_A 1,600 steps and 1,200 composer steps (for every arm,
LoRA included), the most the ~200 s CPU budget of a small claim allows.

Paper (Bansal et al., ICLR 2024, Sec. 4.1 and Table 1): m_A (PaLM2-XXS) memorises string keys
-> numbers; m_B (PaLM2-XS) does arithmetic; CALM trained on arithmetic over 20% of the keys is
evaluated on the three test sets, against m_A, m_B, m_B + LoRA on D_C with a matched parameter
budget, and CALM with an untrained m_A. Here both models are the shared kit's character-level
``CausalTransformer`` trained from scratch on CPU (sizes in :class:`KVConfig`); PaLM2 is out of
reach.

Pieces: :func:`char_model`, :func:`pretrain_pair` (m_A on every key's facts, m_B on numeric
arithmetic, whole lines in the loss); :func:`encode_examples` (prompt masked from the labels);
:func:`train_on_examples`
(AdamW + the kit's warm-up/cosine schedule over any trainable parameters: used identically for
CALM's composers and for the LoRA adapters, the same D_C batches and steps);
:func:`exact_match` (teacher-forced greedy exact match: the argmax at every answer position,
terminator included, equals the target, which is exactly "greedy decoding reproduces the
answer"); :func:`lora_anchor` and :func:`matched_lora_rank` (peft LoRA on a copy of the anchor).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from iclr24.kits.language_models import (
    CausalTransformer,
    TrainConfig,
    TransformerConfig,
    cosine_learning_rate,
)

from .kv_data import VOCAB, CharVocab

__all__ = [
    "KVConfig",
    "PretrainedPair",
    "char_model",
    "compare_arms",
    "encode_examples",
    "exact_match",
    "lora_anchor",
    "matched_lora_rank",
    "pretrain_pair",
    "train_on_examples",
]

IGNORE = -100


@dataclass(frozen=True)
class KVConfig:
    """Sizes of one KV-arithmetic run (defaults: the small scale; the test-bed fields
    ``key_length``, ``number_width``, ``context_per_key`` (m_A's in-context lines per key) and
    ``n_kv_arith_train`` (|D_C|) are explained in the module docstring)."""

    n_keys: int = 500
    value_range: tuple[int, int] = (0, 9)
    n_operands: tuple[int, int] = (2, 2)
    ops: str = "+-"
    train_key_frac: float = 0.2
    key_length: tuple[int, int] = (3, 3)
    number_width: int = 3
    context_per_key: int = 4
    n_kv_arith_train: int = 4000
    aug_d_model: int = 64
    aug_layers: int = 2
    anchor_d_model: int = 64
    anchor_layers: int = 3
    n_heads: int = 4
    aug_steps: int = 1600
    anchor_steps: int = 600
    pretrain_batch: int = 64
    pretrain_lr: float = 3e-3
    compose_steps: int = 1200
    compose_batch: int = 32
    compose_lr: float = 3e-3
    augment_layers: tuple[int, ...] = (0, 1)
    anchor_layers_composed: tuple[int, ...] = (0, 1)
    n_test: int = 200


def char_model(d_model: int, n_layers: int, n_heads: int, seed: int,
               vocab: CharVocab = VOCAB, context_length: int = 64) -> CausalTransformer:
    """A fresh character-level kit transformer (BOS id = ``len(vocab)``), seeded init."""
    torch.manual_seed(seed)
    return CausalTransformer(TransformerConfig(vocab_size=len(vocab), d_model=d_model,
                                               n_layers=n_layers, n_heads=n_heads,
                                               context_length=context_length))


def encode_examples(examples: Sequence[tuple[str, str]], bos_id: int,
                    vocab: CharVocab = VOCAB, train_on_inputs: bool = False
                    ) -> tuple[Tensor, Tensor]:
    """(prompt, answer) pairs -> inputs (B, T) = [BOS, text[:-1]] right-padded, and labels
    (B, T) = text with the padding (and, unless ``train_on_inputs``, the prompt) set to -100
    (T = longest prompt + answer)."""
    if not examples:
        raise ValueError("examples must be a non-empty list of (prompt, answer) pairs")
    rows = [(vocab.encode(p), vocab.encode(a)) for p, a in examples]
    t = max(len(p) + len(a) for p, a in rows)
    inputs = torch.full((len(rows), t), vocab.index[";"], dtype=torch.long)
    labels = torch.full((len(rows), t), IGNORE, dtype=torch.long)
    for i, (p, a) in enumerate(rows):
        text = p + a
        inputs[i, 0] = bos_id
        inputs[i, 1:len(text)] = torch.tensor(text[:-1])
        start = 0 if train_on_inputs else len(p)
        labels[i, start:len(text)] = torch.tensor(text[start:])
    return inputs, labels


LogitsFn = Callable[[Tensor], Tensor]


@torch.no_grad()
def exact_match(logits_fn: LogitsFn, examples: Sequence[tuple[str, str]], bos_id: int,
                batch_size: int = 256) -> list[bool]:
    """Per example: does greedy decoding after the prompt produce the answer exactly?

    Teacher-forced: correct iff the argmax at every answer position (terminator included)
    equals the answer's token given the correct earlier tokens, which is the greedy decode's
    condition. logits_fn: inputs (B, T) -> logits (B, T, V)."""
    out: list[bool] = []
    for i in range(0, len(examples), batch_size):
        inputs, labels = encode_examples(examples[i:i + batch_size], bos_id)
        pred = logits_fn(inputs).argmax(-1)
        ok = (pred == labels) | (labels == IGNORE)
        out.extend(bool(x) for x in ok.all(dim=1))
    return out


def train_on_examples(loss_fn: Callable[[Tensor, Tensor], Tensor], params: list[nn.Parameter],
                      examples: Sequence[tuple[str, str]], bos_id: int, *, steps: int,
                      batch_size: int, lr: float, seed: int, train_on_inputs: bool = False
                      ) -> list[float]:
    """AdamW on ``params`` for ``steps`` batches drawn (with replacement, seeded) from
    ``examples``; loss_fn(inputs, labels) -> mean NLL over the labelled tokens (the answers,
    or whole lines with ``train_on_inputs``). Returns the per-step losses."""
    if not params:
        raise ValueError("params is empty: nothing to train")
    inputs, labels = encode_examples(examples, bos_id, train_on_inputs=train_on_inputs)
    gen = torch.Generator().manual_seed(int(seed))
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    cfg = TrainConfig(steps=steps, batch_size=batch_size, lr=lr,
                      warmup_steps=max(1, steps // 20))
    losses = []
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = cosine_learning_rate(step, cfg)
        idx = torch.randint(0, len(examples), (batch_size,), generator=gen)
        x, y = inputs[idx], labels[idx]
        keep = int((y != IGNORE).any(0).nonzero().max()) + 1  # drop all-padding columns
        loss = loss_fn(x[:, :keep], y[:, :keep])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        losses.append(float(loss.detach()))
    return losses


def lm_loss(model: nn.Module) -> Callable[[Tensor, Tensor], Tensor]:
    """Next-token NLL over labelled positions of a kit transformer (or anything mapping
    (B, T) ids to (B, T, V) logits)."""
    def loss(x: Tensor, y: Tensor) -> Tensor:
        logits = model(x)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1),
                               ignore_index=IGNORE)
    return loss


_LORA_TARGETS = ("qkv", "proj", "mlp.0", "mlp.2")


def lora_params_per_rank(model: CausalTransformer) -> int:
    """LoRA parameters per unit of rank on the kit transformer's qkv, proj and MLP linears."""
    return sum(m.in_features + m.out_features for name, m in model.named_modules()
               if isinstance(m, nn.Linear) and name.split(".", 2)[-1] in _LORA_TARGETS)


def matched_lora_rank(model: CausalTransformer, n_params: int) -> int:
    """The LoRA rank whose adapter count is closest to ``n_params`` (at least 1)."""
    if n_params < 1:
        raise ValueError(f"n_params must be >= 1, got {n_params!r}")
    return max(1, round(n_params / lora_params_per_rank(model)))


def lora_anchor(model: CausalTransformer, rank: int, seed: int) -> CausalTransformer:
    """A copy of ``model`` with peft LoRA adapters (rank ``rank``, alpha = 2·rank) on every
    block's qkv, output projection and MLP; only the adapters are trainable."""
    from peft import LoraConfig, inject_adapter_in_model

    torch.manual_seed(seed)
    tuned = copy.deepcopy(model)
    tuned.requires_grad_(False)
    cfg = LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=0.0,
                     target_modules=list(_LORA_TARGETS))
    tuned = inject_adapter_in_model(cfg, tuned)
    tuned.eval()
    return tuned


@dataclass
class PretrainedPair:
    """m_A (KV memoriser), m_B (arithmetic anchor), the data and their final training losses."""

    data: object
    augment: CausalTransformer
    anchor: CausalTransformer
    augment_loss: float
    anchor_loss: float


def pretrain_pair(cfg: KVConfig, seed: int) -> PretrainedPair:
    """Draw the task and train m_A on every key's ``k=v;``/``k?v;``/``kv;`` lines and the
    in-context lines, and m_B on numeric arithmetic (it never sees a letter)."""
    from .kv_data import kv_arithmetic_data

    data = kv_arithmetic_data(cfg.n_keys, cfg.value_range, cfg.n_operands, cfg.train_key_frac,
                              seed, ops=cfg.ops, n_test=cfg.n_test,
                              n_kv_arith_train=cfg.n_kv_arith_train, key_length=cfg.key_length,
                              number_width=cfg.number_width,
                              n_context=cfg.context_per_key * cfg.n_keys)
    bos = len(VOCAB)
    m_a = char_model(cfg.aug_d_model, cfg.aug_layers, cfg.n_heads, seed)
    loss_a = train_on_examples(lm_loss(m_a), list(m_a.parameters()), data.memorisation(), bos,
                               steps=cfg.aug_steps, batch_size=cfg.pretrain_batch,
                               lr=cfg.pretrain_lr, seed=seed, train_on_inputs=True)
    m_b = char_model(cfg.anchor_d_model, cfg.anchor_layers, cfg.n_heads, seed + 1)
    loss_b = train_on_examples(lm_loss(m_b), list(m_b.parameters()), data.arith, bos,
                               steps=cfg.anchor_steps, batch_size=cfg.pretrain_batch,
                               lr=cfg.pretrain_lr, seed=seed + 1, train_on_inputs=True)
    m_a.eval()
    m_b.eval()
    return PretrainedPair(data, m_a, m_b, loss_a[-1], loss_b[-1])


ARMS = ("m_A", "m_B", "lora", "calm_random_aug", "calm_oracle", "calm")


def compare_arms(cfg: KVConfig, seed: int, n_seeds: int) -> tuple[PretrainedPair, list[dict]]:
    """The six arms of the KV experiment on one pretrained pair, over ``n_seeds`` composition
    seeds (seed + i: composer/adapter init, D_C batch order, the untrained m_A's init): m_A,
    m_B, m_B + LoRA, CALM with an untrained m_A (null arm), CALM with the exact
    :class:`~.kv_oracle.KVOracle` features in m_A's place (positive control) and CALM.

    Rows: one per (seed, arm) with exact-match accuracy on ``kv_arith_test`` (held-out keys),
    ``kv_arith_train_keys`` (D_C's keys, new expressions), ``arith`` (numeric) and
    ``kv_sub`` (held-out keys, ``k?`` queries), and the trainable parameter count. m_A and m_B
    are evaluated as they are (no training on D_C); LoRA and the three CALM arms see the same
    D_C batches for the same steps.
    """
    from .composition import CALM
    from .kv_oracle import KVOracle

    pair = pretrain_pair(cfg, seed)
    data, bos = pair.data, len(VOCAB)
    tests = {"kv_arith": data.kv_arith_test, "kv_arith_train_keys": data.kv_arith_train_keys_test,
             "arith": data.arith_test, "kv_sub": data.kv_sub_test(data.heldout_keys[:cfg.n_test])}

    def evaluate(fn: LogitsFn) -> dict[str, float]:
        return {name: sum(r) / len(r) for name, r in
                ((n, exact_match(fn, ex, bos)) for n, ex in tests.items())}

    rows: list[dict] = []
    base = {"m_A": evaluate(pair.augment), "m_B": evaluate(pair.anchor)}
    oracle = KVOracle(data.values, cfg.value_range, n_layers=cfg.aug_layers)
    train = {"steps": cfg.compose_steps, "batch_size": cfg.compose_batch,
             "lr": cfg.compose_lr}
    for i in range(n_seeds):
        s = seed + i
        for arm in ("m_A", "m_B"):
            rows.append({"seed": s, "arm": arm, "trainable_params": 0, **base[arm]})
        calms = {}
        for arm in ("calm", "calm_random_aug", "calm_oracle"):
            if arm == "calm_random_aug":  # null arm: m_A's architecture, never trained
                aug = char_model(cfg.aug_d_model, cfg.aug_layers, cfg.n_heads, 10_000 + s)
            else:
                aug = pair.augment if arm == "calm" else oracle
            torch.manual_seed(s)
            calm = CALM(pair.anchor, aug, list(cfg.anchor_layers_composed),
                        list(cfg.augment_layers), n_heads=cfg.n_heads).train()
            # the targets of encode_examples are already next-token aligned: score the logits
            losses = train_on_examples(lm_loss(lambda x, c=calm: c(x).logits),
                                       calm.trainable_parameters(), data.kv_arith_train, bos,
                                       seed=s, **train)
            calm.eval()
            calms[arm] = calm
            rows.append({"seed": s, "arm": arm, "trainable_params": calm.num_trainable_parameters,
                         "final_loss": losses[-1],
                         **evaluate(lambda x, c=calm: c(x).logits)})
        rank = matched_lora_rank(pair.anchor, calms["calm"].num_trainable_parameters)
        tuned = lora_anchor(pair.anchor, rank, s)
        params = [p for p in tuned.parameters() if p.requires_grad]
        tuned.train()
        losses = train_on_examples(lm_loss(tuned), params, data.kv_arith_train, bos, seed=s,
                                   **train)
        tuned.eval()
        rows.append({"seed": s, "arm": "lora", "trainable_params": sum(p.numel() for p in params),
                     "lora_rank": rank, "final_loss": losses[-1], **evaluate(tuned)})
    return pair, rows
