"""The arms' runner: the reference-frame null arm is H_2, scores leave out the border, the
alignment accuracy is read against the scenes' known camera shifts, bad setups are refused."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from iclr24.papers.selfhdr import (
    ArmRunner,
    ExperimentSetup,
    SelfHDRConfig,
    align_to_reference,
)

TINY = SelfHDRConfig(channels=4, dense_layers=1, growth=2, blocks=1, steps=2, batch_size=2,
                     patch_size=8)


def test_reference_null_is_the_linearised_reference_frame():
    r = ArmRunner(ExperimentSetup(size=16, n_train=2, n_test=3, config=TINY), 0)
    ldr = torch.as_tensor(r.test_scenes.ldrs[:, 1])
    assert torch.allclose(r.output("reference_only"), ldr ** 2.2 / 4)  # H_2 = I_2^2.2 / t_2


def test_scores_leave_out_the_border():
    setup = ExperimentSetup(size=16, n_train=2, n_test=3, config=TINY, border=3)
    gt = torch.as_tensor(ArmRunner(setup, 0).test_scenes.gt)
    wrong_border = gt.clone()
    wrong_border[..., :3, :] = 0.9
    wrong_border[..., :, -3:] = 0.0
    r = ArmRunner(setup, 0)
    r._outputs["untrained"] = wrong_border
    s = r.scores("untrained")
    assert (s.psnr_mu > 150).all() and (s.psnr_mu_motion > 150).all() and (s.psnr_l > 150).all()
    r0 = ArmRunner(replace(setup, border=0), 0)
    r0._outputs["untrained"] = wrong_border
    assert r0.scores("untrained").psnr_mu.max() < 60


def test_alignment_accuracy_counts_exact_recoveries():
    r = ArmRunner(ExperimentSetup(size=32, n_train=2, n_test=8, config=TINY), 0)
    s = r.test_scenes
    hits = [np.array_equal(align_to_reference(s.ldrs[i], s.times)[1], s.camera_shifts[i])
            for i in range(len(s))]
    assert r.alignment_accuracy == pytest.approx(np.mean(hits))
    assert r.alignment_accuracy >= 0.75


def test_setup_and_runner_reject_bad_input():
    with pytest.raises(ValueError, match="border"):
        ExperimentSetup(size=32, border=16)
    with pytest.raises(ValueError, match="border"):
        ExperimentSetup(border=-1)
    with pytest.raises(ValueError, match="n_test"):
        ExperimentSetup(n_test=0)
    with pytest.raises(TypeError, match="SelfHDRConfig"):
        ExperimentSetup(config={"steps": 3})
    with pytest.raises(ValueError, match="arm must be one of"):
        ArmRunner(ExperimentSetup(size=16, n_train=2, n_test=2, config=TINY), 0).output("oracle")
