import pytest
import torch

from iclr24.papers.concept_axes import (
    HFTokenizer,
    TemplatePrompt,
    WordTokenizer,
    placeholder_token,
)
from iclr24.papers.concept_axes.standins import TEMPLATE, TinyTextEncoder, world_tokenizer
from iclr24.papers.concept_axes.world import AXES


def test_positions_point_at_the_placeholder_tokens():
    tok = world_tokenizer()
    p = TemplatePrompt(TEMPLATE, AXES, tok)
    ids = p.token_ids.tolist()
    for axis, pos in zip(AXES, p.positions.tolist()):
        assert ids[pos] == tok.vocab[placeholder_token(axis)]
    # "a photo of <category> with <color> color and <material> material"
    assert p.positions.tolist() == [3, 5, 8]


@pytest.mark.parametrize("template", [
    "a photo of {category} with {color} color",                      # an axis missing
    "a photo of {category} with {color} color and {texture} material",  # wrong name
    "a {category} {category} with {color} color and {material} material",  # duplicate
    "a photo of {category} with {color} color and {material} material {x}",  # extra field
])
def test_template_placeholders_must_match_the_axes(template):
    with pytest.raises(ValueError, match="do not match the axes"):
        TemplatePrompt(template, AXES, world_tokenizer())


def test_unknown_template_word_is_an_error():
    with pytest.raises(ValueError, match="vocabulary"):
        TemplatePrompt("a picture of {category} with {color} color and {material} material",
                       AXES, world_tokenizer())


def test_multi_token_anchor_word_is_rejected():
    tok = world_tokenizer()
    with pytest.raises(ValueError, match="single token"):
        tok.single_token_id("light blue")
    with pytest.raises(ValueError, match="single token"):
        tok.single_token_id("")
    p = TemplatePrompt(TEMPLATE, AXES, tok)
    enc = TinyTextEncoder(len(tok))
    with pytest.raises(ValueError, match="single token"):
        p.word_embeddings(enc, {"category": ["circle"], "color": ["red green"],
                                "material": ["solid"]})


def test_only_placeholder_rows_change_and_they_equal_the_embeddings():
    torch.manual_seed(0)
    tok = world_tokenizer()
    p = TemplatePrompt(TEMPLATE, AXES, tok)
    enc = TinyTextEncoder(len(tok), dim=8)
    e1, e2 = torch.randn(2, 3, 8), torch.randn(2, 3, 8)
    s1, s2 = p.input_embeddings(enc, e1), p.input_embeddings(enc, e2)
    base = enc.input_embeddings(p.token_ids)
    changed = (s1 != s2).any(dim=2).any(dim=0)
    assert changed.nonzero().flatten().tolist() == p.positions.tolist()
    for k, pos in enumerate(p.positions.tolist()):
        assert torch.equal(s1[:, pos], e1[:, k])
    keep = [i for i in range(len(p)) if i not in p.positions.tolist()]
    assert torch.allclose(s1[:, keep], base[None, keep].expand(2, -1, -1))


def test_input_embeddings_gradient_is_the_placeholder_rows_of_the_upstream_gradient():
    tok = world_tokenizer()
    p = TemplatePrompt(TEMPLATE, AXES, tok)
    enc = TinyTextEncoder(len(tok), dim=4)
    e = torch.randn(1, 3, 4, requires_grad=True)
    w = torch.randn(1, len(p), 4)
    (p.input_embeddings(enc, e) * w).sum().backward()
    assert torch.allclose(e.grad[0], w[0, p.positions])


def test_fill_words_and_word_embeddings_are_the_table_rows():
    tok = world_tokenizer()
    p = TemplatePrompt(TEMPLATE, AXES, tok)
    words = {"category": "cross", "color": "hue07", "material": "dots"}
    assert p.fill_words(words) == "a photo of cross with hue07 color and dots material"
    enc = TinyTextEncoder(len(tok), dim=4)
    w = p.word_embeddings(enc, {k: [v] for k, v in words.items()})
    assert w.shape == (1, 3, 4)
    assert torch.equal(w[0, 1], enc.table.weight[tok.vocab["hue07"]])


def test_bad_arguments():
    with pytest.raises(TypeError):
        TemplatePrompt(TEMPLATE, "category", world_tokenizer())
    with pytest.raises(TypeError):
        TemplatePrompt(TEMPLATE, AXES, tokenizer={"a": 1})
    with pytest.raises(TypeError):
        WordTokenizer(["two words"])
    p = TemplatePrompt(TEMPLATE, AXES, world_tokenizer())
    with pytest.raises(ValueError, match="axes"):
        p.input_embeddings(TinyTextEncoder(len(p.tokenizer), dim=4), torch.zeros(1, 2, 4))
    with pytest.raises(ValueError, match="dim"):
        p.input_embeddings(TinyTextEncoder(len(p.tokenizer), dim=4), torch.zeros(1, 3, 5))


def _hf_tokenizer():
    """A real Hugging Face tokenizer built here (BPE on a tiny corpus, ``</s>`` appended as T5
    does), no download."""
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    from tokenizers import models, pre_tokenizers, processors, trainers

    tok = tokenizers.Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    corpus = [f"a photo of {s} with {c} color and {m} material"
              for s in ("circle", "square") for c in ("red", "blue") for m in ("solid", "dots")]
    tok.train_from_iterator(corpus * 10, trainers.BpeTrainer(vocab_size=150,
                                                              special_tokens=["[UNK]", "</s>"]))
    tok.post_processor = processors.TemplateProcessing(
        single="$A </s>", special_tokens=[("</s>", tok.token_to_id("</s>"))])
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]",
                                                eos_token="</s>")


def test_hugging_face_tokenizer_is_wrapped_and_placeholders_stay_single_tokens():
    hf = _hf_tokenizer()
    n_before = len(hf)
    p = TemplatePrompt(TEMPLATE, AXES, hf)
    assert isinstance(p.tokenizer, HFTokenizer) and len(p.tokenizer) == n_before + 3
    ids = p.token_ids.tolist()
    for axis, pos in zip(AXES, p.positions.tolist()):
        assert ids[pos] == hf.convert_tokens_to_ids(placeholder_token(axis))
    assert ids[-1] == hf.convert_tokens_to_ids("</s>")  # special tokens kept, as T5 encodes
    # a text encoder sized to the grown vocabulary takes the prompt end to end
    enc = TinyTextEncoder(len(p.tokenizer), dim=4)
    e = torch.randn(2, 3, 4)
    seq = p.input_embeddings(enc, e)
    assert torch.equal(seq[:, p.positions[1]], e[:, 1])
    w = p.word_embeddings(enc, {"category": ["circle"], "color": ["red"], "material": ["dots"]})
    assert torch.equal(w[0, 1], enc.table.weight[hf.convert_tokens_to_ids("red")])
    # a second prompt on the same tokenizer reuses the placeholder ids
    assert TemplatePrompt(TEMPLATE, AXES, hf).token_ids.tolist() == ids


def test_hugging_face_anchor_words_must_be_one_known_token():
    p = TemplatePrompt(TEMPLATE, AXES, _hf_tokenizer())
    assert p.tokenizer.single_token_id("circle") > 0
    with pytest.raises(ValueError, match="single token"):
        p.tokenizer.single_token_id("magenta")  # split into pieces by BPE
    with pytest.raises(ValueError, match="unknown token"):
        p.tokenizer.single_token_id("z")  # outside the alphabet: [UNK]


def test_hf_adapter_and_prompt_refuse_non_tokenizers():
    with pytest.raises(TypeError, match="Hugging Face tokenizer.*lacks"):
        HFTokenizer(object())
    with pytest.raises(TypeError, match="Tokenizer protocol"):
        TemplatePrompt(TEMPLATE, AXES, tokenizer=["a", "photo"])


class _DroppingTokenizer(WordTokenizer):
    """A custom tokenizer done wrong: its encode loses the placeholder tokens."""

    def encode(self, text):
        return [i for w, i in zip(text.split(), super().encode(text)) if not w.startswith("<")]


def test_placeholder_that_the_tokenizer_does_not_keep_is_an_error():
    with pytest.raises(ValueError, match="does not keep"):
        TemplatePrompt(TEMPLATE, AXES, _DroppingTokenizer(["a", "photo", "of", "with", "color",
                                                           "and", "material"]))
