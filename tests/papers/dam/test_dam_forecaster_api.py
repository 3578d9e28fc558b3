"""The forecaster as a user meets it: the package docstring's example, short histories,
pandas Series with a DatetimeIndex in and out, and clear errors for bad inputs."""

import textwrap

import numpy as np
import pandas as pd
import pytest
import torch

import iclr24.papers.dam as dam_pkg
from iclr24.kits.time_series import TimeSeries
from iclr24.papers.dam import DAMForecaster, from_pandas, synthetic_corpus, to_days

KW = {"steps": 3, "batch_size": 4, "n_ctx": 32, "horizon": 24, "n_freqs": 12, "d_model": 16,
      "n_layers": 1, "n_heads": 2}


@pytest.fixture(scope="module")
def fitted():
    return DAMForecaster(**KW).fit(synthetic_corpus(3, 0, length=400))


def test_the_package_docstring_example_runs_as_written(one_torch_thread):
    code = textwrap.dedent(dam_pkg.__doc__.split("Usage", 1)[1].split("::\n", 1)[1])
    ns: dict = {}
    exec(compile(code, "iclr24.papers.dam.__doc__", "exec"), ns)  # noqa: S102 (our own docstring)
    assert ns["y"].shape == (96,) and np.all(np.isfinite(ns["y"]))
    assert isinstance(ns["forecast"], pd.Series)
    assert ns["forecast"].index.equals(ns["future"]) and ns["forecast"].notna().all()


@pytest.mark.parametrize("n", [1, 2, 5, 31])
def test_predict_reads_histories_shorter_than_n_ctx(fitted, n):
    s = TimeSeries(np.arange(n, dtype=float), np.sin(np.arange(n, dtype=float)), 1.0)
    p = fitted.predict(s, n + np.arange(3.0), n_draws=2)
    assert p.shape == (3,) and np.all(np.isfinite(p))
    # training accepts series shorter than n_ctx too
    short = [TimeSeries(np.arange(20.0), np.cos(np.arange(20.0)), 1.0)] * 2
    assert np.isfinite(DAMForecaster(**KW).fit(short).losses_).all()


def test_pandas_series_in_and_out_matches_the_time_series_path(fitted):
    idx = pd.date_range("2023-03-01", periods=200, freq="h")
    values = np.sin(np.arange(200) * 2 * np.pi / 24)
    values[[5, 50, 51]] = np.nan  # NaN = missing point, dropped
    ps = pd.Series(values, index=idx, name="load")
    ts = from_pandas(ps)
    assert len(ts) == 197 and ts.step == pytest.approx(1 / 24) and ts.name == "load"
    assert ts.times[1] - ts.times[0] == pytest.approx(1 / 24)
    assert ts.times[0] == pytest.approx((idx[0] - pd.Timestamp("1970-01-01")).days)
    future = pd.date_range(idx[-1], periods=13, freq="h")[1:]
    out = fitted.predict(ps, future, n_draws=2, seed=3)
    assert isinstance(out, pd.Series) and out.index.equals(future) and out.name == "load"
    direct = fitted.predict(ts, to_days(future), n_draws=2, seed=3)
    np.testing.assert_allclose(out.to_numpy(), direct)
    # fit accepts pandas series; a one-column DataFrame is the same series
    assert np.isfinite(DAMForecaster(**KW).fit([ps, ps.iloc[:150]]).losses_).all()
    assert np.array_equal(from_pandas(ps.to_frame()).values, ts.values)
    # tz-aware index: UTC days; calendar (monthly) index: median spacing as the step
    utc = from_pandas(pd.Series(np.arange(5.0), index=pd.date_range(
        "2024-01-01", periods=5, freq="D", tz="Europe/Paris")))
    assert utc.times[0] == pytest.approx(to_days(pd.DatetimeIndex(["2023-12-31 23:00"]))[0])
    monthly = from_pandas(pd.Series(np.arange(24.0), index=pd.date_range(
        "2020-01-01", periods=24, freq="MS")))
    assert 28 <= monthly.step <= 31
    assert from_pandas(ps, step=0.5).step == 0.5


def test_pandas_adapter_bad_inputs():
    idx = pd.date_range("2024-01-01", periods=10, freq="D")
    with pytest.raises(TypeError, match="DatetimeIndex"):
        from_pandas(pd.Series(np.arange(10.0)))
    with pytest.raises(TypeError, match="pandas Series"):
        from_pandas(np.arange(10.0))
    with pytest.raises(TypeError, match="numeric"):
        from_pandas(pd.Series(list("abcdefghij"), index=idx))
    with pytest.raises(ValueError, match="sorted increasing"):
        from_pandas(pd.Series(np.arange(10.0), index=idx[::-1]))
    with pytest.raises(ValueError, match="sorted increasing"):
        from_pandas(pd.Series(np.arange(3.0), index=idx[[0, 1, 1]]))
    with pytest.raises(ValueError, match="univariate"):
        from_pandas(pd.DataFrame({"a": np.arange(10.0), "b": np.arange(10.0)}, index=idx))
    with pytest.raises(ValueError, match="no observed"):
        from_pandas(pd.Series(np.full(10, np.nan), index=idx))
    with pytest.raises(TypeError, match="DatetimeIndex"):
        to_days(pd.Index([1, 2, 3]))


def test_forecaster_bad_inputs(fitted):
    s = synthetic_corpus(1, 4, length=300)[0]
    with pytest.raises(RuntimeError, match="fit"):
        DAMForecaster(**KW).predict(s, [1.0])
    with pytest.raises(TypeError, match="series must be a TimeSeries or a pandas Series"):
        fitted.predict(np.arange(10.0), [1.0])
    with pytest.raises(TypeError, match="times must be numeric days or a pandas DatetimeIndex"):
        fitted.predict(s, ["tomorrow"])
    with pytest.raises(TypeError, match="DatetimeIndex"):
        fitted.predict(s, pd.Index([1.0, 2.0]))
    with pytest.raises(ValueError, match="times must be a non-empty 1-D"):
        fitted.predict(s, [])
    with pytest.raises(ValueError, match="n_draws must be a positive int"):
        fitted.predict(s, [1.0], n_draws=0)
    with pytest.raises(TypeError, match="every element of series"):
        DAMForecaster(**KW).fit([s, np.arange(10.0)])
    with pytest.raises(ValueError, match="non-empty list"):
        DAMForecaster(**KW).fit(s)
    with pytest.raises(ValueError, match="at least 3 observed points"):
        DAMForecaster(**KW).fit([TimeSeries(np.arange(2.0), np.arange(2.0), 1.0)])
    with pytest.raises(ValueError, match="steps must be a positive int"):
        DAMForecaster(steps=0)


def test_untrained_forecaster_is_the_least_squares_fit_and_deterministic(fitted):
    corpus = synthetic_corpus(3, 0, length=400)
    a = DAMForecaster(**KW).initialise(corpus)
    b = DAMForecaster(**KW).initialise(corpus)
    s = synthetic_corpus(1, 9, length=300)[0]
    q = s.times[-1] + s.step * np.arange(1, 6)
    assert np.array_equal(a.predict(s, q, n_draws=2), b.predict(s, q, n_draws=2))
    assert a.losses_ == []
    assert all(int(torch.count_nonzero(p)) == 0 for p in (a.model_.head.weight, a.model_.head.bias))
