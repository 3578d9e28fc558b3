"""SALDetector, the learning step, the post-hoc scores and the wild mixtures."""

import numpy as np
import pytest
from scipy.special import logsumexp, softmax

from iclr24.kits.small_classifiers import MLPTrainer
from iclr24.papers.sal import (
    SALDetector,
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
    with pytest.raises(ValueError, match="X_wild must have 10 features"):
        sal_filter(clf, data.X_id, data.y_id, np.zeros((4, 3)))
    with pytest.raises(TypeError, match="backbone"):
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
