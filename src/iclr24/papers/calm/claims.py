"""CALM claims: KV-arithmetic by composition against m_A, m_B, LoRA and a random m_A; the
anchor's arithmetic preserved; SmolLM2-135M-Instruct composed with a tiny KV model.

Every claim measures its null arm in the same run and has a ``control`` saying when the test
bed cannot tell (written before these rules were run; an audit found the earlier verdicts read
as "CALM not reproduced" on a test bed where even exact features could not be composed):

- ``kv_arithmetic_composition``: null arm CALM with an untrained m_A (must stay below the
  bar); positive controls CALM with exact oracle features in m_A's place (must reach the bar on
  held-out keys), CALM's accuracy on new expressions over D_C's own keys (composition learned at
  all) and m_A's KV-substitution on held-out keys (m_A knows what is asked);
- ``anchor_preserved``: null arm the anchor itself (= CALM at initialisation, which preserves
  trivially); control: the anchor has arithmetic to lose and the composers learned D_C;
- ``smollm2_kv_composition``: null arm CALM with an untrained m_A; control: CALM learned the
  train keys and m_A knows the held-out ones.
"""

from __future__ import annotations

import functools

import numpy as np

from iclr24.claims import Estimate, Measurement, Scale, claim, seed_difference, seed_metric, sizes

from .kv_experiment import ARMS, KVConfig, compare_arms

_SMOKE = KVConfig(n_keys=40, value_range=(0, 4), aug_d_model=32, aug_layers=1,
                  anchor_d_model=32, anchor_layers=1, aug_steps=60, anchor_steps=40,
                  compose_steps=25, compose_batch=16, pretrain_batch=32,
                  augment_layers=(0,), anchor_layers_composed=(0,), n_test=40,
                  context_per_key=2, n_kv_arith_train=400)
_SMALL = KVConfig()


@functools.lru_cache(maxsize=2)
def _kv_runs(cfg: KVConfig, seed: int, n_seeds: int):
    """One run of the six arms, shared by the two KV claims within a process."""
    from iclr24.kits.threads import torch_threads

    with torch_threads(1):
        pair, rows = compare_arms(cfg, seed, n_seeds)
    return pair, tuple(rows)


def _kv(scale: Scale, seed: int):
    cfg = sizes(scale, smoke=_SMOKE, small=_SMALL)
    return cfg, *_kv_runs(cfg, seed, sizes(scale, smoke=1, small=3))


def _col(rows, arm: str, key: str) -> list[float]:
    return [r[key] for r in rows if r["arm"] == arm]


def _arm_table(rows) -> list[dict]:
    out = []
    for arm in ARMS:
        rs = [r for r in rows if r["arm"] == arm]
        out.append({"arm": arm, "trainable_params": rs[0]["trainable_params"],
                    **{f"{t}_acc": float(np.mean([r[t] for r in rs]))
                       for t in ("kv_arith", "kv_arith_train_keys", "arith", "kv_sub")}})
    return out


def _config_note(cfg: KVConfig, pair) -> str:
    return (f"m_A: {cfg.aug_layers} layers, d={cfg.aug_d_model} (final loss "
            f"{pair.augment_loss:.3f}); m_B: {cfg.anchor_layers} layers, d={cfg.anchor_d_model} "
            f"(final loss {pair.anchor_loss:.3f}); K={cfg.n_keys} keys of "
            f"{cfg.key_length[0]}-{cfg.key_length[1]} letters, values "
            f"{cfg.value_range[0]}-{cfg.value_range[1]} (m_B's operands zero-padded to "
            f"{cfg.number_width} digits), {cfg.n_operands[0]}-"
            f"{cfg.n_operands[1]} operands, ops '{cfg.ops}', D_C = {cfg.n_kv_arith_train} "
            f"expressions over {cfg.train_key_frac:.0%} of the keys; m_A also saw "
            f"{cfg.context_per_key * cfg.n_keys} in-context key lines; composed m_A layers "
            f"{list(cfg.augment_layers)} -> m_B layers {list(cfg.anchor_layers_composed)} "
            f"(0-based block indices), {cfg.compose_steps} steps of {cfg.compose_batch} for "
            f"CALM, CALM(random m_A), CALM(oracle features) and LoRA alike. Seeds vary the "
            f"composition stage (init, "
            f"batch order, the random m_A); m_A, m_B and the data are trained/drawn once from "
            f"the base seed.")


@claim(
    rule="calm_kv_arith >= 0.5 and gain_vs_lora > 0 and gain_vs_random_aug > 0 "
         "and gain_vs_anchor > 0",
    control="calm_oracle_kv_arith >= 0.5 and calm_kv_arith_train_keys >= 0.5 "
            "and m_A_kv_sub >= 0.9 and calm_random_aug_kv_arith < 0.5",
    paper="Table 1 (KV arithmetic, held-out keys): m_A 1%, m_B 0%, CALM 84%; LoRA on D_C and "
          "CALM with an untrained m_A far lower (Sec. 4.1). KV-substitution m_A 98%, CALM 93%; "
          "numeric arithmetic m_B 74%, CALM 72% (approximate, as read from the paper).",
    paper_numbers={"calm_kv_arith": 0.84},
    against=("m_A alone, m_B alone, m_B + LoRA (parameter-matched), CALM with an untrained m_A "
             "(null arm) and CALM with exact oracle features in m_A's place (positive "
             "control), same D_C and steps"),
    resources={"cpus": 1},
)
def kv_arithmetic_composition(scale: Scale, seed: int, progress=None) -> Measurement:
    """Six arms on the same D_C (arithmetic over 20% of the keys), exact match on expressions
    over held-out keys: m_A alone, m_B alone, m_B + LoRA (rank matched to CALM's trainable
    parameters), CALM with an untrained m_A, CALM with the exact
    :class:`~.kv_oracle.KVOracle` features in m_A's place, and CALM (test bed:
    :mod:`.kv_experiment`).

    Rule (the spec's, unchanged): fails when CALM's held-out KV-arithmetic accuracy is below
    50% (84% in the paper) or when any of LoRA, CALM(random m_A) or m_B is not beaten over the
    whole 95% interval of the paired difference over 3 seeds.

    Control (new, written before it was run): the verdict means something only when (1) the
    positive-control arm, CALM reading exact oracle features, reaches the same 50% bar on the
    held-out keys (otherwise the anchor and composers cannot turn known values into arithmetic
    at this size, as the audit found for the earlier test bed: 0.30-0.37); (2) CALM reaches 50%
    on new expressions over D_C's own keys (otherwise composition was not learned at all within
    the budget, and held-out keys cannot separate "uses m_A" from "learned nothing"); (3) m_A
    answers KV-substitution on held-out keys (>= 90%; the paper's m_A: 98%); (4) the null arm,
    CALM with an untrained m_A, stays below the bar (otherwise the anchor finds the values
    without m_A and the test leaks). With the control true the claim can still fail, in
    exactly the way the paper denies: CALM learns the train keys (like LoRA) but does not carry
    composition to held-out keys through m_A."""
    cfg, pair, rows = _kv(scale, seed)
    calm = _col(rows, "calm", "kv_arith")
    metrics = {f"{arm}_kv_arith": seed_metric(_col(rows, arm, "kv_arith")) for arm in ARMS}
    metrics.update({
        f"{arm}_kv_arith_train_keys": seed_metric(_col(rows, arm, "kv_arith_train_keys"))
        for arm in ARMS})
    metrics.update({
        "gain_vs_lora": seed_difference(calm, _col(rows, "lora", "kv_arith")),
        "gain_vs_random_aug": seed_difference(calm, _col(rows, "calm_random_aug", "kv_arith")),
        "gain_vs_anchor": seed_difference(calm, _col(rows, "m_B", "kv_arith")),
        "gain_vs_augment": seed_difference(calm, _col(rows, "m_A", "kv_arith")),
        "oracle_gap": seed_difference(_col(rows, "calm_oracle", "kv_arith"), calm),
        "m_A_kv_sub": float(np.mean(_col(rows, "m_A", "kv_sub"))),
        "m_B_arith": float(np.mean(_col(rows, "m_B", "arith"))),
        "calm_trainable_params": rows[[r["arm"] for r in rows].index("calm")]["trainable_params"],
        "lora_trainable_params": rows[[r["arm"] for r in rows].index("lora")]["trainable_params"],
    })
    return Measurement(metrics=metrics,
                       tables={"per_arm": _arm_table(rows), "per_seed_arm": list(rows)},
                       notes=_config_note(cfg, pair) + " Accuracy is teacher-forced greedy "
                             "exact match (every answer character and the ';' terminator).")


@claim(
    rule="arith_drop <= 0.05",
    control="m_B_arith >= 0.5 and calm_kv_arith_train_keys >= 0.5",
    paper="Table 1: numeric arithmetic m_B 74%, CALM 72%; the anchor's weights are untouched, "
          "so its skills are preserved (Sec. 3, 4.1).",
    paper_numbers={"arith_drop": 0.02},
    against=("the anchor m_B alone on numeric arithmetic, same runs as "
             "kv_arithmetic_composition; null arm: the anchor itself, i.e. CALM at "
             "initialisation (zero W_O), which preserves trivially and has learned nothing"),
    resources={"cpus": 1},
)
def anchor_preserved(scale: Scale, seed: int, progress=None) -> Measurement:
    """Numeric arithmetic (no keys) of the composed model, with m_A reading the same digits,
    against m_B alone, on the runs of :func:`kv_arithmetic_composition`.
    ``arith_drop`` = m_B − CALM accuracy, paired over 3 seeds. Rule (unchanged): fails when the
    whole interval of the drop is above 5 points (inconclusive when it straddles 5).

    Control (new, written before it was run): preservation means something only when there is
    a skill to lose and the composers do something. (1) m_B answers >= 50% of the numeric
    test (at smoke the tiny anchor scores ~0, so "no drop" is empty); (2) CALM answers >= 50% of
    new expressions over D_C's keys, i.e. its composers learned the composition: the null arm,
    CALM at initialisation, is exactly the anchor (drop 0) and is stopped by this clause (its
    train-key accuracy is m_B's, ``m_B_kv_arith_train_keys``, ~0). A composition that learned
    D_C and overwrote the anchor's arithmetic fails, as the paper says it does not."""
    cfg, pair, rows = _kv(scale, seed)
    anchor, calm = _col(rows, "m_B", "arith"), _col(rows, "calm", "arith")
    metrics = {"m_B_arith": seed_metric(anchor), "calm_arith": seed_metric(calm),
               "arith_drop": seed_difference(anchor, calm),
               "calm_random_aug_arith": seed_metric(_col(rows, "calm_random_aug", "arith")),
               "calm_oracle_arith": seed_metric(_col(rows, "calm_oracle", "arith")),
               "lora_arith": seed_metric(_col(rows, "lora", "arith")),
               "calm_kv_arith": seed_metric(_col(rows, "calm", "kv_arith")),
               "calm_kv_arith_train_keys": seed_metric(_col(rows, "calm",
                                                            "kv_arith_train_keys")),
               "m_B_kv_arith_train_keys": seed_metric(_col(rows, "m_B", "kv_arith_train_keys"))}
    return Measurement(metrics=metrics, tables={"per_arm": _arm_table(rows)},
                       notes=_config_note(cfg, pair) + " Zero-initialised W_O makes CALM equal "
                             "to m_B before training; the drop measures what training the "
                             "composers on D_C (never digits in the prompt) does to the "
                             "anchor's arithmetic.")


def _smollm2_setup(scale: Scale, seed: int):
    """Anchor (SmolLM2 at small; an untrained 2-layer Hugging Face Llama over characters at
    smoke), its tokenize function and start id."""
    import torch

    from .text_composition import char_tokenize, hf_tokenize

    if scale is Scale.SMOKE:
        from transformers import LlamaConfig, LlamaForCausalLM

        from .kv_data import VOCAB

        torch.manual_seed(seed)
        model = LlamaForCausalLM(LlamaConfig(
            vocab_size=len(VOCAB) + 1, hidden_size=32, intermediate_size=64,
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
            max_position_embeddings=64))
        model.eval()
        return model, char_tokenize(), len(VOCAB), "untrained 2-layer Llama over characters"
    from iclr24.kits.language_models import load_smollm2

    lm = load_smollm2()
    return lm.model, hf_tokenize(lm.tokenizer.hf), int(lm.start_id), "SmolLM2-135M-Instruct"


@claim(
    rule="gain_vs_anchor > 0 and gain_vs_random_aug > 0",
    control="calm_train_keys_acc >= 0.5 and m_A_heldout_acc >= 0.9",
    paper="Sec. 4.1, Table 1: composed with m_A, the anchor answers KV-substitution for keys it "
          "never saw (CALM 93%, m_B 0%, with PaLM2 models).",
    paper_numbers={"calm_heldout_acc": 0.93},
    against=("the anchor alone (= CALM at initialisation) and CALM with an untrained m_A (null "
             "arm), same D_C and held-out keys"),
    resources={"cpus": 1},
)
def smollm2_kv_composition(scale: Scale, seed: int, progress=None) -> Measurement:
    """SmolLM2-135M-Instruct (frozen, float32) as the anchor, a 2-layer character model that
    memorised every key as m_A, composed at SmolLM2 layers matched to m_A's two layers; D_C =
    KV-substitution ``k?`` -> ``v;`` for 20% of the keys; exact match on held-out keys for the
    anchor alone (= CALM at initialisation), CALM with an untrained m_A and CALM. One seed;
    intervals are paired bootstraps over the held-out keys. Rule (unchanged): fails when CALM
    does not beat the anchor and the untrained-m_A composition (null arm) over the whole
    interval. At smoke the anchor is an untrained tiny Llama over characters (plumbing only).

    Changed before running (audit): 180 composer steps at small instead of 60 (the audit
    measured train-key accuracy 0.27 at 60 steps and 0.82 at 180: at 60 the composers had not
    learned D_C itself). Control (new): CALM answers >= 50% of D_C's own keys (composition
    learned at all; otherwise held-out keys cannot tell "no transfer" from "no training") and
    m_A answers >= 90% of the held-out keys (it knows what the anchor is asked). The null arm's
    train-key accuracy is reported beside CALM's."""
    import torch

    from iclr24.kits.threads import torch_threads

    from .composition import CALM, match_layers
    from .kv_data import VOCAB, kv_arithmetic_data
    from .kv_experiment import char_model, lm_loss, train_on_examples
    from .text_composition import (
        char_tokenize,
        encode_text_batch,
        text_exact_match,
        train_text_composition,
    )

    n_keys = sizes(scale, smoke=30, small=300)
    steps = sizes(scale, smoke=10, small=180)
    with torch_threads(1):
        anchor, tokenize, start_id, name = _smollm2_setup(scale, seed)
        data = kv_arithmetic_data(n_keys, (0, 9), seed=seed, n_arith=1, n_kv_arith_train=1,
                                  n_test=1)
        bos = len(VOCAB)
        m_a = char_model(64, 2, 4, seed)
        train_on_examples(lm_loss(m_a), list(m_a.parameters()), data.memorisation(), bos,
                          steps=sizes(scale, smoke=40, small=600), batch_size=64, lr=3e-3,
                          seed=seed, train_on_inputs=True)
        m_a.eval()
        train = encode_text_batch(data.kv_sub_test(data.train_keys), tokenize, start_id,
                                  char_tokenize(), bos)
        test_keys = data.heldout_keys[:sizes(scale, smoke=20, small=80)]
        test = encode_text_batch(data.kv_sub_test(test_keys), tokenize, start_id,
                                 char_tokenize(), bos)
        m_a_acc = float(np.mean(text_exact_match(m_a, encode_text_batch(
            data.kv_sub_test(test_keys), char_tokenize(), bos, char_tokenize(), bos))))
        n_anchor = len(anchor.model.layers)
        aug_layers = [0, 1]
        anchor_layers = match_layers(aug_layers, n_anchor)
        results = {"anchor": text_exact_match(anchor, test)}
        losses, train_acc = {}, {}
        for arm in ("calm_random_aug", "calm"):
            aug = m_a if arm == "calm" else char_model(64, 2, 4, 10_000 + seed)
            torch.manual_seed(seed)
            calm = CALM(anchor, aug, anchor_layers, aug_layers, n_heads=4)
            losses[arm] = train_text_composition(calm, train, steps=steps, batch_size=8,
                                                 lr=1e-3, seed=seed)
            results[arm] = text_exact_match(calm, test)
            train_acc[arm] = float(np.mean(text_exact_match(calm, train)))
    acc = {k: np.asarray(v, dtype=float) for k, v in results.items()}

    def gain(a, b):
        d = acc[a] - acc[b]
        if np.all(d == d[0]):
            return float(d[0])  # no spread: the bootstrap interval would be the point
        return Estimate.bootstrap(d, np.mean, seed=seed, n_resamples=2000)

    metrics = {"anchor_heldout_acc": float(acc["anchor"].mean()),
               "calm_random_aug_heldout_acc": float(acc["calm_random_aug"].mean()),
               "calm_heldout_acc": float(acc["calm"].mean()),
               "calm_train_keys_acc": train_acc["calm"],
               "calm_random_aug_train_keys_acc": train_acc["calm_random_aug"],
               "m_A_heldout_acc": m_a_acc,
               "gain_vs_anchor": gain("calm", "anchor"),
               "gain_vs_random_aug": gain("calm", "calm_random_aug"),
               "n_heldout": int(acc["calm"].size)}
    table = [{"arm": "anchor alone", "heldout_acc": metrics["anchor_heldout_acc"]},
             {"arm": "m_A alone", "heldout_acc": m_a_acc},
             {"arm": "CALM (untrained m_A)", "heldout_acc": metrics["calm_random_aug_heldout_acc"],
              "train_keys_acc": train_acc["calm_random_aug"],
              "final_loss": losses["calm_random_aug"][-1]},
             {"arm": "CALM", "heldout_acc": metrics["calm_heldout_acc"],
              "train_keys_acc": train_acc["calm"], "final_loss": losses["calm"][-1]}]
    return Measurement(metrics=metrics, tables={"arms": table},
                       notes=f"Anchor: {name}; composed anchor layers {anchor_layers} "
                             f"(0-based) with m_A layers {aug_layers}; {len(data.train_keys)} "
                             f"train keys, {steps} composer steps of 8; cross-attention "
                             "masked by character spans (BPE vs characters).")
