"""Smoke runs of the CALM claims and their negative controls."""

import pytest

from iclr24.claims import Estimate, Scale
from iclr24.papers.calm.claims import (
    anchor_preserved,
    kv_arithmetic_composition,
    smollm2_kv_composition,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_kv_arithmetic_composition_smoke(check_smoke_claim):
    m = check_smoke_claim(kv_arithmetic_composition,
                          ["calm_kv_arith", "lora_kv_arith", "calm_random_aug_kv_arith",
                           "m_A_kv_arith", "m_B_kv_arith", "gain_vs_lora", "gain_vs_random_aug"])
    assert {r["arm"] for r in m.tables["per_arm"]} == {"m_A", "m_B", "lora", "calm",
                                                         "calm_random_aug"}
    assert abs(m.metrics["lora_trainable_params"] - m.metrics["calm_trainable_params"]) \
        <= 0.5 * m.metrics["calm_trainable_params"]


def test_kv_arithmetic_composition_negative_control():
    """The LoRA baseline passed as the method: zero gains, not 'holds'."""
    lora = [0.08, 0.05, 0.1]
    null = {"calm_kv_arith": Estimate.mean_of(lora),
            "gain_vs_lora": Estimate.difference(lora, lora, paired=True),
            "gain_vs_random_aug": Estimate.difference(lora, [0.07, 0.06, 0.09], paired=True),
            "gain_vs_anchor": Estimate.difference(lora, [0.0, 0.0, 0.0], paired=True)}
    assert kv_arithmetic_composition.verdict(null, Scale.SMALL) == "fails"
    # a method that beats the baselines but stays far below the 50% bar does not hold either
    weak = dict(null, calm_kv_arith=0.2, gain_vs_lora=0.1)
    assert kv_arithmetic_composition.verdict(weak, Scale.SMALL) != "holds"


def test_anchor_preserved_smoke(check_smoke_claim):
    m = check_smoke_claim(anchor_preserved, ["arith_drop", "m_B_arith", "calm_arith"])
    assert m.metrics["arith_drop"] == pytest.approx(m.metrics["m_B_arith"]
                                                    - m.metrics["calm_arith"])


def test_anchor_preserved_negative_control():
    """A composition that overwrites the anchor (CALM at ~0 arithmetic) does not hold."""
    anchor, broken = [0.97, 0.97, 0.97], [0.2, 0.05, 0.1]
    null = {"arith_drop": Estimate.difference(anchor, broken, paired=True)}
    assert anchor_preserved.verdict(null, Scale.SMALL) == "fails"


def test_smollm2_kv_composition_smoke(check_smoke_claim):
    m = check_smoke_claim(smollm2_kv_composition, ["anchor_heldout_acc", "calm_heldout_acc",
                                                   "calm_random_aug_heldout_acc"])
    assert "untrained 2-layer Llama" in m.notes


def test_smollm2_kv_composition_negative_control():
    """The anchor alone passed as CALM: zero gain, not 'holds'."""
    assert smollm2_kv_composition.verdict({"gain_vs_anchor": 0.0, "gain_vs_random_aug": 0.0},
                                          Scale.SMALL) == "fails"
    straddle = {"gain_vs_anchor": Estimate(0.05, -0.02, 0.12, 200, 0.95, "bootstrap"),
                "gain_vs_random_aug": 0.05}
    assert smollm2_kv_composition.verdict(straddle, Scale.SMALL) != "holds"
