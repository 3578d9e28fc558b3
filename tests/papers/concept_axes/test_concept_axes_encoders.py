import pytest
import torch
from torch.nn import functional as F

from iclr24.papers.concept_axes import ConceptEncoder, ConceptEncoders


def test_encoder_matches_the_paper_formula():
    torch.manual_seed(0)
    enc = ConceptEncoder(feat_layers=3, feat_dim=5, out_dim=7).eval()
    x = torch.randn(4, 3, 5)
    h = torch.stack([x[:, l] @ enc.layer_weight[l].T + enc.layer_bias[l] for l in range(3)], 1)
    expected = enc.out(F.leaky_relu(h.mean(1), 0.01))
    assert torch.allclose(enc(x), expected, atol=1e-6)


def test_dropout_only_in_training_mode():
    enc = ConceptEncoder(2, 4, 3, dropout=0.5)
    x = torch.randn(8, 2, 4)
    enc.eval()
    assert torch.equal(enc(x), enc(x))
    enc.train()
    torch.manual_seed(1)
    a = enc(x)
    torch.manual_seed(2)
    assert not torch.equal(a, enc(x))


def test_paper_default_sizes():
    enc = ConceptEncoder()
    assert enc.layer_weight.shape == (12, 1024, 1024) and enc.out.out_features == 4096
    assert enc.dropout.p == 0.2


def test_encoders_stack_axes_in_order():
    encs = ConceptEncoders(["a", "b"], feat_layers=2, feat_dim=3, out_dim=4).eval()
    x = torch.randn(5, 2, 3)
    out = encs(x)
    assert out.shape == (5, 2, 4)
    assert torch.equal(out[:, 1], encs.encoders["b"](x))
    assert torch.equal(encs.encode_axis("a", x), out[:, 0])


def test_bad_input():
    enc = ConceptEncoder(2, 3, 4)
    with pytest.raises(ValueError, match="features must be"):
        enc(torch.zeros(1, 3, 3))
    with pytest.raises(ValueError, match="features must be"):
        enc(torch.zeros(3, 2))
    with pytest.raises(ValueError, match="feat_dim"):
        ConceptEncoder(2, 0, 4)
    with pytest.raises(ValueError, match="dropout"):
        ConceptEncoder(dropout=1.0)
    with pytest.raises(ValueError, match="distinct"):
        ConceptEncoders(["a", "a"])
    with pytest.raises(ValueError, match="unknown axis"):
        ConceptEncoders(["a"], feat_layers=2, feat_dim=3, out_dim=4).encode_axis("b", None)
