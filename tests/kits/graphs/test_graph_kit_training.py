import numpy as np
import pytest
import torch
from sklearn.metrics import f1_score, roc_auc_score

from iclr24.kits.graphs import (
    GraphClassifier,
    classification_metrics,
    evaluate_graph_classifier,
    fit_graph_classifier,
    random_tree,
    stratified_split,
    to_pyg,
)


def _dataset(n_graphs=60, seed=0):
    """Label = whether the tree has more than 9 nodes: sum pooling of ones solves it."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 15, size=n_graphs)
    return [to_pyg(random_tree(int(s), seed=i), y=int(s > 9)) for i, s in enumerate(sizes)]


def _fit(seed, epochs=4, **kw):
    torch.manual_seed(seed)
    data = _dataset()
    model = GraphClassifier("gin", 1, 8, 2, num_layers=2)
    res = fit_graph_classifier(model, data[:40], data[40:], epochs=epochs, seed=seed,
                               lr=1e-2, batch_size=8, **kw)
    return model, res, data


def test_same_seed_same_numbers(one_torch_thread):
    _, a, _ = _fit(0)
    _, b, _ = _fit(0)
    _, c, _ = _fit(1)
    assert [h["loss"] for h in a.history] == [h["loss"] for h in b.history]
    assert [h["loss"] for h in a.history] != [h["loss"] for h in c.history]
    assert a.seconds_per_batch > 0


def test_best_checkpoint_per_metric_is_loaded(one_torch_thread):
    model, res, data = _fit(0, epochs=6, select_on=("auc", "accuracy"))
    for m in ("auc", "accuracy"):
        vals = [h[f"val_{m}"] for h in res.history]
        assert res.best_epochs[m] == int(np.argmax(vals))  # first maximum
        assert res.best_values[m] == max(vals)
    # the model holds the state selected on the first metric
    assert evaluate_graph_classifier(model, data[40:])["auc"] == res.best_values["auc"]
    for k, v in model.state_dict().items():
        assert torch.equal(v, res.best_states["auc"][k])


def test_custom_loss_and_forward_are_used(one_torch_thread):
    calls = {"loss": 0, "forward": 0}

    def loss_fn(logits, y):
        calls["loss"] += 1
        return torch.nn.functional.cross_entropy(logits, y)

    def forward(model, batch):
        calls["forward"] += 1
        return model(batch)

    _fit(0, epochs=1, loss_fn=loss_fn, forward=forward)
    assert calls["loss"] == 5 and calls["forward"] >= 5 + 1  # 40/8 steps + a validation pass


def test_stratified_split_keeps_class_proportions():
    y = np.array([0] * 90 + [1] * 10)
    tr, va, te = stratified_split(y, seed=0)
    assert len(set(tr) | set(va) | set(te)) == 100 and not set(tr) & set(va)
    assert (y[tr] == 1).sum() == 7 and (y[va] == 1).sum() == 1 and (y[te] == 1).sum() == 2
    assert (y[tr] == 0).sum() == 63 and (y[va] == 0).sum() == 13 and (y[te] == 0).sum() == 14
    small = stratified_split(np.array([0, 0, 0, 1, 1, 1]), seed=0)
    assert all(set(np.array([0, 0, 0, 1, 1, 1])[p]) == {0, 1} for p in small)
    tr2, _, _ = stratified_split(y, seed=0)
    assert (tr == tr2).all()
    with pytest.raises(ValueError, match="fractions"):
        stratified_split(y, (0.5, 0.5, 0.5), seed=0)
    with pytest.raises(ValueError, match="non-empty"):
        stratified_split([], seed=0)


def test_metrics_match_sklearn():
    rng = np.random.default_rng(0)
    logits = torch.tensor(rng.normal(size=(50, 2)))
    y = torch.tensor(rng.integers(0, 2, size=50))
    m = classification_metrics(logits, y)
    prob1 = torch.softmax(logits, 1)[:, 1].numpy()
    assert np.isclose(m["auc"], roc_auc_score(y.numpy(), prob1))
    assert np.isclose(m["macro_f1"], f1_score(y.numpy(), logits.argmax(1).numpy(), average="macro"))
    three = classification_metrics(torch.tensor(rng.normal(size=(60, 3))),
                                   torch.tensor(np.arange(60) % 3))
    assert 0 <= three["auc"] <= 1
    assert np.isnan(classification_metrics(logits, torch.zeros(50, dtype=torch.long))["auc"])
    with pytest.raises(ValueError, match="shape"):
        classification_metrics(logits, y[:3])


def test_fit_rejects_bad_arguments():
    model = GraphClassifier("gcn", 1, 4, 2)
    data = _dataset(10)
    with pytest.raises(ValueError, match="epochs"):
        fit_graph_classifier(model, data, data, epochs=0, seed=0)
    with pytest.raises(ValueError, match="select_on"):
        fit_graph_classifier(model, data, data, epochs=1, seed=0, select_on=("loss",))
    with pytest.raises(ValueError, match="non-empty"):
        fit_graph_classifier(model, [], data, epochs=1, seed=0)
