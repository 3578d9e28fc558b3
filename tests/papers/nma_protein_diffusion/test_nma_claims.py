"""Smoke runs of both claims, their negative controls, the denoiser, determinism."""

import copy
import math

import numpy as np
import pytest
import torch

from iclr24.claims import FAILS, HOLDS, INCONCLUSIVE, Measurement, Scale
from iclr24.papers.nma_protein_diffusion import CalphaDenoiser, v_loss
from iclr24.papers.nma_protein_diffusion.claims import (
    _replicates,
    dynamics_guidance,
    dynamics_metrics,
    plausibility_kept,
    plausibility_metrics,
)

RULE_METRICS = {"dynamics_guidance": {"ldyn_ratio", "ldyn_uncond", "ldyn_guided",
                                      "overlap_guided", "rigid_uncond", "rigid_guided",
                                      "guidance_applied", "bond_dev_ratio_pooled"},
                "plausibility_kept": {"bond_dev_ratio", "clash_excess", "bond_dev_guided",
                                      "guidance_applied"}}
GUARD_METRICS = {"dynamics_guidance": ("rigid_uncond", "rigid_guided", "guidance_applied",
                                       "bond_dev_ratio_pooled", "attempted_steps"),
                 "plausibility_kept": ("bond_dev_ratio", "clash_excess", "guidance_applied")}


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
    # L_dyn is read on rigid structures only (NaN where an arm has none); the guard's
    # numbers are always measured
    for key in GUARD_METRICS[claim_obj.name]:
        assert math.isfinite(m.metrics[key]), key
    assert 0 <= m.metrics["guidance_applied"] <= 1
    assert claim_obj.verdict(m.metrics, Scale.SMOKE) in ("holds", "fails", "inconclusive")
    assert claim_obj.verdict(m.metrics, Scale.SMALL) in ("holds", "fails", "inconclusive")
    assert m.figure is not None and m.tables["samples"]


def test_smoke_is_deterministic(smoke_results, one_torch_thread):
    again = _replicates(Scale.SMOKE, 0, None)[1]
    # repr: NaN (an arm without a rigid structure) equals itself
    assert {k: repr(v) for k, v in dynamics_metrics(again).items()} == \
        {k: repr(v) for k, v in dynamics_metrics(smoke_results).items()}


def _as_null(results):
    """The guidance-off null (gs = 0, which samples exactly the unconditional chains:
    test_sampler_unguided_equals_kit_and_guided_differs) in the method's place: the guided arm
    replaced by the unconditional one, nothing attempted."""
    null = copy.deepcopy(results)
    for r in null:
        r["guided"] = copy.deepcopy(r["uncond"])
        r["skipped"] = r["attempted"] = 0
    return null


def test_dynamics_negative_control(smoke_results):
    m = dynamics_metrics(_as_null(smoke_results))
    assert math.isnan(m["guidance_applied"])
    assert dynamics_guidance.verdict(m, Scale.SMOKE) != HOLDS
    # and with three replicates, as at small
    m3 = dynamics_metrics(_as_null(smoke_results * 3))
    assert dynamics_guidance.verdict(m3, Scale.SMALL) != HOLDS
    # the smoke run itself: its guarded numbers are what the control reads
    m = dynamics_metrics(smoke_results)
    assert m["attempted_steps"] > 0 and m["skipped_steps"] <= m["attempted_steps"]


def _result(rng, ldyn_u=1.0, ldyn_g=0.3, rigid_g=1.0, bond_u=2.0, bond_g=2.0, clash_u=0.01,
            clash_g=0.01, applied=0.9, n=16):
    """One target's per-sample metrics around the given levels (rigid_g: share of rigid guided
    samples; the non-rigid ones get a tiny, meaningless L_dyn)."""
    def arm(ldyn, rigid, bond, clash):
        r = np.arange(n) < round(rigid * n)
        return {"ldyn": np.where(r, ldyn + rng.normal(0, 0.02, n), 0.01),
                "overlap": rng.uniform(0, 1, n), "rmsd": rng.uniform(1, 2, n),
                "rigid": r.astype(float), "bond_dev": bond + rng.normal(0, 0.02, n),
                "clash": np.full(n, clash)}
    return {"uncond": arm(ldyn_u, 1.0, bond_u, clash_u),
            "guided": arm(ldyn_g, rigid_g, bond_g, clash_g),
            "attempted": 100 * n, "skipped": round((1 - applied) * 100 * n)}


def test_dynamics_rule_and_validity_guard():
    rng = np.random.default_rng(0)

    def judge(**kw):
        return dynamics_guidance.verdict(dynamics_metrics([_result(rng, **kw)
                                                           for _ in range(3)]), Scale.SMALL)

    assert judge() == HOLDS
    assert judge(ldyn_g=0.95) == FAILS
    # the audit's smoke case: no guided structure rigid (their L_dyn meaningless, here tiny)
    assert judge(rigid_g=0.0) == INCONCLUSIVE
    assert judge(rigid_g=0.5) == INCONCLUSIVE
    assert judge(applied=0.1) == INCONCLUSIVE  # 90% of the guided steps skipped
    assert judge(bond_g=6.5) == INCONCLUSIVE  # L_dyn lowered by breaking the chain


def test_plausibility_rule_and_guard():
    rng = np.random.default_rng(1)

    def judge(**kw):
        return plausibility_kept.verdict(plausibility_metrics([_result(rng, **kw)
                                                               for _ in range(3)]), Scale.SMALL)

    assert judge() == HOLDS
    assert judge(bond_g=6.5, clash_g=0.05) == FAILS
    assert judge(applied=0.1) == INCONCLUSIVE  # a skipped guidance keeps plausibility trivially


def test_plausibility_negative_control(smoke_results):
    null = plausibility_metrics(_as_null(smoke_results * 3))  # guidance off: not judged
    assert plausibility_kept.verdict(null, Scale.SMALL) != HOLDS
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
