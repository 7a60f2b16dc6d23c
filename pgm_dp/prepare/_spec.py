"""The user's declarations behind :func:`pgm_dp.prepare.prepare_plan`: the global options
and the ``spec`` entry of each column, checked before any value is read (each column is
then drafted from its entry and its values in :mod:`pgm_dp.prepare.columns`)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..errors import DataValidationError, DomainError, PrivacyParameterError
from ..privacy.release import check_records_per_person
from .binning import MAX_GRID
from .columns import NUMERIC_KEYS, count_arg
from .persons import PERSON

__all__ = [
    "Options",
    "make_options",
    "check_frame",
    "parse_spec",
    "parse_entry",
    "is_drop",
    "DROP_FROM_DATA",
    "person_of",
]

_SPEC_KEYS = {
    "categories",
    "bins",
    "bounds",
    "n_bins",
    "quantiles",
    "missing",
    "other",
    "clip",
    "from_data",
    "integer",
}


@dataclass(frozen=True)
class Options:
    """The global options of :func:`pgm_dp.prepare.prepare_plan`, checked."""

    categories: str | None
    bounds: str | None
    missing: bool | str
    other: bool
    drop_identifiers: bool
    n_bins: int
    grid: int
    quantile_share: float
    threshold: float
    max_states: int
    identifier_fraction: float
    max_records_per_person: int = 1


def make_options(categories, bounds, missing, other, drop_identifiers, kw) -> Options:
    """Check the global options of :func:`pgm_dp.prepare.prepare_plan` (``kw``: the numeric
    ones by name)."""
    if categories not in (None, "data"):
        raise DomainError(f"categories must be None or 'data', got {categories!r}")
    if bounds not in (None, "data"):
        raise DomainError(f"bounds must be None or 'data', got {bounds!r}")
    if missing not in (True, False, "data"):
        raise DomainError(f"missing must be True, False or 'data', got {missing!r}")
    for name, v in (("other", other), ("drop_identifiers", drop_identifiers)):
        if not isinstance(v, bool):
            raise DomainError(f"{name} must be True or False, got {v!r}")
    share, thr, frac = kw["quantile_share"], kw["threshold"], kw["identifier_fraction"]
    if isinstance(share, bool) or not (isinstance(share, float | int) and 0 < share < 1):
        raise PrivacyParameterError(f"quantile_share must be in (0, 1), got {share!r}")
    if isinstance(thr, bool) or not (
        isinstance(thr, float | int) and math.isfinite(thr) and thr >= 0
    ):
        raise DomainError(f"threshold must be a finite number >= 0, got {thr!r}")
    if isinstance(frac, bool) or not (isinstance(frac, float | int) and 0 < frac <= 1):
        raise DomainError(f"identifier_fraction must be in (0, 1], got {frac!r}")
    max_states = count_arg(kw["max_states"], "max_states", 1, 10**7)
    return Options(
        categories,
        bounds,
        missing,
        other,
        drop_identifiers,
        n_bins=count_arg(kw["n_bins"], "n_bins", 1, 10**7),
        grid=count_arg(kw["grid"], "grid", 2, MAX_GRID),
        quantile_share=float(share),
        threshold=float(thr),
        max_states=max_states,
        identifier_fraction=float(frac),
        max_records_per_person=check_records_per_person(kw.get("max_records_per_person", 1)),
    )


def check_frame(df: Any) -> pd.DataFrame:
    """``df`` if it is a DataFrame with distinct column names, each a string or an integer
    (what a saved plan, fit and spec hold: JSON), else DataValidationError."""
    if not isinstance(df, pd.DataFrame):
        raise DataValidationError(f"data must be a pandas DataFrame, got {type(df).__name__}")
    odd = [c for c in df.columns if isinstance(c, bool) or not isinstance(c, str | int)]
    if odd:
        raise DataValidationError(
            f"column names must be strings or integers (plans and fits are saved as JSON), "
            f"got {odd[:5]}: rename them, e.g. df.columns = [str(c) for c in df.columns]"
        )
    repeated = sorted({str(c) for c in df.columns[df.columns.duplicated()]})
    if repeated:
        raise DataValidationError(f"data have more than one column named {repeated}")
    return df


def parse_spec(df: pd.DataFrame, spec: Any) -> dict:
    """``{column: entry}`` of a user's spec (see :func:`parse_entry`), columns checked."""
    if spec is None:
        return {}
    if not isinstance(spec, Mapping):
        raise DomainError(f"spec must be a dict {{column: declaration}}, got {type(spec).__name__}")
    unknown = [k for k in spec if k not in df.columns]
    if unknown:
        raise DataValidationError(f"spec names columns not in the data: {unknown}")
    entries = {k: parse_entry(k, v) for k, v in spec.items()}
    person_of(entries)
    return entries


def person_of(entries: Mapping) -> Hashable | None:
    """The column that parsed spec ``entries`` declare the person (``"person"``), or
    ``None``; DomainError when they declare more than one."""
    persons = [k for k, e in entries.items() if e.get(PERSON)]
    if len(persons) > 1:
        raise DomainError(f"the spec declares more than one person column: {persons}")
    return persons[0] if persons else None


#: The spec entry of a column dropped as identifier-like when the spec was written: the
#: decision was read from the data without privacy, and a plan made from it says so.
DROP_FROM_DATA = {"drop": True, "from_data": True}


def is_drop(raw: Any) -> bool:
    """Whether a spec entry drops its column: ``"drop"`` or :data:`DROP_FROM_DATA`."""
    return (isinstance(raw, str) and raw == "drop") or (
        isinstance(raw, Mapping) and raw.get("drop") is True
    )


def _is_bool(v: Any) -> bool:
    return v is True or v is False


def parse_entry(name: Hashable, raw: Any) -> dict:
    """One ``spec`` entry as a dict of known keys (a list means declared categories;
    ``"drop"``, or ``{"drop": true, "from_data": true}`` for a drop decided from the data)."""
    if isinstance(raw, str) and raw == "drop":
        return {"drop": True}
    if isinstance(raw, str) and raw == PERSON:
        return {PERSON: True}
    if isinstance(raw, Mapping) and "drop" in raw:
        from_data = raw.get("from_data", False)
        if raw["drop"] is not True or set(raw) - {"drop", "from_data"} or not _is_bool(from_data):
            raise DomainError(
                f'spec of {name!r}: a drop is "drop" or {{"drop": true, "from_data": true}}, '
                f"got {raw!r}"
            )
        return {"drop": True, "from_data": from_data is True}
    if isinstance(raw, list | tuple):
        return {"categories": tuple(raw)}
    if not isinstance(raw, Mapping):
        raise DomainError(
            f"spec of {name!r} must be a list of categories, a dict, 'drop' or 'person', "
            f"got {raw!r}"
        )
    unknown = set(raw) - _SPEC_KEYS
    if unknown:
        raise DomainError(
            f"spec of {name!r} has unknown keys {sorted(unknown)}; known: {sorted(_SPEC_KEYS)}"
        )
    entry = dict(raw)
    if "categories" in entry and set(entry) & NUMERIC_KEYS:
        raise DomainError(f"spec of {name!r} mixes categories with numeric bins")
    if "bins" in entry and set(entry) & {"bounds", "n_bins", "quantiles"}:
        raise DomainError(f"spec of {name!r}: give bins, or bounds with n_bins or quantiles")
    if "n_bins" in entry and "quantiles" in entry:
        raise DomainError(f"spec of {name!r}: give n_bins (equal widths) or quantiles, not both")
    return entry
