"""fmr_scores, foundation_model_robustness and label_agreement: closed forms and errors."""

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from iclr24.papers.oracle_robustness import (
    OracleZoo,
    fmr_scores,
    foundation_model_robustness,
    generate_oracle_bounded,
    label_agreement,
)


def _b(*v):
    return torch.tensor(v, dtype=torch.bool)


def test_fmr_is_the_retention_rate_on_clean_right_accepted_images():
    s = fmr_scores(_b(1, 1, 1, 0), _b(1, 0, 1, 1), _b(1, 1, 0, 1))
    assert s["SA"] == 0.75 and s["accept_rate"] == 0.75
    assert s["PA"] == pytest.approx(2 / 3)  # samples 0, 1, 3 accepted; 0 and 3 right
    assert s["PA_over_SA"] == pytest.approx((2 / 3) / 0.75) and s["n"] == 4
    assert s["FMR"] == 0.5  # clean-right and accepted: 0, 1; still right after generation: 0


def test_fmr_stays_a_rate_where_pa_over_sa_exceeds_one():
    """The issue's case: the oracle accepts only the easy images, so the accepted-only accuracy
    PA beats the whole-set SA and PA / SA > 1; FMR counts one population and stays <= 1."""
    s = fmr_scores(_b(1, 0, 0, 0), _b(1, 1, 0, 0), _b(1, 1, 0, 0))
    assert s["PA_over_SA"] == 4.0
    assert s["FMR"] == 1.0
    # an image right only after generation does not count for FMR (it was wrong when clean)
    s = fmr_scores(_b(1, 1, 0), _b(0, 1, 1), _b(1, 1, 1))
    assert s["FMR"] == 0.5 and s["PA"] == pytest.approx(2 / 3)


def test_fmr_errors():
    with pytest.raises(ValueError, match="clean accuracy SA is 0"):
        fmr_scores(_b(0, 0), _b(1, 1), _b(1, 1))
    with pytest.raises(ValueError, match="accepted no generated image"):
        fmr_scores(_b(1, 0), _b(1, 1), _b(0, 0))
    with pytest.raises(ValueError, match="FMR is undefined"):
        fmr_scores(_b(1, 0), _b(1, 1), _b(0, 1))
    with pytest.raises(ValueError, match="equal"):
        fmr_scores(_b(1, 0), _b(1), _b(1, 1))
    with pytest.raises(TypeError, match="bool"):
        fmr_scores(torch.tensor([1, 0]), _b(1, 1), _b(1, 1))


class Identity:
    def encode(self, x):
        return x.clone()

    def decode(self, z):
        return z


def test_foundation_model_robustness_matches_its_parts():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(16, 3)).double().eval()
    oracle = nn.Sequential(nn.Flatten(), nn.Linear(16, 3)).double().eval()
    zoo = OracleZoo([oracle], ["a", "b", "c"], 0.0)
    g = torch.Generator().manual_seed(2)
    batches = [(torch.rand(5, 1, 4, 4, generator=g, dtype=torch.float64),
                torch.randint(0, 3, (5,), generator=g)) for _ in range(2)]
    res = foundation_model_robustness(model, zoo, Identity(), batches, steps=3, lr=0.05)
    clean, gen, acc = [], [], []
    for x, y in batches:
        xn, ok = generate_oracle_bounded(model, zoo, Identity(), x, y, steps=3, lr=0.05)
        clean.append(model(x).argmax(1) == y)
        gen.append(model(xn).argmax(1) == y)
        acc.append(ok)
    want = fmr_scores(torch.cat(clean), torch.cat(gen), torch.cat(acc))
    assert res.as_dict() == pytest.approx(want)
    assert res.x_generated.shape == (10, 1, 4, 4) and res.accepted.shape == (10,)
    # the model's clean accuracy of 0 is refused, not divided by
    y_wrong = [(x, (model(x).argmax(1) + 1) % 3) for x, _ in batches]
    with pytest.raises(ValueError, match="SA is 0"):
        foundation_model_robustness(model, OracleZoo([oracle], ["a", "b", "c"], 0.0), Identity(),
                                    y_wrong, steps=1)
    with pytest.raises(ValueError, match="no batches"):
        foundation_model_robustness(model, zoo, Identity(), [], steps=1)
    with pytest.raises(TypeError, match="pairs"):
        foundation_model_robustness(model, zoo, Identity(), [batches[0][0]], steps=1)


def test_label_agreement():
    x = torch.rand(4, 1, 2, 2)
    y = torch.tensor([0, 1, 2, 1])

    def judge(t):
        return torch.ones(len(t), dtype=torch.int64)

    assert label_agreement(judge, x, y) == 0.5
    assert label_agreement(judge, x, y, _b(0, 1, 0, 1)) == 1.0
    with pytest.raises(ValueError, match="selects no image"):
        label_agreement(judge, x, y, _b(0, 0, 0, 0))
    with pytest.raises(ValueError, match="one label per image"):
        label_agreement(lambda t: F.one_hot(y, 3), x, y)
