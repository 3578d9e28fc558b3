"""The U-Net, the synthesizer, the tiny CLAP and the separator's training losses."""

import numpy as np
import pytest
import torch
from torch import nn

from iclr24.papers.bimodal_separation import (
    CLIP_SAMPLES,
    SOUND_CLASSES,
    AudioTextModel,
    BiModalSeparator,
    MixtureBatch,
    Synthesizer,
    TextConditionedUNet,
    TinyCLAP,
    loss_weight,
    natural_mixtures,
    pretrain_tiny_clap,
    single_source_clips,
    stft,
    weighted_l1,
    zero_shot_accuracy,
)


def _clap(seed=0):
    torch.manual_seed(seed)
    return TinyCLAP(SOUND_CLASSES).requires_grad_(False).eval()


def _separator(clap, seed=0, **kw):
    torch.manual_seed(seed)
    return BiModalSeparator(TextConditionedUNet(129, cond_dim=64), Synthesizer(8, 64), clap, **kw)


def _batch(n=2, seed=0):
    corpus = natural_mixtures(2 * n, seed)
    w = torch.as_tensor(corpus.waves).reshape(n, 2, -1)
    caps = tuple((corpus.captions[2 * i], corpus.captions[2 * i + 1]) for i in range(n))
    return MixtureBatch(w, caps, 8000)


def test_unet_shapes_padding_and_text_independence_at_init(one_torch_thread):
    net = TextConditionedUNet(129, channels=8, cond_dim=16)
    x = torch.randn(3, 1, 129, 32)
    c1, c2 = torch.randn(3, 16), torch.randn(3, 16)
    out = net(x, c1)
    assert out.shape == (3, 8, 129, 32)
    # FiLM layers start as the identity: the features do not depend on the text yet
    assert torch.allclose(out, net(x, c2))
    # a shared encoding broadcast over several queries equals per-query runs
    skips = net.encode(x[:1])
    assert torch.allclose(net.decode(skips, c1, 32), net(x[:1].expand(3, -1, -1, -1), c1),
                          atol=1e-6)
    with pytest.raises(ValueError, match="log_mag must be \\(batch, 1, 129, frames\\)"):
        net(torch.randn(1, 1, 128, 32), c1[:1])
    with pytest.raises(ValueError, match="num_downs must be an int >= 1"):
        TextConditionedUNet(129, num_downs=0)


def test_synthesizer_is_the_sigmoid_of_a_text_weighted_inner_product():
    syn = Synthesizer(4, 6)
    with torch.no_grad():
        syn.fc.weight.normal_()
        syn.scale.copy_(torch.tensor([1.0, -2.0, 0.5, 3.0]))
        syn.bias.fill_(0.3)
    e, f = torch.randn(2, 6), torch.randn(2, 4, 5, 7)
    g = torch.sigmoid(syn.fc(e))
    z = sum(syn.scale[c] * g[:, c, None, None] * f[:, c] for c in range(4)) + 0.3
    assert torch.allclose(syn(e, f), torch.sigmoid(z), atol=1e-6)
    assert torch.allclose(Synthesizer(4, 6).fc.weight.std(), torch.tensor(1e-4), rtol=0.5)


def test_tiny_clap_protocol_errors_and_pretraining_learns(one_torch_thread):
    clap = _clap()
    assert isinstance(clap, AudioTextModel)
    with pytest.raises(ValueError, match="sample_rate must be 8000 Hz"):
        clap.embed_audio(torch.zeros(1, CLIP_SAMPLES), 16000)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        clap.embed_text(["violin"])
    with pytest.raises(TypeError, match="a list, not one str"):
        clap.embed_text("hiss")
    e = clap.embed_text(["whistle and hiss", "hiss"])
    assert torch.allclose(e.norm(dim=1), torch.ones(2))
    clips = single_source_clips(160, 0, purpose="clap")
    clap.requires_grad_(True)
    pretrain_tiny_clap(clap, clips.waves, clips.labels, steps=40, batch_size=32)
    held = single_source_clips(80, 1, purpose="clap_test")
    with torch.no_grad():
        a = clap.embed_audio(torch.as_tensor(held.waves), 8000)
        t = clap.embed_text(list(SOUND_CLASSES))
    acc = float(((a @ t.T).argmax(1).numpy() == held.labels).mean())
    assert acc > 0.5  # chance is 1/8
    assert zero_shot_accuracy(clap, held.waves, held.labels, SOUND_CLASSES, 8000) == acc


def test_separator_unit_mask_returns_the_mixture(one_torch_thread):
    sep = _separator(_clap())

    class Ones(nn.Module):
        def forward(self, text_emb, feats):
            return torch.ones(feats.shape[0], *feats.shape[2:])

    sep.synthesizer = Ones()
    x = torch.randn(2, CLIP_SAMPLES)
    assert torch.allclose(sep.separate(x, ["hiss", "bass"], 8000), x, atol=1e-5)
    assert torch.allclose(sep.separate(x[0], "hiss", 8000), x[0], atol=1e-5)


def test_separator_bad_input_errors():
    clap = _clap()
    sep = _separator(clap)
    with pytest.raises(ValueError, match="sample_rate must be 8000 Hz"):
        sep.separate(torch.zeros(CLIP_SAMPLES), "hiss", 16000)
    with pytest.raises(ValueError, match="text must be one str or 2 strings"):
        sep.separate(torch.zeros(2, CLIP_SAMPLES), ["hiss"], 8000)
    batch = MixtureBatch(torch.zeros(1, 2, CLIP_SAMPLES) + 0.1,
                         (("whistle and hiss and bass and chord", "clicks and rumble"),), 8000)
    with pytest.raises(ValueError, match="more than n_sources = 3"):
        sep.training_losses(batch)
    with pytest.raises(ValueError, match="sample_rate must be 8000 Hz"):
        sep.training_losses(MixtureBatch(batch.mixtures, (("hiss", "bass"),), 16000))
    with pytest.raises(ValueError, match="terms must be a non-empty subset"):
        sep.training_losses(batch, terms=("supervised",))
    with pytest.raises(ValueError, match="mixtures must be a \\(batch, 2, samples\\)"):
        MixtureBatch(torch.zeros(1, 3, 10), (("a", "b"),), 8000)
    with pytest.raises(ValueError, match="must equal the audio-text model's rate"):
        _separator(clap, sample_rate=16000)
    with pytest.raises(TypeError, match="must implement AudioTextModel"):
        BiModalSeparator(TextConditionedUNet(129, cond_dim=64), Synthesizer(8, 64), object())


def test_unsup_loss_matches_a_hand_computation(one_torch_thread):
    clap = _clap()
    sep = _separator(clap).eval()
    batch = _batch()
    out = sep.training_losses(batch, ("unsup",))
    mom = batch.mixtures.sum(1)
    spec = stft(mom, 256, 128)
    expect = 0.0
    for n in range(2):
        text = clap.embed_text([c[n] for c in batch.captions])
        feats = sep.unet(torch.log1p(spec.abs()).unsqueeze(1), text)
        pred = sep.synthesizer(text, feats) * spec.abs()
        target = stft(batch.mixtures[:, n], 256, 128).abs()
        expect = expect + weighted_l1(pred, target, loss_weight(spec.abs()))
    assert out["unsup"].item() == pytest.approx(expect.item(), rel=1e-5)
    assert out["total"].item() == pytest.approx(5 * expect.item(), rel=1e-5)


def test_weak_losses_backpropagate_into_the_separator_only(one_torch_thread):
    clap = _clap()
    sep = _separator(clap)
    assert not any(p is q for p in sep.parameters() for q in clap.parameters())
    out = sep.training_losses(_batch(), ("unsup", "consistency", "contrastive"))
    assert set(out) == {"unsup", "consistency", "contrastive", "total"}
    assert all(torch.isfinite(v) for v in out.values())
    expect = 0.5 * out["contrastive"] + 5 * (out["consistency"] + out["unsup"])
    assert out["total"].item() == pytest.approx(expect.item(), rel=1e-6)
    out["contrastive"].backward()
    grads = [p.grad for p in sep.parameters() if p.grad is not None]
    assert grads and any(g.abs().sum() > 0 for g in grads)
    assert all(p.grad is None for p in clap.parameters())
    # the official variant keeps the repeated (padding) phrases in the InfoNCE
    padded = _separator(clap, include_padding=True).training_losses(_batch(), ("contrastive",))
    assert torch.isfinite(padded["contrastive"])
    assert padded["contrastive"].item() != pytest.approx(out["contrastive"].item())


def test_training_is_deterministic(one_torch_thread):
    from iclr24.papers.bimodal_separation import train_separator, weak_batches

    corpus = natural_mixtures(12, 0)
    runs = []
    for _ in range(2):
        sep = _separator(_clap(), seed=5)
        runs.append(train_separator(sep, weak_batches(corpus, 2), steps=3, seed=1))
    assert runs[0] == runs[1] and np.isfinite(runs[0]).all()


def test_separate_bad_mixtures_name_the_argument(one_torch_thread):
    sep = _separator(_clap())
    with pytest.raises(TypeError, match="mixture must be a floating-point tensor, got torch.int64"):
        sep.separate(torch.zeros(CLIP_SAMPLES, dtype=torch.int64), "hiss", 8000)
    with pytest.raises(TypeError, match="mixture must be a torch.Tensor"):
        sep.separate(np.zeros(CLIP_SAMPLES, dtype=np.float32), "hiss", 8000)
    with pytest.raises(ValueError, match="mixture is empty"):
        sep.separate(torch.zeros(0), "hiss", 8000)
    with pytest.raises(ValueError, match="mixture is empty"):
        sep.separate(torch.zeros(0, CLIP_SAMPLES), [], 8000)
    with pytest.raises(ValueError, match="at least n_fft = 256 samples, got 100"):
        sep.separate(torch.zeros(100), "hiss", 8000)
    nan = torch.randn(CLIP_SAMPLES)
    nan[17] = float("nan")
    with pytest.raises(ValueError, match="mixture must be finite"):
        sep.separate(nan, "hiss", 8000)
    with pytest.raises(ValueError, match="mixture must be a \\(samples,\\) or \\(batch, samples\\)"):
        sep.separate(torch.zeros(1, 1, CLIP_SAMPLES), "hiss", 8000)
    with pytest.raises(TypeError, match="text must be one str or a sequence of str"):
        sep.separate(torch.zeros(2, CLIP_SAMPLES), ["hiss", 3], 8000)


def test_float64_mixture_is_computed_in_the_models_dtype_and_returned_in_its_own(one_torch_thread):
    sep = _separator(_clap()).eval()
    x = torch.randn(2, CLIP_SAMPLES, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        est32 = sep.separate(x, ["hiss", "bass"], 8000)
        est64 = sep.separate(x.double(), ["hiss", "bass"], 8000)
    assert est64.dtype == torch.float64 and est32.dtype == torch.float32
    assert torch.allclose(est64.float(), est32, atol=1e-5)


def test_to_moves_the_frozen_audio_text_model_but_keeps_it_out_of_the_state(one_torch_thread):
    clap = _clap()
    sep = _separator(clap).eval()
    sep.double()
    assert all(p.dtype == torch.float64 for p in clap.parameters())
    assert all(p.dtype == torch.float64 for p in sep.parameters())
    assert not any(k.startswith("audio_text_model") for k in sep.state_dict())
    x = torch.randn(CLIP_SAMPLES, dtype=torch.float64)
    with torch.no_grad():
        assert sep.separate(x, "hiss", 8000).dtype == torch.float64
        losses = sep.training_losses(_batch())  # float32 batch, computed in float64
    assert losses["total"].dtype == torch.float64 and torch.isfinite(losses["total"])
    sep.to(torch.float32)
    assert all(p.dtype == torch.float32 for p in clap.parameters())


def test_separator_rejects_bad_weights_and_stft_sizes():
    clap = _clap()
    with pytest.raises(ValueError, match="lambda_rec must be a finite number >= 0, got -1"):
        _separator(clap, lambda_rec=-1.0)
    with pytest.raises(ValueError, match="contrastive_weight must be a finite number >= 0"):
        _separator(clap, contrastive_weight=float("nan"))
    with pytest.raises(ValueError, match="lambda_rec must be a finite number >= 0"):
        _separator(clap, lambda_rec="5")
    with pytest.raises(ValueError, match="hop must be <= n_fft = 256"):
        _separator(clap, hop=512)
    with pytest.raises(ValueError, match="hop must be a positive int"):
        _separator(clap, hop=0)
    _separator(clap, lambda_rec=0.0, contrastive_weight=0.0)  # both terms switched off: allowed


def test_mixture_batch_and_training_losses_reject_bad_audio():
    caps = (("hiss and bass", "clicks and rumble"),)
    with pytest.raises(TypeError, match="mixtures must be a floating-point tensor"):
        MixtureBatch(torch.zeros(1, 2, CLIP_SAMPLES, dtype=torch.int32), caps, 8000)
    bad = torch.zeros(1, 2, CLIP_SAMPLES)
    bad[0, 1, 3] = float("inf")
    with pytest.raises(ValueError, match="mixtures must be finite"):
        MixtureBatch(bad, caps, 8000)
    with pytest.raises(ValueError, match="mixtures is empty"):
        MixtureBatch(torch.zeros(1, 2, 0), caps, 8000)
    with pytest.raises(TypeError, match="captions must hold strings"):
        MixtureBatch(torch.zeros(1, 2, CLIP_SAMPLES), (("hiss", 3),), 8000)
    short = MixtureBatch(torch.ones(1, 2, 100), caps, 8000)
    with pytest.raises(ValueError, match="batch.mixtures must have at least n_fft = 256"):
        _separator(_clap()).training_losses(short)


class _AxisModel:
    """An audio-text stub: audio embedding = one-hot of the loudest of the first 3 samples,
    text embedding = one-hot of the class index (for zero_shot_accuracy)."""

    sample_rate = 8000
    logit_scale = 1.0

    def embed_audio(self, wave, sample_rate):
        return torch.nn.functional.one_hot(wave[:, :3].abs().argmax(1), 3).float()

    def embed_text(self, phrases):
        return torch.eye(3)[[["a", "b", "c"].index(p) for p in phrases]]


def test_zero_shot_accuracy_counts_nearest_text_matches():
    waves = np.zeros((4, 10), dtype=np.float32)
    waves[[0, 1, 2, 3], [0, 1, 2, 2]] = 1.0  # audio classes 0, 1, 2, 2
    assert zero_shot_accuracy(_AxisModel(), waves, np.array([0, 1, 2, 0]), ["a", "b", "c"],
                              8000) == 0.75
    assert zero_shot_accuracy(_AxisModel(), waves, np.array([1, 2, 0, 1]), ["a", "b", "c"],
                              8000) == 0.0
    with pytest.raises(ValueError, match="labels must index class_names"):
        zero_shot_accuracy(_AxisModel(), waves, np.array([0, 1, 2, 3]), ["a", "b", "c"], 8000)
    with pytest.raises(ValueError, match="waves must be \\(n, samples\\)"):
        zero_shot_accuracy(_AxisModel(), waves[0], np.array([0]), ["a", "b", "c"], 8000)
