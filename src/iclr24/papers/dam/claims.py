"""DAM claims: HSR vs a fixed window, robustness to missing history, zero-shot real series."""

from __future__ import annotations

from functools import partial

import numpy as np

from iclr24.claims import Estimate, Measurement, Scale, claim, sizes

from .evaluation import holdout_mse
from .forecaster import DAMForecaster
from .synthetic import synthetic_corpus


def _seeds(scale: Scale, seed: int) -> list[int]:
    return [seed + 1000 * i for i in range(sizes(scale, smoke=1, small=3, full=5))]


def _summary(xs: list[float]):
    """An Estimate over seeds when there are several, else the single number."""
    return Estimate.mean_of(xs) if len(xs) >= 2 else float(xs[0])


def _train_sizes(scale: Scale) -> dict:
    return sizes(scale, smoke={"steps": 12, "batch_size": 8},
                 small={"steps": 250, "batch_size": 16}, full={"steps": 2000, "batch_size": 64})


def _figure(title: str, rows: list[dict], keys: list[str], ylabel: str):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 4.0))
    ax = fig.add_subplot(1, 1, 1)
    x = np.arange(len(rows))
    w = 0.8 / len(keys)
    for j, k in enumerate(keys):
        ax.bar(x + j * w, [r[k] for r in rows], w, label=k)
    ax.set_xticks(x + 0.4 - w / 2, [str(r.get("seed", r.get("series", i)))
                                      for i, r in enumerate(rows)])
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    return fig


@claim(
    rule="mse_ratio < 0.85",
    paper="Sec. 3/4: HSR gives DAM 'an efficient global perspective' of long histories at a "
          "fixed context budget; DAM excels at (very-)long-term forecasting. The ablation "
          "numbers were not retrieved; our threshold 0.85 is the spec's, fixed before running.",
    against=("the same DAM reading the last 128 regular points instead of HSR, same data, steps "
             "and seeds; the history mean reported"),
)
def hsr_vs_window(scale: Scale, seed: int, progress) -> Measurement:
    """Held-out synthetic series (period band unseen in training; daily or hourly, whose
    longest period spans more than n_ctx samples), 720-step horizon, standardised MSE. Two
    DAMs with identical architecture, data and steps: one reads an HSR context (look-back up to
    4 096 steps), the other the last n_ctx regular points; both read n_ctx = 128 points.
    ``mse_ratio`` = MSE(HSR) / MSE(window), per training seed, then an interval over seeds.
    ``mse_context_mean`` (forecasting the mean of the last 4 096 steps) is a reference only."""
    n_train = sizes(scale, smoke=8, small=48, full=200)
    n_eval = sizes(scale, smoke=3, small=12, full=48)
    seeds = _seeds(scale, seed)
    rows, ratios, m_h, m_w, m_c = [], [], [], [], []
    for i, s in enumerate(seeds):
        train = synthetic_corpus(n_train, s)
        rng_eval = s + 7
        evals = (synthetic_corpus(n_eval // 2, rng_eval, held_out=True, resolution=1.0,
                                  length=4096 + 720, missing=0.0, min_longest_period=128)
                 + synthetic_corpus(n_eval - n_eval // 2, rng_eval + 1, held_out=True,
                                    resolution=1 / 24, length=4096 + 720, missing=0.0,
                                    min_longest_period=128))
        res = {}
        for regime in ("hsr", "window"):
            f = DAMForecaster(sampling=regime, horizon=720, seed=s, **_train_sizes(scale))
            f.fit(train)
            res[regime] = holdout_mse(evals, 720, 4096,
                                      lambda h, fu, f=f: f.predict(h, fu.times, n_draws=4))
            progress((2 * i + (regime == "window") + 1) / (2 * len(seeds)), f"seed {s} {regime}")
        ref = holdout_mse(evals, 720, 4096, lambda h, fu: np.full(len(fu), h.values[-4096:].mean()))
        mh, mw, mc = float(res["hsr"].mean()), float(res["window"].mean()), float(ref.mean())
        ratios.append(mh / mw)
        m_h.append(mh), m_w.append(mw), m_c.append(mc)
        rows.append({"seed": s, "mse_hsr": mh, "mse_window": mw, "mse_context_mean": mc,
                     "ratio": mh / mw})
    return Measurement(
        metrics={"mse_ratio": _summary(ratios), "mse_hsr": _summary(m_h),
                 "mse_window": _summary(m_w), "mse_context_mean": _summary(m_c),
                 "n_eval_series": n_eval, "n_seeds": len(seeds)},
        figure=_figure("720-step standardised MSE per seed", rows,
                       ["mse_hsr", "mse_window", "mse_context_mean"], "MSE (standardised)"),
        tables={"per_seed": rows},
        notes="Scaled down: synthetic multi-domain corpus instead of 25 datasets; 32-wide "
              "2-layer DAM, batch 16, a few hundred CPU steps (the paper trains on GPUs). "
              "mse_context_mean is the MSE of forecasting the history mean (reference only).",
    )


def _thin(h, seed: int):
    """Remove 50 % of the points at random (same mask for both models), keeping the ends."""
    keep = np.random.default_rng(seed).random(len(h)) >= 0.5
    keep[0] = keep[-1] = True
    return h.drop(keep)


def _dam_forecast(f, missing: bool, seed: int, h, fu):
    return f.predict(_thin(h, seed) if missing else h, fu.times, n_draws=4)


def _dlinear_forecast(missing: bool, seed: int, train_seed: int, steps: int, h, fu):
    from iclr24.kits.time_series import DLinearForecaster

    y = (_thin(h, seed) if missing else h).interpolated()  # grid model: interpolated input
    m = DLinearForecaster(context=336, horizon=96, steps=steps, seed=train_seed).fit(y)
    return m.predict(y[-336:])[: len(fu)]


@claim(
    rule="degradation_gap < 0",
    paper="Abstract/Sec. 4: DAM is 'robust to missing and irregularly sampled data by design' "
          "(it reads (time, value) pairs); grid models need imputed input. No number retrieved; "
          "the spec's test: DAM's MSE(missing)/MSE(complete) below DLinear's.",
    against=("DLinear (context 336) trained per series on the interpolated history; "
             "MSE(missing)/MSE(complete) of each model"),
)
def irregular_robustness(scale: Scale, seed: int, progress) -> Measurement:
    """Remove 50 % of the history points at random. DAM (trained once on the synthetic corpus,
    horizon 96) reads the remaining points natively; DLinear (context 336, horizon 96, trained
    per series on that series' history, Adam/MSE) gets the linearly interpolated series both to
    train and as input. Degradation = MSE(missing) / MSE(complete) per model (standardised MSE
    over the held-out series); ``degradation_gap`` = DAM's minus DLinear's, paired by seed."""
    n_train = sizes(scale, smoke=8, small=48, full=200)
    n_eval = sizes(scale, smoke=2, small=8, full=32)
    dl_steps = sizes(scale, smoke=60, small=300, full=1000)
    seeds = _seeds(scale, seed)
    rows = []
    for i, s in enumerate(seeds):
        f = DAMForecaster(horizon=96, seed=s, **_train_sizes(scale)).fit(synthetic_corpus(n_train, s))
        evals = synthetic_corpus(n_eval, s + 11, held_out=True, length=2000 + 96, missing=0.0)
        res = {}
        for cond in ("complete", "missing"):
            res[f"dam_{cond}"] = float(holdout_mse(
                evals, 96, 2000, partial(_dam_forecast, f, cond == "missing", s + 13)).mean())
            res[f"dlinear_{cond}"] = float(holdout_mse(
                evals, 96, 2000, partial(_dlinear_forecast, cond == "missing", s + 13, s,
                                         dl_steps)).mean())
        row = {"seed": s, **res,
               "ratio_dam": res["dam_missing"] / res["dam_complete"],
               "ratio_dlinear": res["dlinear_missing"] / res["dlinear_complete"]}
        rows.append(row)
        progress((i + 1) / len(seeds), f"seed {s}")
    r_dam = [r["ratio_dam"] for r in rows]
    r_dl = [r["ratio_dlinear"] for r in rows]
    gap = (Estimate.difference(r_dam, r_dl, paired=True) if len(rows) >= 2
           else r_dam[0] - r_dl[0])
    return Measurement(
        metrics={"degradation_gap": gap, "ratio_dam": _summary(r_dam),
                 "ratio_dlinear": _summary(r_dl),
                 "mse_dam_complete": _summary([r["dam_complete"] for r in rows]),
                 "mse_dlinear_complete": _summary([r["dlinear_complete"] for r in rows])},
        figure=_figure("Degradation MSE(missing)/MSE(complete)", rows,
                       ["ratio_dam", "ratio_dlinear"], "ratio"),
        tables={"per_seed": rows},
        notes="A model whose error does not change has ratio 1; the claim reads the paired "
              "difference of the ratios. Absolute accuracy (mse_*_complete) is reported beside "
              "it: a robust but inaccurate model is visible there.",
    )


@claim(
    rule="dam_vs_snaive_co2 < 1 and dam_vs_snaive_sunspots < 1 and dam_vs_ets_co2 < 1.3 "
         "and dam_vs_ets_sunspots < 1.3",
    paper="Sec. 4: one DAM trained on 25 datasets transfers zero-shot to 8 held-out datasets, "
          "outperforming or closely matching specialised models (numbers not retrieved). Our "
          "operationalisation (spec): MASE below seasonal naive and within 1.3x of per-series ETS.",
    against=("seasonal naive and Holt-Winters ETS (statsmodels) fitted on each target's history; "
             "DLinear reported only"),
)
def zero_shot_real(scale: Scale, seed: int, progress) -> Measurement:
    """DAM trained on synthetic series + 12 macrodata columns + nile, never on the targets;
    zero-shot forecasts of co2 (104 weeks; missing weeks dropped for DAM, interpolated for the
    grid baselines) and sunspots (22 years). Same-run baselines fitted on each target's
    history: seasonal naive (m = 52 / 11), statsmodels Holt-Winters ExponentialSmoothing
    (additive trend and season), DLinear. Metric: MASE on the observed future points;
    ``dam_vs_*`` = MASE(DAM) / MASE(baseline) per training seed, interval over seeds."""
    import warnings

    from statsmodels.tsa.holtwinters import ExponentialSmoothing

    from iclr24.kits.time_series import (
        MACRODATA_COLUMNS,
        DLinearForecaster,
        load_co2,
        load_macrodata,
        load_nile,
        load_sunspots,
        mase,
        seasonal_naive,
    )

    targets = {"co2": (load_co2(), 104, 52), "sunspots": (load_sunspots(), 22, 11)}
    real = [load_macrodata(c) for c in MACRODATA_COLUMNS] + [load_nile()]
    n_syn = sizes(scale, smoke=8, small=48, full=200)
    dl_steps = sizes(scale, smoke=60, small=300, full=1000)
    base, splits = {}, {}
    for name, (s, h, m) in targets.items():
        hist, fut = s.split(h)
        y = hist.interpolated()
        pos = np.rint((fut.times - hist.times[0]) / s.step).astype(int) - (y.size)  # 0-based
        splits[name] = (hist, fut, y, pos, m)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ets = ExponentialSmoothing(y, trend="add", seasonal="add", seasonal_periods=m,
                                       initialization_method="estimated").fit()
        ctx = min(336, (y.size - h) // 2)
        dl = DLinearForecaster(context=ctx, horizon=h, steps=dl_steps, seed=seed).fit(y)
        fc = {"snaive": seasonal_naive(y, h, m), "ets": np.asarray(ets.forecast(h)),
              "dlinear": dl.predict(y[-ctx:])}
        base[name] = {k: mase(fut.values, v[pos], y, m) for k, v in fc.items()}
    rows, ratios = [], {f"dam_vs_{b}_{t}": [] for b in ("snaive", "ets") for t in targets}
    dam_mase = {t: [] for t in targets}
    for i, s in enumerate(_seeds(scale, seed)):
        corpus = synthetic_corpus(n_syn, s) + real
        f = DAMForecaster(horizon=104, seed=s, max_period=100 * 365.25,
                          **_train_sizes(scale)).fit(corpus)
        for name, (hist, fut, y, pos, m) in splits.items():
            pred = f.predict(hist, fut.times, n_draws=4)
            mm = mase(fut.values, pred, y, m)
            dam_mase[name].append(mm)
            for b in ("snaive", "ets"):
                ratios[f"dam_vs_{b}_{name}"].append(mm / base[name][b])
            rows.append({"seed": s, "series": name, "mase_dam": mm,
                         **{f"mase_{k}": v for k, v in base[name].items()}})
        progress((i + 1) / len(_seeds(scale, seed)), f"seed {s}")
    metrics = {k: _summary(v) for k, v in ratios.items()}
    for name in targets:
        metrics[f"mase_dam_{name}"] = _summary(dam_mase[name])
        for k, v in base[name].items():
            metrics[f"mase_{k}_{name}"] = v
    fig_rows = [{"series": t, "DAM": float(np.mean(dam_mase[t])),
                 **{k: v for k, v in base[t].items()}} for t in targets]
    return Measurement(
        metrics=metrics,
        figure=_figure("Zero-shot MASE (lower is better)", fig_rows,
                       ["DAM", "snaive", "ets", "dlinear"], "MASE"),
        tables={"per_seed": rows},
        notes="Zero-shot: no gradient step and no statistics from the target beyond the "
              "context DAM reads. The baselines are fitted on each target's full history. "
              "co2's 59 missing weeks are gaps for DAM and interpolated for the baselines.",
    )
