"""Supervised fine-tuning on (prompt, target) pairs with the prompt masked (tiny model)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr24.kits.language_models import CausalTransformer, TransformerConfig, TransformerLM
from iclr24.kits.language_models.finetuning import (
    IGNORE_INDEX,
    FinetuneConfig,
    finetune,
    sft_batch,
)
from iclr24.kits.language_models.text_backend import LocalTextModel


def _tiny(seed: int = 0, context: int = 48) -> TransformerLM:
    torch.manual_seed(seed)
    return TransformerLM(CausalTransformer(TransformerConfig(d_model=32, n_layers=1, n_heads=2,
                                                             context_length=context)))


def test_the_batch_masks_prompt_tokens_and_padding():
    lm = _tiny()
    b = sft_batch(lm, [("ab=", "xy"), ("c=", "z")], FinetuneConfig(append_eos=False))
    bos = lm.model.config.bos_id
    assert b.inputs.tolist() == [[bos, 97, 98, 61, 120], [bos, 99, 61, bos, bos]]
    assert b.labels.tolist() == [[IGNORE_INDEX] * 3 + [120, 121],
                                 [IGNORE_INDEX] * 2 + [122, IGNORE_INDEX, IGNORE_INDEX]]
    assert b.attention_mask.tolist() == [[1] * 5, [1, 1, 1, 0, 0]]
    every = sft_batch(lm, [("ab=", "xy")], FinetuneConfig(train_on_inputs=True))
    assert every.labels.tolist() == [[97, 98, 61, 120, 121]]


def test_the_training_loss_is_the_targets_nll_under_the_backend():
    """The loss finetune computes on a batch equals −mean log p of the target tokens read
    through the backend's own scorer (a different code path), so labels line up with
    inputs and nothing of the prompt leaks into the loss."""
    import torch.nn.functional as F

    lm = _tiny(1)
    pairs = [("what is 2+2? ", "4"), ("name a colour: ", "red")]
    b = sft_batch(lm, pairs, FinetuneConfig())
    with torch.no_grad():
        logits = lm.model(b.inputs)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), b.labels.reshape(-1),
                           ignore_index=IGNORE_INDEX)
    nll = []
    for p, t in pairs:
        seq = list((p + t).encode())
        lp = lm.log_probs(seq)
        nll += [-lp[k, seq[k]] for k in range(len(p), len(seq))]
    assert float(loss) == pytest.approx(np.mean(nll), rel=1e-5)


def test_finetuning_teaches_a_mapping_and_is_deterministic(one_torch_thread):
    pairs = [(f"{w}->", w[::-1]) for w in ("abc", "dog", "sun", "map", "kit", "red")]
    cfg = FinetuneConfig(steps=150, batch_size=6, lr=3e-3, seed=4)
    lm = _tiny(2)
    before = sft_batch(lm, pairs, cfg)
    hist = finetune(lm, pairs, cfg)
    assert hist.losses[-1] < 0.25 * hist.losses[0]
    assert hist.tokens_seen == 150 * 6 * 3  # three target bytes per example, no EOS
    out = LocalTextModel(lm).generate([p for p, _ in pairs], 3)
    assert sum(o[0] == t for o, (_, t) in zip(out, pairs)) >= 5
    again = _tiny(2)
    assert finetune(again, pairs, cfg).losses == hist.losses
    assert torch.equal(before.inputs, sft_batch(lm, pairs, cfg).inputs)


def test_masking_the_prompt_leaves_its_tokens_untrained(one_torch_thread):
    """Trained on targets only, the model does not learn to predict the prompt; trained on
    inputs too, it does."""
    pairs = [("qqqqqqqq:", "a"), ("qqqqqqqq:", "b")]
    cfg = FinetuneConfig(steps=60, batch_size=4, lr=3e-3, append_eos=False)
    masked, full = _tiny(3), _tiny(3)
    finetune(masked, pairs, cfg)
    finetune(full, pairs, FinetuneConfig(steps=60, batch_size=4, lr=3e-3, append_eos=False,
                                         train_on_inputs=True))
    q = ord("q")
    p_masked = np.exp(masked.log_probs(list(b"qqqq"))[1:, q]).mean()
    p_full = np.exp(full.log_probs(list(b"qqqq"))[1:, q]).mean()
    assert p_full > 0.5 and p_masked < 0.05  # measured 0.84 vs 0.0004; chance is 1/256


def test_bad_input_is_named():
    lm = _tiny(context=8)
    with pytest.raises(ValueError, match="non-empty"):
        finetune(lm, [])
    with pytest.raises(TypeError, match=r"examples\[0\]"):
        finetune(lm, [("a", 3)])
    with pytest.raises(ValueError, match="empty target"):
        finetune(lm, [("a", "")])
    with pytest.raises(ValueError, match="context_length=8"):
        finetune(lm, [("a long prompt", "x")])
    with pytest.raises(ValueError, match="Hugging Face"):
        finetune(lm, [("a", "b")], FinetuneConfig(lora_rank=4))
    with pytest.raises(TypeError, match="TransformerLM or HFCausalLM"):
        finetune(object(), [("a", "b")])
    with pytest.raises(ValueError, match="lora_rank"):
        FinetuneConfig(lora_rank=0)
    with pytest.raises(ValueError, match="steps"):
        FinetuneConfig(steps=0)
