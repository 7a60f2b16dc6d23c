"""Which columns of a user's table are prepared, decided in one reading of the table
(:func:`decide_columns`): the one refusal that names every column needing a decision before
anything is spent (identifier-like columns, a person's identifier, text without categories,
numbers without bounds, ending with a spec that decides them all), else the kept columns,
those dropped, and what was read to decide."""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..errors import DataValidationError
from ._spec import DROP_FROM_DATA
from .columns import flag_states, identifier_reason, is_numeric_entry
from .persons import PERSON, person_reason

__all__ = ["Decisions", "decide_columns"]


@dataclass(frozen=True)
class Decisions:
    """The columns of a table as :func:`decide_columns` decided them.

    Args:
        names: the columns to prepare, in the table's order.
        dropped: those dropped: as the spec asks, then as identifier-like
            (``drop_identifiers``).
        reads: what was read from the data without privacy to decide.
        notes: the notes for the plan.
        person: the person column declared in the spec, or ``None``.
    """

    names: tuple[Hashable, ...]
    dropped: tuple[Hashable, ...]
    reads: tuple[str, ...]
    notes: tuple[str, ...]
    person: Hashable | None = None


def is_declared(entry: dict) -> bool:
    """Whether a spec entry fixes the column's states from public knowledge (declared
    categories, bins or bounds), so that it is exempt from the identifier check."""
    cats, bounds = entry.get("categories"), entry.get("bounds")
    return (
        (cats is not None and not isinstance(cats, str))
        or "bins" in entry
        or (bounds is not None and not isinstance(bounds, str))
    )


def _identifier(col: pd.Series, name: Hashable, entry: dict, opts: Any) -> str | None:
    if is_declared(entry):
        return None
    return identifier_reason(col, name, opts.identifier_fraction, opts.max_states)


def _persons(df: pd.DataFrame, entries: Mapping) -> list:
    """``[(name, reason)]`` of the undeclared columns of ``entries`` that look like a person's
    identifier (:func:`~pgm_dp.prepare.persons.person_reason`)."""
    found = []
    for name, entry in entries.items():
        if not (entry.get("drop") or entry.get(PERSON) or is_declared(entry)):
            reason = person_reason(df[name], name)
            if reason is not None:
                found.append((name, reason))
    return found


def _listed(found: list) -> str:
    """``[(name, reason)]`` as one indented line each."""
    return "".join(f"\n      {n!r}: {r}" for n, r in found)


def _person_message(found: list) -> str:
    return (
        "columns that look like the identifier of a person with several records:"
        f"{_listed(found)}\n"
        "    Declare it the person (spec {column: 'person'}; person=column), so that the budget "
        "protects each person (at most max_records_per_person of their records are kept), or "
        "drop it (spec {column: 'drop'}): the budget then protects one record, and a person "
        "with k records only at k times the budget"
    )


def _identifier_message(found: list) -> str:
    return (
        f"columns that look like record identifiers:{_listed(found)}\n    A model of an "
        "identifier memorises records: drop them (drop_identifiers=True, or spec "
        "{column: 'drop'}), or declare them in spec if they are variables"
    )


def _spec_lines(spec: dict) -> str:
    """``spec`` as JSON, one column per line."""
    rows = [f"  {json.dumps(k)}: {json.dumps(v, default=list)}" for k, v in spec.items()]
    return "{\n" + ",\n".join(rows) + "\n}"


def decide_columns(df: pd.DataFrame, spec: Mapping | None, entries: dict, opts: Any) -> Decisions:
    """The :class:`Decisions` of ``df``'s columns, or every column that needs a decision in
    one :class:`DataValidationError`: columns that look like a person's identifier
    (:func:`~pgm_dp.prepare.persons.person_reason`; always: ``drop_identifiers`` does not
    drop them, as dropping changes what the budget protects), identifier-like columns
    (dropped with ``drop_identifiers``), text columns without categories (unless
    ``categories='data'``), numeric columns without bins or bounds (unless ``bounds='data'``).
    The message, one item per line, ends with a spec that decides them all (``spec`` plus
    ``"person"``, :data:`DROP_FROM_DATA` and ``"data"`` entries, JSON with one column per
    line): pasted unchanged it runs, reading those values from the data without privacy,
    each said; replacing each ``"data"`` with public knowledge avoids the read. Reads the
    whole table, before any row is left out, and only to classify its columns, like the
    checks it anticipates. Declared columns are exempt from the identifier check; the person
    column is neither kept nor dropped (``person``). ``entries``: ``spec`` parsed
    (:func:`~pgm_dp.prepare._spec.parse_spec`)."""
    persons = _persons(df, {n: entries.get(n, {}) for n in df.columns})
    found, cats, bounds, add = [], [], [], {n: PERSON for n, _ in persons}
    keep, asked, dropped, reads, notes, person = [], [], [], [], [], None
    for name in df.columns:
        entry = entries.get(name, {})
        if entry.get("drop"):
            notes.append(f"{name!r} dropped as the spec asks")
            if entry.get("from_data"):
                reads.append(
                    f'{name!r} dropped as identifier-like (marked "from_data" in the spec)'
                )
            asked.append(name)
            continue
        if entry.get(PERSON):
            person = name  # one at most (parse_spec)
            continue
        if name in add:
            continue
        reason = _identifier(df[name], name, entry, opts)
        if reason is not None:
            if opts.drop_identifiers:
                dropped.append((name, reason))
            else:
                found.append((name, reason))
                add[name] = dict(DROP_FROM_DATA)
            continue
        keep.append(name)
        if is_numeric_entry(entry, df[name]):
            if "bins" not in entry and entry.get("bounds", opts.bounds) is None:
                bounds.append(name)
                add[name] = {"bounds": "data"}
        elif entry.get("categories") is None and flag_states(df[name]) is None:
            if opts.categories != "data":
                cats.append(name)
                add[name] = {"categories": "data"}
    if not add:
        reads += [f"{n!r} dropped as identifier-like: {r}" for n, r in dropped]
        gone = (*asked, *(n for n, _ in dropped))
        return Decisions(tuple(keep), gone, tuple(reads), tuple(notes), person)
    parts = [_person_message(persons)] if persons else []
    parts += [_identifier_message(found)] if found else []
    parts += [f"column {n!r} needs declared categories" for n in cats]
    parts += [f"numeric column {n!r} needs public bounds or bins" for n in bounds]
    if cats:
        parts.append("categories='data' reads undeclared categories without privacy")
    if bounds:
        parts.append("bounds='data' reads undeclared bounds without privacy")
    whole = {str(k): v for k, v in {**dict(spec or {}), **add}.items()}
    raise DataValidationError(
        f"{len(add)} columns need a decision:\n"
        + "".join(f"  - {p}\n" for p in parts)
        + 'To decide them all (each "data" reads the data without privacy, said in the '
        "plan: replace it with public categories or bounds to avoid the read), spec=\n"
        + _spec_lines(whole)
    )
