"""The user's declarations behind :func:`pgm_dp.prepare.prepare_plan`: global options, the
``spec`` of each column, and each column checked against the data (a
:class:`~pgm_dp.prepare.columns.ColumnPlan` draft) before any budget is spent."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from ..domain import Domain
from ..errors import DataValidationError, DomainError, PrivacyParameterError
from ..privacy.release import check_records_per_person
from .binning import MAX_GRID, check_bounds, check_edges, uniform_edges
from .columns import RESERVED, ColumnPlan, missing_mask, numeric_values
from .persons import PERSON

__all__ = [
    "Options",
    "make_options",
    "count_arg",
    "check_frame",
    "parse_spec",
    "parse_entry",
    "is_drop",
    "DROP_FROM_DATA",
    "is_declared",
    "person_of",
    "Draft",
    "draft_column",
    "flag_states",
    "is_numeric_entry",
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
#: The keys of a numeric (binned) column's entry.
_NUMERIC_KEYS = {"bins", "bounds", "n_bins", "quantiles", "integer"}


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


def count_arg(x: Any, what: str, low: int, high: int) -> int:
    if isinstance(x, bool) or not isinstance(x, int | np.integer) or not low <= x <= high:
        raise DomainError(f"{what} must be an integer in [{low}, {high}], got {x!r}")
    return int(x)


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
    if "categories" in entry and set(entry) & _NUMERIC_KEYS:
        raise DomainError(f"spec of {name!r} mixes categories with numeric bins")
    if "bins" in entry and set(entry) & {"bounds", "n_bins", "quantiles"}:
        raise DomainError(f"spec of {name!r}: give bins, or bounds with n_bins or quantiles")
    if "n_bins" in entry and "quantiles" in entry:
        raise DomainError(f"spec of {name!r}: give n_bins (equal widths) or quantiles, not both")
    return entry


def _flag(entry: dict, key: str, default: Any, name: Hashable, allowed: tuple) -> Any:
    v = entry.get(key, default)
    if not any(v is a or (isinstance(a, str) and v == a) for a in allowed):
        raise DomainError(f"{key} of {name!r} must be one of {allowed}, got {v!r}")
    return v


def _check_categories(cats: tuple, name: Hashable, max_states: int) -> tuple:
    if not cats:
        raise DomainError(f"column {name!r} has no categories")
    if len(cats) > max_states:
        raise DomainError(
            f"column {name!r} has {len(cats):,} categories, above max_states={max_states:,}; "
            "group them or raise max_states"
        )
    clash = [c for c in cats if isinstance(c, str) and c in RESERVED]
    if clash:
        raise DomainError(f"categories of {name!r} use the reserved labels {clash}")
    Domain([name], [len(cats)], [cats])  # distinct labels of supported types, or DomainError
    return cats


def is_declared(entry: dict) -> bool:
    """Whether a spec entry fixes the column's states from public knowledge (declared
    categories, bins or bounds), so that it is exempt from the identifier check."""
    cats, bounds = entry.get("categories"), entry.get("bounds")
    return (
        (cats is not None and not isinstance(cats, str))
        or "bins" in entry
        or (bounds is not None and not isinstance(bounds, str))
    )


@dataclass(frozen=True)
class Draft:
    """A column checked against the data. ``values``/``bounds``/``n_bins`` are set when its
    edges are still to be drawn at private quantiles (``plan`` then has the single bin
    ``[lo, hi]``)."""

    plan: ColumnPlan
    values: np.ndarray | None = None
    bounds: tuple[float, float] | None = None
    n_bins: int = 0


def draft_column(name: Hashable, col: pd.Series, entry: dict, opts: Any, reads: list) -> Draft:
    """Check one column against its spec ``entry`` and the global options ``opts``
    (``categories``, ``bounds``, ``missing``, ``other``, ``n_bins``, ``max_states``);
    append to ``reads`` what is read from the data without privacy. Every value is checked
    here, so that nothing fails once the budget is being spent."""
    missing = _flag(entry, "missing", opts.missing, name, (True, False, "data"))
    other = _flag(entry, "other", opts.other, name, (True, False))
    clip = _flag(entry, "clip", True, name, (True, False))
    if missing == "data":
        missing = bool(missing_mask(col).any())
        reads.append(f"whether {name!r} has missing values (missing='data')")
    from_data = _flag(entry, "from_data", False, name, (True, False))
    if is_numeric_entry(entry, col):
        draft = _numeric(name, col, entry, opts, reads, missing, clip)
        integer = _integer(name, col, entry, opts, reads)
        draft = replace(draft, plan=replace(draft.plan, integer=integer))
    else:
        cats, source = _categories(name, col, entry, opts, reads)
        draft = Draft(ColumnPlan.categorical(name, cats, source, missing, other))
    draft.plan.encode_full(col)  # every value checked now, before any budget is spent
    if from_data:
        what = "bins or bounds" if draft.plan.kind == "numeric" else "categories"
        reads.append(f'the {what} of {name!r} (marked "from_data" in the spec)')
        draft = replace(draft, plan=replace(draft.plan, source="spec, read from data"))
    return draft


def flag_states(col: pd.Series) -> tuple | None:
    """The states of an undeclared flag: ``(False, True)`` when the column's non-missing
    values are all booleans, ``(0, 1)`` when they are all the numbers 0 and 1 (a 0/1 column,
    integers or, with missing cells, floats); ``None`` otherwise (also when every cell is
    missing). Decided from the values, not the pandas dtype, so one missing cell does not
    change it; reading them is a non-private read, which the caller records."""
    present = col[~missing_mask(col)]
    if present.size == 0:
        return None
    if col.dtype.kind == "b" or present.map(type).isin([bool, np.bool_]).all():
        return (False, True)
    if col.dtype.kind in "iuf" and present.isin([0, 1]).all():
        return (0, 1)
    return None


def is_numeric_entry(entry: dict, col: pd.Series) -> bool:
    """Whether a column is binned: numeric keys in its entry, or numbers, not a flag, not
    declared as categories."""
    return bool(set(entry) & _NUMERIC_KEYS) or (
        "categories" not in entry and col.dtype.kind in "iuf" and flag_states(col) is None
    )


def _categories(name, col, entry, opts, reads) -> tuple[tuple, str]:
    cats = entry.get("categories")
    if cats is None:
        flag = flag_states(col)
        if flag is not None:
            reads.append(f"that {name!r} is a flag {list(flag)} (its values)")
            return flag, "flag (data, non-private)"
        if opts.categories != "data":
            raise DataValidationError(
                f"column {name!r} needs declared categories: spec={{{name!r}: [...]}}, or "
                "categories='data', which reads them from the data without privacy"
            )
        cats = "data"
    if isinstance(cats, str):
        if cats != "data":
            raise DomainError(f"categories of {name!r} must be a list or 'data', got {cats!r}")
        uniq = [
            v.item() if isinstance(v, np.generic) else v for v in pd.unique(col[~missing_mask(col)])
        ]
        try:
            cats = tuple(sorted(uniq))
        except TypeError:
            cats = tuple(sorted(uniq, key=str))
        reads.append(f"the {len(cats)} categories of {name!r} (categories='data')")
        return _check_categories(cats, name, opts.max_states), "data (non-private)"
    if not isinstance(cats, list | tuple):
        raise DomainError(f"categories of {name!r} must be a list, got {cats!r}")
    return _check_categories(tuple(cats), name, opts.max_states), "declared"


def _integer(name, col, entry, opts, reads) -> bool:
    """Whether a numeric column holds whole numbers: as declared (``"integer"``); else,
    where its bounds are read from the data anyway (``bounds='data'``), read with them (a
    non-private read, listed); else not."""
    declared = _flag(entry, "integer", None, name, (True, False, None))
    if declared is not None:
        return declared
    bounds = None if "bins" in entry else entry.get("bounds", opts.bounds)
    if not (isinstance(bounds, str) and bounds == "data"):
        return False
    x, _ = numeric_values(col, name)
    whole = bool(x.size) and bool(np.all(x == np.round(x)))
    if whole:
        reads.append(f"that {name!r} holds whole numbers (with its bounds, bounds='data')")
    return whole


def _numeric(name, col, entry, opts, reads, missing, clip) -> Draft:
    x, _ = numeric_values(col, name)
    if "bins" in entry:
        edges = check_edges(entry["bins"], name, opts.max_states)
        return Draft(ColumnPlan.numeric(name, edges, "public bins", missing, clip))
    bounds = entry.get("bounds", opts.bounds)
    if bounds is None:
        raise DataValidationError(
            f"numeric column {name!r} needs public bounds: spec={{{name!r}: {{'bounds': [lo, "
            "hi]}} or bins; bounds='data' reads them from the data without privacy"
        )
    if isinstance(bounds, str) and bounds == "data":
        if x.size == 0 or not np.isfinite(x).all():
            raise DataValidationError(f"bounds='data': column {name!r} has no finite bounds")
        lo, hi = float(x.min()), float(x.max())
        hi = hi if hi > lo else lo + 1.0
        if not math.isfinite(hi - lo):
            raise DataValidationError(f"bounds='data': column {name!r} spans too wide a range")
        reads.append(f"the bounds of {name!r} (bounds='data')")
    else:
        lo, hi = check_bounds(bounds, name)
    if "n_bins" in entry:
        k = count_arg(entry["n_bins"], f"n_bins of {name!r}", 1, opts.max_states)
        return Draft(
            ColumnPlan.numeric(name, uniform_edges(lo, hi, k), "equal widths", missing, clip)
        )
    k = count_arg(entry.get("quantiles", opts.n_bins), f"quantiles of {name!r}", 1, opts.max_states)
    plan = ColumnPlan.numeric(name, (lo, hi), "private quantiles", missing, clip)
    return Draft(plan, x, (lo, hi), k) if k > 1 else Draft(replace(plan, source="one bin"))
