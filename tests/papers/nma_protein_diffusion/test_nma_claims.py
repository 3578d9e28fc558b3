"""Smoke runs of both claims, their negative controls, the denoiser, determinism."""

import copy
import math

import pytest
import torch

from iclr24.claims import HOLDS, Measurement, Scale
from iclr24.papers.nma_protein_diffusion import CalphaDenoiser, v_loss
from iclr24.papers.nma_protein_diffusion.claims import (
    _replicates,
    dynamics_guidance,
    dynamics_metrics,
    plausibility_kept,
    plausibility_metrics,
)

RULE_METRICS = {"dynamics_guidance": {"ldyn_ratio", "ldyn_uncond", "ldyn_guided",
                                      "overlap_guided"},
                "plausibility_kept": {"bond_dev_ratio", "clash_excess", "bond_dev_guided"}}


@pytest.fixture(scope="module")
def smoke_results():
    from iclr24.kits.threads import torch_threads

    with torch_threads(1):
        return _replicates(Scale.SMOKE, 0, None)[1]


@pytest.mark.parametrize("claim_obj", [dynamics_guidance, plausibility_kept],
                         ids=lambda c: c.name)
def test_smoke_claim_runs(claim_obj, smoke_results, one_torch_thread):
    m = claim_obj(Scale.SMOKE, 0)
    assert isinstance(m, Measurement)
    assert RULE_METRICS[claim_obj.name] <= set(m.metrics)
    assert all(math.isfinite(getattr(v, "value", v)) for v in m.metrics.values())
    assert claim_obj.verdict(m.metrics, Scale.SMOKE) in ("holds", "fails", "inconclusive")
    assert claim_obj.verdict(m.metrics, Scale.SMALL) in ("holds", "fails", "inconclusive")
    assert m.figure is not None and m.tables["samples"]


def test_smoke_is_deterministic(smoke_results, one_torch_thread):
    again = _replicates(Scale.SMOKE, 0, None)[1]
    assert dynamics_metrics(again) == dynamics_metrics(smoke_results)


def _as_null(results):
    """The baseline passed as the method: the guided arm replaced by the unconditional one."""
    null = copy.deepcopy(results)
    for r in null:
        r["guided"] = copy.deepcopy(r["uncond"])
    return null


def test_dynamics_negative_control(smoke_results):
    m = dynamics_metrics(_as_null(smoke_results))
    assert m["ldyn_ratio"] == pytest.approx(1.0)
    assert dynamics_guidance.verdict(m, Scale.SMOKE) != HOLDS
    # and with three replicates, as at small
    m3 = dynamics_metrics(_as_null(smoke_results * 3))
    assert dynamics_guidance.verdict(m3, Scale.SMALL) != HOLDS


def test_plausibility_negative_control(smoke_results):
    broken = copy.deepcopy(smoke_results)
    for r in broken:  # a method that wrecks the chain: bonds 3x off, clashes 3x as many + 0.05
        r["guided"]["bond_dev"] = 3 * r["uncond"]["bond_dev"]
        r["guided"]["clash"] = 3 * r["uncond"]["clash"] + 0.05
    m = plausibility_metrics(broken * 3)
    assert plausibility_kept.verdict(m, Scale.SMALL) != HOLDS
    m1 = plausibility_metrics(broken)
    assert plausibility_kept.verdict(m1, Scale.SMOKE) != HOLDS


def test_denoiser_preconditioning_and_loss():
    abar = torch.linspace(0.99, 0.01, 10)
    model = CalphaDenoiser(abar, 24, hidden=16, layers=1, heads=2)
    torch.nn.init.zeros_(model.head[1].weight)
    torch.nn.init.zeros_(model.head[1].bias)
    x = torch.randn(2, 24, 3)
    x = x - x.mean(1, keepdim=True)
    t = torch.tensor([0, 7])
    out = model(x, t)  # F = 0: x0_hat = sqrt(abar_t) x_t
    assert torch.allclose(out, abar[t].sqrt()[:, None, None] * x, atol=1e-6)
    g = torch.Generator().manual_seed(0)
    loss = v_loss(model, x, generator=g)
    g = torch.Generator().manual_seed(0)
    tt = torch.randint(0, 10, (2,), generator=g)
    from iclr24.kits.diffusion import com_free_noise

    noise = com_free_noise((2, 24, 3), g)
    ab = abar[tt][:, None, None]
    xt = ab.sqrt() * x + (1 - ab).sqrt() * noise
    expect = ((ab.sqrt() * xt - x) ** 2 / (1 - ab)).mean()
    assert float(loss.detach()) == pytest.approx(float(expect.detach()), rel=1e-5)
    with pytest.raises(ValueError, match=r"x must have shape \(B, 24, 3\)"):
        model(torch.zeros(2, 20, 3), t)
    with pytest.raises(ValueError, match="t must lie in"):
        model(x, torch.tensor([0, 10]))
    with pytest.raises(ValueError, match="abar"):
        CalphaDenoiser(torch.tensor([1.0]), 24)
