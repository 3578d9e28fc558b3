"""SALDetector, the learning step, the post-hoc scores and the wild mixtures."""

import numpy as np
import pytest
from scipy.special import logsumexp, softmax

from iclr24.kits.small_classifiers import MLPTrainer
from iclr24.papers.sal import (
    NumpyClassifier,
    SALDetector,
    SplitNetwork,
    digits_wild_mixture,
    energy_scores,
    filter_quality,
    gaussian_wild_mixture,
    msp_scores,
    sal_filter,
    train_ood_classifier,
)


@pytest.fixture(scope="module")
def fitted(request):
    from iclr24.kits.threads import single_threaded

    with single_threaded():
        data = gaussian_wild_mixture(n_id=300, n_wild=300, pi=0.2, n_test_id=200,
                                     n_test_ood=100, seed=0)
        clf = MLPTrainer(hidden=(32, 32), epochs=20, lr=3e-3, batch_size=64,
                         num_classes=3)(data.X_id, data.y_id, rng=0)
        det = SALDetector(3, epochs=10, seed=0).fit(data.X_id, data.y_id, data.X_wild,
                                                    backbone=clf)
        yield data, clf, det


def test_detector_filters_and_scores_id_higher(fitted):
    data, clf, det = fitted
    assert det.candidate_mask_.shape == (len(data.X_wild),)
    # the candidates are enriched in true outliers well beyond pi
    q = filter_quality(det.candidate_mask_, data.wild_is_outlier)
    assert q["precision"] > 2 * data.pi
    res = sal_filter(clf, data.X_id, data.y_id, data.X_wild)
    np.testing.assert_array_equal(res.candidate_mask, res.scores > res.threshold)
    assert det.threshold_ == res.threshold
    s_id, s_ood = det.score_samples(data.X_test_id), det.score_samples(data.X_test_ood)
    assert s_id.shape == (200,) and s_ood.shape == (100,)
    assert np.median(s_id) > np.median(s_ood)
    assert np.mean(det.predict(data.X_test_id) == data.y_test_id) > 0.8


def test_top_pi_variant_flags_ceil_pi_m(fitted):
    data, clf, _ = fitted
    res = sal_filter(clf, data.X_id, data.y_id, data.X_wild, pi=0.2)
    assert res.candidate_mask.sum() == 60
    assert res.scores[res.candidate_mask].min() >= res.scores[~res.candidate_mask].max()


def test_learning_step_is_deterministic_and_keeps_the_backbone(fitted):
    data, clf, _ = fitted
    before = [p.detach().clone() for p in clf.model.parameters()]
    a = train_ood_classifier(clf, data.X_id, data.y_id, data.X_wild[:20], epochs=2, seed=3)
    b = train_ood_classifier(clf, data.X_id, data.y_id, data.X_wild[:20], epochs=2, seed=3)
    np.testing.assert_array_equal(a.score_samples(data.X_test_id),
                                  b.score_samples(data.X_test_id))
    assert all(np.array_equal(x, y.detach()) for x, y in zip(before, clf.model.parameters()))


def test_detector_trains_its_own_backbone_when_none_is_given():
    data = gaussian_wild_mixture(n_id=120, n_wild=120, pi=0.25, n_test_id=20, n_test_ood=10,
                                 seed=2)
    det = SALDetector(3, hidden=(16,), classifier_epochs=3, epochs=1, quantile=0.5, seed=1)
    det.fit(data.X_id, data.y_id, data.X_wild)
    assert det.backbone_.logits(data.X_id).shape == (120, 3)
    assert det.score_samples(data.X_test_ood).shape == (10,)


def test_post_hoc_scores():
    z = np.array([[1.0, 2.0, 0.5], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(msp_scores(z), softmax(z, axis=1).max(1))
    np.testing.assert_allclose(energy_scores(z), logsumexp(z, axis=1))
    assert energy_scores(z)[1] == pytest.approx(np.log(3))
    with pytest.raises(ValueError, match="logits"):
        msp_scores(np.zeros(3))


def test_detector_bad_inputs(fitted):
    data, clf, _ = fitted
    with pytest.raises(ValueError, match="wild set"):
        SALDetector(3).fit(data.X_id, data.y_id, np.zeros((0, data.X_id.shape[1])),
                           backbone=clf)
    for pi in (0, 1, 1.5):
        with pytest.raises(ValueError, match="pi must be None or a number in \\(0, 1\\)"):
            SALDetector(3, pi=pi)
    with pytest.raises(ValueError, match="quantile"):
        SALDetector(3, quantile=1.0)
    with pytest.raises(RuntimeError, match="not fitted"):
        SALDetector(3).score_samples(data.X_id)
    with pytest.raises(ValueError, match=r"X_wild must have per-sample shape \(10,\)"):
        sal_filter(clf, data.X_id, data.y_id, np.zeros((4, 3)))
    with pytest.raises(TypeError, match="torch.nn.Module"):
        train_ood_classifier(object(), data.X_id, data.y_id, data.X_wild)
    with pytest.raises(ValueError, match="X_outliers must not be empty"):
        train_ood_classifier(clf, data.X_id, data.y_id, data.X_wild[:0])


def test_wild_mixtures_are_disjoint_and_have_the_asked_fraction():
    g = gaussian_wild_mixture(n_id=100, n_wild=200, pi=0.25, n_test_id=50, n_test_ood=40, seed=1)
    assert g.wild_is_outlier.sum() == 50 and g.pi == 0.25
    d = digits_wild_mixture(pi=0.1, seed=0)
    assert abs(d.pi - 0.1) < 0.01 and d.num_classes == 6
    rows = {r.tobytes() for r in d.X_id}
    wild_in = d.X_wild[~d.wild_is_outlier]
    assert not any(r.tobytes() in rows for r in wild_in)  # wild ID not in the labelled set
    test_ood = {r.tobytes() for r in d.X_test_ood}
    assert not any(r.tobytes() in test_ood for r in d.X_wild[d.wild_is_outlier])
    for pi in (0, 1, -1, 2.0):
        with pytest.raises(ValueError, match="pi must be a number in \\(0, 1\\)"):
            digits_wild_mixture(pi=pi)
        with pytest.raises(ValueError, match="pi must be a number in \\(0, 1\\)"):
            gaussian_wild_mixture(pi=pi)


class _TinyResNetLike:
    """A torchvision-style image classifier: convolutional body, pooling, a final linear fc."""

    @staticmethod
    def make(seed=0):
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(1, 6, 3, padding=1)
                self.pool = nn.AdaptiveAvgPool2d(2)
                self.fc = nn.Linear(24, 4)

            def forward(self, x):
                return self.fc(torch.flatten(self.pool(torch.relu(self.conv(x))), 1))

        torch.manual_seed(seed)
        return Net()


def _images(n, seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, n)
    X = rng.normal(size=(n, 1, 8, 8)).astype(np.float32)
    X[np.arange(n), 0, y, y] += 4.0  # a class-dependent bright pixel
    return X, y


def test_split_network_equals_the_model_and_refuses_models_without_a_linear_head():
    import torch
    from torch import nn

    net = _TinyResNetLike.make()
    X, _ = _images(10, 0)
    split = SplitNetwork(net, "fc")
    x = torch.as_tensor(X)
    with torch.no_grad():
        torch.testing.assert_close(split(x), net(x))
        assert split.features(x).shape == (10, 24)
    np.testing.assert_allclose(NumpyClassifier(net).logits(X), net(x).detach().numpy(),
                               rtol=1e-6, atol=1e-6)
    with pytest.raises(TypeError, match="final nn.Linear"):
        SplitNetwork(nn.Sequential(nn.Linear(3, 2)), "fc")
    with pytest.raises(TypeError, match="features\\(\\) and a linear head"):
        train_ood_classifier(nn.Sequential(nn.Linear(3, 2)), np.zeros((4, 3)),
                             np.zeros(4, dtype=int), np.zeros((4, 3)))


def test_image_tensors_and_a_torchvision_style_fc_model_run_end_to_end():
    # the audit: image tensors were rejected ("X_id must be a 2-D array") and a model with a
    # final .fc needed a hand-written wrapper
    import torch

    net = _TinyResNetLike.make()
    X_id, y_id = _images(64, 1)
    X_out = np.random.default_rng(2).normal(size=(16, 1, 8, 8)).astype(np.float32) * 3
    X_wild = np.concatenate([_images(48, 3)[0], X_out])
    res = sal_filter(net, X_id, y_id, X_wild)
    assert res.scores.shape == (64,) and res.candidate_mask.dtype == bool
    ood = train_ood_classifier(net, X_id, y_id, X_out, epochs=2, batch_size=16, seed=0)
    assert ood.score_samples(torch.as_tensor(X_wild)).shape == (64,)
    det = SALDetector(4, epochs=2, batch_size=16, quantile=0.5).fit(X_id, y_id, X_wild,
                                                                    backbone=net)
    assert det.score_samples(X_wild).shape == (64,) and det.predict(X_id).shape == (64,)
    with pytest.raises(ValueError, match=r"per-sample shape \(1, 8, 8\)"):
        sal_filter(net, X_id, y_id, X_wild[:, :, :4])
