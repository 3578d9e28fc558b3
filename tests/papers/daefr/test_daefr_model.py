"""Stage 3: cross-attention fusion (queries from the LQ branch), the code predictor, and DAEFR
(stage-1 HQ targets, a frozen prior that gets no gradient, the loss)."""

import copy
import math

import pytest
import torch
import torch.nn.functional as F

from iclr24.kits.frozen_standins import is_frozen
from iclr24.papers.daefr import (
    DAEFR,
    CodePredictor,
    CrossAttentionFusion,
    PredictorConfig,
    VQAutoencoder,
    fit_code_predictor,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _reference_fusion(fu, f_hq, f_lq):
    """The block written with torch's scaled_dot_product_attention."""
    b, c, h, w = f_hq.shape
    q = fu.q(fu.norm_lq(f_lq))
    kv = fu.norm_hq(f_hq)
    k, v = fu.k(kv), fu.v(kv)

    def split(t):
        return t.reshape(b, fu.heads, c // fu.heads, h * w).transpose(2, 3)

    out = F.scaled_dot_product_attention(split(q), split(k), split(v))
    return f_hq + fu.proj_out(out.transpose(2, 3).reshape(b, c, h, w))


def test_fusion_matches_reference_and_takes_queries_from_the_lq_branch():
    torch.manual_seed(0)
    fu = CrossAttentionFusion(dim=16, heads=4)
    f_hq, f_lq = torch.randn(2, 16, 3, 3), torch.randn(2, 16, 3, 3)
    out = fu(f_hq, f_lq)
    assert torch.allclose(out, _reference_fusion(fu, f_hq, f_lq), atol=1e-5)
    assert not torch.allclose(out, fu(f_lq, f_hq), atol=1e-3)  # the order matters
    # queries come from f_lq: the attention weights depend on it, values only on f_hq, so with
    # f_hq constant over positions the output no longer depends on f_lq
    flat = torch.randn(2, 16, 1, 1).expand(2, 16, 3, 3) + 0.0
    a, b = fu(flat, f_lq), fu(flat, torch.randn(2, 16, 3, 3))
    assert torch.allclose(a, b, atol=1e-5)


def test_fusion_is_residual_on_the_hq_features_and_permutation_equivariant():
    torch.manual_seed(1)
    fu = CrossAttentionFusion(dim=8, heads=2)
    f_hq, f_lq = torch.randn(1, 8, 2, 3), torch.randn(1, 8, 2, 3)
    torch.nn.init.zeros_(fu.proj_out.weight)
    torch.nn.init.zeros_(fu.proj_out.bias)
    assert torch.equal(fu(f_hq, f_lq), f_hq)
    fu2 = CrossAttentionFusion(dim=8, heads=2)
    perm = torch.randperm(6)

    def p(t):
        return t.flatten(2)[:, :, perm].reshape(t.shape)

    assert torch.allclose(fu2(p(f_hq), p(f_lq)), p(fu2(f_hq, f_lq)), atol=1e-5)


def test_predictor_shapes_and_positional_embedding():
    torch.manual_seed(0)
    pred = CodePredictor(in_dim=8, dim=16, layers=2, heads=4, mlp=32, n_codes=10, n_positions=6)
    f = torch.randn(3, 8, 2, 3)
    logits = pred(f)
    assert logits.shape == (3, 6, 10)
    perm = torch.randperm(6)
    shuffled = f.flatten(2)[:, :, perm].reshape(f.shape)
    # zero positional embedding (the init): tokens are permutation-equivariant
    assert torch.allclose(pred(shuffled), logits[:, perm], atol=1e-5)
    with torch.no_grad():
        pred.position_emb.normal_()
    assert not torch.allclose(pred(shuffled), pred(f)[:, perm], atol=1e-3)
    with pytest.raises(ValueError, match="h\\*w = 6"):
        pred(torch.randn(1, 8, 3, 3))
    with pytest.raises(ValueError, match="divisible"):
        CodePredictor(in_dim=8, dim=10, heads=4)


def _parts(seed=0):
    torch.manual_seed(seed)
    prior = VQAutoencoder(1, 4, (1, 2), 8, 12)
    hq = VQAutoencoder(1, 4, (1, 2), 8, 12)  # stands for the associated HQ autoencoder
    lq = VQAutoencoder(1, 4, (1, 2), 8, 12)
    pred = CodePredictor(8, 16, 1, 2, 32, 12, 16)
    return prior, hq, lq, CrossAttentionFusion(8, 2), pred


def _x(n=5, seed=0):
    return torch.rand(n, 1, 8, 8, generator=torch.Generator().manual_seed(seed)) * 2 - 1


def test_targets_come_from_the_stage1_hq_encoder_and_codebook():
    prior, hq, lq, fu, pred = _parts()
    model = DAEFR(hq, lq, fu, pred, prior=prior)
    x_hq = _x()
    idx, quant = model.targets(x_hq)
    with torch.no_grad():
        expected = prior.quantizer.nearest(prior.encode(x_hq))
        from_hq = prior.quantizer.nearest(hq.encode(x_hq))
    assert torch.equal(idx, expected)
    assert not torch.equal(idx, from_hq)  # the associated encoder would give other targets
    assert torch.equal(quant, prior.quantizer.lookup(expected))
    # the loss reads exactly these targets: CE + 10 * MSE(fused, e[idx])
    x_lq = _x(seed=1)
    out = model.loss(x_lq, x_hq)
    fused = model.features(x_lq)
    logits = pred(fused)
    ce = F.cross_entropy(logits.reshape(-1, 12), expected.reshape(-1))
    mse = F.mse_loss(fused, quant)
    assert out["ce"].item() == pytest.approx(ce.item(), rel=1e-5)
    assert out["feat_mse"].item() == pytest.approx(mse.item(), rel=1e-5)
    assert out["loss"].item() == pytest.approx(ce.item() + 10 * mse.item(), rel=1e-5)


def test_prior_decoder_and_codebook_get_no_gradient():
    prior, hq, lq, fu, pred = _parts()
    model = DAEFR(hq, lq, fu, pred, prior=prior)
    model.train()
    assert is_frozen(model.prior.part)  # stays in eval mode under .train()
    model.loss(_x(seed=1), _x())["loss"].backward()
    for name, p in model.prior.named_parameters():
        assert p.grad is None and not p.requires_grad, name
    for part in (model.hq_encoder, model.lq_encoder, model.fusion, model.predictor):
        assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in part.parameters())
    # training changes the encoders but leaves the prior exactly as it was
    before = copy.deepcopy(model.prior.state_dict())
    enc_before = copy.deepcopy(model.hq_encoder.state_dict())
    fit = fit_code_predictor(model, _x(16, 1), _x(16), PredictorConfig(steps=3, batch_size=8))
    assert len(fit.ce) == 3
    assert all(torch.equal(v, model.prior.state_dict()[k]) for k, v in before.items())
    assert not all(torch.equal(v, model.hq_encoder.state_dict()[k])
                   for k, v in enc_before.items())
    # the caller's autoencoders are copied, not trained in place
    assert all(torch.equal(v, hq.encoder.state_dict()[k])
               for k, v in _parts()[1].encoder.state_dict().items())


def test_forward_decodes_argmax_codes_through_the_prior():
    prior, hq, lq, fu, pred = _parts()
    model = DAEFR(hq, lq, fu, pred, prior=prior).eval()
    x_lq = _x(seed=2)
    logits, restored = model(x_lq)
    idx = model.predict_indices(x_lq)
    assert torch.equal(idx.reshape(len(x_lq), -1), logits.argmax(-1))
    with torch.no_grad():
        assert torch.allclose(restored, prior.decode_indices(idx), atol=1e-6)
    assert torch.allclose(model.restore(x_lq), restored, atol=1e-6)


def test_single_encoder_baseline_uses_the_hq_features_directly():
    prior, _, _, _, pred = _parts()
    base = DAEFR(prior, None, None, pred, prior=prior)
    x = _x()
    assert not base.dual
    with torch.no_grad():
        assert torch.allclose(base.features(x), prior.encode(x), atol=1e-6)


def test_bad_arguments_are_refused():
    prior, hq, lq, fu, pred = _parts()
    with pytest.raises(ValueError, match="both be given"):
        DAEFR(hq, lq, None, pred, prior=prior)
    with pytest.raises(TypeError, match="prior"):
        DAEFR(hq, lq, fu, pred, prior=torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="n_codes"):
        DAEFR(hq, lq, fu, CodePredictor(8, 16, 1, 2, 32, 7, 16), prior=prior)
    with pytest.raises(ValueError, match="code dims"):
        DAEFR(hq, lq, CrossAttentionFusion(4, 2), pred, prior=prior)
    model = DAEFR(hq, lq, fu, pred, prior=prior)
    with pytest.raises(ValueError, match="\\[-1, 1\\]"):
        model.restore(_x() * 10)
    with pytest.raises(ValueError, match="channels"):
        model.restore(torch.zeros(1, 3, 8, 8))
    with pytest.raises(ValueError, match="positions"):
        model.restore(torch.zeros(1, 1, 12, 12))
    with pytest.raises(ValueError, match="same shape"):
        model.loss(_x(2), _x(3))
    with pytest.raises(ValueError, match="divisible"):
        CrossAttentionFusion(10, 4)
    with pytest.raises(ValueError, match="f_lq"):
        fu(torch.zeros(1, 8, 2, 2), torch.zeros(1, 4, 2, 2))
    with pytest.raises(TypeError, match="DAEFR"):
        fit_code_predictor(hq, _x(), _x())
    with pytest.raises(ValueError, match="steps"):
        PredictorConfig(steps=0)
    assert math.isfinite(model.loss(_x(), _x(seed=3))["loss"].item())
