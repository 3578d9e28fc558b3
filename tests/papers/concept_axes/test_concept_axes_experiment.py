"""The experiment arms on untrained tiny stand-ins (the mechanics, not the numbers)."""

import numpy as np
import pytest
import torch

from iclr24.papers.concept_axes import experiment as ex
from iclr24.papers.concept_axes.standins import StandinConfig
from iclr24.papers.concept_axes.world import FINE_HUES, SHAPES, TEXTURES


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    cfg = ex.ExperimentConfig(StandinConfig(t2i_steps=1, t2i_batch=4, cnn_steps=1, cnn_batch=4,
                                            cnn_width=8, unet_channels=(8, 16), timesteps=10),
                              n_train=8, encoder_steps=1, encoder_batch=4, n_eval=6,
                              sample_steps=2)
    root = tmp_path_factory.mktemp("standins")
    return cfg, ex.standins_for(cfg, 0, root=root), root


@pytest.mark.parametrize("n", [2, 3, 10])
def test_derangement_has_no_fixed_point(n):
    perm = ex._derangement(n, np.random.default_rng(n))
    assert sorted(perm.tolist()) == list(range(n))
    assert not np.any(perm == np.arange(n))


def test_true_words_are_the_fine_words_of_each_axis_source(setup):
    _, parts, _ = setup
    a = {"category": np.array([1, 4]), "hue": np.array([0.0, 0.5]), "material": np.array([2, 3])}
    b = {"category": np.array([0, 2]), "hue": np.array([0.26, 0.76]), "material": np.array([0, 1])}
    emb = ex.true_word_embeddings(parts, {"category": a, "color": b, "material": a})
    words = {"category": [SHAPES[1], SHAPES[4]], "color": [FINE_HUES[6], FINE_HUES[18]],
             "material": [TEXTURES[2], TEXTURES[3]]}
    assert torch.equal(emb, parts.prompt.word_embeddings(parts.text_encoder, words))


def test_arms_run_and_refuse_unknown_ones(setup, one_torch_thread):
    cfg, parts, root = setup
    enc = ex.train_arm(parts, cfg, 0, 0, 0.1, shuffle_anchors=True, root=root)
    plain = ex.train_arm(parts, cfg, 0, 0, 0.1, root=root)
    # the null arm is its own cached model, not the plain arm loaded again
    entries = [p for p in (root / "concept_axes-encoders").iterdir() if not p.name.startswith(".")]
    assert len(entries) == 2 and enc is not plain
    for arm in (enc, *ex.WORD_ARMS):
        out = ex.recomposition_success(parts, cfg, 0, 0, arm)
        assert 0 <= out["success"] <= 1
        assert 0 <= ex.reconstruction_hue_error(parts, cfg, 0, 0, arm) <= 180
    assert 0 <= ex.reconstruction_hue_error(parts, cfg, 0, 0, enc, permute_inputs=True) <= 180
    with pytest.raises(ValueError, match="arm must be"):
        ex.recomposition_success(parts, cfg, 0, 0, "words")
    with pytest.raises(ValueError, match="shuffle_anchors needs lam > 0"):
        ex.train_arm(parts, cfg, 0, 0, 0.0, shuffle_anchors=True, root=root)
