"""DAM claims: HSR vs a fixed window, robustness to missing history, zero-shot real series."""

from __future__ import annotations

from functools import partial

import numpy as np

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes

from .evaluation import holdout_mse, mean_forecast, seasonal_naive_backtest
from .forecaster import DAMForecaster
from .synthetic import synthetic_corpus


def _seeds(scale: Scale, seed: int) -> list[int]:
    return [seed + 1000 * i for i in range(sizes(scale, smoke=1, small=3, full=5))]


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
    rule="mse_ratio < 0.85 and hsr_over_mean < 1",
    control="window_over_mean < 1",
    paper="Sec. 3/4: HSR gives DAM 'an efficient global perspective' of long histories at a "
          "fixed context budget; DAM excels at (very-)long-term forecasting. The ablation "
          "numbers were not retrieved; our threshold 0.85 is the spec's, fixed before running.",
    against=("the same DAM reading the last 128 regular points instead of HSR, same data, steps "
             "and seeds (baseline); forecasting the mean of the 4 096-step look-back (the "
             "input-ignoring null arm, measured on the same series)"),
)
def hsr_vs_window(scale: Scale, seed: int, progress) -> Measurement:
    """Held-out synthetic series (period band unseen in training; daily or hourly, whose
    longest period spans more than n_ctx samples), 720-step horizon, standardised MSE. Two
    DAMs with identical architecture, data and steps: one reads an HSR context (look-back up to
    4 096 steps), the other the last n_ctx regular points; both read n_ctx = 128 points.
    ``mse_ratio`` = MSE(HSR) / MSE(window), per training seed, then an interval over seeds.

    Rule and control (rewritten after the audit, before running them): an audit found the
    window arm worse than forecasting the look-back mean at smoke (standardised MSE 1.67 vs
    1.15), so "HSR beats the window" could hold for a forecaster no better than a constant, and
    the mean forecast itself put in HSR's place would pass ``mse_ratio < 0.85``. Now the rule
    also asks HSR to beat the mean forecast (``hsr_over_mean < 1``, paired per seed), and the
    control asks the window baseline to beat it too (``window_over_mean < 1``): a win over a
    baseline that is worse than a constant says nothing, so then the verdict is inconclusive.
    The mean forecast put in HSR's place has ``hsr_over_mean`` = 1 and cannot pass."""
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
        # null arm: the mean of the 4 096-step look-back, flat over the horizon
        ref = holdout_mse(evals, 720, 4096, lambda h, fu: np.full(len(fu), h.values[-4096:].mean()))
        mh, mw, mc = float(res["hsr"].mean()), float(res["window"].mean()), float(ref.mean())
        ratios.append(mh / mw)  # mse_ratio = MSE(HSR) / MSE(window), per seed
        m_h.append(mh), m_w.append(mw), m_c.append(mc)
        rows.append({"seed": s, "mse_hsr": mh, "mse_window": mw, "mse_context_mean": mc,
                     "ratio": mh / mw})
    return Measurement(
        metrics={"mse_ratio": seed_metric(ratios),
                 "hsr_over_mean": seed_metric([a / b for a, b in zip(m_h, m_c)]),
                 "window_over_mean": seed_metric([a / b for a, b in zip(m_w, m_c)]),
                 "mean_over_window": seed_metric([a / b for a, b in zip(m_c, m_w)]),
                 "mse_hsr": seed_metric(m_h), "mse_window": seed_metric(m_w),
                 "mse_context_mean": seed_metric(m_c),
                 "n_eval_series": n_eval, "n_seeds": len(seeds)},
        figure=_figure("720-step standardised MSE per seed", rows,
                       ["mse_hsr", "mse_window", "mse_context_mean"], "MSE (standardised)"),
        tables={"per_seed": rows},
        notes="Scaled down: synthetic multi-domain corpus instead of 25 datasets; 32-wide "
              "2-layer DAM, batch 16, a few hundred CPU steps (the paper trains on GPUs). "
              "mse_context_mean is the MSE of forecasting the mean of the 4 096-step look-back "
              "(null arm); *_over_mean are per-seed MSE ratios to it.",
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


def _mean_forecast(missing: bool, seed: int, h, fu):
    return mean_forecast(_thin(h, seed) if missing else h, len(fu))


def _snaive_forecast(missing: bool, seed: int, horizon: int, h, fu):
    hh = _thin(h, seed) if missing else h
    pred = seasonal_naive_backtest(hh, horizon)
    k = np.rint((fu.times - hh.times[-1]) / hh.step).astype(int)  # 1..horizon
    return pred[k - 1]


@claim(
    rule="degradation_gap < 0 and dam_over_trivial < 1",
    control="dlinear_over_trivial < 1",
    paper="Abstract/Sec. 4: DAM is 'robust to missing and irregularly sampled data by design' "
          "(it reads (time, value) pairs); grid models need imputed input. No number retrieved; "
          "the spec's test: DAM's MSE(missing)/MSE(complete) below DLinear's.",
    against=("DLinear (context 336) trained per series on the interpolated history "
             "(baseline); the history-mean forecast and a backtested seasonal-naive forecast "
             "(null arms: the mean forecast barely reads its input, so its degradation ratio "
             "is ~1), all on the same series and the same 50 % deletion"),
)
def irregular_robustness(scale: Scale, seed: int, progress) -> Measurement:
    """Remove 50 % of the history points at random. DAM (trained once on the synthetic corpus,
    horizon 96) reads the remaining points natively; DLinear (context 336, horizon 96, trained
    per series on that series' history, Adam/MSE) gets the linearly interpolated series both to
    train and as input. Degradation = MSE(missing) / MSE(complete) per model (standardised MSE
    over the held-out series, always with the complete history's std, so the scale is the
    same in both conditions); ``degradation_gap`` = DAM's minus DLinear's, paired by seed.

    Rule and control (rewritten after the audit, before running them): a forecaster that
    ignores its input has a degradation ratio of exactly 1 and "beats" any baseline that
    degrades at all, and the audit found DAM's complete-data MSE (0.93) far above DLinear's
    (0.39), i.e. robustness without accuracy. So the rule now also asks DAM to be accurate on
    complete data: its MSE below that of the best trivial forecast (``dam_over_trivial < 1``,
    per seed against the better on average of the history-mean forecast and the seasonal-naive
    forecast whose lag in {1 step, 1 day, 1 week} is chosen on the history's own last 96
    steps). The mean forecast, the null arm, put in DAM's place has ``dam_over_trivial`` >= 1
    and cannot pass. Control: DLinear beats the same trivial forecast on complete data
    (``dlinear_over_trivial < 1``); a baseline worse than a constant makes a lower degradation
    ratio than it meaningless, so then the verdict is inconclusive."""
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
            miss = cond == "missing"
            arms = {"dam": partial(_dam_forecast, f, miss, s + 13),
                    "dlinear": partial(_dlinear_forecast, miss, s + 13, s, dl_steps),
                    "mean": partial(_mean_forecast, miss, s + 13),
                    "snaive": partial(_snaive_forecast, miss, s + 13, 96)}
            for arm, fc in arms.items():
                res[f"{arm}_{cond}"] = float(holdout_mse(evals, 96, 2000, fc).mean())
        trivial = min(res["mean_complete"], res["snaive_complete"])  # the stronger null, per seed
        row = {"seed": s, **res, "trivial_complete": trivial,
               # degradation = MSE(missing) / MSE(complete), per arm
               **{f"ratio_{a}": res[f"{a}_missing"] / res[f"{a}_complete"]
                  for a in ("dam", "dlinear", "mean", "snaive")}}
        rows.append(row)
        progress((i + 1) / len(seeds), f"seed {s}")

    def col(k: str) -> list[float]:
        return [r[k] for r in rows]

    return Measurement(
        metrics={"degradation_gap": seed_difference(col("ratio_dam"), col("ratio_dlinear")),
                 "dam_over_trivial": seed_metric([r["dam_complete"] / r["trivial_complete"]
                                                  for r in rows]),
                 "dlinear_over_trivial": seed_metric([r["dlinear_complete"]
                                                      / r["trivial_complete"] for r in rows]),
                 # the null arm (history mean) in DAM's place: what the rule would read
                 "null_degradation_gap": seed_difference(col("ratio_mean"),
                                                         col("ratio_dlinear")),
                 "null_over_trivial": seed_metric([r["mean_complete"] / r["trivial_complete"]
                                                   for r in rows]),
                 "ratio_dam": seed_metric(col("ratio_dam")),
                 "ratio_dlinear": seed_metric(col("ratio_dlinear")),
                 "ratio_mean": seed_metric(col("ratio_mean")),
                 "ratio_snaive": seed_metric(col("ratio_snaive")),
                 **{f"mse_{a}_{c}": seed_metric(col(f"{a}_{c}"))
                    for a in ("dam", "dlinear", "mean", "snaive")
                    for c in ("complete", "missing")}},
        figure=_figure("Degradation MSE(missing)/MSE(complete)", rows,
                       ["ratio_dam", "ratio_dlinear", "ratio_mean"], "ratio"),
        tables={"per_seed": rows},
        notes="A model whose error does not change has ratio 1; the claim reads the paired "
              "difference of the ratios and, since a constant forecast has ratio ~1, DAM's "
              "complete-data MSE against the best trivial forecast (history mean or "
              "backtested seasonal naive). Missing: 50 % of the history removed at random, "
              "the same points for every arm; grid arms get the linear interpolation.",
    )


_TARGETS = ("co2", "sunspots")


def _rule_terms(arm: str) -> str:
    """The main rule with ``arm``'s ratios in DAM's place (for the null arms' control)."""
    return " and ".join(f"{arm}_vs_{b}_{t} < {lvl}" for b, lvl in (("snaive", 1), ("ets", 1.3))
                        for t in _TARGETS)


@claim(
    rule=_rule_terms("dam"),
    control=f"not ({_rule_terms('mean')}) and not ({_rule_terms('untrained')})",
    paper="Sec. 4: one DAM trained on 25 datasets transfers zero-shot to 8 held-out datasets, "
          "outperforming or closely matching specialised models (numbers not retrieved). Our "
          "operationalisation (spec): MASE below seasonal naive and within 1.3x of per-series ETS.",
    against=("seasonal naive and Holt-Winters ETS (statsmodels) fitted on each target's history "
             "(baselines); the history-mean forecast (input-ignoring null arm) and the same DAM "
             "untrained, i.e. its least-squares theta_0 alone (null arm); DLinear reported only"),
)
def zero_shot_real(scale: Scale, seed: int, progress) -> Measurement:
    """DAM trained on synthetic series + 12 macrodata columns + nile, never on the targets;
    zero-shot forecasts of co2 (104 weeks; missing weeks dropped for DAM, interpolated for the
    grid baselines) and sunspots (22 years). Same-run baselines fitted on each target's
    history: seasonal naive (m = 52 / 11), statsmodels Holt-Winters ExponentialSmoothing
    (additive trend and season), DLinear. Metric: MASE on the observed future points;
    ``dam_vs_*`` = MASE(DAM) / MASE(baseline) per training seed, interval over seeds.

    Null arms (added after the audit, with the control, before running them): the mean of the
    target's observed history, flat over the horizon (``mean_vs_*``, one number: it has no
    seed), and the same DAM at initialisation (built on the same corpus, zero head, so it
    forecasts the ridge least-squares theta_0 of the HSR context; ``untrained_vs_*`` per seed).
    Control: neither null arm passes the rule (each fails at least one of its four terms over
    its whole interval); if one does, the rule cannot tell a trained foundation model from a
    constant or from a least-squares sinusoid fit, and the verdict is inconclusive."""
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
              "dlinear": dl.predict(y[-ctx:]),
              "mean": mean_forecast(hist, h)}  # null arm: the observed history's mean
        base[name] = {k: mase(fut.values, v[pos], y, m) for k, v in fc.items()}
    rows = []
    ratios = {f"{a}_vs_{b}_{t}": [] for a in ("dam", "untrained") for b in ("snaive", "ets")
              for t in targets}
    dam_mase = {f"{a}_{t}": [] for a in ("dam", "untrained") for t in targets}
    seeds = _seeds(scale, seed)
    for i, s in enumerate(seeds):
        corpus = synthetic_corpus(n_syn, s) + real
        kw = {"horizon": 104, "seed": s, "max_period": 100 * 365.25, **_train_sizes(scale)}
        models = {"dam": DAMForecaster(**kw).fit(corpus),
                  "untrained": DAMForecaster(**kw).initialise(corpus)}
        for name, (hist, fut, y, pos, m) in splits.items():
            row = {"seed": s, "series": name}
            for arm, f in models.items():
                pred = f.predict(hist, fut.times, n_draws=4)
                mm = mase(fut.values, pred, y, m)
                dam_mase[f"{arm}_{name}"].append(mm)
                row[f"mase_{arm}"] = mm
                for b in ("snaive", "ets"):
                    ratios[f"{arm}_vs_{b}_{name}"].append(mm / base[name][b])
            rows.append({**row, **{f"mase_{k}": v for k, v in base[name].items()}})
        progress((i + 1) / len(seeds), f"seed {s}")
    metrics = {k: seed_metric(v) for k, v in ratios.items()}
    for name in targets:
        for b in ("snaive", "ets"):
            metrics[f"mean_vs_{b}_{name}"] = base[name]["mean"] / base[name][b]
        for arm in ("dam", "untrained"):
            metrics[f"mase_{arm}_{name}"] = seed_metric(dam_mase[f"{arm}_{name}"])
        for k, v in base[name].items():
            metrics[f"mase_{k}_{name}"] = v
    fig_rows = [{"series": t, "DAM": float(np.mean(dam_mase[f"dam_{t}"])),
                 "untrained": float(np.mean(dam_mase[f"untrained_{t}"])),
                 **{k: v for k, v in base[t].items()}} for t in targets]
    return Measurement(
        metrics=metrics,
        figure=_figure("Zero-shot MASE (lower is better)", fig_rows,
                       ["DAM", "untrained", "snaive", "ets", "dlinear", "mean"], "MASE"),
        tables={"per_seed": rows},
        notes="Zero-shot: no gradient step and no statistics from the target beyond the "
              "context DAM reads. The baselines are fitted on each target's full history. "
              "co2's 59 missing weeks are gaps for DAM and interpolated for the baselines. "
              "Null arms: mean = the observed history's mean (flat); untrained = the same DAM "
              "before training (its forecast is the ridge least-squares theta_0 of the context).",
    )
