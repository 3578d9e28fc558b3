"""Real series that ship inside the statsmodels wheel, as :class:`TimeSeries` in days.

All loaders read ``statsmodels.datasets.<name>.load_pandas()``, which opens a CSV inside the
installed package: nothing is downloaded (``statsmodels.datasets.get_rdataset`` would download
and is never used). Missing observations (co2 has NaN weeks) are kept as gaps in the time axis.
Timestamps are days since 1970-01-01; yearly data sits on 1 July of each year, monthly data on
the 15th, quarterly data mid-quarter, so every series shares one real time axis.
"""

from __future__ import annotations

import numpy as np

from .series import TimeSeries

__all__ = [
    "DAYS_PER_YEAR",
    "MACRODATA_COLUMNS",
    "load_co2",
    "load_elnino",
    "load_macrodata",
    "load_nile",
    "load_sunspots",
]

DAYS_PER_YEAR = 365.25
MACRODATA_COLUMNS = ("realgdp", "realcons", "realinv", "realgovt", "realdpi", "cpi", "m1",
                     "tbilrate", "unemp", "pop", "infl", "realint")
_EPOCH = np.datetime64("1970-01-01", "D")


def _days(dates) -> np.ndarray:
    d = np.asarray(dates, dtype="datetime64[D]")
    return (d - _EPOCH).astype(np.float64)


def _year_days(years) -> np.ndarray:
    return (np.asarray(years, dtype=np.float64) + 0.5 - 1970.0) * DAYS_PER_YEAR


def _series(times, values, step: float, name: str) -> TimeSeries:
    t = np.asarray(times, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    keep = np.isfinite(v)
    return TimeSeries(t[keep], v[keep], step, name)


def load_co2() -> TimeSeries:
    """Mauna Loa weekly CO2 (ppm), 1958-2001, 2284 weeks of which 59 are missing (gaps)."""
    from statsmodels.datasets import co2

    df = co2.load_pandas().data
    return _series(_days(df.index.values), df["co2"].values, 7.0, "co2")


def load_sunspots() -> TimeSeries:
    """Yearly mean sunspot activity, 1700-2008 (309 years)."""
    from statsmodels.datasets import sunspots

    df = sunspots.load_pandas().data
    return _series(_year_days(df["YEAR"].values), df["SUNACTIVITY"].values, DAYS_PER_YEAR,
                   "sunspots")


def load_nile() -> TimeSeries:
    """Yearly Nile flow volume at Aswan, 1871-1970 (100 years)."""
    from statsmodels.datasets import nile

    df = nile.load_pandas().data
    return _series(_year_days(df["year"].values), df["volume"].values, DAYS_PER_YEAR, "nile")


def load_elnino() -> TimeSeries:
    """Monthly sea-surface temperature (El Nino region), 1950-2010, reshaped wide -> long."""
    from statsmodels.datasets import elnino

    df = elnino.load_pandas().data
    months = list(df.columns[1:])
    if len(months) != 12:
        raise RuntimeError(f"unexpected elnino layout: columns {list(df.columns)}")
    dates, vals = [], []
    for _, row in df.iterrows():
        year = int(row["YEAR"])
        for m, col in enumerate(months, start=1):
            dates.append(np.datetime64(f"{year:04d}-{m:02d}-15"))
            vals.append(row[col])
    return _series(_days(dates), vals, DAYS_PER_YEAR / 12, "elnino")


def load_macrodata(column: str = "realgdp") -> TimeSeries:
    """One column of the quarterly US macro data, 1959Q1-2009Q3 (203 quarters)."""
    from statsmodels.datasets import macrodata

    if column not in MACRODATA_COLUMNS:
        raise ValueError(f"column must be one of {', '.join(MACRODATA_COLUMNS)}; got {column!r}")
    df = macrodata.load_pandas().data
    years = df["year"].values + (df["quarter"].values - 0.5) / 4.0 - 0.5
    return _series(_year_days(years), df[column].values, DAYS_PER_YEAR / 4, f"macrodata.{column}")
