"""DiffCSP++ claims: symmetry is preserved by construction, and the constraints raise CSP
accuracy (both on the procedural prototypes of :mod:`.prototypes`)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from iclr24.claims import Estimate, Measurement, Scale, claim, sizes

from .experiment import ARMS, CSPExperiment, run_csp_experiment

_SMOKE = CSPExperiment(n_train=200, n_test=12, diffusion_steps=20, train_steps=100,
                       batch_size=8, hidden=32, layers=2, time_dim=32)
_SMALL = CSPExperiment()  # 2000 train crystals, 80 test, T = 100, 800 steps of 16, 4 x 64
_LABELS = {"diffcsp_pp": "DiffCSP++ (true template)",
           "diffcsp_pp_retrieved": "DiffCSP++ (retrieved template)",
           "diffcsp": "DiffCSP (composition only)"}


def _runs(scale: Scale, seed: int, progress) -> list[dict]:
    exp = sizes(scale, smoke=_SMOKE, small=_SMALL)
    seeds = sizes(scale, smoke=[seed], small=[seed, seed + 1, seed + 2])
    runs = []
    for i, s in enumerate(seeds):
        runs.append(run_csp_experiment(
            exp, s, lambda f, m, i=i, s=s: progress((i + f) / len(seeds), f"seed {s}: {m}")))
    return runs


def _rates(runs: list[dict], key) -> dict[str, list[float]]:
    return {arm: [float(np.mean([key(r, arm) for r in run["rows"]])) for run in runs]
            for arm in ARMS}


def _metric(values: list[float]):
    return values[0] if len(values) == 1 else Estimate.mean_of(values)


def _gain(a: list[float], b: list[float]):
    return a[0] - b[0] if len(a) == 1 else Estimate.difference(a, b, paired=True)


def _per_prototype(runs: list[dict], key) -> list[dict]:
    acc: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        for r in run["rows"]:
            for arm in ARMS:
                acc[r["prototype"]][arm].append(float(key(r, arm)))
    return [{"prototype": p, "n": len(d["diffcsp"]),
             **{arm: float(np.mean(d[arm])) for arm in ARMS}} for p, d in sorted(acc.items())]


def _figure(rows: list[dict], ylabel: str, title: str):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8.0, 4.0))
    ax = fig.add_subplot(1, 1, 1)
    x = np.arange(len(rows))
    for j, arm in enumerate(ARMS):
        ax.bar(x + (j - 1) * 0.27, [r[arm] for r in rows], 0.27, label=_LABELS[arm])
    ax.set_xticks(x, [r["prototype"] for r in rows], rotation=30, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _cost_notes(runs: list[dict]) -> str:
    secs = defaultdict(float)
    for run in runs:
        for k, v in run["seconds"].items():
            secs[k] += v
    return "CPU seconds per phase (all seeds; 0 if read from the cache of an earlier claim): " + \
        ", ".join(f"{k} {v:.1f}" for k, v in secs.items())


@claim(
    rule="sym_gain >= 0.4",
    paper="Sec. 3-4: DiffCSP++ generates in the space of the space-group constraint (log-lattice "
          "mask/bias + Wyckoff anchors), so every sample keeps the requested space group; "
          "DiffCSP ignores the space group and its samples are often less symmetric. The spec's "
          "expectation for this analogue: DiffCSP++ >= 0.95, DiffCSP <= 0.5.",
    paper_numbers={"sym_rate_pp": 1.0},
    against=("DiffCSP (composition only, no space-group constraint) with the same data, network, "
             "budget and seeds"),
    resources={"cpus": 1},
)
def symmetry_preserved(scale: Scale, seed: int, progress=None) -> Measurement:
    """Fraction of CSP predictions whose spglib space group (symprec 0.1) equals the target's,
    DiffCSP++ (true template) vs DiffCSP (composition only), same data, network and budget.
    ``sym_gain`` is the paired difference over seeds (3 at small)."""
    progress = progress or (lambda *a, **k: None)
    runs = _runs(scale, seed, progress)
    sym = _rates(runs, lambda r, arm: r[f"sg_{arm}"] == r["target_spacegroup"])
    fails = _rates(runs, lambda r, arm: r[f"sg_{arm}"] is None)
    table = _per_prototype(runs, lambda r, arm: r[f"sg_{arm}"] == r["target_spacegroup"])
    return Measurement(
        metrics={"sym_gain": _gain(sym["diffcsp_pp"], sym["diffcsp"]),
                 "sym_rate_pp": _metric(sym["diffcsp_pp"]),
                 "sym_rate_diffcsp": _metric(sym["diffcsp"]),
                 "sym_rate_pp_retrieved": _metric(sym["diffcsp_pp_retrieved"]),
                 "spglib_failure_rate_diffcsp": _metric(fails["diffcsp"]),
                 "n_test": len(runs[0]["rows"]), "n_seeds": len(runs)},
        figure=_figure(table, "space group recovered (symprec 0.1)",
                       "Symmetry of CSP predictions per prototype"),
        tables={"per_prototype": table,
                "per_seed": [{"seed_index": i, **{arm: sym[arm][i] for arm in ARMS}}
                             for i in range(len(runs))]},
        notes="The retrieved-template arm recovers the *retrieved* group, which is not always "
              "the target's (a retrieval error, not a symmetry loss). " + _cost_notes(runs))


@claim(
    rule="match_gain >= 0.1",
    paper="Table 1 (CSP, StructureMatcher stol 0.5, angle_tol 10, ltol 0.3): on MP-20 DiffCSP "
          "matches ~51.5 % (RMSE ~0.063), DiffCSP++ ~70.6 % with CSPML-retrieved templates and "
          "~80 % with ground-truth templates; similar gains on Perov-5 and MPTS-52 (numbers as "
          "recalled in the spec, not re-read from the paper's table).",
    paper_numbers={"match_rate_pp": 0.80, "match_rate_pp_retrieved": 0.706,
                   "match_rate_diffcsp": 0.515},
    against=("DiffCSP (composition only) with the same data, network, budget and seeds; the "
             "retrieved-template arm reported beside"),
    resources={"cpus": 1},
)
def csp_match_rate(scale: Scale, seed: int, progress=None) -> Measurement:
    """StructureMatcher match rate of DiffCSP++ with the true template vs DiffCSP from the
    composition, one prediction per test crystal (held-out element combinations). ``match_gain``
    is the paired difference over seeds (3 at small); RMSEs and the retrieved-template arm are
    reported, not judged."""
    progress = progress or (lambda *a, **k: None)
    runs = _runs(scale, seed, progress)
    hit = _rates(runs, lambda r, arm: r[f"rms_{arm}"] is not None)
    rmse = {arm: [float(np.mean([r[f"rms_{arm}"] for r in run["rows"]
                                 if r[f"rms_{arm}"] is not None]))
                  if any(r[f"rms_{arm}"] is not None for r in run["rows"]) else float("nan")
                  for run in runs] for arm in ARMS}
    retrieval_ok = [float(np.mean([r["retrieved_spacegroup"] == r["target_spacegroup"]
                                   for r in run["rows"]])) for run in runs]
    table = _per_prototype(runs, lambda r, arm: r[f"rms_{arm}"] is not None)
    metrics = {"match_gain": _gain(hit["diffcsp_pp"], hit["diffcsp"]),
               "match_rate_pp": _metric(hit["diffcsp_pp"]),
               "match_rate_diffcsp": _metric(hit["diffcsp"]),
               "match_rate_pp_retrieved": _metric(hit["diffcsp_pp_retrieved"]),
               "retrieved_template_correct": _metric(retrieval_ok),
               "n_test": len(runs[0]["rows"]), "n_seeds": len(runs)}
    for arm in ARMS:  # RMSE only where every seed matched something
        if all(np.isfinite(rmse[arm])):
            metrics[f"rmse_{arm}"] = _metric(rmse[arm])
    return Measurement(
        metrics=metrics,
        figure=_figure(table, "match rate", "CSP match rate per prototype"),
        tables={"per_prototype": table,
                "per_seed": [{"seed_index": i, **{f"match_{a}": hit[a][i] for a in ARMS},
                              **{f"rmse_{a}": rmse[a][i] for a in ARMS},
                              "train_loss_pp": runs[i]["train_loss"]["diffcsp_pp"],
                              "train_loss_diffcsp": runs[i]["train_loss"]["diffcsp"]}
                             for i in range(len(runs))]},
        notes="Cubic prototypes with all atoms on fixed special positions (rock-salt, CsCl, "
              "zinc-blende, fluorite, perovskite) and NiAs are determined by their template up "
              "to the lattice scale, which StructureMatcher normalises away: with the true "
              "template those are near-certain matches, the same information advantage the "
              "paper's ground-truth-template row has. " + _cost_notes(runs))
