"""CALM: layer choice, equality with the anchor at initialisation, frozen models, causality."""

import pytest
import torch

from iclr24.papers.calm import CALM, char_model, match_layers, select_layers
from iclr24.papers.calm.kv_experiment import lora_anchor, lora_params_per_rank, matched_lora_rank

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _pair(seed=0):
    return char_model(32, 3, 4, seed), char_model(16, 2, 2, seed + 1)


def _nonzero(calm):
    torch.manual_seed(5)
    for c in calm.composers:
        torch.nn.init.normal_(c.out.weight, std=0.5)
    return calm


def test_select_and_match_layers():
    assert select_layers(4, every=2) == [1, 3]
    assert select_layers(16) == [3, 7, 11, 15]
    assert select_layers(3, every=1) == [0, 1, 2]
    assert match_layers([1, 3], 6) == [2, 5]
    assert match_layers([3, 7, 11, 15], 30) == [7, 14, 22, 29]  # 7.5, 15, 22.5, 30 up
    assert match_layers([0, 1], 3) == [1, 2]
    assert match_layers([0], 5) == [4]
    for bad in ({"n_layers": 0}, {"n_layers": 4, "every": 0}, {"n_layers": 2, "every": 3}):
        with pytest.raises(ValueError):
            select_layers(**bad)
    with pytest.raises(ValueError, match="n_anchor_layers"):
        match_layers([0], 0)
    with pytest.raises(ValueError):
        match_layers([0, 1, 2], 2)


def test_bad_layer_lists():
    anchor, aug = _pair()
    with pytest.raises(ValueError, match="same length"):
        CALM(anchor, aug, [0, 2], [1])
    with pytest.raises(ValueError, match=r"anchor_layers entries must be ints in \[0, 3\)"):
        CALM(anchor, aug, [3], [1])
    with pytest.raises(ValueError, match="augment_layers"):
        CALM(anchor, aug, [1], [-1])
    with pytest.raises(ValueError, match="strictly increasing"):
        CALM(anchor, aug, [2, 1], [0, 1])
    with pytest.raises(ValueError, match="at least one"):
        CALM(anchor, aug, [], [])
    with pytest.raises(TypeError, match="anchor"):
        CALM("model", aug, [0], [0])
    with pytest.raises(TypeError, match="decoder blocks"):
        CALM(torch.nn.Linear(2, 2), aug, [0], [0])


def test_logits_equal_the_anchor_at_initialisation():
    anchor, aug = _pair()
    calm = CALM(anchor, aug, [0, 2], [0, 1])
    x = torch.randint(0, 41, (3, 9))
    torch.testing.assert_close(calm(x).logits, anchor(x), rtol=0, atol=0)
    nz = _nonzero(CALM(anchor, aug, [0, 2], [0, 1]))
    assert not torch.allclose(nz(x).logits, anchor(x))


def test_hf_anchor_equal_at_init_and_composed_through_hooks():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    hf = LlamaForCausalLM(LlamaConfig(vocab_size=42, hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=4, max_position_embeddings=32)).eval()
    aug = char_model(16, 2, 2, 1)
    x = torch.randint(0, 41, (2, 6))
    calm = CALM(hf, aug, [0, 1], [0, 1])
    with torch.no_grad():
        ref = hf(input_ids=x).logits
    torch.testing.assert_close(calm(x).logits, ref, rtol=0, atol=0)
    assert not torch.allclose(_nonzero(calm)(x).logits, ref)


def test_injection_after_the_anchor_block():
    """Composing at the anchor's last block: logits = head(ln_f(H_B + f_cross(H_A, H_B)))."""
    anchor, aug = _pair()
    calm = _nonzero(CALM(anchor, aug, [2], [1]))
    x = torch.randint(0, 41, (2, 7))
    with torch.no_grad():
        h = anchor.tok(x) + anchor._positions(0, 7)
        for block in anchor.blocks:
            h = block(h)
        g = aug.tok(x) + aug._positions(0, 7)
        for block in aug.blocks:
            g = block(g)
        mask = torch.ones(7, 7, dtype=torch.bool).tril()
        want = anchor.head(anchor.ln_f(h + calm.composers[0](h, g, mask)))
        got = calm(x).logits
    torch.testing.assert_close(got, want)


def test_only_composer_parameters_train_and_models_stay_in_eval():
    anchor, aug = _pair()
    calm = CALM(anchor, aug, [0, 2], [0, 1]).train()
    assert not anchor.training and not aug.training and calm.composers.training
    trainable = {id(p) for p in calm.trainable_parameters()}
    assert trainable == {id(p) for p in calm.composers.parameters()}
    assert all(not p.requires_grad for p in list(anchor.parameters()) + list(aug.parameters()))
    d_b, d_a = 32, 16
    per_pair = d_a * d_b + d_b + 4 * d_b * d_b + 2 * d_b  # W_proj (+bias), Q K V O, 2 norms
    assert calm.num_trainable_parameters == 2 * per_pair
    before = {k: v.clone() for k, v in {**anchor.state_dict(),
                                         **{f"aug.{k}": v for k, v in aug.state_dict().items()}
                                         }.items()}
    comp_before = [p.clone() for p in calm.trainable_parameters()]
    opt = torch.optim.SGD(calm.trainable_parameters(), lr=0.1)
    x = torch.randint(0, 41, (4, 8))
    for _ in range(2):
        loss = calm(x, labels=x).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    after = {**anchor.state_dict(), **{f"aug.{k}": v for k, v in aug.state_dict().items()}}
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert any(not torch.equal(a, b) for a, b in zip(comp_before, calm.trainable_parameters()))


def test_future_augmenting_tokens_do_not_change_earlier_logits():
    anchor, aug = _pair()
    x = torch.randint(0, 41, (2, 10))
    y = x.clone()
    y[:, 6:] = torch.randint(0, 41, (2, 4))
    calm = _nonzero(CALM(anchor, aug, [0, 2], [0, 1]))
    a, b = calm(x, aug_input_ids=x).logits, calm(x, aug_input_ids=y).logits
    torch.testing.assert_close(a[:, :6], b[:, :6], rtol=0, atol=0)
    assert not torch.allclose(a[:, 6:], b[:, 6:])
    leaky = _nonzero(CALM(anchor, aug, [0, 2], [0, 1], causal=False))
    assert not torch.allclose(leaky(x, aug_input_ids=x).logits[:, :6],
                              leaky(x, aug_input_ids=y).logits[:, :6])


def test_forward_argument_errors():
    anchor, aug = _pair()
    calm = CALM(anchor, aug, [0], [0])
    x = torch.randint(0, 41, (2, 5))
    with pytest.raises(ValueError, match="cross_mask"):
        calm(x, aug_input_ids=torch.randint(0, 41, (2, 7)))
    with pytest.raises(ValueError, match="labels"):
        calm(x, labels=x[:, :3])
    with pytest.raises(ValueError, match="input_ids"):
        calm(x[0])
    with pytest.raises(ValueError, match="max_new_tokens"):
        calm.generate(x, 0)


def test_generate_at_initialisation_is_the_anchors_greedy_continuation():
    anchor, aug = _pair()
    calm = CALM(anchor, aug, [1], [1])
    x = torch.randint(0, 41, (2, 4))
    out = calm.generate(x, 3)
    ids = x
    with torch.no_grad():
        for _ in range(3):
            ids = torch.cat([ids, anchor(ids)[:, -1].argmax(-1, keepdim=True)], 1)
    assert torch.equal(out, ids[:, 4:])


def test_lora_baseline_budget():
    anchor = char_model(32, 3, 4, 0)
    per_rank = lora_params_per_rank(anchor)
    # qkv (32 -> 96), proj (32 -> 32), mlp (32 -> 128 -> 32) per block
    assert per_rank == 3 * ((32 + 96) + (32 + 32) + (32 + 128) + (128 + 32))
    assert matched_lora_rank(anchor, 10 * per_rank + 3) == 10
    tuned = lora_anchor(anchor, 4, 0)
    assert sum(p.numel() for p in tuned.parameters() if p.requires_grad) == 4 * per_rank
    x = torch.randint(0, 41, (2, 5))
    torch.testing.assert_close(tuned(x), anchor(x))  # LoRA's B starts at zero
    assert all(p.requires_grad for p in anchor.parameters())  # the original is untouched
    with pytest.raises(ValueError):
        matched_lora_rank(anchor, 0)


def test_labels_are_shifted_as_in_hugging_face():
    """labels=input_ids is language modelling: at initialisation CALM's loss is the anchor's
    own Hugging Face loss (the old unshifted loss scored each position against itself)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    hf = LlamaForCausalLM(LlamaConfig(vocab_size=42, hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=4, max_position_embeddings=32)).eval()
    calm = CALM(hf, char_model(16, 2, 2, 1), [0, 1], [0, 1])
    x = torch.randint(0, 41, (3, 7))
    labels = x.clone()
    labels[0, 4:] = -100
    with torch.no_grad():
        for lab in (x, labels):
            torch.testing.assert_close(calm(x, labels=lab).loss, hf(input_ids=x, labels=lab).loss)


def test_kit_anchor_loss_is_next_token_nll():
    anchor, aug = _pair()
    calm = _nonzero(CALM(anchor, aug, [0, 2], [0, 1]))
    x = torch.randint(0, 41, (2, 6))
    with torch.no_grad():
        logits = calm(x).logits
        want = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, 41),
                                                 x[:, 1:].reshape(-1))
        torch.testing.assert_close(calm(x, labels=x).loss, want)
        unshifted = torch.nn.functional.cross_entropy(logits.reshape(-1, 41), x.reshape(-1))
        assert not torch.allclose(calm(x, labels=x).loss, unshifted)


def test_id_tensors_must_be_integers():
    anchor, aug = _pair()
    calm = CALM(anchor, aug, [0], [0])
    x = torch.randint(0, 41, (2, 5))
    with pytest.raises(TypeError, match="input_ids"):
        calm(x.float())
    with pytest.raises(TypeError, match="aug_input_ids"):
        calm(x, aug_input_ids=x.float())
    with pytest.raises(TypeError, match="labels"):
        calm(x, labels=x.float())
    with pytest.raises(TypeError, match="input_ids"):
        calm([[1, 2]])
