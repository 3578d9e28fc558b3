import numpy as np
import pytest
import torch

from iclr24.kits.frozen_standins import is_frozen
from iclr24.papers.concept_axes.standins import (
    COARSE_HEADS,
    FINE_HEADS,
    QUESTIONS,
    CoarseVQA,
    SceneCNN,
    StandinConfig,
    TruthProbe,
    pretrained_standins,
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
