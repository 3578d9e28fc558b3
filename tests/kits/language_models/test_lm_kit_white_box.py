"""White-box access on the tiny model: attention, hidden states, block hooks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr24.kits.language_models import CausalTransformer, TransformerConfig, TransformerLM
from iclr24.kits.language_models.white_box import block_output_hook, n_layers, trace


@pytest.fixture(scope="module")
def tiny() -> TransformerLM:
    torch.manual_seed(0)
    return TransformerLM(CausalTransformer(TransformerConfig(d_model=32, n_layers=2, n_heads=4,
                                                             context_length=16)))


def test_trace_matches_the_models_own_passes(tiny):
    toks = list(b"hello")
    tr = trace(tiny, toks)
    assert tr.attentions.shape == (2, 4, 6, 6) and tr.hidden_states.shape == (3, 6, 32)
    np.testing.assert_allclose(tr.attentions.sum(-1), 1.0, atol=1e-5)
    assert np.all(np.triu(tr.attentions, 1) == 0)  # causal
    # rows 0..T-1 are the backend's log_probs of the tokens; the last row is the next token's
    np.testing.assert_allclose(tr.log_probs[:-1], tiny.log_probs(toks), atol=1e-5)
    sess = tiny.session(1)
    for t in toks:
        sess.next_log_probs()
        sess.feed([t])
    np.testing.assert_allclose(tr.log_probs[-1], sess.next_log_probs()[0], atol=1e-5)
    # hidden state L is the final normalised state: the head maps it to the logits
    head = tiny.model.head(torch.from_numpy(tr.hidden_states[-1]))
    np.testing.assert_allclose(torch.log_softmax(head, -1).detach().numpy(), tr.log_probs,
                               atol=1e-5)


def test_attention_recomputation_reproduces_the_blocks_output(tiny):
    """Block 0's attention output rebuilt from the traced weights and the block's own value
    projection equals what the block adds to its input (before the MLP)."""
    tr = trace(tiny, list(b"abcdef"))
    block = tiny.model.blocks[0]
    x = torch.from_numpy(tr.hidden_states[0])[None]
    _, _, v = block._split(x)
    y = torch.from_numpy(tr.attentions[0])[None] @ v
    mid = x + block.proj(block._merge(y))
    out = mid + block.mlp(block.ln2(mid))
    np.testing.assert_allclose(out[0].detach().numpy(), tr.hidden_states[1], atol=1e-5)


def test_block_hooks_read_and_replace(tiny):
    toks = list(b"abc")
    seen = []
    with block_output_hook(tiny, 0, lambda h: seen.append(h.clone())):
        base = tiny.log_probs(toks)
    assert len(seen) == 1 and seen[0].shape == (1, 3, 32)
    np.testing.assert_allclose(tiny.log_probs(toks), base)  # a read-only hook changes nothing
    with block_output_hook(tiny, -1, lambda h: torch.zeros_like(h)):
        zeroed = tiny.log_probs(toks)
    # the last block's output zeroed: the final norm maps 0 to its bias, the same every row
    np.testing.assert_allclose(zeroed, np.repeat(zeroed[:1], 3, 0), atol=1e-6)
    np.testing.assert_allclose(tiny.log_probs(toks), base)  # the hook is gone afterwards
    with pytest.raises(ValueError, match="shape"), \
            block_output_hook(tiny, 0, lambda h: h[:, :1]):
        tiny.log_probs(toks)
    with pytest.raises(ValueError, match="layer"), block_output_hook(tiny, 2, lambda h: None):
        pass
    with pytest.raises(ValueError, match="positions"):
        trace(tiny, list(range(16)))
    with pytest.raises(TypeError, match="TransformerLM or HFCausalLM"):
        trace(object(), [1])
    assert n_layers(tiny) == 2
