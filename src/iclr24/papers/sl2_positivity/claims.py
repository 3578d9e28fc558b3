"""sl2_positivity claims: SL(2) augmentation against a plain MLP on SL(2)-shifted test forms (the
SO(2)-equivariant net reported beside them), and the speed-up of network certificates over the
SDP, reported with their certification rate. Degree 2d = 6 (4x4 Gram matrices).

Both claims decide on the paper's task, certifying positivity: a rule that reads error or speed
also reads the certification rate (exact constraints and lambda_min >= -1e-9 ||p||), and "high"
is 0.9 in both (fixed before any run of the rules below). Each measures its null arm in the same
run and its ``control`` requires that the null arm, put in the method's place, does not hold the
rule, and that the exact certificates (SCS labels) pass the certificate check (positive
control). The paper's SL(2)-equivariant (Clebsch-Gordan) net is not built here, so its
comparison with augmentation is not part of any claim.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import numpy as np

from iclr24.claims import (
    Measurement,
    Scale,
    claim,
    evaluate_rule,
    seed_difference,
    seed_metric,
    sizes,
)

from .certificates import certification_rate, max_det_gram, max_det_gram_timed
from .forms import act_on_form, act_on_gram, random_sos_binary_forms, sample_sl2
from .models import predict_gram, train_gram_model

D = 3
BINS = ((1.0, 1.5), (1.5, 3.0), (3.0, 5.0))
HIGH_CERT = 0.9          # "a high certification rate", the same level in both rules


def _labelled(n, rng):
    P = random_sos_binary_forms(n, D, rng)
    return P, np.stack([max_det_gram(p) for p in P])


def _rel_error(G_hat, G):
    return float(np.mean(np.linalg.norm(G_hat - G, axis=(1, 2)) / np.linalg.norm(G, axis=(1, 2))))


AUG_RULE = f"error_gain_high > 0 and cert_aug_high >= {HIGH_CERT}"


def _aug_control(m: Mapping) -> bool | None:
    """label_cert_high >= 0.9 (the exact max-det certificates of the [3, 5] bin pass the
    check), and the null arm (a second plain MLP, augmentation switched off, another init
    seed: error_gain_high_null, cert_null_high) put in the augmented MLP's place does not hold
    `error_gain_high > 0 and cert_aug_high >= 0.9`."""
    labels = evaluate_rule(f"label_cert_high >= {HIGH_CERT}", m)
    null = evaluate_rule(AUG_RULE, {"error_gain_high": m["error_gain_high_null"],
                                    "cert_aug_high": m["cert_null_high"]})
    return None if labels is None else (labels and null is not True)


@claim(
    rule=AUG_RULE,
    control=_aug_control,
    paper="Sec. 5, Tables 1-2: on test sets transformed by SL(2) elements of growing condition "
          "number, the MLP trained with SL(2) augmentation keeps a low max-det Gram error and "
          "a high certification rate while the plain MLP degrades (the paper also finds "
          "augmentation better than its SL(2)-equivariant net, which is not built here).",
    paper_numbers={},
    against=("a plain MLP without augmentation, same data, seeds and epochs; null arm: a second "
             "plain MLP (augmentation switched off, another init seed) in the augmented MLP's "
             "place; positive control: the exact certificates of the shifted test forms; the "
             "SO(2)-equivariant net reported beside"),
)
def augmentation_under_sl2(scale: Scale, seed: int, progress=None) -> Measurement:
    """2000 training forms (80 at smoke), untransformed, labelled by SCS; 500 test forms (40)
    transformed by SL(2) with condition number in [1, 1.5], [1.5, 3], [3, 5] (labels by exact
    equivariance, G*(p o A) = M^T G*(p) M). Plain MLP vs MLP + augmentation (cond <= 5), 3 seeds
    (2 at smoke), 40 epochs (5 at smoke; 200 in the paper; 60 before the null arm was added:
    four trained arms x 3 seeds must stay within ~200 s of CPU, set before any small run of
    this rule; measured: 98 s of CPU at 40 epochs).

    Rule (was ``error_gain_high > 0``, error only): the paper's task is certifying positivity,
    so the rule reads the certification rate beside the error: augmentation lowers the
    relative Frobenius error on the hardest bin [3, 5] (``error_gain_high`` = paired mean over
    seeds of err_MLP - err_aug, whole interval > 0) and certifies at least 0.9 of those shifted
    forms (``cert_aug_high``, interval over seeds). Fails if augmentation does not lower the
    error, or certifies fewer than 0.9 of the shifted forms.

    Control (see ``_aug_control``): the exact certificates of the [3, 5] bin pass the check
    (else the tolerance, not the model, decides), and the null arm, a second plain MLP trained
    exactly like the first with another init seed (the augmentation switched off), put in the
    augmented MLP's place does not hold the rule: seed-to-seed variation alone must not pass.

    Reported beside them, outside the rule: certification rates per bin, and the
    SO(2)-equivariant net (``SO2GramNet``, no augmentation, same seeds and data), 20 epochs
    (5 at smoke) at lr 3e-3 (10x the MLP's: at lr 3e-4 it does not fit in our scaled-down
    epochs; the paper trains 200). The paper's SL(2)-equivariant architecture is not built, so
    its comparison with augmentation is not measured."""
    progress = progress or (lambda *a, **k: None)
    from iclr24.kits.threads import torch_threads

    rng = np.random.default_rng(seed)
    n_train, n_test = sizes(scale, smoke=80, small=2000), sizes(scale, smoke=40, small=500)
    epochs, seeds = sizes(scale, smoke=5, small=40), sizes(scale, smoke=2, small=3)
    so2_epochs = sizes(scale, smoke=5, small=20)
    P, G = _labelled(n_train, rng)
    Pt, Gt = _labelled(n_test, rng)
    tests = []
    for lo, hi in BINS:
        A = sample_sl2(n_test, (lo, hi), rng)
        tests.append((np.stack([act_on_form(a, p) for a, p in zip(A, Pt)]),
                      np.stack([act_on_gram(a, g) for a, g in zip(A, Gt)])))
    progress(0.3, "labels ready")
    arms = (("mlp", False, "mlp", 3e-4, epochs, 0),
            ("aug", True, "mlp", 3e-4, epochs, 0),
            ("null", False, "mlp", 3e-4, epochs, 1),     # augmentation off, other init seed
            ("so2", False, "so2", 3e-3, so2_epochs, 0))
    err = {a[0]: [] for a in arms}
    cert = {a[0]: [] for a in arms}
    rows = []
    with torch_threads(1):
        for s in range(seeds):
            for name, aug, arch, lr, ep, other in arms:
                model = train_gram_model(P, G, epochs=ep, seed=seed * 100 + s + 50 * other,
                                         augment=aug, architecture=arch, lr=lr)
                errs, certs = [], []
                for (lo, hi), (Pb, Gb) in zip(BINS, tests):
                    Gh = predict_gram(model, Pb)
                    errs.append(_rel_error(Gh, Gb))          # ||G_hat - G*||_F / ||G*||_F
                    certs.append(certification_rate(Gh, Pb))  # lambda_min >= -1e-9 ||p||
                    rows.append({"seed": s, "model": name, "cond": f"[{lo}, {hi}]",
                                 "rel_error": errs[-1], "certification_rate": certs[-1]})
                err[name].append(errs)
                cert[name].append(certs)
            progress(0.3 + 0.7 * (s + 1) / seeds, f"seed {s}")
    e, c = ({k: np.array(v) for k, v in x.items()} for x in (err, cert))
    metrics = {
        "error_gain_high": seed_difference(e["mlp"][:, 2], e["aug"][:, 2]),
        "cert_aug_high": seed_metric(c["aug"][:, 2]),
        "cert_mlp_high": seed_metric(c["mlp"][:, 2]),
        "cert_gain_high": seed_difference(c["aug"][:, 2], c["mlp"][:, 2]),
        "error_gain_low": seed_difference(e["mlp"][:, 0], e["aug"][:, 0]),
        "cert_aug_low": seed_metric(c["aug"][:, 0]),
        "error_mlp_high": seed_metric(e["mlp"][:, 2]),
        "error_aug_high": seed_metric(e["aug"][:, 2]),
        "error_gain_high_null": seed_difference(e["mlp"][:, 2], e["null"][:, 2]),
        "cert_null_high": seed_metric(c["null"][:, 2]),
        "label_cert_high": certification_rate(tests[2][1], tests[2][0]),
        "error_so2_high": seed_metric(e["so2"][:, 2]),
        "error_so2_low": seed_metric(e["so2"][:, 0]),
        "cert_so2_high": seed_metric(c["so2"][:, 2]),
        "error_gain_so2_high": seed_difference(e["mlp"][:, 2], e["so2"][:, 2]),
    }
    return Measurement(metrics=metrics, tables={"per_bin": rows},
                       notes=f"{n_train} train / {n_test} test forms, {epochs} epochs, "
                             f"{seeds} seeds, degree 6; certification: exact constraints and "
                             "lambda_min >= -1e-9 ||p||. The SL(2)-equivariant net is not "
                             "built.")


SPEED_RULE = f"speedup >= 10 and certification_rate >= {HIGH_CERT}"


def _speed_control(m: Mapping) -> bool | None:
    """sdp_certification_rate >= 0.9 (the SDP's own certificates pass the check), and the null
    arm (the same MLP untrained: null_speedup, null_certification_rate) put in the trained
    network's place does not hold `speedup >= 10 and certification_rate >= 0.9`."""
    sdp = evaluate_rule(f"sdp_certification_rate >= {HIGH_CERT}", m)
    null = evaluate_rule(SPEED_RULE, {"speedup": m["null_speedup"],
                                      "certification_rate": m["null_certification_rate"]})
    return None if sdp is None else (sdp and null is not True)


@claim(
    rule=SPEED_RULE,
    control=_speed_control,
    paper="Abstract / Sec. 5: networks produce SOS certificates about ten times faster than the "
          "SDP solver while retaining high accuracy.",
    paper_numbers={"speedup": 10.0},
    against=("SCS's own solve time per form (solver_stats.solve_time; the cvxpy call time, "
             "which adds canonicalisation, reported beside) on the same held-out forms; null "
             "arm: the same MLP untrained; the SDP's certification rate as positive control"),
)
def speedup_vs_sdp(scale: Scale, seed: int, progress=None) -> Measurement:
    """A plain MLP trained as in ``augmentation_under_sl2``, 3 training seeds (2 at smoke), each
    timed on its own held-out forms (150; 15 at smoke): SCS per form against batched network
    inference plus the eigenvalue check, per form, single thread, medians of 3 interleaved
    repeats.

    Rule (was the speed-up against the whole cvxpy call, 23 ms per form, of which SCS's own
    solve is about 15 ms): ``speedup`` = SCS ``solver_stats.solve_time`` / network time, the
    strongest SDP baseline (cvxpy's per-call canonicalisation is overhead a tuned solver call
    avoids), >= 10 with ``certification_rate`` >= 0.9, both intervals over seeds.
    ``speedup_vs_call`` (total cvxpy call time) is reported beside it. Fails if the network is
    less than 10x faster than SCS's solve or certifies fewer than 0.9 of the forms.

    Control (see ``_speed_control``): SCS's own certificates pass the check, and the untrained
    MLP (same architecture, same timing path: fast but untrained) put in the trained network's
    place does not hold the rule."""
    progress = progress or (lambda *a, **k: None)
    from iclr24.kits.threads import torch_threads

    rng = np.random.default_rng(seed)
    n_train, n_test = sizes(scale, smoke=80, small=2000), sizes(scale, smoke=15, small=150)
    epochs, seeds = sizes(scale, smoke=5, small=40), sizes(scale, smoke=2, small=3)
    P, G = _labelled(n_train, rng)
    progress(0.3, "labels ready")
    out = {k: [] for k in ("speedup", "speedup_vs_call", "cert", "sdp_cert", "null_speedup",
                           "null_cert", "err", "sdp_solve", "sdp_call", "net")}
    with torch_threads(1):
        for s in range(seeds):
            Pt = random_sos_binary_forms(n_test, D, rng)
            model = train_gram_model(P, G, epochs=epochs, seed=seed * 100 + s)
            untrained = train_gram_model(P, G, epochs=0, seed=seed * 100 + s)
            t_solve, t_call, t_net, t_null = [], [], [], []
            for _ in range(3):
                t0, solve = time.perf_counter(), 0.0
                Gs = []
                for p in Pt:
                    g, t = max_det_gram_timed(p)
                    Gs.append(g)
                    solve += t
                t_call.append((time.perf_counter() - t0) / n_test)
                t_solve.append(solve / n_test)
                for net, times in ((model, t_net), (untrained, t_null)):
                    t0 = time.perf_counter()
                    Gh = predict_gram(net, Pt)
                    certification_rate(Gh, Pt)
                    times.append((time.perf_counter() - t0) / n_test)
            solve, call, net, null = (float(np.median(t)) for t in (t_solve, t_call, t_net, t_null))
            Gs, Gh, Gn = np.stack(Gs), predict_gram(model, Pt), predict_gram(untrained, Pt)
            for k, v in (("speedup", solve / net), ("speedup_vs_call", call / net),
                         ("cert", certification_rate(Gh, Pt)),
                         ("sdp_cert", certification_rate(Gs, Pt)),
                         ("null_speedup", solve / null),
                         ("null_cert", certification_rate(Gn, Pt)),
                         ("err", _rel_error(Gh, Gs)), ("sdp_solve", solve), ("sdp_call", call),
                         ("net", net)):
                out[k].append(v)
            progress(0.3 + 0.7 * (s + 1) / seeds, f"seed {s}")
    return Measurement(
        metrics={"speedup": seed_metric(out["speedup"]),
                 "certification_rate": seed_metric(out["cert"]),
                 "speedup_vs_call": seed_metric(out["speedup_vs_call"]),
                 "sdp_certification_rate": seed_metric(out["sdp_cert"]),
                 "null_speedup": seed_metric(out["null_speedup"]),
                 "null_certification_rate": seed_metric(out["null_cert"]),
                 "sdp_solve_seconds_per_form": seed_metric(out["sdp_solve"]),
                 "sdp_call_seconds_per_form": seed_metric(out["sdp_call"]),
                 "net_seconds_per_form": seed_metric(out["net"]),
                 "net_rel_error": seed_metric(out["err"])},
        notes=f"{n_test} forms per seed, {seeds} seeds, degree 6; times are medians of 3 "
              "interleaved repeats, single thread; SCS eps 1e-6.")
