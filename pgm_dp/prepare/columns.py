"""One column of a user's table as a discrete variable: :class:`ColumnPlan` and the checks
behind :func:`pgm_dp.prepare.prepare_plan` (identifier-like columns, missing values).

A column is **categorical** (its states are declared categories, then ``"<other>"`` for values
outside them when asked, then ``"<missing>"``) or **numeric** (its states are the bins of
:mod:`pgm_dp.prepare.binning`, then ``"<missing>"``). Missing values are ``NaN``, ``None``, ``NaT``
and empty or blank strings. Rare states may be merged into one ``"<rare>"`` state (the plan's
compression, McKenna et al. 2021); ``merged`` lists their codes. Codes before merging are the
*full* codes, after it the *compressed* codes that models see.

Error messages name columns; they never show a cell's value or count records.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from ..domain import Domain
from ..errors import DataValidationError, DomainError
from .binning import bin_codes, bin_labels, bin_midpoints, check_edges, whole_within

__all__ = [
    "MISSING",
    "OTHER",
    "RARE",
    "RESERVED",
    "ColumnPlan",
    "missing_mask",
    "numeric_values",
    "identifier_reason",
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
        """The plan with JSON types (str or int column names; see :meth:`from_dict`)."""
        if isinstance(self.name, bool) or not isinstance(self.name, str | int):
            raise DomainError(f"saving needs str or int column names, got {self.name!r}")
        d = {f: getattr(self, f) for f in self.__dataclass_fields__}
        return {
            **d,
            "states": list(self.states),
            "merged": list(self.merged),
            "edges": None if self.edges is None else list(self.edges),
        }

    @classmethod
    def from_dict(cls, d: Any) -> ColumnPlan:
        """Inverse of :meth:`to_dict`; every field checked (:class:`DataValidationError` or
        :class:`DomainError`), since a saved plan may come from anywhere: the states are
        those its kind, edges, ``other`` and ``missing`` make, ``merged`` lists two or more
        distinct full codes, ``missing_to`` is a full code of a column without a missing
        state."""
        if not isinstance(d, Mapping):
            raise DataValidationError(f"a column of a plan must be an object, got {d!r:.60}")
        fields = set(cls.__dataclass_fields__)
        if set(d) - fields or {"name", "kind", "states", "source", "missing"} - set(d):
            raise DataValidationError(f"a column of a plan has the fields {sorted(fields)}")
        name = d["name"]
        if isinstance(name, bool) or not isinstance(name, str | int):
            raise DataValidationError(f"a column's name must be a str or int, got {name!r:.60}")
        flags = {k: d.get(k, k == "clip") for k in ("missing", "other", "clip", "integer")}
        if not all(v is True or v is False for v in flags.values()) or d["kind"] not in KINDS:
            raise DataValidationError(
                f"column {name!r}: kind, missing, other, clip or integer malformed"
            )
        if not isinstance(d["source"], str) or not isinstance(d["states"], list):
            raise DataValidationError(f"column {name!r}: source or states malformed")
        if d["kind"] == "numeric":
            if flags["other"]:
                raise DataValidationError(f"column {name!r}: a numeric column has no '<other>'")
            edges = check_edges(d.get("edges"), name, MAX_STATES)
            plan = cls.numeric(
                name, edges, d["source"], flags["missing"], flags["clip"], flags["integer"]
            )
        else:
            if flags["integer"]:
                raise DataValidationError(f"column {name!r}: only a numeric column is integer")
            n_cat = len(d["states"]) - flags["other"] - flags["missing"]
            cats = tuple(d["states"][: max(n_cat, 0)])
            if not cats or any(isinstance(c, str) and c in RESERVED for c in cats):
                raise DataValidationError(f"column {name!r}: categories malformed")
            Domain([name], [len(cats)], [cats])  # distinct labels of supported types
            plan = cls.categorical(name, cats, d["source"], flags["missing"], flags["other"])
        stray_edges = d.get("edges") is not None and d["kind"] != "numeric"
        if stray_edges or plan.states != tuple(d["states"]):
            raise DataValidationError(f"column {name!r}: states do not match its kind and edges")
        merged = _codes_of(d.get("merged", []), plan, name)
        return replace(plan, merged=merged, missing_to=_missing_to(d.get("missing_to"), plan))

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


def _code(v: Any, plan: ColumnPlan, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < len(plan.states):
        raise DataValidationError(
            f"column {plan.name!r}: {what} must be codes in 0..{len(plan.states) - 1}, "
            f"got {v!r:.40}"
        )
    return v


def _codes_of(merged: Any, plan: ColumnPlan, name: Hashable) -> tuple[int, ...]:
    """A saved ``merged``: none, or at least two distinct full codes, in order."""
    if not isinstance(merged, list):
        raise DataValidationError(f"column {name!r}: merged must be a list, got {merged!r:.40}")
    codes = tuple(_code(v, plan, "merged") for v in merged)
    if len(codes) == 1 or list(codes) != sorted(set(codes)):
        raise DataValidationError(f"column {name!r}: merged must be two or more codes, in order")
    return codes


def _missing_to(to: Any, plan: ColumnPlan) -> int | None:
    """A saved ``missing_to``: ``None``, or a full code of a column without a missing state."""
    if to is None:
        return None
    if plan.missing:
        raise DataValidationError(f"column {plan.name!r}: missing_to with a missing state")
    return _code(to, plan, "missing_to")
