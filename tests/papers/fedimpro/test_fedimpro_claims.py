"""FedImpro claims at smoke: each runs in budget with its arms, and its null arm measured in the
same run (FedImpro whose server never updates its bank: no sharing) put in the method's place
does not give `holds`."""

import pytest

from iclr24.claims import HOLDS, Scale
from iclr24.papers.fedimpro import claims as fedimpro_claims

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_label_skew_smoke_and_no_sharing_null(check_smoke_claim):
    claim_obj = fedimpro_claims.label_skew_accuracy
    m = check_smoke_claim(claim_obj, [
        "diff_fedimpro_fedavg_a0p05", "diff_fedimpro_noshare_a0p05", "diff_exact_noshare_a0p05",
        "diff_noshare_fedavg_a0p05", "gap_centralised_fedavg", "acc_fedavg_a0p05",
        "acc_fedimpro_a0p05", "acc_noshare_a0p05", "acc_exact_a0p05", "acc_centralised"])
    assert m.tables["accuracy_by_alpha"] and m.figure is not None
    # the arms differ: sharing changes what the clients train on
    assert m.metrics["acc_fedimpro_a0p05"] != m.metrics["acc_noshare_a0p05"]
    null = {**m.metrics, "diff_fedimpro_fedavg_a0p05": m.metrics["diff_noshare_fedavg_a0p05"],
            "diff_fedimpro_noshare_a0p05": 0.0}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert claim_obj.verdict(null, scale) != HOLDS


def test_drift_smoke_and_no_sharing_null(check_smoke_claim):
    claim_obj = fedimpro_claims.gradient_dissimilarity
    m = check_smoke_claim(claim_obj, [
        "drift_ratio", "drift_ratio_vs_noshare", "drift_ratio_noshare", "skew_drift_ratio",
        "normalised_ratio", "drift_fedavg_r3", "drift_noshare_r6", "drift_fedavg_iid_r6"])
    assert [r["round"] for r in m.tables["drift_by_round"]] == [3, 6]
    assert all(m.metrics[k] > 0 for k in ("drift_ratio", "drift_ratio_vs_noshare",
                                          "skew_drift_ratio"))
    null = {**m.metrics, "drift_ratio": m.metrics["drift_ratio_noshare"],
            "drift_ratio_vs_noshare": 1.0}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert claim_obj.verdict(null, scale) != HOLDS


def test_privacy_smoke_and_no_sharing_null(check_smoke_claim):
    claim_obj = fedimpro_claims.privacy_noise
    m = check_smoke_claim(claim_obj, [
        "diff_noise0p2_noise0", "diff_noise0p05_noise0", "diff_noise0p2_noshare",
        "diff_noise0_noshare", "acc_noshare", "acc_noise0", "acc_noise0p2"])
    assert "acc_fedavg" not in m.metrics  # FedAvg only at small
    # statistics that do not matter: every FedImpro arm replaced by the no-sharing arm
    null = {**m.metrics, "diff_noise0p2_noise0": 0.0, "diff_noise0p2_noshare": 0.0,
            "diff_noise0_noshare": 0.0}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert claim_obj.verdict(null, scale) != HOLDS
