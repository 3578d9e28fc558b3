"""EMO's combined objective (dynamic weight, modes, masking, shifting) and the baselines."""

import pytest
import torch
import torch.nn.functional as F

from iclr24.papers.emo import (
    EMOLoss,
    demd,
    emo_dynamic_weight,
    emo_loss,
    make_objective,
    mixce_loss,
    mle_loss,
    tailr_loss,
)


def _batch(seed=0, b=3, t=6, v=7, d=4, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(b, t, v, generator=g, dtype=dtype)
    labels = torch.randint(0, v, (b, t), generator=g)
    emb = torch.randn(v, d, generator=g, dtype=dtype)
    return logits, labels, emb


def _flat(logits, labels):
    v = logits.shape[-1]
    return logits[:, :-1].reshape(-1, v), labels[:, 1:].reshape(-1)


def test_mle_loss_is_shifted_cross_entropy():
    logits, labels, _ = _batch()
    x, y = _flat(logits, labels)
    torch.testing.assert_close(mle_loss(logits, labels), F.cross_entropy(x, y))
    torch.testing.assert_close(mle_loss(logits, labels, shift=False),
                               F.cross_entropy(logits.reshape(-1, 7), labels.reshape(-1)))


def test_emo_mode1_value_equals_nll_and_gradient_combines_both_terms():
    logits, labels, emb = _batch()
    x, y = _flat(logits, labels)
    # value: ½(NLL + sg(NLL/DEMD)·DEMD) = NLL (up to the 1e-10 guard)
    torch.testing.assert_close(emo_loss(logits, labels, emb), mle_loss(logits, labels))
    # gradient: ½ (∇NLL + (NLL/DEMD) ∇DEMD), token by token
    z = logits.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(emo_loss(z, labels, emb), z)
    zf = x.clone().requires_grad_(True)
    nll = F.cross_entropy(zf, y, reduction="none")
    dist = demd(zf, y, emb)
    w = (nll / dist).detach()
    (gf,) = torch.autograd.grad((0.5 * (nll + w * dist)).mean(), zf)
    torch.testing.assert_close(g[:, :-1].reshape(-1, 7), gf)
    assert torch.all(g[:, -1] == 0)  # the last position predicts nothing when shifting


def test_emo_mode2_value_and_direction():
    logits, labels, emb = _batch(1)
    x, y = _flat(logits, labels)
    dist = demd(x, y, emb)
    # value: sg(DEMD/NLL)·NLL + DEMD = 2·DEMD
    torch.testing.assert_close(emo_loss(logits, labels, emb, mode=2), 2 * dist.mean())
    # per token, mode 2 gradient = (DEMD/NLL) × mode 1 gradient · 2 (same direction)
    z1 = logits.clone().requires_grad_(True)
    z2 = logits.clone().requires_grad_(True)
    g1 = torch.autograd.grad(emo_loss(z1, labels, emb, mode=1, reduction="sum"), z1)[0]
    g2 = torch.autograd.grad(emo_loss(z2, labels, emb, mode=2, reduction="sum"), z2)[0]
    nll = F.cross_entropy(x, y, reduction="none")
    ratio = (2 * dist / nll).reshape(3, 5, 1)
    torch.testing.assert_close(g2[:, :-1], ratio * g1[:, :-1])


def test_dynamic_weight_is_detached_and_matches_formula():
    nll = torch.tensor([0.5, 2.0, 4.0], requires_grad=True)
    dist = torch.tensor([0.25, 0.5, 1e-3], requires_grad=True)
    w1 = emo_dynamic_weight(nll, dist, 1)
    w2 = emo_dynamic_weight(nll, dist, 2)
    assert not w1.requires_grad and not w2.requires_grad
    torch.testing.assert_close(w1, (nll / (dist + 1e-10)).detach())
    torch.testing.assert_close(w2, (dist / (nll + 1e-10)).detach())
    # a token the model already places near-synonymously (small DEMD) gets a large weight
    assert w1[2] > w1[1] > w1[0]
    with pytest.raises(ValueError, match="mode"):
        emo_dynamic_weight(nll, dist, 3)


def test_max_weight_caps_the_dynamic_weight():
    logits, labels, emb = _batch(8)
    x, y = _flat(logits, labels)
    nll = F.cross_entropy(x, y, reduction="none")
    dist = demd(x, y, emb)
    w = torch.clamp((nll / (dist + 1e-10)).detach(), max=3.0)
    torch.testing.assert_close(emo_loss(logits, labels, emb, max_weight=3.0),
                               (0.5 * (nll + w * dist)).mean())
    assert float(emo_dynamic_weight(nll, dist, 1, max_weight=3.0).max()) <= 3.0
    with pytest.raises(ValueError, match="max_weight"):
        emo_loss(logits, labels, emb, max_weight=0)


def test_ignore_index_masks_tokens():
    logits, labels, emb = _batch(2)
    masked = labels.clone()
    masked[0, 3:] = -100
    masked[2, 1] = -100
    keep = masked[:, 1:] != -100
    per_tok = emo_loss(logits, masked, emb, reduction="none")
    assert per_tok.shape == (3, 5) and torch.all(per_tok[~keep] == 0)
    torch.testing.assert_close(emo_loss(logits, masked, emb), per_tok[keep].mean())
    # changing logits at masked positions does not change the loss
    other = logits.clone()
    other[0, 2:-1] += 5.0
    torch.testing.assert_close(emo_loss(other, masked, emb), emo_loss(logits, masked, emb))
    # all ignored: zero, like the official code
    assert float(emo_loss(logits, torch.full_like(labels, -100), emb)) == 0.0


def test_mixce_and_tailr_match_their_formulas():
    logits, labels, _ = _batch(3)
    x, y = _flat(logits, labels)
    nll = F.cross_entropy(x, y, reduction="none")
    q = torch.exp(-nll)
    eta = 0.3
    torch.testing.assert_close(mixce_loss(logits, labels, mixing_ratio=eta),
                               (eta * nll + (1 - eta) * q * nll).mean())
    w = torch.clamp(q / ((1 - eta) + eta * q), 0.2, 1.0)
    torch.testing.assert_close(tailr_loss(logits, labels, mixing_ratio=eta),
                               (eta * nll + (1 - eta) * w * nll).mean())
    # η = 1 is MLE for both
    for fn in (mixce_loss, tailr_loss):
        torch.testing.assert_close(fn(logits, labels, mixing_ratio=1.0), mle_loss(logits, labels))
    # the weights are stop-gradient: gradient = (η + (1 − η) q_y) ∇NLL per token for MixCE
    z = x.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(mixce_loss(z, y, mixing_ratio=eta, shift=False, reduction="sum"),
                               z)
    zz = x.clone().requires_grad_(True)
    (g_nll,) = torch.autograd.grad(F.cross_entropy(zz, y, reduction="none")
                                   .mul(eta + (1 - eta) * q).sum(), zz)
    torch.testing.assert_close(g, g_nll)


def test_emo_loss_module_keeps_a_frozen_copy():
    logits, labels, emb = _batch(4)
    w = emb.clone().requires_grad_(True)
    crit = EMOLoss(w)
    before = crit(logits, labels)
    with torch.no_grad():
        w.copy_(torch.randn_like(w))
    torch.testing.assert_close(crit(logits, labels), before)
    torch.testing.assert_close(before, emo_loss(logits, labels, emb))
    assert "cost_embedding" in dict(crit.named_buffers())


def test_make_objective():
    logits, labels, emb = _batch(5)
    torch.testing.assert_close(make_objective("emo", cost_embedding=emb)(logits, labels),
                               emo_loss(logits, labels, emb))
    torch.testing.assert_close(make_objective("mle", shift=False)(logits, labels),
                               mle_loss(logits, labels, shift=False))
    with pytest.raises(ValueError, match="cost_embedding"):
        make_objective("emo")
    with pytest.raises(ValueError, match="objective must be one of"):
        make_objective("kl")


def test_float32_training_dtype_works():
    logits, labels, emb = _batch(6, dtype=torch.float32)
    z = logits.clone().requires_grad_(True)
    emo_loss(z, labels, emb).backward()
    assert z.grad.dtype == torch.float32 and torch.isfinite(z.grad).all()


@pytest.mark.parametrize("call, exc, match", [
    (lambda l, y, e: emo_loss(l, y[:, :-1], e), ValueError, "labels must have shape"),
    (lambda l, y, e: emo_loss(l, y + 7, e), ValueError, "labels must lie in"),
    (lambda l, y, e: emo_loss(l, y - 1 - y, e), ValueError, "labels must lie in"),
    (lambda l, y, e: emo_loss(l, y.double(), e), TypeError, "integer"),
    (lambda l, y, e: emo_loss(l, y, e[:-1]), ValueError, "cost_embedding has 6 rows"),
    (lambda l, y, e: emo_loss(l, y, e, mode=3), ValueError, "mode must be 1 or 2"),
    (lambda l, y, e: emo_loss(l, y, e, reduction="max"), ValueError, "reduction"),
    (lambda l, y, e: emo_loss(l[:, 0], y[:, 0], e), ValueError, r"shift=True needs"),
    (lambda l, y, e: mixce_loss(l, y, mixing_ratio=1.5), ValueError, "mixing_ratio"),
    (lambda l, y, e: tailr_loss(l, y, mixing_ratio=-0.1), ValueError, "mixing_ratio"),
    (lambda l, y, e: mle_loss(l.long(), y), TypeError, "floating-point"),
])
def test_bad_input(call, exc, match):
    logits, labels, emb = _batch(7)
    with pytest.raises(exc, match=match):
        call(logits, labels, emb)
