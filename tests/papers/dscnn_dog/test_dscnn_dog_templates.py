"""Template bank, matching, controls, autoencoder clustering and the coverage report."""

import numpy as np
import pytest
import torch
from scipy.ndimage import gaussian_filter

from iclr24.papers.dscnn_dog import (
    TEMPLATE_FAMILIES,
    KernelAutoencoder,
    cluster_kernels,
    coverage_report,
    dog_template_bank,
    lowpass_references,
    match_templates,
    name_clusters,
    permute_pixels,
    random_kernels,
    template_family,
)

BANK, LABELS = dog_template_bank(7)


def test_bank_is_normalised_signed_and_complete():
    assert BANK.shape[1:] == (7, 7) and len(LABELS) == len(BANK)
    assert np.allclose(np.linalg.norm(BANK.reshape(len(BANK), -1), axis=1), 1.0)
    assert {template_family(label) for label in LABELS} == set(TEMPLATE_FAMILIES)
    # every template's negation is in the bank (on- and off-centre are separate classes)
    flat = BANK.reshape(len(BANK), -1)
    assert np.allclose((flat @ (-flat).T).max(axis=1), 1.0)
    # a DoG is centre-surround: positive centre, negative ring, zero-ish mean for beta = 1
    i = LABELS.index("dog+(sigma1=1,ratio=2,beta=1)")
    t = BANK[i]
    assert t[3, 3] == t.max() > 0 and t[3, 0] < 0
    # first derivative along x (angle 0) is odd in x, positive towards +x
    j = LABELS.index("dog_d1+(sigma1=1,ratio=2,beta=1,angle=0)")
    assert np.allclose(BANK[j], -BANK[j][:, ::-1]) and BANK[j][3, 4] > 0


def test_dog_matches_an_independent_construction():
    delta = np.zeros((7, 7))
    delta[3, 3] = 1
    g = lambda s: gaussian_filter(delta, s, mode="constant", truncate=8)
    dog = g(1.0) - 0.75 * g(1.5)
    m = match_templates(dog[None], BANK, 0.99, labels=LABELS)
    assert m.identified[0] and m.best_labels()[0] == "dog+(sigma1=1,ratio=1.5,beta=0.75)"


def test_each_template_matches_itself_with_cosine_one():
    m = match_templates(BANK * 3.7, BANK, 1.0 - 1e-9)  # scale does not matter
    assert np.allclose(m.scores, 1.0)
    assert m.coverage == 1.0
    assert np.allclose(BANK[m.best], BANK)  # the best template is the kernel itself


def test_dead_kernels_are_excluded_and_counted():
    ks = np.concatenate([BANK[:3], np.zeros((2, 7, 7)), 1e-9 * BANK[:1]])
    m = match_templates(ks, BANK, 0.9)
    assert m.n_dead == 3 and m.dead.tolist() == [False] * 3 + [True] * 3
    assert m.coverage == 1.0  # 3 live kernels, all matched
    assert m.identified.sum() == 3


def test_matching_errors():
    with pytest.raises(ValueError, match="does not match the template bank"):
        match_templates(np.zeros((2, 5, 5)), BANK, 0.7)
    for tau in (0.0, 1.5, -0.2):
        with pytest.raises(ValueError, match=r"tau must be in \(0, 1\]"):
            match_templates(BANK[:2], BANK, tau)
    with pytest.raises(ValueError, match=r"\(N, k, k\)"):
        match_templates(np.zeros((7, 7)), BANK, 0.7)
    with pytest.raises(ValueError, match="odd int"):
        dog_template_bank(4)


def test_controls_have_chance_coverage():
    rnd = random_kernels(500, 7, 0)
    assert match_templates(rnd, BANK, 0.6).coverage < 0.02
    perm = permute_pixels(BANK, 0)
    assert np.allclose(np.sort(perm.reshape(len(BANK), -1), 1),
                       np.sort(BANK.reshape(len(BANK), -1), 1))  # same values per kernel
    assert match_templates(perm, BANK, 0.8).coverage < 0.5 < match_templates(BANK, BANK, 0.8).coverage


def test_autoencoder_and_clusters_name_dog_patterns(one_torch_thread):
    ae = KernelAutoencoder(7, 2)
    recon, z = ae(torch.randn(5, 49))
    assert recon.shape == (5, 49) and z.shape == (5, 2)
    rng = np.random.default_rng(0)
    # three clean families with small noise: clusters must be named DoG-family by the rule
    picks = [LABELS.index("dog+(sigma1=1,ratio=2,beta=1)"),
             LABELS.index("dog_d1+(sigma1=1,ratio=2,beta=1,angle=0)"),
             LABELS.index("dog_d1+(sigma1=1,ratio=2,beta=1,angle=90)")]
    ks = np.concatenate([BANK[p] + 0.03 * rng.normal(size=(60, 7, 7)) for p in picks])
    res = cluster_kernels(ks, latent_dim=2, n_clusters=3, seed=0, steps=400)
    assert res.assignments.shape == (180,) and res.centroids.shape == (3, 7, 7)
    named = name_clusters(res, BANK, LABELS, tau=0.8)
    assert sum(c["matched"] for c in named) == 3
    assert {c["family"] for c in named} == {"dog", "dog_d1"}
    with pytest.raises(ValueError, match="live kernels"):
        cluster_kernels(np.zeros((5, 7, 7)), n_clusters=3)


def test_coverage_report_rows():
    rows = coverage_report({"bank": BANK[:10], "noise": random_kernels(10, 7, 1)}, BANK, LABELS,
                           taus=(0.7, 0.9))
    assert len(rows) == 4
    first = rows[0]
    assert first["group"] == "bank" and first["coverage"] == 1.0
    assert sum(first[f"share_{f}"] for f in TEMPLATE_FAMILIES) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="non-empty mapping"):
        coverage_report({}, BANK, LABELS)


def test_cosine_loss_and_training_loop(one_torch_thread):
    from iclr24.papers.dscnn_dog import MicroConvNeXt, TrainConfig, cosine_loss, train_classifier

    x = torch.randn(4, 49)
    assert cosine_loss(x, 2 * x).item() == pytest.approx(0.0, abs=1e-6)
    assert cosine_loss(x, -x).item() == pytest.approx(2.0, abs=1e-6)

    def batch(rng, n):  # bright vs dark images: learnable in a few steps
        y = rng.integers(0, 2, n)
        return (y[:, None, None] + 0.1 * rng.normal(size=(n, 32, 32))).astype(np.float32), y

    torch.manual_seed(0)
    m = MicroConvNeXt(n_classes=2, dims=(8, 16, 16), depths=(1, 1, 1))
    losses = train_classifier(m, batch, TrainConfig(steps=30, batch_size=16, lr=5e-3))
    assert len(losses) == 30 and np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5])


def test_lowpass_templates_are_dropped_on_request():
    refs = lowpass_references(7)
    assert refs.shape == (2, 7, 7)
    assert np.allclose(np.linalg.norm(refs.reshape(2, -1), axis=1), 1.0)
    # the audit's finding: the full bank matches a constant kernel at cosine ~0.85
    assert match_templates(refs[:1], BANK, 0.8).identified[0]
    bank, labels = dog_template_bank(7, max_lowpass_cosine=0.5)
    assert len(bank) == len(labels) and 0 < len(bank) < len(BANK)
    assert np.abs(bank.reshape(len(bank), -1) @ refs.reshape(2, -1).T).max() <= 0.5
    assert np.nanmax(match_templates(refs, bank, 0.5).scores) <= 0.5
    # zero-mean structure survives: derivatives of every kind and centre-surround DoGs
    assert {template_family(label) for label in labels} == set(TEMPLATE_FAMILIES)
    assert "dog_d1+(sigma1=1,ratio=2,beta=1,angle=0)" in labels


@pytest.mark.parametrize("bad", [0.0, 1.5, -0.1, True, "0.5"])
def test_bad_max_lowpass_cosine(bad):
    with pytest.raises(ValueError, match="max_lowpass_cosine"):
        dog_template_bank(7, max_lowpass_cosine=bad)


def test_bad_control_arguments():
    with pytest.raises(ValueError, match="n must be a positive int"):
        random_kernels(0, 7)
    with pytest.raises(ValueError, match="k must be a positive int"):
        random_kernels(5, 2.5)
    with pytest.raises(TypeError, match="seed must be an int"):
        random_kernels(5, 7, seed=0.5)
    with pytest.raises(TypeError, match="seed must be an int"):
        permute_pixels(BANK[:2], seed="a")
    with pytest.raises(ValueError, match=r"\(N, k, k\)"):
        permute_pixels(np.zeros((3, 7, 5)))
