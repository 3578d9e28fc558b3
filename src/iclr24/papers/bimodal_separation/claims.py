"""bimodal_separation claims: weak bi-modal supervision vs mix-and-separate, and vs supervised.

Each claim measures its null arm in the same run: the unprocessed mixture returned as every
estimate (the do-nothing separator), scored like the arms. Its ``control`` requires that this
null does not pass the claim's rule (and, for ``near_supervised_sdr``, that the supervised upper
bound learned to separate at all). SDR is scored without permutation search (issue 38): each
estimate against the source its text query names."""

from __future__ import annotations

import numpy as np

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes

from .experiment import ExperimentConfig, arm_scores, clap_accuracy


def _config(scale: Scale) -> tuple[ExperimentConfig, int]:
    cfg = sizes(scale,
                smoke=ExperimentConfig(n_mixtures=200, n_clap_clips=240, clap_steps=20, steps=20,
                                       n_test=16, n_clap_test=80),
                small=ExperimentConfig(n_mixtures=3000, n_clap_clips=4000, clap_steps=300,
                                       steps=600, n_test=150))
    return cfg, sizes(scale, smoke=1, small=3)


def _run_arms(arms, scale, seed, progress):
    cfg, n_seeds = _config(scale)
    seeds = [seed + i for i in range(n_seeds)]
    rows, done = [], 0
    for s in seeds:
        for arm in arms:
            rows.append({"seed": s, "arm": arm, **arm_scores(arm, cfg, s)})
            done += 1
            progress(done / (len(seeds) * len(arms)), f"arm {arm}, seed {s}")
    per_arm = {a: {k: np.array([r[k] for r in rows if r["arm"] == a])
                   for k in ("sdr", "si_sdr", "sdr_mixture")} for a in arms}
    return cfg, seeds, rows, per_arm


def _figure(rows, arms, title):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 3.8))
    ax = fig.add_subplot(1, 1, 1)
    for i, a in enumerate(arms):
        v = [r["sdr"] for r in rows if r["arm"] == a]
        ax.scatter([i] * len(v), v, label=a)
        ax.hlines(np.mean(v), i - 0.2, i + 0.2)
    mix = [r["sdr_mixture"] for r in rows if r["arm"] == arms[0]]
    ax.axhline(np.mean(mix), ls=":", c="gray", label="mixture as estimate")
    ax.set_xticks(range(len(arms)), arms)
    ax.set_ylabel("SDR [dB] (bss_eval, mean over test sources)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


_NOTES = ("Procedural 8-class sounds at 8 kHz (0.5 s clips), a tiny FiLM U-Net separator, a "
          "tiny CLAP pretrained contrastively on its own single-source corpus and frozen (LAION "
          "CLAP and AudioCaps/VGGSound/MUSIC are out of reach). Test: two held-out single "
          "sources of different classes at 0 dB, each extracted with its class word; SDR is "
          "bss_eval's (fast_bss_eval, 512 taps) of each estimate against the source its query "
          "names (no permutation search), averaged over both sources. U and W never see a "
          "single-source clip. Each seed re-draws the CLAP corpus, the training data, the "
          "initialisation and the test set. The tiny CLAP's bag-of-words text tower makes a "
          "one-word query a linear combination of caption embeddings, which softens the "
          "train/test shift the paper's weak losses address (see audio_text.py).")


@claim(
    rule="sdr_gain_w_u > 1.0 and rel_gain_w_u > 0.25",
    control="clap_accuracy >= 0.8 and not (sdr_gain_mix_u > 1.0 and rel_gain_mix_u > 0.25)",
    paper="Abstract / Sec. 5 (unsupervised setting): the bi-modal weak supervision improves SDR "
          "by 71% over the mix-and-separate baseline trained on the same natural mixtures "
          "(per-dataset tables on MUSIC, VGGSound, AudioCaps not retrieved).",
    paper_numbers={"rel_gain_w_u": 0.71},
    against=("U: mix-and-separate (L_unsup only) on the same natural mixtures, steps and seeds; "
             "null arm: the unprocessed mixture as every estimate; positive control: the frozen "
             "CLAP's zero-shot accuracy on held-out single sources"),
    resources={"cpus": 1},
)
def weak_vs_mix_and_separate(scale: Scale, seed: int, progress=None) -> Measurement:
    """W (L_unsup + L_cns + L_cnt) vs U (L_unsup only), same natural mixtures, same steps,
    same seeds. ``sdr_gain_w_u``: paired SDR difference over seeds [dB]; ``rel_gain_w_u``: mean
    over seeds of (SDR_W - SDR_U) / |SDR_U|. Fails if W is not at least 1 dB and 25% better.

    Control (issue 38, written before the run at small). (1) Null arm: the unprocessed mixture
    returned as the estimate (``sdr_gain_mix_u``, ``rel_gain_mix_u``: the same statistics with
    the mixture in W's place) must not pass the rule; if doing nothing beats U by 1 dB and 25%,
    U is a straw baseline and a W "win" says nothing. (2) Positive control: the frozen tiny
    CLAP classifies held-out single-source clips zero-shot with accuracy >= 0.8 (chance 1/8)
    (``clap_accuracy``, mean over seeds); without it the bi-modal loss carries no signal and a
    *fails* would blame the method for a broken test bed. Also changed in issue 38: SDR and
    SI-SDR are scored without permutation search (the query decides the source); before, a
    separator answering the wrong query was credited with the other source's SDR.

    Known bias of the test bed: the tiny CLAP's bag-of-words text tower makes a one-word query
    a linear combination of training-caption embeddings, so U meets a smaller train/test shift
    than in the paper (``audio_text.py``); a *fails* may partly reflect that (test bed), not
    the method."""
    progress = progress or (lambda *a, **k: None)
    cfg, seeds, rows, arm = _run_arms(("U", "W"), scale, seed, progress)
    w, u, mix = arm["W"]["sdr"], arm["U"]["sdr"], arm["U"]["sdr_mixture"]
    acc = [clap_accuracy(cfg, s) for s in seeds]
    metrics = {
        "sdr_w": seed_metric(w), "sdr_u": seed_metric(u), "sdr_mixture": seed_metric(mix),
        "si_sdr_w": seed_metric(arm["W"]["si_sdr"]), "si_sdr_u": seed_metric(arm["U"]["si_sdr"]),
        "sdr_gain_w_u": seed_difference(w, u),
        "si_sdr_gain_w_u": seed_difference(arm["W"]["si_sdr"], arm["U"]["si_sdr"]),
        "rel_gain_w_u": seed_metric((w - u) / np.abs(u)),
        "sdr_gain_mix_u": seed_difference(mix, u),
        "rel_gain_mix_u": seed_metric((mix - u) / np.abs(u)),
        "sdr_gain_u_mix": seed_difference(u, mix),
        "clap_accuracy": seed_metric(acc),
        "n_seeds": len(seeds), "steps": cfg.steps,
    }
    for row in rows:
        row["clap_accuracy"] = acc[seeds.index(row["seed"])]
    return Measurement(metrics=metrics, figure=_figure(rows, ["U", "W"], "weak (W) vs "
                                                       "mix-and-separate (U)"),
                       tables={"per_seed": rows}, notes=_NOTES)


@claim(
    rule="sdr_ratio_w_s >= 0.7",
    control="sdr_gain_s_mix >= 3.0 and sdr_s > 0 and sdr_ratio_mix_s < 0.7",
    paper="Abstract: in the unsupervised setting the weakly supervised model reaches 97.5% of "
          "the SDR of the supervised model (trained on single-source clips).",
    paper_numbers={"sdr_ratio_w_s": 0.975},
    against=("S: mix-and-separate trained on single-source clips (the supervised upper bound), "
             "same steps and seeds; null arm: the unprocessed mixture as every estimate"),
    resources={"cpus": 1},
)
def near_supervised_sdr(scale: Scale, seed: int, progress=None) -> Measurement:
    """W (natural mixtures only) vs S (mix-and-separate on single-source clips, the upper bound),
    same steps and seeds. ``sdr_ratio_w_s``: mean over seeds of SDR_W / SDR_S. Fails if W
    reaches less than 70% of the supervised SDR over the whole interval.

    Control (issue 38, written before the run at small): the ratio held at smoke when neither
    arm had learned anything (SDR 0.63 vs 0.58 dB, the unprocessed mixture's level). Now the
    verdict counts only if (1) S learned to separate: its SDR beats the unprocessed mixture's by
    >= 3 dB over the seeds' interval (``sdr_gain_s_mix``, paired) and is positive (the ratio
    means nothing otherwise); (2) the null arm, the mixture returned as the estimate, does not
    pass the rule (``sdr_ratio_mix_s`` = SDR_mixture / SDR_S < 0.7). SDR is scored without
    permutation search since issue 38."""
    progress = progress or (lambda *a, **k: None)
    cfg, seeds, rows, arm = _run_arms(("W", "S"), scale, seed, progress)
    w, s, mix = arm["W"]["sdr"], arm["S"]["sdr"], arm["S"]["sdr_mixture"]
    metrics = {
        "sdr_w": seed_metric(w), "sdr_s": seed_metric(s), "sdr_mixture": seed_metric(mix),
        "si_sdr_w": seed_metric(arm["W"]["si_sdr"]), "si_sdr_s": seed_metric(arm["S"]["si_sdr"]),
        "sdr_ratio_w_s": seed_metric(w / s),
        "sdr_gap_s_w": seed_difference(s, w),
        "sdr_gain_s_mix": seed_difference(s, mix),
        "sdr_ratio_mix_s": seed_metric(mix / s),
        "n_seeds": len(seeds), "steps": cfg.steps,
    }
    return Measurement(metrics=metrics, figure=_figure(rows, ["W", "S"], "weak (W) vs "
                                                       "supervised (S)"),
                       tables={"per_seed": rows},
                       notes=_NOTES + " The ratio is only meaningful while SDR_S > 0.")
