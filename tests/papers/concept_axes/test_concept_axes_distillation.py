"""Distillation through the frozen stand-ins (untrained weights: the mechanics do not need
training)."""

import numpy as np
import pytest
import torch

from iclr24.kits.frozen_standins import freeze, is_frozen
from iclr24.papers.concept_axes import (
    ConceptEncoders,
    ImageFeatureExtractor,
    TextEncoder,
    TextToImageModel,
    VQAModel,
    check_images,
    concept_distillation_loss,
    fit_concept_encoders,
    generate,
    recompose,
    vqa_anchor_words,
)
from iclr24.papers.concept_axes import test_time_finetune as finetune_at_test_time
from iclr24.papers.concept_axes.standins import (
    COARSE_HEADS,
    FINE_HEADS,
    CoarseVQA,
    SceneCNN,
    TinyTextEncoder,
    TinyTextToImage,
    world_prompt,
)
from iclr24.papers.concept_axes.world import AXES, GENERIC_WORDS, sample_scenes


@pytest.fixture(scope="module")
def parts():
    torch.manual_seed(0)
    prompt = world_prompt()
    text = freeze(TinyTextEncoder(len(prompt.tokenizer), dim=16))
    t2i = freeze(TinyTextToImage(image_size=8, cond_dim=16, channels=(8, 16), timesteps=20))
    feats = freeze(SceneCNN(FINE_HEADS, width=8))
    images = sample_scenes(6, 8, np.random.default_rng(0)).images
    return prompt, text, t2i, feats, images


def _encoders(feats, dim=16, seed=1):
    torch.manual_seed(seed)
    return ConceptEncoders(AXES, feat_layers=feats.num_layers, feat_dim=feats.feature_dim,
                           out_dim=dim)


def test_standins_satisfy_the_protocols(parts):
    _, text, t2i, feats, _ = parts
    assert isinstance(text, TextEncoder) and isinstance(t2i, TextToImageModel)
    assert isinstance(feats, ImageFeatureExtractor)
    assert isinstance(CoarseVQA(SceneCNN(COARSE_HEADS, 8)), VQAModel)


def test_gradients_reach_the_encoders_through_the_frozen_models_not_their_weights(parts,
                                                                              one_torch_thread):
    prompt, text, t2i, feats, images = parts
    enc = _encoders(feats)
    out = concept_distillation_loss(t2i, text, prompt, images, enc(feats.features(images)),
                                    None, 0.0, generator=torch.Generator().manual_seed(0))
    out["loss"].backward()
    grads = [p.grad for p in enc.parameters()]
    assert all(g is not None and g.abs().sum() > 0 for g in grads)
    assert all(p.grad is None for p in [*text.parameters(), *t2i.parameters(),
                                        *feats.parameters()])
    assert is_frozen(text) and is_frozen(t2i)


def test_training_changes_only_the_encoders(parts, one_torch_thread):
    prompt, text, t2i, feats, images = parts
    before = {k: v.clone() for k, v in [*text.state_dict().items(),
                                        *(("u." + k, v) for k, v in t2i.state_dict().items())]}
    enc = _encoders(feats)
    enc_before = [p.detach().clone() for p in enc.parameters()]
    seen = []
    hook = text.register_forward_pre_hook(lambda m, args: seen.append(args[0].detach().clone()))
    try:
        fit_concept_encoders(enc, t2i, text, feats.features(images), prompt, images, None, 0.0,
                             steps=3, batch_size=6, seed=0)
    finally:
        hook.remove()
    after = {k: v for k, v in [*text.state_dict().items(),
                               *(("u." + k, v) for k, v in t2i.state_dict().items())]}
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert any(not torch.equal(a, p) for a, p in zip(enc_before, enc.parameters()))
    # the text encoder's inputs differ between steps only in the placeholder rows
    changed = (seen[0] != seen[-1]).any(dim=2).any(dim=0).nonzero().flatten().tolist()
    assert changed == prompt.positions.tolist()


class _ZeroEps(torch.nn.Module):
    """eps_theta = 0, so L_recon = mean(eps^2) exactly."""

    image_size, channels, num_timesteps = 8, 3, 10

    def add_noise(self, x0, noise, t):
        return x0 + noise

    def predict_noise(self, x_t, t, cond):
        return torch.zeros_like(x_t)

    def sample(self, cond, generator, steps):
        return torch.zeros(cond.shape[0], 3, 8, 8)


def test_loss_is_recon_plus_lambda_times_squared_anchor_distance(parts):
    prompt, text, _, _, images = parts
    emb = torch.randn(6, 3, 16)
    anchors = torch.randn(6, 3, 16)
    out = concept_distillation_loss(_ZeroEps(), text, prompt, images, emb, anchors, 0.3,
                                    generator=torch.Generator().manual_seed(5))
    g = torch.Generator().manual_seed(5)
    torch.randint(0, 10, (6,), generator=g)
    noise = torch.randn(images.shape, generator=g)
    assert out["recon"] == pytest.approx(float(noise.pow(2).mean()), rel=1e-5)
    anchor = sum(float((emb[:, k] - anchors[:, k]).norm(dim=1).pow(2).mean()) for k in range(3))
    assert out["anchor"] == pytest.approx(anchor, rel=1e-5)
    assert out["loss"] == pytest.approx(float(out["recon"]) + 0.3 * anchor, rel=1e-5)


def test_loss_bad_input(parts):
    prompt, text, t2i, _, images = parts
    emb = torch.zeros(6, 3, 16)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        concept_distillation_loss(t2i, text, prompt, images * 2 - 1, emb, None, 0.0)
    with pytest.raises(ValueError, match="8x8"):
        concept_distillation_loss(t2i, text, prompt, torch.zeros(6, 3, 16, 16), emb, None, 0.0)
    with pytest.raises(ValueError, match="batch, 3, H, W"):
        concept_distillation_loss(t2i, text, prompt, torch.zeros(6, 1, 8, 8), emb, None, 0.0)
    with pytest.raises(TypeError, match="floating"):
        concept_distillation_loss(t2i, text, prompt, torch.zeros(6, 3, 8, 8, dtype=torch.uint8),
                                  emb, None, 0.0)
    with pytest.raises(ValueError, match="anchors are required"):
        concept_distillation_loss(t2i, text, prompt, images, emb, None, 0.5)
    with pytest.raises(ValueError, match="lam"):
        concept_distillation_loss(t2i, text, prompt, images, emb, emb, -1.0)
    with pytest.raises(TypeError, match="torch.Tensor"):
        check_images(np.zeros((1, 3, 8, 8)))


class _FixedVQA:
    def __init__(self, answers):
        self.answers = answers

    def answer(self, images, question, choices):
        return [self.answers[question]] * len(images)


def test_vqa_answers_outside_the_list_fall_back_to_the_generic_word(parts):
    images = parts[4]
    vqa = _FixedVQA({"q1": "red", "q2": "lilac"})
    words = vqa_anchor_words(vqa, images, {"color": ("q1", ["red", "blue"]),
                                           "material": ("q2", ["solid", "dots"])},
                             GENERIC_WORDS)
    assert words == {"color": ["red"] * 6, "material": ["material"] * 6}
    with pytest.raises(ValueError, match="fallback"):
        vqa_anchor_words(vqa, images, {"mood": ("q1", ["red"])}, GENERIC_WORDS)


def test_recompose_takes_each_axis_from_its_own_image(parts):
    _, _, _, feats, images = parts
    enc = _encoders(feats).eval()
    a, b = images[:3], images[3:]
    emb = recompose(enc, feats, {"category": a, "color": b, "material": a})
    assert torch.allclose(emb[:, 1], enc.encode_axis("color", feats.features(b)))
    assert torch.allclose(emb[:, 0], enc.encode_axis("category", feats.features(a)))
    with pytest.raises(ValueError, match="exactly the axes"):
        recompose(enc, feats, {"category": a, "color": b})
    with pytest.raises(ValueError, match="same number"):
        recompose(enc, feats, {"category": a, "color": images, "material": a})


def test_test_time_finetune_copies_and_drops_the_anchor(parts, one_torch_thread):
    prompt, text, t2i, feats, images = parts
    enc = _encoders(feats)
    before = [p.detach().clone() for p in enc.parameters()]
    tuned = finetune_at_test_time(enc, t2i, text, feats, prompt, images[:2], steps=2, lr=1e-2)
    assert all(torch.equal(b, p) for b, p in zip(before, enc.parameters()))
    assert any(not torch.equal(b, p) for b, p in zip(before, tuned.parameters()))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        finetune_at_test_time(enc, t2i, text, feats, prompt, images * 3, steps=1)


def test_generate_returns_unit_range_images(parts):
    prompt, text, t2i, _, _ = parts
    emb = torch.randn(2, 3, 16)
    x = generate(t2i, text, prompt, emb, steps=2, seed=0)
    assert x.shape == (2, 3, 8, 8) and float(x.min()) >= 0 and float(x.max()) <= 1
    assert torch.equal(x, generate(t2i, text, prompt, emb, steps=2, seed=0))
    with pytest.raises(ValueError, match="steps"):
        t2i.sample(torch.zeros(1, 4, 16), torch.Generator(), 0)


class _RecordingT2I(_ZeroEps):
    def sample(self, cond, generator, steps, *, uncond=None, guidance=1.0):
        self.seen = (cond, uncond, guidance)
        return torch.zeros(cond.shape[0], 3, 8, 8)


def test_generate_with_guidance_uses_the_null_caption_as_unconditional(parts):
    prompt, text, _, _, _ = parts
    t2i = _RecordingT2I()
    emb = torch.randn(2, 3, 16)
    null_words = {"category": "object", "color": "color", "material": "material"}
    generate(t2i, text, prompt, emb, steps=2, guidance=4.0, null_words=null_words)
    cond, uncond, w = t2i.seen
    null = prompt.word_embeddings(text, {a: [null_words[a]] * 2 for a in AXES})
    assert w == 4.0
    assert torch.allclose(uncond, text(prompt.input_embeddings(text, null)))
    assert torch.allclose(cond, text(prompt.input_embeddings(text, emb)))
    generate(t2i, text, prompt, emb, steps=2)
    assert t2i.seen[1] is None and t2i.seen[2] == 1.0  # no guidance: conditional only
    with pytest.raises(ValueError, match="null_words"):
        generate(t2i, text, prompt, emb, steps=2, guidance=4.0)
    with pytest.raises(ValueError, match="lacks axes"):
        generate(t2i, text, prompt, emb, steps=2, guidance=4.0, null_words={"color": "color"})
    with pytest.raises(ValueError, match="guidance"):
        generate(t2i, text, prompt, emb, steps=2, guidance=-2.0, null_words=null_words)
    with pytest.raises(ValueError, match="embeddings"):
        generate(t2i, text, prompt, emb[0], steps=2)
