"""Negative controls: every FedImpro claim's rule, evaluated on the metrics of a null or broken
method, does not give `holds`; plus the bad-input errors and the centralised reference."""

import pytest
import torch

from iclr24.claims import Estimate, Scale, seed_difference, seed_metric
from iclr24.kits.federated import TensorSplit, digits_split, iid_partition
from iclr24.papers.fedimpro import (
    FedImproClient,
    FedImproConfig,
    digits_mlp,
    simulate,
    train_centralised,
)
from iclr24.papers.fedimpro import claims as fedimpro_claims

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_label_skew_rule_on_fedimpro_without_its_synthetic_step():
    """Key step removed: the "milestone" schedule with T_w beyond the run gives the synthetic
    term weight 0, so FedImpro trains exactly like FedAvg; the paired difference over 3 seeds
    on the claim's task is 0 and the small rule refuses it."""
    rounds = 3
    null_cfg = FedImproConfig(epochs=2, weight_schedule="milestone", weight_max_rounds=10**6)
    fedavg, null = [], []
    for s in range(3):
        data, parts = fedimpro_claims._setup(s, fedimpro_claims._ALPHA)
        kw = {"seed": s, "clients_per_round": fedimpro_claims._PER_ROUND}
        fedavg.append(simulate("fedavg", data, parts, rounds, config=FedImproConfig(epochs=2),
                               **kw).last_mean("accuracy", 2))
        null.append(simulate("fedimpro", data, parts, rounds, config=null_cfg,
                             **kw).last_mean("accuracy", 2))
    assert null == pytest.approx(fedavg, abs=1e-9)
    claim_obj = fedimpro_claims.label_skew_accuracy
    metrics = {"diff_fedimpro_fedavg_a0p05": seed_difference(null, fedavg)}
    assert claim_obj.verdict(metrics, Scale.SMALL) == "fails"
    assert claim_obj.verdict(metrics, Scale.SMALL) != "holds"


def test_label_skew_rule_rejects_fedavg_passed_as_fedimpro():
    """Baseline passed as the method: a zero paired difference fails; the earlier audit's
    +0.0041 ± 0.0104 (an interval straddling 0) is inconclusive."""
    claim_obj = fedimpro_claims.label_skew_accuracy
    fedavg = [0.885, 0.786, 0.877, 0.861, 0.842]
    null = {"diff_fedimpro_fedavg_a0p05": seed_difference(fedavg, fedavg)}
    assert claim_obj.verdict(null, Scale.SMALL) == "fails"
    audit = {"diff_fedimpro_fedavg_a0p05": Estimate(0.0041, -0.0063, 0.0145, 3)}
    assert claim_obj.verdict(audit, Scale.SMALL) == "inconclusive"


def test_gradient_dissimilarity_rule_rejects_the_fedavg_run_passed_as_fedimpro():
    """Baseline passed as the method: the FedAvg-trained model's client gradients stand for both
    runs, so every per-seed ratio is exactly 1 and `ratio_mean < 1` fails; a ratio whose
    interval straddles 1 (the audit's 1.00 / 1.11 / 1.20 spread) is not `holds` either."""
    claim_obj = fedimpro_claims.gradient_dissimilarity
    d = [4.77, 3.91, 5.20]
    null = {"ratio_mean": seed_metric([a / a for a in d])}
    assert claim_obj.verdict(null, Scale.SMALL) == "fails"
    spread = {"ratio_mean": seed_metric([1.00, 1.11, 0.85])}
    assert claim_obj.verdict(spread, Scale.SMALL) == "inconclusive"


def test_privacy_rule_rejects_a_method_that_collapses_under_noise():
    """Broken method: shared statistics that noise destroys (accuracy to chance at s = 0.2)
    fail the rule; a drop whose interval reaches below -0.05 is not `holds`."""
    claim_obj = fedimpro_claims.privacy_noise
    clean = [0.86, 0.80, 0.88]
    broken = {"diff_noise0p2_noise0": seed_difference([0.10, 0.11, 0.09], clean)}
    assert claim_obj.verdict(broken, Scale.SMALL) == "fails"
    unsure = {"diff_noise0p2_noise0": seed_difference([0.84, 0.70, 0.86], clean)}
    assert claim_obj.verdict(unsure, Scale.SMALL) != "holds"


def test_centralised_reference_learns_digits_and_checks_epochs():
    data = digits_split(seed=0)
    assert train_centralised(data, 10, seed=0) > 0.9
    with pytest.raises(ValueError, match="epochs"):
        train_centralised(data, 0)


def test_bad_input_is_refused_at_the_boundary():
    data = digits_split(seed=0)
    y = data.y_train.clone()
    y[0] = 12
    with pytest.raises(ValueError, match=r"y_train must hold class ids in \[0, 10\)"):
        TensorSplit(data.x_train, y, data.x_test, data.y_test, 10)
    x_te = data.x_test.clone()
    x_te[3, 5] = float("nan")
    with pytest.raises(ValueError, match="x_test has NaN or inf"):
        TensorSplit(data.x_train, data.y_train, x_te, data.y_test, 10)
    net = digits_mlp(64, 8, 10)
    with pytest.raises(ValueError, match="class ids"):
        FedImproClient(net, data.x_train[:5], y[:5], num_classes=10, nominal_count=10.0)
    parts = iid_partition(data.x_train.shape[0], 3)
    parts[1] = torch.cat([torch.as_tensor(parts[1]), torch.as_tensor(parts[0][:1])]).numpy()
    with pytest.raises(ValueError, match="held by clients 0 and 1"):
        simulate("fedavg", data, parts, 1)


def test_bank_update_refuses_a_label_past_the_classes():
    from iclr24.papers.fedimpro import ClassGaussianBank

    bank = ClassGaussianBank(3, 4, 0.1, ema="official")
    with pytest.raises(ValueError, match=r"class ids in \[0, 3\)"):
        bank.update(torch.zeros(2, 4), torch.tensor([0, 3]))
