"""One column of a user's table as a discrete variable: :class:`ColumnPlan` and the checks
behind :func:`pgm_dp.prepare.prepare_plan` (identifier-like columns, missing values).

A column is **categorical** (its states are declared categories, then ``"<other>"`` for values
outside them when asked, then ``"<missing>"``) or **numeric** (its states are the bins of
:mod:`pgm_dp.binning`, then ``"<missing>"``). Missing values are ``NaN``, ``None``, ``NaT``
and empty or blank strings. Rare states may be merged into one ``"<rare>"`` state (the plan's
compression, McKenna et al. 2021); ``merged`` lists their codes. Codes before merging are the
*full* codes, after it the *compressed* codes that models see.

Error messages name columns and count records; they never show a cell's value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from .binning import (
    MAX_GRID,
    bin_codes,
    bin_labels,
    bin_midpoints,
    check_bounds,
    check_edges,
    uniform_edges,
)
from .domain import Domain
from .errors import DataValidationError, DomainError, PrivacyParameterError

__all__ = [
    "MISSING",
    "OTHER",
    "RARE",
    "RESERVED",
    "ColumnPlan",
    "missing_mask",
    "numeric_values",
    "identifier_reason",
    "Draft",
    "parse_entry",
    "draft_column",
    "count_arg",
    "Options",
    "make_options",
]

_SPEC_KEYS = {"categories", "bins", "bounds", "n_bins", "quantiles", "missing", "other", "clip"}

MISSING = "<missing>"
OTHER = "<other>"
RARE = "<rare>"
#: Labels the package adds; a declared category may not use them.
RESERVED = (MISSING, OTHER, RARE)

#: Fewest distinct values for the distinct-count rule of :func:`identifier_reason`.
MIN_ID_DISTINCT = 16
_UNNAMED = re.compile(r"Unnamed: \d+")


def missing_mask(col: pd.Series) -> np.ndarray:
    """Boolean mask of the missing cells: NA values and empty or blank strings."""
    miss = col.isna().to_numpy(dtype=bool)
    dtype = col.dtype
    if getattr(dtype, "kind", "") == "O" or isinstance(dtype, pd.StringDtype):
        obj = col.astype(object)
        try:
            blank = obj.str.strip().eq("").to_numpy(dtype=bool)
        except AttributeError:  # no string at all
            return miss
        miss = miss | blank
    return miss


def numeric_values(col: pd.Series, name: Hashable) -> tuple[np.ndarray, np.ndarray]:
    """``(values of the non-missing cells as float64, missing mask)`` of a numeric column;
    :class:`DataValidationError` when a non-missing cell is not a number."""
    miss = missing_mask(col)
    present = col[~miss]
    if present.dtype.kind in "biuf":
        x = present.to_numpy(dtype=np.float64)
    else:
        x = pd.to_numeric(present.astype(object), errors="coerce").to_numpy(dtype=np.float64)
        bad = int(np.isnan(x).sum())
        if bad:
            raise DataValidationError(
                f"column {name!r} is declared numeric but {bad} of its records are not numbers "
                "(values not shown)"
            )
    return x, miss


def identifier_reason(col: pd.Series, name: Hashable, fraction: float) -> str | None:
    """Why ``col`` looks like a record identifier, or ``None``: the name pandas gives the row
    index written by ``DataFrame.to_csv()`` (``"Unnamed: 0"``); integers that are the row
    numbers ``0..n-1`` or ``1..n``; integers all distinct; other non-numeric values with at
    least ``fraction * n`` distinct values. Continuous (non-integer) numbers and booleans are
    variables, not identifiers. One pass of hashing: fast on large tables."""
    n = len(col)
    if isinstance(name, str) and _UNNAMED.fullmatch(name):
        return (
            f"its name {name!r} is what pandas gives an unnamed column, such as the row index "
            "written by DataFrame.to_csv()"
        )
    dtype = col.dtype
    if dtype.kind == "b" or n < MIN_ID_DISTINCT:
        return None
    if dtype.kind in "iuf":
        x = col.to_numpy(dtype=np.float64, na_value=np.nan)
        x = x[~np.isnan(x)]
        if x.size == 0 or not np.all(x == np.round(x)):
            return None
        distinct = pd.unique(x).size
        if distinct == n and x.min() in (0, 1) and x.max() - x.min() == n - 1:
            return f"its values are the row numbers {int(x.min())}..{int(x.max())}"
        if distinct == x.size:
            return f"its {distinct:,} integers are all distinct"
        return None
    distinct = col[~missing_mask(col)].astype(object).nunique()
    if distinct >= max(fraction * n, MIN_ID_DISTINCT):
        return f"it has {distinct:,} distinct values in {n:,} records"
    return None


@dataclass(frozen=True)
class ColumnPlan:
    """How one column becomes a discrete variable.

    ``kind`` is ``"categorical"`` or ``"numeric"``; ``states`` the full labels (categories or
    interval labels, then ``"<other>"`` when ``other``, then ``"<missing>"`` when
    ``missing``); ``source`` where the categories or bins come from (``"declared"``,
    ``"data (non-private)"``, ``"bool"``, ``"public bins"``, ``"public bounds, equal
    widths"``, ``"private quantiles"``); ``edges`` the bin edges of a numeric column;
    ``clip`` whether out-of-range numbers go to the end bins; ``merged`` the full codes
    merged into one ``"<rare>"`` state (empty: no merging).
    """

    name: Hashable
    kind: str
    states: tuple
    source: str
    missing: bool
    other: bool = False
    edges: tuple[float, ...] | None = None
    clip: bool = True
    merged: tuple[int, ...] = ()

    @classmethod
    def numeric(cls, name, edges, source, missing, clip=True) -> ColumnPlan:
        states = bin_labels(edges) + ((MISSING,) if missing else ())
        return cls(name, "numeric", states, source, missing, False, tuple(edges), clip)

    @classmethod
    def categorical(cls, name, categories, source, missing, other) -> ColumnPlan:
        states = tuple(categories) + ((OTHER,) if other else ()) + ((MISSING,) if missing else ())
        return cls(name, "categorical", states, source, missing, other)

    @property
    def n_categories(self) -> int:
        """Number of categories or bins (without ``"<other>"`` and ``"<missing>"``)."""
        return len(self.states) - self.missing - self.other

    @property
    def kept(self) -> np.ndarray:
        """The full codes that keep a state of their own, in order."""
        keep = np.ones(len(self.states), dtype=bool)
        keep[list(self.merged)] = False
        return np.flatnonzero(keep)

    @property
    def labels(self) -> tuple:
        """The labels of the compressed states (kept labels, then ``"<rare>"``)."""
        kept = tuple(self.states[i] for i in self.kept)
        return kept + ((RARE,) if self.merged else ())

    @property
    def code_map(self) -> np.ndarray:
        """Compressed code of each full code."""
        out = np.full(len(self.states), len(self.kept), dtype=np.int64)
        out[self.kept] = np.arange(len(self.kept))
        return out

    # -- encoding ------------------------------------------------------------------------------
    def encode_full(self, col: pd.Series) -> np.ndarray:
        """Full codes of a column (a new int64 array; the column is not modified)."""
        if self.kind == "numeric":
            x, miss = numeric_values(col, self.name)
            codes = np.empty(len(col), dtype=np.int64)
            codes[~miss] = bin_codes(x, self.edges, self.clip, self.name)
        else:
            miss = missing_mask(col)
            index = pd.Index(list(self.states[: self.n_categories]), dtype=object)
            codes = index.get_indexer(col.astype(object).to_numpy()).astype(np.int64)
            unknown = (codes < 0) & ~miss
            if unknown.any():
                if not self.other:
                    raise DataValidationError(
                        f"column {self.name!r}: {int(unknown.sum())} records have values outside "
                        "its declared categories (values not shown); declare every category "
                        "or pass other=True"
                    )
                codes[unknown] = self.n_categories
        if miss.any():
            if not self.missing:
                raise DataValidationError(
                    f"column {self.name!r} has {int(miss.sum())} missing values but no "
                    "missing state (missing=False)"
                )
            codes[miss] = len(self.states) - 1
        return codes

    def encode(self, col: pd.Series) -> np.ndarray:
        """Compressed codes of a column."""
        return self.code_map[self.encode_full(col)]

    # -- decoding ------------------------------------------------------------------------------
    def expand(self, codes: np.ndarray, gen: np.random.Generator, weights=None) -> np.ndarray:
        """Full codes of compressed ``codes``: a ``"<rare>"`` record gets one of the merged
        states at random, uniformly (MST's ``reverse_data``) or with probabilities
        ``weights`` (one per merged state)."""
        kept = self.kept
        out = np.empty(codes.shape, dtype=np.int64)
        is_rare = codes == len(kept)
        out[~is_rare] = kept[codes[~is_rare]]
        if is_rare.any():
            merged = np.asarray(self.merged)
            out[is_rare] = gen.choice(merged, size=int(is_rare.sum()), p=weights)
        return out

    def values(self, full: np.ndarray, numeric: str = "interval") -> np.ndarray:
        """The user's values of full codes: categories (``"<other>"`` kept as is), interval
        labels or, with ``numeric="midpoint"``, bin midpoints; missing as ``NaN``."""
        if self.kind == "numeric" and numeric == "midpoint":
            table = np.append(bin_midpoints(self.edges), np.nan)
        else:
            table = np.array(list(self.states) + [np.nan], dtype=object)
            if self.missing:
                table[len(self.states) - 1] = np.nan
        miss = full == len(self.states) - 1 if self.missing else np.zeros(full.shape, bool)
        return table[np.where(miss, len(table) - 1, full)]


# -- the user's declarations -------------------------------------------------------------
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
        categories, bounds, missing, other, drop_identifiers,
        n_bins=count_arg(kw["n_bins"], "n_bins", 1, 10**7),
        grid=count_arg(kw["grid"], "grid", 2, MAX_GRID),
        quantile_share=float(share), threshold=float(thr), max_states=max_states,
        identifier_fraction=float(frac),
    )  # fmt: skip


def count_arg(x: Any, what: str, low: int, high: int) -> int:
    if isinstance(x, bool) or not isinstance(x, int | np.integer) or not low <= x <= high:
        raise DomainError(f"{what} must be an integer in [{low}, {high}], got {x!r}")
    return int(x)


def parse_entry(name: Hashable, raw: Any) -> dict:
    """One ``spec`` entry as a dict of known keys (a list means declared categories)."""
    if raw is None or (isinstance(raw, str) and raw == "drop"):
        return {"drop": True}
    if isinstance(raw, list | tuple):
        return {"categories": tuple(raw)}
    if not isinstance(raw, Mapping):
        raise DomainError(
            f"spec of {name!r} must be a list of categories, a dict or 'drop', got {raw!r}"
        )
    unknown = set(raw) - _SPEC_KEYS
    if unknown:
        raise DomainError(
            f"spec of {name!r} has unknown keys {sorted(unknown)}; known: {sorted(_SPEC_KEYS)}"
        )
    entry = dict(raw)
    if "categories" in entry and set(entry) & {"bins", "bounds", "n_bins", "quantiles"}:
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
    numeric = bool(set(entry) & {"bins", "bounds", "n_bins", "quantiles"}) or (
        "categories" not in entry and col.dtype.kind in "iuf"
    )
    if numeric:
        draft = _numeric(name, col, entry, opts, reads, missing, clip)
    else:
        cats, source = _categories(name, col, entry, opts, reads)
        draft = Draft(ColumnPlan.categorical(name, cats, source, missing, other))
    draft.plan.encode_full(col)  # every value checked now, before any budget is spent
    return draft


def _categories(name, col, entry, opts, reads) -> tuple[tuple, str]:
    cats = entry.get("categories")
    if cats is None:
        if col.dtype.kind == "b":
            return (False, True), "bool"
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
