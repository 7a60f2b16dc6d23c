"""Derived columns: a column that is a fixed function of another one (a category and its
one-hot copy, a code and its label), declared in the preparation spec as

    {"is_male": {"derived_from": "sex", "map": {"Male": 1, "Female": 0}}}

A derived column is not modelled: it is left out of the preparation, the selection and the
fit (no budget spent on it, and no selection spent relearning an identity, which the noise
would blur: copies learned from noisy tables contradict their source in a share of the
synthetic records), and synthetic records get it back exactly, ``map[source value]``, from
their source column (:mod:`pgm_dp.table.synth`). The source is a categorical column of the table,
itself not derived; the map's keys are its categories as text (JSON keys), its values the
derived column's values (a source value without a key, such as ``"<other>"``, or a missing
one, gives a missing value).

The declaration is checked before anything is spent: every category of the data's source
column must have a key, and the data's derived column must equal the map of its source on
every record where the source is not missing; otherwise a
:class:`~pgm_dp.errors.DataValidationError` names the column (as a value outside declared
categories is refused: a refusal with no count in it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataValidationError, DomainError

__all__ = [
    "Derived",
    "split_derived",
    "parse_derived",
    "check_derived",
    "derived_to_json",
    "derived_from_json",
    "with_derived",
]


@dataclass(frozen=True)
class Derived:
    """One derived column: ``name``, its ``source`` column and ``pairs``, ``(source value as
    text, derived value)``."""

    name: str
    source: str
    pairs: tuple[tuple[str, Any], ...]

    def apply(self, source: pd.Series) -> pd.Series:
        """The derived column of a ``source`` column (missing where the source is missing
        or has no key)."""
        lookup = dict(self.pairs)
        miss = source.isna().to_numpy()
        text = source.astype(object).map(str)
        values = [None if m else lookup.get(t) for m, t in zip(miss, text, strict=True)]
        return pd.Series(values, index=source.index, name=self.name, dtype=object).infer_objects()

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "derived_from": self.source,
            "map": [list(p) for p in self.pairs],
        }


def _entry(name: Any, entry: Any) -> Derived | None:
    """The :class:`Derived` of one spec entry, or ``None`` when it is not a derived one."""
    if not isinstance(entry, Mapping) or "derived_from" not in entry:
        return None
    extra = set(entry) - {"derived_from", "map"}
    mapping = entry.get("map")
    if extra or not isinstance(mapping, Mapping) or not mapping:
        raise DomainError(
            f"derived column {name!r}: give exactly {{'derived_from': column, 'map': "
            f"{{category: value, ...}}}} (a non-empty map), got {dict(entry)!r}"
        )
    pairs = tuple((str(k), v) for k, v in mapping.items())
    return Derived(str(name), str(entry["derived_from"]), pairs)


def split_derived(df: pd.DataFrame, spec: Mapping | None) -> tuple[dict | None, tuple]:
    """``(spec without its derived entries, the Derived columns)``, the declarations checked
    against ``df`` (module docstring) before anything is spent; ``spec`` is not modified."""
    base, derived = parse_derived(spec)
    check_derived(df, spec, derived)
    return base, derived


def parse_derived(spec: Mapping | None) -> tuple[Mapping | None, tuple]:
    """``(spec without its derived entries, the Derived columns)`` read from ``spec`` alone
    (:func:`check_derived` holds them against the data); ``spec`` is not modified."""
    if not isinstance(spec, Mapping):
        return spec, ()
    derived = tuple(d for n, e in spec.items() if (d := _entry(n, e)) is not None)
    if not derived:
        return spec, ()
    names = {d.name for d in derived}
    return {k: v for k, v in spec.items() if str(k) not in names}, derived


def check_derived(df: pd.DataFrame, spec: Mapping | None, derived: tuple) -> None:
    """Each of ``derived`` (declared in ``spec``) checked against ``df``: its column and
    its source are columns of the data, and the column is its map of the source on every
    record (module docstring); DataValidationError otherwise."""
    names = {d.name for d in derived}
    for d in derived:
        _check(df, spec, d, names)


def _check(df: pd.DataFrame, spec: Mapping, d: Derived, names: set) -> None:
    if d.name not in df.columns:
        raise DataValidationError(f"derived column {d.name!r} is not a column of the data")
    if d.source not in df.columns or d.source in names or spec.get(d.source) == "drop":
        raise DataValidationError(
            f"derived column {d.name!r}: its source {d.source!r} must be a column of the data "
            "that is kept and not derived itself"
        )
    source = df[d.source]
    known = source.notna().to_numpy()
    text = source[known].astype(object).map(str)
    lookup = dict(d.pairs)
    if not text.isin(list(lookup)).all():
        raise DataValidationError(
            f"derived column {d.name!r}: some categories of {d.source!r} have no key in its map"
        )
    expected = Derived(d.name, d.source, d.pairs).apply(source[known])
    actual = df[d.name][known].astype(object)
    same = [_equal(a, b) for a, b in zip(actual, expected, strict=True)]
    if not all(same):
        raise DataValidationError(
            f"derived column {d.name!r} is not its map of {d.source!r} on every record: "
            "declare it as a column of its own"
        )


def _equal(a: Any, b: Any) -> bool:
    """Whether a data value equals a map's value (``1`` and ``1.0`` alike; text as text)."""
    if pd.isna(a) or pd.isna(b):
        return bool(pd.isna(a) and pd.isna(b))
    if isinstance(a, int | float | np.number) and isinstance(b, int | float | np.number):
        return bool(float(a) == float(b))
    return str(a) == str(b)


def derived_to_json(derived: tuple) -> list[dict]:
    """JSON-ready list of the derived columns (a fit's ``info["derived"]``)."""
    return [d.to_dict() for d in derived]


def derived_from_json(doc: Any) -> tuple:
    """Inverse of :func:`derived_to_json` (``None``: none)."""
    return tuple(
        Derived(d["name"], d["derived_from"], tuple((str(k), v) for k, v in d["map"]))
        for d in doc or ()
    )


def with_derived(records: pd.DataFrame, derived: tuple) -> pd.DataFrame:
    """``records`` with each derived column appended, computed from its source column."""
    if not derived:
        return records
    extra = {d.name: d.apply(records[d.source]) for d in derived}
    return pd.concat([records, pd.DataFrame(extra, index=records.index)], axis=1)
