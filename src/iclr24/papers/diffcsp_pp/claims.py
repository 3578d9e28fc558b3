"""DiffCSP++ claims: symmetry is preserved by construction, and the constraints raise CSP
accuracy (both on the procedural prototypes of :mod:`.prototypes`).

Issue 38 changed both. ``symmetry_preserved`` counted an invalid cell (no space group can be
read from it) as lost symmetry, so smoke reported 0.25 for a property that holds by
construction: validity and symmetry are now separate numbers, the rule reads the symmetry of
the valid predictions, and the control asks that the detector finds the targets' own groups
and that each arm has enough valid predictions to read. ``csp_match_rate`` held with an
untrained network (one training step: 0.30 vs 0.00, every match a cubic prototype whose
template fixes the crystal up to its scale): it now judges the test crystals whose template
leaves something to learn and measures, in the same run, the untrained-network null arm, which
must not pass the rule.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

import numpy as np

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes

from .experiment import ARMS, CSPExperiment, run_csp_experiment

_SMOKE = CSPExperiment(n_train=200, n_test=12, diffusion_steps=20, train_steps=100,
                       batch_size=8, hidden=32, layers=2, time_dim=32)
_SMALL = CSPExperiment()  # 2000 train crystals, 80 test, T = 100, 800 steps of 16, 4 x 64
_LABELS = {"diffcsp_pp": "DiffCSP++ (true template)",
           "diffcsp_pp_retrieved": "DiffCSP++ (retrieved template)",
           "diffcsp": "DiffCSP (composition only)",
           "diffcsp_pp_untrained": "DiffCSP++ untrained (true template): null"}
_SHORT = {"diffcsp_pp": "pp", "diffcsp_pp_retrieved": "pp_retrieved", "diffcsp": "diffcsp",
          "diffcsp_pp_untrained": "pp_untrained"}
_MIN_VALID = 10  # valid predictions per seed and arm below which a symmetry rate is not read

Row = dict
Runs = list[dict]


def _runs(scale: Scale, seed: int, progress) -> Runs:
    exp = sizes(scale, smoke=_SMOKE, small=_SMALL)
    seeds = sizes(scale, smoke=[seed], small=[seed, seed + 1, seed + 2])
    runs = []
    for i, s in enumerate(seeds):
        runs.append(run_csp_experiment(
            exp, s, lambda f, m, i=i, s=s: progress((i + f) / len(seeds), f"seed {s}: {m}")))
    return runs


def _per_seed(runs: Runs, value: Callable[[Row], float],
              keep: Callable[[Row], bool] = lambda r: True) -> list[float]:
    """Per seed, the mean of ``value`` over the rows that ``keep`` selects (NaN if none)."""
    out = []
    for run in runs:
        vals = [float(value(r)) for r in run["rows"] if keep(r)]
        out.append(float(np.mean(vals)) if vals else float("nan"))
    return out


def _is_open(r: Row) -> bool:
    """The true template leaves something to learn beyond the scale (not a cubic prototype
    with every atom on a fixed site)."""
    return r["free_parameters"] > 0


def _per_prototype(runs: Runs, key: Callable[[Row, str], float]) -> list[dict]:
    acc: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    free: dict[str, int] = {}
    for run in runs:
        for r in run["rows"]:
            free[r["prototype"]] = r["free_parameters"]
            for arm in ARMS:
                acc[r["prototype"]][arm].append(float(key(r, arm)))
    return [{"prototype": p, "free_parameters": free[p], "n": len(d["diffcsp"]),
             **{arm: float(np.nanmean(d[arm])) if np.isfinite(d[arm]).any() else float("nan")
                for arm in ARMS}} for p, d in sorted(acc.items())]


def _figure(rows: list[dict], ylabel: str, title: str):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9.0, 4.0))
    ax = fig.add_subplot(1, 1, 1)
    x = np.arange(len(rows))
    width = 0.8 / len(ARMS)
    for j, arm in enumerate(ARMS):
        ax.bar(x + (j - (len(ARMS) - 1) / 2) * width, [r[arm] for r in rows], width,
               label=_LABELS[arm])
    ax.set_xticks(x, [f"{r['prototype']} ({r['free_parameters']})" for r in rows],
                  rotation=30, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel(ylabel)
    ax.set_title(title + " (free parameters of the template in brackets)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _cost_notes(runs: Runs) -> str:
    secs: dict[str, float] = defaultdict(float)
    for run in runs:
        for k, v in run["seconds"].items():
            secs[k] += v
    return "CPU seconds per phase (all seeds; 0 if read from the cache of an earlier claim): " + \
        ", ".join(f"{k} {v:.1f}" for k, v in secs.items())


def symmetry_metrics(runs: Runs) -> dict:
    """``symmetry_preserved``'s metrics from the runs' rows (exposed for the tests): per arm
    the valid fraction (``valid_rate_*``) and the fraction of valid predictions whose spglib
    group is the target's (``sym_rate_*``, NaN for a seed without a valid prediction); the
    paired gain ``sym_gain`` (DiffCSP++ minus DiffCSP); the positive control
    ``sym_rate_truth`` (the detector on the targets themselves, pooled) and the smallest
    number of valid predictions of a seed per arm (``min_valid_*``)."""
    out: dict = {}
    sym: dict[str, list[float]] = {}
    for arm in ARMS:
        short = _SHORT[arm]
        sym[arm] = _per_seed(runs, lambda r, a=arm: r[f"sg_{a}"] == r["target_spacegroup"],
                             keep=lambda r, a=arm: r[f"valid_{a}"])
        out[f"sym_rate_{short}"] = seed_metric(sym[arm])
        out[f"valid_rate_{short}"] = seed_metric(_per_seed(runs, lambda r, a=arm:
                                                           r[f"valid_{a}"]))
        out[f"min_valid_{short}"] = float(min(sum(r[f"valid_{arm}"] for r in run["rows"])
                                              for run in runs))
    out["sym_gain"] = seed_difference(sym["diffcsp_pp"], sym["diffcsp"])
    rows = [r for run in runs for r in run["rows"]]
    out["sym_rate_truth"] = float(np.mean([r["truth_spacegroup"] == r["target_spacegroup"]
                                           for r in rows]))
    return out


@claim(
    rule="sym_gain >= 0.4",
    control=f"sym_rate_truth >= 0.95 and min_valid_pp >= {_MIN_VALID} "
            f"and min_valid_diffcsp >= {_MIN_VALID}",
    paper="Sec. 3-4: DiffCSP++ generates in the space of the space-group constraint (log-lattice "
          "mask/bias + Wyckoff anchors), so every sample keeps the requested space group; "
          "DiffCSP ignores the space group and its samples are often less symmetric. The spec's "
          "expectation for this analogue: DiffCSP++ >= 0.95, DiffCSP <= 0.5.",
    paper_numbers={"sym_rate_pp": 1.0},
    against=("DiffCSP (composition only, no space-group constraint: the mechanism switched "
             "off) with the same data, network, budget and seeds; positive control: spglib "
             "on the target crystals themselves"),
    resources={"cpus": 1},
)
def symmetry_preserved(scale: Scale, seed: int, progress=None) -> Measurement:
    """Of the *valid* CSP predictions (:func:`~.evaluation.structure_valid`: no atoms closer
    than 0.5 A, a cell neither huge nor flat), the fraction whose spglib space group (symprec
    0.1) equals the target's, DiffCSP++ (true template) vs DiffCSP (composition only), same
    data, network and budget. ``sym_gain`` is the paired difference over seeds (3 at small).

    Rule: ``sym_gain >= 0.4`` (the spec's bar); it fails when DiffCSP keeps the group about as
    often as DiffCSP++, or when DiffCSP++'s valid samples lose their group.

    Issue 38 (written before the small run): an invalid cell used to count as a lost group,
    so under-trained samplers reported low symmetry for a property that holds by construction.
    Validity is now its own number (``valid_rate_*``, reported) and the rule reads the symmetry
    of the valid predictions. Control: the detector finds the target's own group on >= 95% of
    the target crystals (``sym_rate_truth``, a positive control), and each seed has at least
    10 valid predictions in both judged arms (``min_valid_*``), else the rates are not read
    (inconclusive). The untrained and retrieved-template arms are reported: both keep their
    template's group by construction too."""
    progress = progress or (lambda *a, **k: None)
    runs = _runs(scale, seed, progress)
    metrics = symmetry_metrics(runs)
    table = _per_prototype(runs, lambda r, arm: (r[f"sg_{arm}"] == r["target_spacegroup"])
                           if r[f"valid_{arm}"] else float("nan"))
    per_seed = [{"seed_index": i,
                 **{f"valid_{_SHORT[a]}": float(np.mean([r[f"valid_{a}"] for r in run["rows"]]))
                    for a in ARMS},
                 **{f"sym_{_SHORT[a]}": _per_seed([run], lambda r, a=a: r[f"sg_{a}"]
                                                  == r["target_spacegroup"],
                                                  keep=lambda r, a=a: r[f"valid_{a}"])[0]
                    for a in ARMS}}
                for i, run in enumerate(runs)]
    return Measurement(
        metrics={**metrics, "n_test": len(runs[0]["rows"]), "n_seeds": len(runs)},
        figure=_figure(table, "space group kept (valid predictions)",
                       "Symmetry of valid CSP predictions per prototype"),
        tables={"per_prototype": table, "per_seed": per_seed},
        notes="Rates are over valid predictions; valid_rate_* says how many there were. The "
              "retrieved-template arm keeps the *retrieved* group, which is not always the "
              "target's (a retrieval error, not a symmetry loss). " + _cost_notes(runs))


def match_metrics(runs: Runs) -> dict:
    """``csp_match_rate``'s metrics from the runs' rows (exposed for the tests). On the test
    crystals whose template leaves something to learn (``free_parameters`` > 0): per arm the
    match rate (``match_rate_*``), the judged gain ``match_gain`` (DiffCSP++ minus DiffCSP),
    the null arm's gain ``match_gain_untrained`` (untrained DiffCSP++ minus DiffCSP) and
    ``match_gain_vs_untrained``; the same on every test crystal with the suffix ``_all``
    (reported); RMSE where every seed matched something; retrieval accuracy."""
    out: dict = {}
    for suffix, keep in (("", _is_open), ("_all", lambda r: True)):
        hit = {arm: _per_seed(runs, lambda r, a=arm: r[f"rms_{a}"] is not None, keep)
               for arm in ARMS}
        for arm in ARMS:
            out[f"match_rate{suffix}_{_SHORT[arm]}"] = seed_metric(hit[arm])
        out[f"match_gain{suffix}"] = seed_difference(hit["diffcsp_pp"], hit["diffcsp"])
        out[f"match_gain_untrained{suffix}"] = seed_difference(hit["diffcsp_pp_untrained"],
                                                               hit["diffcsp"])
        out[f"match_gain_vs_untrained{suffix}"] = seed_difference(
            hit["diffcsp_pp"], hit["diffcsp_pp_untrained"])
    for arm in ARMS:  # RMSE only where every seed matched something
        rmse = _per_seed(runs, lambda r, a=arm: r[f"rms_{a}"],
                         lambda r, a=arm: r[f"rms_{a}"] is not None and _is_open(r))
        if all(np.isfinite(rmse)):
            out[f"rmse_{_SHORT[arm]}"] = seed_metric(rmse)
    out["retrieved_template_correct"] = seed_metric(_per_seed(
        runs, lambda r: r["retrieved_spacegroup"] == r["target_spacegroup"]))
    out["n_open"] = float(min(sum(_is_open(r) for r in run["rows"]) for run in runs))
    return out


@claim(
    rule="match_gain >= 0.1",
    control="match_gain_untrained < 0.1",
    paper="Table 1 (CSP, StructureMatcher stol 0.5, angle_tol 10, ltol 0.3): on MP-20 DiffCSP "
          "matches ~51.5 % (RMSE ~0.063), DiffCSP++ ~70.6 % with CSPML-retrieved templates and "
          "~80 % with ground-truth templates; similar gains on Perov-5 and MPTS-52 (numbers as "
          "recalled in the spec, not re-read from the paper's table).",
    paper_numbers={"match_rate_pp": 0.80, "match_rate_pp_retrieved": 0.706,
                   "match_rate_diffcsp": 0.515},
    against=("DiffCSP (composition only) with the same data, network, budget and seeds; null "
             "arm: DiffCSP++ with the true template and its untrained network (same initial "
             "weights and noise); the retrieved-template arm reported beside"),
    resources={"cpus": 1},
)
def csp_match_rate(scale: Scale, seed: int, progress=None) -> Measurement:
    """StructureMatcher match rate of DiffCSP++ with the true template vs DiffCSP from the
    composition, one prediction per test crystal (held-out element combinations), on the test
    crystals whose template leaves something to learn: a free lattice shape (c/a) or a free
    Wyckoff coordinate (wurtzite, NiAs, rutile, CdI2, anatase). ``match_gain`` is the paired
    difference over seeds (3 at small).

    Rule: ``match_gain >= 0.1`` (the spec's 10 points); it fails when the constrained model
    matches no more often than DiffCSP.

    Issue 38 (rule's test bed and control written before the small run). With one training
    step DiffCSP++ matched 0.30 of the test crystals against DiffCSP's 0.00, every match a
    cubic prototype with all atoms on fixed sites (rock-salt, CsCl, zinc-blende, fluorite,
    perovskite), whose template fixes the crystal up to its scale, which the matcher
    normalises: there the template hands over the answer and no learning is needed. So (1) the
    rule reads only the test crystals whose true template has ``free_parameters`` > 0 (the
    whole set is reported with the suffix ``_all``), and (2) the null arm, DiffCSP++ with the
    same true templates, initial weights and sampling noise but an untrained network, is
    measured in the same run: the control requires that it does *not* pass the rule
    (``match_gain_untrained < 0.1``, its whole interval), else the test bed cannot tell a
    learned structure from one the template dictates. RMSEs (open templates), the
    retrieved-template arm and the gain over the null arm are reported, not judged."""
    progress = progress or (lambda *a, **k: None)
    runs = _runs(scale, seed, progress)
    metrics = match_metrics(runs)
    table = _per_prototype(runs, lambda r, arm: r[f"rms_{arm}"] is not None)
    per_seed = [{"seed_index": i,
                 **{f"match_{_SHORT[a]}": _per_seed([run], lambda r, a=a: r[f"rms_{a}"]
                                                    is not None, _is_open)[0] for a in ARMS},
                 "train_loss_pp": run["train_loss"]["diffcsp_pp"],
                 "train_loss_diffcsp": run["train_loss"]["diffcsp"]}
                for i, run in enumerate(runs)]
    return Measurement(
        metrics={**metrics, "n_test": len(runs[0]["rows"]), "n_seeds": len(runs)},
        figure=_figure(table, "match rate", "CSP match rate per prototype"),
        tables={"per_prototype": table, "per_seed": per_seed},
        notes="Judged on the test crystals whose template has free parameters (n_open per "
              "seed, at least); the cubic prototypes with every atom on a fixed site are "
              "matched by any valid sample with the true template, trained or not, the same "
              "information advantage the paper's ground-truth-template row has. "
              + _cost_notes(runs))
