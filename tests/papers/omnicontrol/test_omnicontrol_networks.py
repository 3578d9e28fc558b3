"""MDM-like denoiser, realism branch, ControlledMDM: zero-init equality, frozen base, CFG
dropping, training with and without the training-time guidance, sampling."""

import pytest
import torch

from iclr24.kits.diffusion import GaussianDiffusion
from iclr24.papers.omnicontrol import (
    ControlledMDM,
    GlobalStatistics,
    MotionDenoiser,
    MotionRepresentation,
    RealismBranch,
    SpatialGuidance,
    branch_input,
    generate_motions,
    random_hints,
    sample_motions,
    train_denoiser,
    train_realism_branch,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def data():
    m = generate_motions(12, 0, n_frames=16)
    rep = MotionRepresentation(6).with_statistics(m.features)
    return m, rep, GlobalStatistics.of(m.positions)


def _models(seed=0):
    torch.manual_seed(seed)
    base = MotionDenoiser(19, 6, d_model=32, n_layers=2, ff_size=64).eval()
    return base, ControlledMDM(base, RealismBranch(base, 18)).eval()


def test_zero_init_controlled_equals_base(data):
    """The issue's check: at step 0 the zero-initialised layers make ControlledMDM equal the
    base, whatever the hint; the branch starts as a copy of the base's weights."""
    m, _rep, stats = data
    base, ctrl = _models()
    x = torch.randn(12, 16, 19)
    t = torch.randint(0, 50, (12,))
    hint, mask = random_hints(m.positions, torch.Generator().manual_seed(0), n_keyframes=3)
    h, frames = branch_input(hint, mask, stats)
    with torch.no_grad():
        ref = base(x, t, m.labels)
        assert torch.equal(ctrl(x, t, m.labels, h, frames), ref)
        assert torch.equal(ctrl(x, t, m.labels), ref)
        assert torch.equal(ctrl(x, t, m.labels, h, frames, uncond=True),
                           base(x, t, m.labels, uncond=True))
    for (name, p), (_, q) in zip(base.layers.named_parameters(),
                                 ctrl.branch.layers.named_parameters()):
        assert torch.equal(p, q), name


def test_uncond_ignores_the_label():
    base, _ = _models()
    x, t = torch.randn(3, 8, 19), torch.tensor([1, 2, 3])
    with torch.no_grad():
        a = base(x, t, torch.tensor([0, 1, 2]), uncond=True)
        b = base(x, t, torch.tensor([5, 4, 3]), uncond=True)
        c = base(x, t, torch.tensor([5, 4, 3]))
    assert torch.equal(a, b) and not torch.allclose(a, c)


@pytest.mark.parametrize("guide_inputs", [True, False])
def test_branch_training_moves_only_the_branch(data, guide_inputs):
    m, rep, stats = data
    base, ctrl = _models()
    frozen = {k: v.clone() for k, v in base.state_dict().items()}
    diff = GaussianDiffusion("cosine", 20, predict="x0")
    losses = train_realism_branch(ctrl, diff, rep.normalise(m.features), m.labels, m.positions,
                                  stats, SpatialGuidance(rep), steps=3, batch=4,
                                  guide_inputs=guide_inputs,
                                  generator=torch.Generator().manual_seed(0))
    assert len(losses) == 3 and all(torch.isfinite(torch.tensor(losses)))
    assert all(torch.equal(frozen[k], v) for k, v in base.state_dict().items())
    assert not all(ctrl.branch.zero_layers[0].weight.eq(0).flatten())
    x, t = torch.randn(2, 16, 19), torch.tensor([3, 7])
    hint, mask = random_hints(m.positions[:2], torch.Generator().manual_seed(1), n_keyframes=4)
    h, frames = branch_input(hint, mask, stats)
    with torch.no_grad():
        assert not torch.allclose(ctrl(x, t, m.labels[:2], h, frames), base(x, t, m.labels[:2]))
    ctrl.train()
    assert ctrl.branch.training and not ctrl.base.training


def test_training_guidance_changes_the_inputs(data, monkeypatch):
    """guide_inputs=True guides x_t before the model sees it; False does not call it."""
    m, rep, stats = data
    _, ctrl = _models()
    guide = SpatialGuidance(rep)
    calls = []
    real = guide.guide_training_input
    monkeypatch.setattr(guide, "guide_training_input", lambda *a, **k: calls.append(k) or
                        real(*a, **k))
    diff = GaussianDiffusion("cosine", 100, predict="x0")
    for flag in (False, True):
        train_realism_branch(ctrl, diff, rep.normalise(m.features), m.labels, m.positions,
                             stats, guide, steps=1, batch=2, guide_inputs=flag,
                             generator=torch.Generator().manual_seed(0))
    assert len(calls) == 1 and calls[0]["t_switch"] == 2       # 20 of 1000 -> 2 of 100


def test_branch_positions_change_only_the_branch_hint(data, monkeypatch):
    """Default branch_positions = positions (identical training); other positions reach the
    branch's input at the same keyframes while the x_t guidance keeps the true hint."""
    from iclr24.papers.omnicontrol import training

    m, rep, stats = data
    diff = GaussianDiffusion("cosine", 20, predict="x0")
    x0 = rep.normalise(m.features)
    runs = []
    for kwargs in ({}, {"branch_positions": m.positions}):
        _, ctrl = _models()
        losses = train_realism_branch(ctrl, diff, x0, m.labels, m.positions, stats,
                                      SpatialGuidance(rep), steps=3, batch=4,
                                      generator=torch.Generator().manual_seed(0), **kwargs)
        runs.append((losses, ctrl.branch.state_dict()))
    assert runs[0][0] == runs[1][0]
    assert all(torch.equal(v, runs[1][1][k]) for k, v in runs[0][1].items())

    seen, guided = [], []
    real_input = training.branch_input
    monkeypatch.setattr(training, "branch_input",
                        lambda h, msk, st: seen.append((h, msk)) or real_input(h, msk, st))
    guide = SpatialGuidance(rep)
    real_guide = guide.guide_training_input
    monkeypatch.setattr(guide, "guide_training_input",
                        lambda *a, **k: guided.append(a[3]) or real_guide(*a, **k))
    _, ctrl = _models()
    train_realism_branch(ctrl, diff, x0, m.labels, m.positions, stats, guide, steps=2, batch=4,
                         branch_positions=m.positions + 100.0,
                         generator=torch.Generator().manual_seed(0))
    for (h, msk), true in zip(seen, guided):
        assert torch.allclose(h[msk], true[msk] + 100.0) and torch.all(h[~msk] == 0)
    with pytest.raises(ValueError, match="branch_positions must be a tensor shaped like"):
        train_realism_branch(ctrl, diff, x0, m.labels, m.positions, stats, guide, steps=1,
                             batch=2, branch_positions=m.positions[:3],
                             generator=torch.Generator().manual_seed(0))


def test_base_training_lowers_the_loss(data):
    m, rep, _ = data
    torch.manual_seed(0)
    base = MotionDenoiser(19, 6, d_model=32, n_layers=2, ff_size=64)
    diff = GaussianDiffusion("cosine", 20, predict="x0")
    losses = train_denoiser(base, diff, rep.normalise(m.features), m.labels, steps=40, batch=8,
                            lr=2e-3, generator=torch.Generator().manual_seed(0))
    assert sum(losses[-10:]) < sum(losses[:10])
    assert not base.training
    ControlledMDM(base, RealismBranch(base, 18))
    with pytest.raises(ValueError, match="no trainable parameter"):
        train_denoiser(base, diff, rep.normalise(m.features), m.labels, steps=1,
                       generator=torch.Generator())


def test_sampling_is_deterministic_and_validates_hints(data):
    m, rep, stats = data
    base, ctrl = _models()
    diff = GaussianDiffusion("cosine", 5, predict="x0")
    hint, mask = random_hints(m.positions, torch.Generator().manual_seed(0), n_keyframes=2)
    guide = SpatialGuidance(rep, k_late=5, t_switch=1)
    kw = {"guidance": guide, "hint": hint, "mask": mask, "stats": stats, "cfg_scale": 2.5}
    a = sample_motions(ctrl, diff, m.labels, 16, generator=torch.Generator().manual_seed(3), **kw)
    b = sample_motions(ctrl, diff, m.labels, 16, generator=torch.Generator().manual_seed(3), **kw)
    assert a.shape == (12, 16, 19) and torch.equal(a, b)
    with pytest.raises(ValueError, match="mask must be .* to match the motion"):
        sample_motions(base, diff, m.labels, 16, generator=torch.Generator(), guidance=guide,
                       hint=hint, mask=mask[:, :8])
    empty = torch.zeros_like(mask)
    with pytest.raises(ValueError, match="controls nothing"):
        sample_motions(base, diff, m.labels, 16, generator=torch.Generator(), guidance=guide,
                       hint=hint, mask=empty)
    with pytest.raises(ValueError, match="need hint and mask"):
        sample_motions(base, diff, m.labels, 16, generator=torch.Generator(), guidance=guide)
    with pytest.raises(ValueError, match="needs stats"):
        sample_motions(ctrl, diff, m.labels, 16, generator=torch.Generator(), hint=hint,
                       mask=mask)


def test_bad_model_input():
    base, ctrl = _models()
    with pytest.raises(ValueError, match=r"x must be \(batch, frames, 19\)"):
        base(torch.zeros(2, 8, 18), torch.zeros(2, dtype=torch.long))
    with pytest.raises(ValueError, match="t must be a"):
        base(torch.zeros(2, 8, 19), torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match="hint must be"):
        ctrl(torch.zeros(2, 8, 19), torch.zeros(2, dtype=torch.long), None,
             torch.zeros(2, 8, 17), torch.zeros(2, 8, dtype=torch.bool))
    with pytest.raises(ValueError, match="d_model .* divisible by n_heads"):
        MotionDenoiser(19, 6, d_model=30, n_heads=4)
    with pytest.raises(TypeError, match="base must be a MotionDenoiser"):
        RealismBranch(torch.nn.Linear(2, 2), 18)
