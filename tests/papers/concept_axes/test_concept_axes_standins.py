import numpy as np
import pytest
import torch

from iclr24.kits.frozen_standins import freeze, is_frozen
from iclr24.papers.concept_axes.standins import (
    COARSE_HEADS,
    FINE_HEADS,
    NULL_WORDS,
    QUESTIONS,
    CoarseVQA,
    SceneCNN,
    StandinConfig,
    TinyTextToImage,
    TruthProbe,
    _captions,
    pretrained_standins,
    world_prompt,
)
from iclr24.papers.concept_axes.world import COARSE_COLORS, sample_scenes


def test_vqa_answers_only_its_questions_and_within_the_choices():
    vqa = CoarseVQA(SceneCNN(COARSE_HEADS, 8).eval())
    images = sample_scenes(5, 8, np.random.default_rng(0)).images
    q, choices = QUESTIONS["color"]
    assert all(a in COARSE_COLORS for a in vqa.answer(images, q, choices))
    assert vqa.answer(images, q, ["blue"]) == ["blue"] * 5
    with pytest.raises(ValueError, match="knows only"):
        vqa.answer(images, "Is it shiny?", ["yes"])
    with pytest.raises(ValueError, match="share no answer"):
        vqa.answer(images, q, ["plaid"])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        vqa.answer(images * 255, q, choices)


def test_probe_decodes_hue_from_cos_sin():
    net = SceneCNN(FINE_HEADS, 8)
    probe = TruthProbe(net)
    torch.nn.init.zeros_(net.heads["hue"].weight)
    with torch.no_grad():
        net.heads["hue"].bias.copy_(torch.tensor([0.0, 1.0]))  # angle 90 degrees
    hue = probe.predict(sample_scenes(3, 8, np.random.default_rng(0)).images)["hue"]
    assert np.allclose(hue, 0.25)


def test_standins_are_trained_once_frozen_and_cached(tmp_path, one_torch_thread):
    cfg = StandinConfig(t2i_steps=1, t2i_batch=4, cnn_steps=1, cnn_batch=4, cnn_width=8,
                        unet_channels=(8, 16), timesteps=10)
    a = pretrained_standins(cfg, 0, root=tmp_path)
    assert is_frozen(a.t2i) and is_frozen(a.text_encoder) and is_frozen(a.features)
    assert is_frozen(a.vqa.net) and is_frozen(a.probe.net)
    b = pretrained_standins(cfg, 0, root=tmp_path)  # loaded from the cache
    for x, y in zip(a.t2i.state_dict().values(), b.t2i.state_dict().values()):
        assert torch.equal(x, y)
    # the three CNN roles are distinct models (own seeds and data)
    assert not torch.equal(a.features.convs[0].weight, a.probe.net.convs[0].weight)


def _tiny_t2i():
    torch.manual_seed(0)
    return freeze(TinyTextToImage(image_size=8, cond_dim=16, channels=(8, 16), timesteps=10))


def test_classifier_free_guidance_mixes_the_two_predictions(one_torch_thread):
    t2i = _tiny_t2i()
    from diffusers import DDIMScheduler

    # without x0 clipping one DDIM step is affine in eps (the test needs that; sampling clips)
    t2i.sample_scheduler = DDIMScheduler.from_config(t2i.sample_scheduler.config,
                                                     clip_sample=False)
    cond, uncond = torch.randn(2, 5, 16), torch.randn(2, 5, 16)

    def draw(c, steps=1, **kw):
        return t2i.sample(c, torch.Generator().manual_seed(3), steps, **kw)

    plain, null = draw(cond), draw(uncond)
    assert torch.allclose(draw(cond, uncond=uncond, guidance=1.0), plain)
    assert torch.allclose(draw(cond, uncond=uncond, guidance=0.0), null, atol=1e-5)
    # one DDIM step is affine in eps, so eps_u + w (eps_c - eps_u) gives w x_c + (1 - w) x_u
    assert torch.allclose(draw(cond, uncond=uncond, guidance=3.0), 3 * plain - 2 * null,
                          atol=1e-4)
    assert not torch.allclose(draw(cond, 3, uncond=uncond, guidance=3.0), draw(cond, 3))


def test_guidance_bad_arguments():
    t2i = _tiny_t2i()
    cond = torch.zeros(1, 5, 16)
    with pytest.raises(ValueError, match="needs uncond"):
        t2i.sample(cond, torch.Generator(), 2, guidance=3.0)
    with pytest.raises(ValueError, match="uncond must have"):
        t2i.sample(cond, torch.Generator(), 2, uncond=torch.zeros(2, 5, 16), guidance=3.0)
    with pytest.raises(ValueError, match="guidance"):
        t2i.sample(cond, torch.Generator(), 2, uncond=cond, guidance=-1.0)


def test_caption_drop_makes_null_captions():
    prompt = world_prompt()
    tok = prompt.tokenizer
    s = sample_scenes(40, 8, np.random.default_rng(0))
    null = tok.encode(prompt.fill_words(NULL_WORDS))

    def captions(p):
        return _captions(tok, prompt, s.shape, s.hue, s.texture, np.random.default_rng(1), p)

    assert all(row == null for row in captions(1.0).tolist())
    assert not any(row == null for row in captions(0.0).tolist())
    dropped = np.mean([row == null for row in captions(0.5).tolist()])
    assert 0.25 < dropped < 0.75
