"""sl2_positivity claims: SL(2) augmentation against a plain MLP on SL(2)-shifted test forms (the
SO(2)-equivariant net reported beside them), and the speed-up of network certificates over the
SDP, reported with their certification rate. Degree 2d = 6 (4x4 Gram matrices)."""

from __future__ import annotations

import time

import numpy as np

from iclr24.claims import Estimate, Measurement, Scale, claim, sizes

from .certificates import certification_rate, max_det_gram
from .forms import act_on_form, act_on_gram, random_sos_binary_forms, sample_sl2
from .models import predict_gram, train_gram_model

D = 3
BINS = ((1.0, 1.5), (1.5, 3.0), (3.0, 5.0))


def _labelled(n, rng):
    P = random_sos_binary_forms(n, D, rng)
    return P, np.stack([max_det_gram(p) for p in P])


def _rel_error(G_hat, G):
    return float(np.mean(np.linalg.norm(G_hat - G, axis=(1, 2)) / np.linalg.norm(G, axis=(1, 2))))


@claim(
    rule="error_gain_high > 0",
    paper="Sec. 5, Tables 1-2: on test sets transformed by SL(2) elements of growing condition "
          "number, the MLP trained with SL(2) augmentation keeps a low max-det Gram error and "
          "a high certification rate while the plain MLP degrades; augmentation beats the "
          "SL(2)-equivariant architecture.",
    paper_numbers={},
    against=("a plain MLP without augmentation, same data, seeds and epochs; the "
             "SO(2)-equivariant net reported beside"),
)
def augmentation_under_sl2(scale: Scale, seed: int, progress=None) -> Measurement:
    """2000 training forms (80 at smoke), untransformed, labelled by SCS; 500 test forms (40)
    transformed by SL(2) with condition number in [1, 1.5], [1.5, 3], [3, 5] (labels by exact
    equivariance, G*(p o A) = M^T G*(p) M). Plain MLP vs MLP + augmentation (cond <= 5), 3 seeds
    (2 at smoke), 60 epochs (5 at smoke; 200 in the paper). ``error_gain_high`` = paired mean of
    err_MLP - err_aug on the [3, 5] bin (relative Frobenius error). Certification rates
    (lambda_min >= -1e-9 ||p||) per bin are reported. Reported beside them, outside the rule:
    the SO(2)-equivariant net (``SO2GramNet``, no augmentation, same seeds and data), 20 epochs
    (5 at smoke; fewer than the MLPs to keep the claim within 5 minutes) at lr 3e-3 (10x the
    MLP's: at lr 3e-4 it does not fit in our scaled-down epochs; the paper trains 200). The
    SL(2)-equivariant architecture is not implemented."""
    progress = progress or (lambda *a, **k: None)
    from iclr24.kits.threads import torch_threads

    rng = np.random.default_rng(seed)
    n_train, n_test = sizes(scale, smoke=80, small=2000), sizes(scale, smoke=40, small=500)
    epochs, seeds = sizes(scale, smoke=5, small=60), sizes(scale, smoke=2, small=3)
    so2_epochs = sizes(scale, smoke=5, small=20)
    P, G = _labelled(n_train, rng)
    Pt, Gt = _labelled(n_test, rng)
    tests = []
    for lo, hi in BINS:
        A = sample_sl2(n_test, (lo, hi), rng)
        tests.append((np.stack([act_on_form(a, p) for a, p in zip(A, Pt)]),
                      np.stack([act_on_gram(a, g) for a, g in zip(A, Gt)])))
    progress(0.3, "labels ready")
    errors = {"mlp": [], "aug": [], "so2": []}
    rows = []
    with torch_threads(1):
        for s in range(seeds):
            for name, aug, arch, lr, ep in (("mlp", False, "mlp", 3e-4, epochs),
                                            ("aug", True, "mlp", 3e-4, epochs),
                                            ("so2", False, "so2", 3e-3, so2_epochs)):
                model = train_gram_model(P, G, epochs=ep, seed=seed * 100 + s, augment=aug,
                                         architecture=arch, lr=lr)
                errs = []
                for (lo, hi), (Pb, Gb) in zip(BINS, tests):
                    Gh = predict_gram(model, Pb)
                    errs.append(_rel_error(Gh, Gb))
                    rows.append({"seed": s, "model": name, "cond": f"[{lo}, {hi}]",
                                 "rel_error": errs[-1],
                                 "certification_rate": certification_rate(Gh, Pb)})
                errors[name].append(errs)
            progress(0.3 + 0.7 * (s + 1) / seeds, f"seed {s}")
    e_mlp, e_aug, e_so2 = (np.array(errors[m]) for m in ("mlp", "aug", "so2"))
    cert = {m: np.mean([r["certification_rate"] for r in rows
                        if r["model"] == m and r["cond"] == "[3.0, 5.0]"]) for m in errors}
    metrics = {
        "error_gain_high": Estimate.difference(e_mlp[:, 2], e_aug[:, 2], paired=True),
        "error_gain_low": Estimate.difference(e_mlp[:, 0], e_aug[:, 0], paired=True),
        "error_mlp_high": float(e_mlp[:, 2].mean()), "error_aug_high": float(e_aug[:, 2].mean()),
        "cert_mlp_high": float(cert["mlp"]), "cert_aug_high": float(cert["aug"]),
        "error_so2_high": float(e_so2[:, 2].mean()), "error_so2_low": float(e_so2[:, 0].mean()),
        "cert_so2_high": float(cert["so2"]),
        "error_gain_so2_high": Estimate.difference(e_mlp[:, 2], e_so2[:, 2], paired=True),
    }
    return Measurement(metrics=metrics, tables={"per_bin": rows},
                       notes=f"{n_train} train / {n_test} test forms, {epochs} epochs, "
                             f"{seeds} seeds, degree 6.")


@claim(
    rule="speedup >= 10 and certification_rate >= 0.9",
    paper="Abstract / Sec. 5: networks produce SOS certificates about ten times faster than the "
          "SDP solver while retaining high accuracy.",
    paper_numbers={"speedup": 10.0},
    against=("the SCS SDP solve (cvxpy) per form on the same held-out forms; its certification "
             "rate reported"),
)
def speedup_vs_sdp(scale: Scale, seed: int, progress=None) -> Measurement:
    """A plain MLP trained as in ``augmentation_under_sl2`` (one seed); on held-out forms
    (500; 30 at smoke), SCS per-instance wall time (cvxpy call, problem compiled once) against
    batched network inference plus the eigenvalue check, per instance, single thread, medians of
    3 interleaved repeats. ``certification_rate`` of the network's certificates (exact
    constraints, lambda_min >= -1e-9 ||p||) decides with the speed-up; the SDP's own rate and
    the network's relative error are reported."""
    from iclr24.kits.threads import torch_threads

    rng = np.random.default_rng(seed)
    n_train, n_test = sizes(scale, smoke=80, small=2000), sizes(scale, smoke=30, small=500)
    epochs = sizes(scale, smoke=5, small=60)
    P, G = _labelled(n_train, rng)
    Pt = random_sos_binary_forms(n_test, D, rng)
    with torch_threads(1):
        model = train_gram_model(P, G, epochs=epochs, seed=seed)
        t_sdp, t_net = [], []
        for _ in range(3):
            t0 = time.perf_counter()
            Gs = np.stack([max_det_gram(p) for p in Pt])
            t_sdp.append((time.perf_counter() - t0) / n_test)
            t0 = time.perf_counter()
            Gh = predict_gram(model, Pt)
            certification_rate(Gh, Pt)
            t_net.append((time.perf_counter() - t0) / n_test)
    sdp, net = float(np.median(t_sdp)), float(np.median(t_net))
    return Measurement(
        metrics={"speedup": sdp / net, "certification_rate": certification_rate(Gh, Pt),
                 "sdp_certification_rate": certification_rate(Gs, Pt),
                 "sdp_seconds_per_form": sdp, "net_seconds_per_form": net,
                 "net_rel_error": _rel_error(Gh, Gs)},
        notes=f"{n_test} forms, degree 6; times are medians of 3 interleaved repeats.")
