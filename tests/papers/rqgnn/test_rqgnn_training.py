"""fit_gad / evaluate_gad: the two checkpoints, the paper's reporting protocol, determinism, the
logistic-regression arm, errors."""

import math
import textwrap

import numpy as np
import pytest
import torch

import iclr24.papers.rqgnn as rqgnn_package
from iclr24.kits.graphs import evaluate_graph_classifier, stratified_split
from iclr24.papers.rqgnn import (
    RQGNN,
    evaluate_gad,
    fit_gad,
    make_spectral_energy_gad,
    make_spectral_gad,
    permute_node_features,
)
from iclr24.papers.rqgnn.arms import ARMS, ArmConfig, _build, run_arm


@pytest.fixture(scope="module")
def splits():
    graphs = make_spectral_gad(90, anomaly_rate=0.2, n_range=(8, 12), num_types=4, seed=1)
    y = np.array([int(g.y) for g in graphs])
    return [[graphs[i] for i in idx] for idx in stratified_split(y, seed=1)]


def _fit(splits, seed=0):
    torch.manual_seed(seed)
    model = RQGNN(4, hidden=8, width=2, cheb_k=2)
    fit = fit_gad(model, splits[0], splits[1], epochs=4, seed=seed, batch_size=16)
    return model, fit


def test_two_checkpoints_follow_the_validation_history(splits, one_torch_thread):
    model, fit = _fit(splits)
    assert set(fit.best_states) == {"auc", "macro_f1"} and len(fit.history) == 4
    for key in ("auc", "macro_f1"):
        vals = [h[f"val_{key}"] for h in fit.history]
        assert fit.best_values[key] == max(vals)
        assert fit.best_epochs[key] == int(np.argmax(vals))  # first maximum
    # the model ends in the best-AUC state
    for name, value in model.state_dict().items():
        torch.testing.assert_close(value, fit.best_states["auc"][name])
    assert fit.best_values["auc"] == pytest.approx(
        evaluate_graph_classifier(model, splits[1])["auc"])


def test_evaluate_gad_reads_auc_and_f1_from_their_checkpoints(splits, one_torch_thread):
    model, fit = _fit(splits)
    out = evaluate_gad(model, splits[2], fit=fit)
    model.load_state_dict(fit.best_states["macro_f1"])
    f1 = evaluate_gad(model, splits[2])["macro_f1"]
    model.load_state_dict(fit.best_states["auc"])
    plain = evaluate_gad(model, splits[2])
    assert out == {"auc": plain["auc"], "macro_f1": f1}
    assert all(math.isfinite(v) for v in out.values())


def test_same_seed_same_result(splits, one_torch_thread):
    _, a = _fit(splits, seed=3)
    _, b = _fit(splits, seed=3)
    assert a.history == b.history


def test_logistic_regression_arm_uses_the_rayleigh_quotient(one_torch_thread):
    graphs = make_spectral_gad(200, anomaly_rate=0.3, n_range=(10, 14), num_types=4,
                               shuffle_frac=1.0, seed=2)
    y = np.array([int(g.y) for g in graphs])
    tr, va, te = ([graphs[i] for i in idx] for idx in stratified_split(y, seed=2))
    out = run_arm("logreg_rq", tr, va, te, config=ArmConfig(), seed=0)
    assert out["auc"] > 0.9  # fully shuffled types: r_G alone separates the classes
    with pytest.raises(ValueError, match="arm"):
        run_arm("bernnet", tr, va, te, config=ArmConfig(), seed=0)


def test_errors(splits):
    normal = [g for g in splits[0] if int(g.y) == 0]
    with pytest.raises(ValueError, match="both classes"):
        fit_gad(RQGNN(4, hidden=8, cheb_k=2), normal, splits[1], epochs=1, seed=0)
    with pytest.raises(ValueError, match="train"):
        fit_gad(RQGNN(4, hidden=8, cheb_k=2), [], splits[1], epochs=1, seed=0)
    with pytest.raises(ValueError, match="FitResult"):
        evaluate_gad(RQGNN(4, hidden=8, cheb_k=2), splits[2], fit=object())
    with pytest.raises(ValueError, match="graphs"):
        evaluate_gad(RQGNN(4, hidden=8, cheb_k=2), [])
    # a last training batch of one graph would crash inside BatchNorm1d
    train = splits[0]
    size = len(train) - 1
    with pytest.raises(ValueError, match=f"batch_size={size} leaves a training batch of 1"):
        fit_gad(RQGNN(4, hidden=8, cheb_k=2), train, splits[1], epochs=1, seed=0,
                batch_size=size)
    fit_gad(RQGNN(4, hidden=8, cheb_k=2, batch_norm=False), train, splits[1], epochs=1, seed=0,
            batch_size=size)  # no BatchNorm: a single-graph batch is fine


def test_package_docstring_example_runs(one_torch_thread):
    """The usage example of the package docstring, executed as written."""
    doc = rqgnn_package.__doc__
    code = textwrap.dedent(doc[doc.index("Usage"):].split("::", 1)[1])
    namespace: dict = {}
    exec(compile(code, "iclr24.papers.rqgnn.__doc__", "exec"), namespace)  # noqa: S102 (ours)
    assert set(namespace["scores"]) == {"auc", "macro_f1"}
    assert all(math.isfinite(v) for v in namespace["scores"].values())


def test_ablation_and_null_arms(one_torch_thread):
    assert set(ARMS) == {"rqgnn", "gin", "gcn", "chebnet", "rqgnn_norq", "rqgnn_permuted",
                         "logreg_rq"}
    norq = _build("rqgnn_norq", 4, ArmConfig(hidden=8, cheb_k=2))
    assert isinstance(norq, RQGNN) and not norq.use_rql and norq.pooling == "mean"
    full = _build("rqgnn_permuted", 4, ArmConfig(hidden=8, cheb_k=2))
    assert full.use_rql and full.pooling == "rq"
    # the positive control reads r_G: strong on the test bed, chance on permuted features
    graphs = make_spectral_energy_gad(300, anomaly_rate=0.3, smoothing=(2.0, 1.0),
                                      seed=3)
    y = np.array([int(g.y) for g in graphs])
    tr, va, te = ([graphs[i] for i in idx] for idx in stratified_split(y, seed=3))
    assert run_arm("logreg_rq", tr, va, te, config=ArmConfig(), seed=0)["auc"] > 0.9
    perm = [permute_node_features(part, seed=k) for k, part in enumerate((tr, va, te))]
    assert run_arm("logreg_rq", *perm, config=ArmConfig(), seed=0)["auc"] < 0.7
