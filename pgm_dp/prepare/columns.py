"""One column of a user's table as a discrete variable: what its values say (missing cells,
numbers, identifier-like values, flags), its draft from its spec entry and its values
(:func:`draft_column`, every value checked before any budget is spent) and its plan
(:class:`ColumnPlan`), behind :func:`pgm_dp.prepare.prepare_plan`.

A column is **categorical** (its states are declared categories, then ``"<other>"`` for values
outside them when asked, then ``"<missing>"``) or **numeric** (its states are the bins of
:mod:`pgm_dp.prepare.binning`, then ``"<missing>"``). Missing values are ``NaN``, ``None``, ``NaT``
and empty or blank strings. Rare states may be merged into one ``"<rare>"`` state (the plan's
compression, McKenna et al. 2021); ``merged`` lists their codes. Codes before merging are the
*full* codes, after it the *compressed* codes that models see.

Error messages name columns; they never show a cell's value or count records.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from ..domain import Domain
from ..errors import DataValidationError, DomainError
from .binning import (
    bin_codes,
    bin_labels,
    bin_midpoints,
    check_bounds,
    check_edges,
    uniform_edges,
    whole_within,
)

__all__ = [
    "MISSING",
    "OTHER",
    "RARE",
    "RESERVED",
    "ColumnPlan",
    "missing_mask",
    "numeric_values",
    "identifier_reason",
    "flag_states",
    "is_numeric_entry",
    "NUMERIC_KEYS",
    "count_arg",
    "Draft",
    "draft_column",
]

MISSING = "<missing>"
OTHER = "<other>"
RARE = "<rare>"
#: Labels the package adds; a declared category may not use them.
RESERVED = (MISSING, OTHER, RARE)
#: A column's kinds.
KINDS = ("categorical", "numeric")
#: Most states a saved plan's column may have (``prepare_plan``'s largest ``max_states``).
MAX_STATES = 10**7

#: Fewest distinct values for the distinct-count rule of :func:`identifier_reason`.
MIN_ID_DISTINCT = 16
_UNNAMED = re.compile(r"Unnamed: \d+")


#: The keys of a numeric (binned) column's entry.
NUMERIC_KEYS = {"bins", "bounds", "n_bins", "quantiles", "integer"}


def count_arg(x: Any, what: str, low: int, high: int) -> int:
    if isinstance(x, bool) or not isinstance(x, int | np.integer) or not low <= x <= high:
        raise DomainError(f"{what} must be an integer in [{low}, {high}], got {x!r}")
    return int(x)


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
                f"column {name!r} is declared numeric but some of its records are not numbers "
                "(values not shown)"
            )
    return x, miss


def identifier_reason(
    col: pd.Series, name: Hashable, fraction: float, max_states: int | None = None
) -> str | None:
    """Why ``col`` looks like a record identifier, or ``None``: the name pandas gives the row
    index written by ``DataFrame.to_csv()`` (``"Unnamed: 0"``); integers that are the row
    numbers ``0..n-1`` or ``1..n``; integers all distinct; other non-numeric values with at
    least ``fraction * n`` distinct values, or more than ``max_states`` (when given).
    Continuous (non-integer) numbers and booleans are variables, not identifiers. One pass of
    hashing: fast on large tables. The reason states the rule, never a count of the data (it
    goes into refusals and saved plans, and the number of records is private)."""
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
            return "its values are the row numbers"
        if distinct == x.size:
            return "its integers are all distinct"
        return None
    distinct = col[~missing_mask(col)].astype(object).nunique()
    if distinct >= max(fraction * n, MIN_ID_DISTINCT):
        return f"its distinct values are at least {fraction:g} of its records"
    if max_states is not None and distinct > max_states:
        return f"it has more than {max_states:,} distinct values"
    return None


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
    return bool(set(entry) & NUMERIC_KEYS) or (
        "categories" not in entry and col.dtype.kind in "iuf" and flag_states(col) is None
    )


@dataclass(frozen=True)
class ColumnPlan:
    """How one column becomes a discrete variable.

    ``kind`` is ``"categorical"`` or ``"numeric"``; ``states`` the full labels (categories or
    interval labels, then ``"<other>"`` when ``other``, then ``"<missing>"`` when
    ``missing``); ``source`` where the categories or bins come from (``"declared"``,
    ``"data (non-private)"``, ``"bool"``, ``"public bins"``, ``"public bounds, equal
    widths"``, ``"private quantiles"``); ``edges`` the bin edges of a numeric column;
    ``clip`` whether out-of-range numbers go to the end bins; ``merged`` the full codes
    merged into one ``"<rare>"`` state (empty: no merging); ``missing_to`` the full code that
    takes missing values when the missing state was folded away (its noisy count was rare:
    no ``"<missing>"`` state then, and none is ever decoded); ``integer`` whether a numeric
    column holds whole numbers (declared ``"integer": true``), so that numbers drawn within
    a bin are whole numbers too.
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
    missing_to: int | None = None
    integer: bool = False

    @classmethod
    def numeric(cls, name, edges, source, missing, clip=True, integer=False) -> ColumnPlan:
        states = bin_labels(edges) + ((MISSING,) if missing else ())
        return cls(
            name, "numeric", states, source, missing, False, tuple(edges), clip, integer=integer
        )

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

    # -- JSON --------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The plan with JSON types (str or int column names; read back by
        :func:`pgm_dp.prepare.saved.column_of`)."""
        if isinstance(self.name, bool) or not isinstance(self.name, str | int):
            raise DomainError(f"saving needs str or int column names, got {self.name!r}")
        d = {f: getattr(self, f) for f in self.__dataclass_fields__}
        return {
            **d,
            "states": list(self.states),
            "merged": list(self.merged),
            "edges": None if self.edges is None else list(self.edges),
        }

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
                        f"column {self.name!r}: records have values outside "
                        "its declared categories (values not shown); declare every category "
                        "or pass other=True"
                    )
                codes[unknown] = self.n_categories
        if miss.any() and self.missing_to is not None:
            codes[miss] = self.missing_to
        elif miss.any():
            if not self.missing:
                raise DataValidationError(
                    f"column {self.name!r} has missing values but no missing state (missing=False)"
                )
            codes[miss] = len(self.states) - 1
        return codes

    def encode(self, col: pd.Series) -> np.ndarray:
        """Compressed codes of a column."""
        return self.compress(self.encode_full(col))

    def compress(self, full: np.ndarray) -> np.ndarray:
        """Compressed codes of the column's ``full`` codes (:meth:`encode_full`)."""
        return self.code_map[full]

    def folded(self, full: np.ndarray) -> np.ndarray:
        """Full codes under this plan of ``full`` codes encoded before its missing state was
        folded away: the missing state (the last one then, code ``len(self.states)`` now)
        becomes ``missing_to``; any other plan's codes are returned as they are."""
        if self.missing_to is None:
            return full
        return np.where(full == len(self.states), self.missing_to, full)

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

    def decode(
        self, full: np.ndarray, numbers: str = "interval", within: np.ndarray | None = None
    ) -> pd.Categorical | np.ndarray:
        """The user's values of full codes: the one decoder of records (synthetic ones,
        :mod:`pgm_dp.table.synth`, and :meth:`~pgm_dp.prepare.Preparation.decode`).

        A categorical column, and a binned one with ``numbers="interval"``, gives a
        ``pandas.Categorical`` whose categories are the column's labels as declared, each
        of its own Python type (integers stay integers, booleans booleans), then
        ``"<other>"`` when the column has it; a binned column's labels are its intervals
        ``"[a, b)"``. ``numbers="midpoint"`` gives the bins' midpoints and ``"uniform"`` the
        number ``a + u (b - a)`` of each bin ``[a, b)`` for the uniforms ``within`` (float64
        either way, never above ``b``); for a column declared ``integer``, ``"uniform"`` gives
        a whole number drawn uniformly among the bin's (:func:`~.binning.whole_within`: an
        int64 column, nullable ``Int64`` with a missing state). The ``"<missing>"`` state is a
        missing value (a missing category, ``NaN``).

        Args:
            full: full codes (``0..len(states) - 1``).
            numbers: ``"interval"``, ``"midpoint"`` or ``"uniform"`` (binned columns only).
            within: one uniform in ``[0, 1)`` per code, for ``numbers="uniform"``.
        """
        miss = full == len(self.states) - 1 if self.missing else None
        if self.kind == "numeric" and numbers != "interval":
            e = np.asarray(self.edges, dtype=np.float64)
            b = np.minimum(full, len(e) - 2)
            if numbers == "uniform" and self.integer:
                x = whole_within(e, b, within)
                if miss is None:
                    return x.astype(np.int64)
                return pd.array(np.where(miss, np.nan, x), dtype="Int64")  # <NA>: missing
            if numbers == "uniform":
                x = np.minimum(e[b] + within * (e[b + 1] - e[b]), e[b + 1])
            else:
                x = bin_midpoints(e)[b]
            return np.where(miss, np.nan, x) if miss is not None else x
        cats = list(self.states[:-1] if self.missing else self.states)
        codes = np.where(miss, -1, full) if miss is not None else full
        return pd.Categorical.from_codes(codes, categories=cats)


@dataclass(frozen=True)
class Draft:
    """A column checked against the data. ``values``/``bounds``/``n_bins`` are set when its
    edges are still to be drawn at private quantiles (``plan`` then has the single bin
    ``[lo, hi]``). ``codes``: the column's full codes under ``plan``
    (:meth:`ColumnPlan.encode_full`, the check of every value), which the preparation
    reuses wherever the plan's states are final."""

    plan: ColumnPlan
    values: np.ndarray | None = None
    bounds: tuple[float, float] | None = None
    n_bins: int = 0
    codes: np.ndarray | None = None


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
    # every value checked now, before any budget is spent
    draft = replace(draft, codes=draft.plan.encode_full(col))
    if from_data:
        what = "bins or bounds" if draft.plan.kind == "numeric" else "categories"
        reads.append(f'the {what} of {name!r} (marked "from_data" in the spec)')
        draft = replace(draft, plan=replace(draft.plan, source="spec, read from data"))
    return draft


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
