"""The attention mask, the transformer's query-blindness and causality, and training."""

import pytest
import torch

from iclr24.papers.prefixlm_icl import (
    ICLTrainConfig,
    ICLTransformer,
    make_icl_mask,
    query_mse,
    sample_icl_batch,
    train_icl_transformer,
)


@pytest.mark.parametrize("mode", ["prefix", "causal"])
def test_mask_structure(mode):
    n, m = 5, 3
    mask = make_icl_mask(n, m, mode)
    assert mask.shape == (8, 8) and mask.dtype == torch.bool
    assert not mask[:, n:].any()  # query-blind: nobody attends to a query, not even itself
    assert mask[n:, :n].all()  # queries see every example
    ex = mask[:n, :n]
    if mode == "prefix":
        assert ex.all()
    else:
        assert torch.equal(ex, torch.ones(n, n, dtype=torch.bool).tril())
        assert ex.diagonal().all()  # causal examples see themselves


def test_mask_bad_input():
    with pytest.raises(ValueError, match="mode must be"):
        make_icl_mask(3, 1, "full")
    with pytest.raises(ValueError, match="n_context must be an int >= 1"):
        make_icl_mask(0, 1)


def _tokens(seed=0, n=6, m=3, d=3):
    return torch.as_tensor(sample_icl_batch(2, n, m, d, rng=seed).tokens)


@pytest.mark.parametrize("mode", ["prefix", "causal"])
def test_queries_do_not_see_each_other(mode, one_torch_thread):
    torch.manual_seed(0)
    model = ICLTransformer(3, d_model=16, n_layers=2, n_heads=2, mask=mode, max_len=16).eval()
    tok = _tokens()
    out = model(tok, 6)
    assert out.shape == (2, 3, 1)
    tok2 = tok.clone()
    tok2[:, 7:, 1:] += 5.0  # move queries 2 and 3
    out2 = model(tok2, 6)
    assert torch.allclose(out[:, 0], out2[:, 0], atol=1e-6)
    assert not torch.allclose(out[:, 1], out2[:, 1])


def test_causal_examples_do_not_see_later_examples(one_torch_thread):
    """Changing the last example leaves the causal model's hidden states of the earlier
    examples unchanged (read after the last block); under prefix they all move."""
    torch.manual_seed(1)
    models = {mode: ICLTransformer(3, d_model=16, n_layers=2, n_heads=2, mask=mode,
                                   max_len=16).eval() for mode in ("prefix", "causal")}
    models["causal"].load_state_dict(models["prefix"].state_dict())
    tok = _tokens(1)
    tok2 = tok.clone()
    tok2[:, 5] += 1.0  # change the last example
    for mode, model in models.items():
        states = []
        hook = model.blocks[-1].register_forward_hook(
            lambda module, inputs, output, states=states: states.append(output))
        model(tok, 6)
        model(tok2, 6)
        hook.remove()
        early_same = torch.allclose(states[0][:, :5], states[1][:, :5], atol=1e-6)
        assert early_same == (mode == "causal")


def test_same_init_differs_only_by_mask(one_torch_thread):
    """Queries read the examples' states of the previous layer, so the mask first matters at
    layer 2: one-layer models coincide on the queries, two-layer models do not."""
    tok = _tokens(2)
    for n_layers, same in ((1, True), (2, False)):
        torch.manual_seed(2)
        p = ICLTransformer(3, d_model=16, n_layers=n_layers, n_heads=2, mask="prefix",
                           max_len=16).eval()
        c = ICLTransformer(3, d_model=16, n_layers=n_layers, n_heads=2, mask="causal",
                           max_len=16).eval()
        c.load_state_dict(p.state_dict())
        assert torch.allclose(p(tok, 6), c(tok, 6), atol=1e-6) == same
        # with a single example the two masks coincide at any depth
        assert torch.allclose(p(tok[:, 5:], 1), c(tok[:, 5:], 1), atol=1e-6)


def test_training_reduces_query_loss_and_is_deterministic(one_torch_thread):
    cfg = ICLTrainConfig(d=3, n_context=6, n_query=2, steps=60, batch=32, lr=3e-3)
    test = sample_icl_batch(256, 6, 2, 3, rng=99)
    outs = []
    for _ in range(2):
        torch.manual_seed(0)
        model = ICLTransformer(3, d_model=16, n_layers=1, n_heads=2, max_len=8)
        before = query_mse(model, test)
        losses = train_icl_transformer(model, cfg, data_seed=5)
        outs.append((before, query_mse(model, test), losses))
    assert outs[0][1] < 0.85 * outs[0][0]
    assert outs[0][2] == outs[1][2]


def test_model_bad_input():
    with pytest.raises(ValueError, match="divisible"):
        ICLTransformer(3, d_model=10, n_heads=4)
    with pytest.raises(ValueError, match="mask must be"):
        ICLTransformer(3, mask="full")
    model = ICLTransformer(3, d_model=8, n_layers=1, n_heads=2, max_len=16)
    with pytest.raises(ValueError, match="last dim must be d_y \\+ d_x = 4"):
        model(torch.zeros(1, 5, 3), 3)
    with pytest.raises(ValueError, match="n_context must be an int in"):
        model(torch.zeros(1, 5, 4), 5)
    with pytest.raises(ValueError, match="exceeds max_len"):
        model(torch.zeros(1, 20, 4), 5)
    with pytest.raises(TypeError, match="ICLTrainConfig"):
        train_icl_transformer(model, {"steps": 3}, 0)


def test_forward_token_dtype_and_finiteness(one_torch_thread):
    torch.manual_seed(0)
    model = ICLTransformer(3, d_model=8, n_layers=1, n_heads=2, max_len=16).eval()
    tok = _tokens()
    with pytest.raises(TypeError, match="tokens must be a floating-point tensor.*int64"):
        model(tok.long(), 6)
    bad = tok.clone()
    bad[0, 2, 1] = float("nan")
    with pytest.raises(ValueError, match="tokens must be finite"):
        model(bad, 6)
    bad[0, 2, 1] = float("inf")
    with pytest.raises(ValueError, match="tokens must be finite"):
        model(bad, 6)
    # float64 (numpy's default) is cast to the parameters' dtype: same output as float32
    out64 = model(tok.double(), 6)
    assert out64.dtype == torch.float32
    assert torch.equal(out64, model(tok, 6))
