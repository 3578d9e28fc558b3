"""Stages I-III of Chameleon: masks, populations, poisons, adaptive counts, neighbourhoods,
scores and the withholding of low-FPR TPRs."""

import numpy as np
import pytest
import torch

from iclr24.papers.chameleon_mi import (
    ChameleonAttack,
    adaptive_poison_counts,
    augmentation_score,
    balanced_membership_masks,
    chameleon_score,
    draw_population,
    gap_score,
    gaussian_kl,
    label_flip,
    make_poison_set,
    membership_metrics,
    membership_neighbourhood,
    scaled_logit,
    shift_noise_augment,
    train_population,
    true_label_confidence,
)


def test_masks_balanced_per_point():
    m = balanced_membership_masks(8, 50, np.random.default_rng(0))
    assert m.shape == (8, 50) and m.dtype == bool
    assert np.all(m.sum(0) == 4)
    assert len({tuple(c) for c in m.T}) > 10  # the halves differ from point to point
    for bad in (3, 7, 0, 1):
        with pytest.raises(ValueError, match="even int"):
            balanced_membership_masks(bad, 5, np.random.default_rng(0))


def test_population_excludes_challenge_points_from_base_sets():
    chal = np.array([3, 10, 11, 50, 99])
    pop = draw_population(100, chal, 6, np.random.default_rng(1), base_fraction=0.5)
    for i in range(6):
        assert not np.isin(pop.base_sets[i], chal).any()
        assert pop.base_sets[i].size == round(0.5 * 95)
        rows = pop.training_rows(i)
        assert set(rows[np.isin(rows, chal)]) == set(chal[pop.masks[i]])
    with pytest.raises(ValueError, match="challenge_idx out of range"):
        draw_population(100, np.array([5, 100]), 4, np.random.default_rng(0))
    with pytest.raises(ValueError, match="challenge_idx out of range"):
        draw_population(100, np.array([-1, 3]), 4, np.random.default_rng(0))
    with pytest.raises(ValueError, match="must not repeat"):
        draw_population(100, np.array([3, 3]), 4, np.random.default_rng(0))


def test_make_poison_set_counts_and_labels():
    X = np.arange(20, dtype=float).reshape(10, 2)
    y = np.arange(10) % 3
    Xp, yp = make_poison_set(X, y, np.array([1, 4, 8]), np.array([2, 0, 3]), num_classes=3)
    assert Xp.shape == (5, 2)
    assert np.array_equal(Xp[:2], X[[1, 1]]) and np.array_equal(Xp[2:], X[[8, 8, 8]])
    assert np.array_equal(yp, label_flip(y[[1, 1, 8, 8, 8]], 3))
    assert np.all(yp != y[[1, 1, 8, 8, 8]])
    with pytest.raises(ValueError, match="counts must be non-negative"):
        make_poison_set(X, y, np.array([1, 4]), np.array([1, -1]), 3)


class _Recorder:
    """A train_fn that records training sets and predicts by nearest training row."""

    def __init__(self):
        self.sets = []

    def __call__(self, X, y, rng):
        self.sets.append((X.copy(), y.copy()))

        def proba(Q, X=X, y=y):
            d = ((Q[:, None, :] - X[None]) ** 2).sum(-1)
            near = d <= d.min(1, keepdims=True) + 1e-12
            p = np.zeros((len(Q), 3))
            for c in range(3):
                p[:, c] = (near & (y[None] == c)).sum(1)
            return p / p.sum(1, keepdims=True)

        return proba


def test_poisons_in_every_model_regardless_of_membership():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = rng.integers(0, 3, 40)
    chal = np.array([0, 1, 2, 3])
    pop = draw_population(40, chal, 4, rng)
    rec = _Recorder()
    poison = make_poison_set(X, y, chal, np.array([1, 2, 0, 1]), 3)
    train_population(rec, X, y, pop, poison)
    for i, (Xi, yi) in enumerate(rec.sets):
        tail_X, tail_y = Xi[-4:], yi[-4:]
        assert np.array_equal(tail_X, poison[0]) and np.array_equal(tail_y, poison[1])
        n_clean = pop.base_sets[i].size + pop.masks[i].sum()
        assert Xi.shape[0] == n_clean + 4


def test_adaptive_counts_on_a_nearest_neighbour_learner():
    # 1-NN with majority over tied copies: one poison copy ties an OUT point's own label away
    # (OUT models only hold the poison at x) -> OUT confidence on y is 0 after one poison
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 2))
    y = rng.integers(0, 3, 60)
    chal = np.arange(6)
    counts, pop, shadows0 = adaptive_poison_counts(_Recorder(), X, y, chal, 3, n_shadow=4,
                                                   threshold=0.13, k_max=5, rng=rng)
    assert len(shadows0) == 4 and pop.masks.shape == (4, 6)
    # round 0: an OUT model answers with x's nearest other row. Points whose mean OUT
    # confidence exceeds t_p get one poison; at round 1 the poison copy sits exactly on x, so
    # OUT confidence is 0 and they freeze: counts = 1[round-0 OUT confidence > t_p]
    conf0 = true_label_confidence(shadows0, X[chal], y[chal])
    out = ~pop.masks
    expected = ((conf0 * out).sum(0) / out.sum(0) > 0.13).astype(int)
    assert np.array_equal(counts, expected) and 0 < expected.sum() < 6
    with pytest.raises(ValueError, match="threshold"):
        adaptive_poison_counts(_Recorder(), X, y, chal, 3, threshold=1.5, rng=rng)
    with pytest.raises(ValueError, match="even int"):
        adaptive_poison_counts(_Recorder(), X, y, chal, 3, n_shadow=3, rng=rng)


def test_scaled_logit_and_gaussian_kl():
    assert scaled_logit(np.array([0.5]))[0] == pytest.approx(0.0)
    assert np.isfinite(scaled_logit(np.array([0.0, 1.0, 1.2]))).all()
    mu1, s1, mu2, s2 = 0.3, 0.7, -0.4, 1.9
    ref = torch.distributions.kl_divergence(torch.distributions.Normal(mu1, s1),
                                            torch.distributions.Normal(mu2, s2))
    assert gaussian_kl(mu1, s1, mu2, s2) == pytest.approx(float(ref))


def test_shift_noise_augment():
    x = np.zeros(64)
    x[27] = 1.0  # (3, 3)
    a = shift_noise_augment(x, 50, np.random.default_rng(0), noise_sd=0.0)
    peaks = {int(np.argmax(r)) for r in a}
    assert peaks <= {r * 8 + c for r in (2, 3, 4) for c in (2, 3, 4)} and len(peaks) > 3
    assert a.min() >= 0 and a.max() <= 1
    with pytest.raises(ValueError, match="flattened 8x8"):
        shift_noise_augment(np.zeros(10), 2, np.random.default_rng(0))


def test_neighbourhood_keeps_queries_that_look_like_x():
    # shadows: IN models give p_y = 0.9 near x, OUT 0.3; far queries give 0.5 everywhere
    def shadow(p_near):
        def proba(Q):
            near = np.abs(Q[:, 0]) < 0.5
            p = np.where(near, p_near, 0.5)
            p = p + np.random.default_rng(int(p_near * 100)).normal(0, 1e-3, p.shape)
            return np.stack([p, 1 - p], 1)
        return proba

    shadows = [shadow(0.9), shadow(0.91), shadow(0.3), shadow(0.31)]
    mask = np.array([True, True, False, False])

    def augment(x, n, rng):
        out = np.zeros((n, 1))
        out[n // 2:, 0] = 5.0  # half near x, half far away
        return out

    kept, augs = membership_neighbourhood(shadows, mask, np.zeros(1), 0, augment,
                                          np.random.default_rng(0), n_aug=8, kl_threshold=0.75)
    assert set(kept) == {0, 1, 2, 3} and augs.shape == (8, 1)
    with pytest.raises(ValueError, match="both IN and OUT"):
        membership_neighbourhood(shadows, np.ones(4, bool), np.zeros(1), 0, augment,
                                 np.random.default_rng(0))


def test_scores():
    def labels_of(Q):
        return (Q[:, 0] > 0).astype(int)

    q = np.array([[1.0], [2.0], [-1.0], [3.0]])
    assert chameleon_score(labels_of, q, 1) == 0.75
    assert np.array_equal(gap_score(labels_of, q, np.array([1, 0, 0, 0])), [1, 0, 1, 0])
    assert np.allclose(augmentation_score(labels_of, [q, -q], np.array([1, 1])), [0.75, 0.25])
    with pytest.raises(ValueError, match="non-empty"):
        chameleon_score(labels_of, np.zeros((0, 1)), 1)


def test_low_fpr_tpr_withheld_below_ten_thousand_nonmembers():
    rng = np.random.default_rng(0)
    for n_neg, expect in ((9_999, None), (10_000, float)):
        s = np.concatenate([rng.normal(1, 1, 500), rng.normal(0, 1, n_neg)])
        m = np.concatenate([np.ones(500, bool), np.zeros(n_neg, bool)])
        out = membership_metrics(s, m)
        v = out["tpr_at_fpr"][0.001]
        assert v is None if expect is None else isinstance(v, float)
        assert out["tpr_at_fpr"][0.01] is not None
        assert 0.5 < out["auc"] < 1


def test_attack_validates_shadow_count():
    from iclr24.kits.small_classifiers import MLPTrainer

    X = np.zeros((20, 64))
    with pytest.raises(ValueError, match="n_shadow must be an even int"):
        ChameleonAttack(MLPTrainer(epochs=1), 10, n_shadow=5).fit(X, np.zeros(20, int),
                                                                  np.arange(3),
                                                                  np.random.default_rng(0))


def test_membership_metrics_rejects_one_class_and_bad_fprs():
    s = np.linspace(0, 1, 20)
    with pytest.raises(ValueError, match="is_member must contain both"):
        membership_metrics(s, np.ones(20, bool))  # no non-members: AUC would be NaN
    with pytest.raises(ValueError, match="is_member must contain both"):
        membership_metrics(s, np.zeros(20, bool))
    m = np.arange(20) % 2 == 0
    for bad in ((2.0,), (0.0,), (0.1, -0.01), (float("nan"),)):
        with pytest.raises(ValueError, match="fprs must be"):
            membership_metrics(s, m, fprs=bad)
    with pytest.raises(ValueError, match="scores contains NaN"):
        membership_metrics(np.r_[s[:-1], np.nan], m)
    assert membership_metrics(s, m, fprs=(0.5,))["tpr_at_fpr"][0.5] is None  # 10 < 10/0.5


def test_stage_one_rejects_nan_features_and_out_of_range_labels():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = rng.integers(0, 3, 30)
    chal = np.arange(4)
    Xnan = X.copy()
    Xnan[2, 1] = np.nan  # used to give counts [0, 0, 0, 0] silently
    with pytest.raises(ValueError, match="X contains NaN"):
        adaptive_poison_counts(_Recorder(), Xnan, y, chal, 3, n_shadow=2, k_max=2, rng=rng)
    with pytest.raises(ValueError, match="X contains NaN"):
        make_poison_set(Xnan, y, chal, np.ones(4, int), 3)
    ybig = y.copy()
    ybig[1] = 3  # label C: (3 + 1) mod 3 = 1 used to be poisoned silently
    with pytest.raises(ValueError, match=r"y must lie in \[0, num_classes=3\)"):
        adaptive_poison_counts(_Recorder(), X, ybig, chal, 3, n_shadow=2, k_max=2, rng=rng)
    with pytest.raises(ValueError, match=r"y must lie in \[0, num_classes=3\)"):
        make_poison_set(X, ybig, chal, np.ones(4, int), 3)
    with pytest.raises(ValueError, match="y must lie"):
        label_flip(np.array([-1, 0]), 3)
    with pytest.raises(TypeError, match="y must hold integer"):
        make_poison_set(X, y.astype(float), chal, np.ones(4, int), 3)
    with pytest.raises(ValueError, match="num_classes must be"):
        label_flip(np.array([0]), 1)
    with pytest.raises(ValueError, match=r"y must have shape \(30,\)"):
        adaptive_poison_counts(_Recorder(), X, y[:10], chal, 3, n_shadow=2, rng=rng)
    assert np.array_equal(label_flip(np.array([0, 1, 2]), 3), [1, 2, 0])


def test_attack_fit_rejects_nan_features():
    from iclr24.kits.small_classifiers import MLPTrainer

    X = np.full((20, 64), np.nan)
    with pytest.raises(ValueError, match="X contains NaN"):
        ChameleonAttack(MLPTrainer(epochs=1), 10, n_shadow=2).fit(
            X, np.zeros(20, int), np.arange(3), np.random.default_rng(0))
