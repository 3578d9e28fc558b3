"""CrossAttentionComposer and the cross-model masks."""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from iclr24.papers.calm import CrossAttentionComposer, cross_model_mask, shared_tokenizer_mask


def _reference(comp, h_b, h_a, mask):
    """f_cross = Concat_h softmax(Q_h K_hᵀ/√d_h) V_h W_O written out head by head."""
    ht = comp.norm_kv(comp.proj(h_a))
    q, k, v = comp.q(comp.norm_q(h_b)), comp.k(ht), comp.v(ht)
    d = comp.head_dim
    heads = []
    for h in range(comp.n_heads):
        sl = slice(h * d, (h + 1) * d)
        s = q[..., sl] @ k[..., sl].transpose(-1, -2) / math.sqrt(d)
        s = s.masked_fill(~mask, float("-inf"))
        heads.append(torch.softmax(s, -1) @ v[..., sl])
    return comp.out(torch.cat(heads, -1))


def test_zero_init_is_the_zero_function():
    comp = CrossAttentionComposer(16, 8, n_heads=4)
    out = comp(torch.randn(2, 5, 16), torch.randn(2, 7, 8))
    assert out.shape == (2, 5, 16) and torch.count_nonzero(out) == 0


def test_matches_the_written_out_formula():
    torch.manual_seed(0)
    comp = CrossAttentionComposer(16, 8, n_heads=4, zero_init=False)
    h_b, h_a = torch.randn(2, 5, 16), torch.randn(2, 6, 8)
    mask = torch.rand(2, 5, 6) > 0.3
    mask[..., 0] = True
    torch.testing.assert_close(comp(h_b, h_a, mask), _reference(comp, h_b, h_a, mask))


def test_masked_positions_do_not_matter_and_empty_rows_give_zero():
    torch.manual_seed(1)
    comp = CrossAttentionComposer(8, 4, n_heads=2, zero_init=False)
    h_b, h_a = torch.randn(1, 3, 8), torch.randn(1, 4, 4)
    mask = torch.tensor([[False] * 4, [True, True, False, False], [True] * 4])
    out = comp(h_b, h_a, mask)
    h_a2 = h_a.clone()
    h_a2[0, 2:] = 100.0
    out2 = comp(h_b, h_a2, mask)
    assert torch.count_nonzero(out[0, 0]) == 0
    torch.testing.assert_close(out[0, :2], out2[0, :2])
    assert not torch.allclose(out[0, 2], out2[0, 2])


def test_composer_bad_inputs():
    with pytest.raises(ValueError, match="divisible"):
        CrossAttentionComposer(10, 4, n_heads=4)
    with pytest.raises(ValueError, match="d_augment"):
        CrossAttentionComposer(8, 0)
    comp = CrossAttentionComposer(8, 4, n_heads=2)
    with pytest.raises(ValueError, match="h_anchor"):
        comp(torch.randn(1, 3, 7), torch.randn(1, 2, 4))
    with pytest.raises(ValueError, match="h_aug"):
        comp(torch.randn(1, 3, 8), torch.randn(1, 2, 5))
    with pytest.raises(TypeError, match="bool"):
        comp(torch.randn(1, 3, 8), torch.randn(1, 2, 4), torch.ones(1, 3, 2))
    with pytest.raises(ValueError, match="mask must have shape"):
        comp(torch.randn(1, 3, 8), torch.randn(1, 2, 4), torch.ones(3, 3, dtype=torch.bool))


def test_cross_model_mask_hand_case():
    # anchor tokens "ab|c" read 0, 2, 3 characters; char model reads 0, 1, 2, 3
    mask = cross_model_mask([0, 2, 3], [0, 1, 2, 3])
    assert mask.tolist() == [[True, False, False, False], [True, True, True, False],
                             [True, True, True, True]]
    with pytest.raises(TypeError):
        cross_model_mask([0.0, 1.0], [0, 1])
    with pytest.raises(ValueError):
        cross_model_mask([[0, 1]], [0, 1])


@given(st.integers(1, 12))
def test_same_tokenisation_mask_is_lower_triangular(t):
    ends = list(range(t))
    assert torch.equal(cross_model_mask(ends, ends), shared_tokenizer_mask(t))
    assert torch.equal(shared_tokenizer_mask(t), torch.ones(t, t, dtype=torch.bool).tril())


def test_nan_in_a_visible_state_is_not_hidden():
    """A NaN the anchor can see gives NaN (the old nan_to_num turned it into 0); a row that
    sees no position still gets exactly 0."""
    torch.manual_seed(2)
    comp = CrossAttentionComposer(8, 4, n_heads=2, zero_init=False)
    h_b, h_a = torch.randn(1, 3, 8), torch.randn(1, 4, 4)
    h_a[0, 1] = float("nan")
    mask = torch.tensor([[False] * 4, [True, True, False, False], [True] * 4])
    out = comp(h_b, h_a, mask)
    assert torch.count_nonzero(out[0, 0]) == 0 and not torch.isnan(out[0, 0]).any()
    assert torch.isnan(out[0, 1:]).all()
    h_b[0, 2] = float("nan")
    assert torch.isnan(comp(h_b, torch.randn(1, 4, 4), mask)[0, 2]).all()


def test_empty_rows_have_finite_gradients():
    torch.manual_seed(3)
    comp = CrossAttentionComposer(8, 4, n_heads=2, zero_init=False)
    h_b = torch.randn(1, 2, 8, requires_grad=True)
    mask = torch.tensor([[False, False], [True, False]])
    comp(h_b, torch.randn(1, 2, 4), mask).sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in comp.parameters() if p.grad is not None)
    assert torch.isfinite(h_b.grad).all() and torch.count_nonzero(h_b.grad[0, 0]) == 0
