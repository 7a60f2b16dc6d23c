"""Persons with several records: the person column, its recognition, and the bound on what
one person contributes.

Differential privacy protects a *unit*: two tables that differ in one unit give almost the
same outputs. Without a person column the unit is **one record** (one row). A person with
``k`` rows then differs by ``k`` records, and is protected only at ``k`` times the budget
(group privacy: ``k ε`` for a pure ``ε``, ``k² ρ`` for a zCDP ``ρ``).

With a **person column** declared (spec ``{"id": "person"}``, ``fit_table(person="id")``,
``--person id``) and ``K = max_records_per_person``, the unit is **one person**:

1. *Bounding* (:func:`bound_records`), before any statistic is computed: at most ``K`` rows of
   each person are kept, chosen uniformly at random with the run's secret randomness
   (:mod:`pgm_dp.rng`, a CSPRNG by default); the other rows are left out, and the person column
   is never modelled nor written. Which rows of a person are kept depends only on that
   person's rows and on randomness independent of every other person (the relative order of
   disjoint sets of rows in a uniform permutation are independent), so adding or removing a
   person adds or removes at most ``K`` kept rows and leaves the other persons' kept rows
   distributed as before.
2. *Sensitivities times K*: every statistic is then computed on records of which one person
   owns at most ``K``. A count table changes by at most ``K`` in L1 and, as the ``K`` records
   may fall in one cell, by ``K`` in L2; a score that one record moves by at most ``Δ``
   moves by at most ``K Δ`` (triangle inequality over the ``K`` records). Each mechanism of
   the table path calibrates its noise to that sensitivity, so its guarantee holds per person
   (for the mechanism fixed by the other persons' kept rows, hence for the mixture over
   them); composition across steps is unchanged.

The number of persons and the number of rows of each are data-dependent: nothing here reports
them, nor how many rows bounding left out.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataValidationError, DomainError
from ..privacy.release import check_records_per_person
from ..rng import RngLike, as_generator
from .columns import MIN_ID_DISTINCT, missing_mask

__all__ = [
    "PERSON",
    "MAX_ROWS_PER_ID",
    "ID_WORDS",
    "ID_NAMES",
    "person_reason",
    "bound_records",
    "with_person",
    "privacy_unit",
]

#: The spec entry that declares a column the person column.
PERSON = "person"
#: Most rows per value, on average, of a column :func:`person_reason` recognises.
MAX_ROWS_PER_ID = 10
#: Words that make a column name read as an identifier (``id``, ``person_id``, ``hhID``,
#: panels' ``nr``, ``idcode``, ``persnr``).
ID_WORDS = frozenset(
    "id ids pid hid hhid uid caseid personid persid respid serial nr pnr persnr hhnr idcode "
    "idno ident".split()
)
#: Whole column names that read as the identifier of a person (or household, case).
ID_NAMES = frozenset(
    "person respondent household hh case subject patient participant individual".split()
)
_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def _reads_as_id(name: Hashable) -> bool:
    """Whether a column name has a word of :data:`ID_WORDS` (``id``, ``person_id``,
    ``hhID``, ``CaseId``...) or is one of :data:`ID_NAMES`."""
    if not isinstance(name, str):
        return False
    words = [w.lower() for w in _WORDS.findall(name)]
    return any(w in ID_WORDS for w in words) or name.strip().lower() in ID_NAMES


def person_reason(col: pd.Series, name: Hashable) -> str | None:
    """Why ``col`` looks like the identifier of a person with several rows, or ``None``:
    its name has a word of :data:`ID_WORDS` or is one of :data:`ID_NAMES`; its values are
    whole numbers or text (not booleans, not fractions), at least ``MIN_ID_DISTINCT``
    distinct values that repeat, at most :data:`MAX_ROWS_PER_ID` rows per value on average.
    A column of all-distinct values is a record identifier instead
    (:func:`~pgm_dp.prepare.columns.identifier_reason`). The name is required (our choice):
    without it, whole-number measurements of a small table (ages, incomes) have the same
    shape. The reason never states a count of the data."""
    if not _reads_as_id(name) or col.dtype.kind == "b":
        return None
    present = col[~missing_mask(col)]
    if present.dtype.kind in "iuf":
        x = present.to_numpy(dtype=np.float64)
        if not np.all(np.isfinite(x)) or not np.all(x == np.round(x)):
            return None
    distinct = present.astype(object).nunique()
    if distinct < MIN_ID_DISTINCT or distinct >= len(present):
        return None
    if len(present) > MAX_ROWS_PER_ID * distinct:
        return None
    return (
        "its name reads as an identifier and its values repeat, a few rows each: the rows of "
        "one person (or household) in a panel"
    )


def bound_records(df: pd.DataFrame, person: Hashable, k: int, rng: RngLike = None) -> pd.DataFrame:
    """At most ``k`` rows of each person of ``df`` (module docstring, step 1): a new frame
    of the kept rows in their order (the person column kept, for the preparation to leave
    out); ``df`` is not modified.
    The rows of a person are those with one value of column ``person``; rows whose person is
    missing count as one person (never more protected than they are). The kept rows are
    drawn uniformly at random with ``rng`` (``None``: the secure generator; a seed only for
    tests). Bounding a bounded table keeps every row."""
    if person not in df.columns:
        raise DataValidationError(f"the person column {person!r} is not in the data")
    k = check_records_per_person(k)
    col = df[person]
    ids = pd.factorize(col.astype(object), use_na_sentinel=True)[0]
    ids[missing_mask(col)] = -1
    order = as_generator(rng).permutation(len(df))
    rank = pd.Series(ids[order]).groupby(ids[order]).cumcount().to_numpy()
    keep = np.sort(order[rank < k])
    return df.iloc[keep].copy()


def privacy_unit(person: Hashable | None, k: int) -> str:
    """What a guarantee protects: ``"person (column 'id') with at most 3 records"``, or
    ``"record"`` without a person column."""
    if person is None:
        return "record"
    return f"person (column {person!r}) with at most {k} record{'s' if k > 1 else ''}"


def with_person(spec: Mapping | None, person: Hashable | None) -> tuple[Any, Hashable | None]:
    """``(spec, person column)``: ``person`` (a column name, or ``None``) declared in
    ``spec`` as :data:`PERSON`, or the column ``spec`` declares so; DomainError when
    ``spec`` declares another column the person, or gives ``person`` another entry."""
    items = spec.items() if isinstance(spec, Mapping) else ()
    declared = [c for c, v in items if isinstance(v, str) and v == PERSON]
    if person is None:
        return spec, declared[0] if len(declared) == 1 else None
    entry = dict(items).get(person, PERSON)
    if not (isinstance(entry, str) and entry == PERSON):
        raise DomainError(f"person={person!r}, but the spec declares it {entry!r}")
    if declared and declared != [person]:
        raise DomainError(f"person={person!r}, but the spec declares the person {declared}")
    return {**dict(items), person: PERSON}, person
