"""A user's table on the command line: its preparation spec from the flags, and the
private fit of :func:`pgm_dp.table.fit.fit_table` with what it read and reports printed.

The spec (:func:`table_spec`): ``--domain`` declares every state of its columns (sizes
``n`` mean the codes ``0..n-1``; no missing state); ``--prepare SPEC.json`` declares any
column as :func:`pgm_dp.prepare.prepare_plan` reads it (or is a plan written by
``--plan-out``) and overrides ``--domain``. With ``--categories-from-data``, an undeclared
column of whole numbers with at most :data:`SMALL_INTEGER_STATES` distinct values is
categorical (its values read from the data, recorded in the plan); other number columns are
binned. Undeclared text columns with more than :data:`MAX_STATES` distinct values look like
case identifiers, as do the record identifiers ``prepare_plan`` finds: all are named in one
refusal (:func:`check_table`, with every other undecided column), or dropped with
``--drop-identifiers`` (recorded in the plan). ``--person COLUMN`` declares the person column
(the spec entry ``"person"``); a column that looks like one is refused until declared or
dropped, whatever ``--drop-identifiers`` says.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from ._data import say

__all__ = [
    "table_spec",
    "check_table",
    "fit_from_table",
    "SMALL_INTEGER_STATES",
    "MAX_STATES",
    "DECLARE_HINT",
]

#: Largest number of distinct whole numbers read as categories (``--categories-from-data``).
SMALL_INTEGER_STATES = 16
#: Most categories of a text column before it counts as an identifier (``prepare_plan``'s).
MAX_STATES = 1000
#: How to declare instead what was read from the data.
DECLARE_HINT = (
    "declare it instead in --prepare SPEC.json ({column: [categories]} or {column: "
    '{"bounds": [lo, hi]}}); a plan written by --plan-out, or the file written by '
    "pgm-dp prepare DATA --out SPEC.json, is a spec to start from"
)


def _whole_numbers(col: pd.Series) -> np.ndarray | None:
    """The distinct values of a number column whose values are all whole, else ``None``."""
    if pd.api.types.is_bool_dtype(col) or not pd.api.types.is_numeric_dtype(col):
        return None
    x = col.dropna().to_numpy(dtype=float)
    if x.size == 0 or not np.all(np.isfinite(x)) or not np.all(x == np.round(x)):
        return None
    return np.unique(x).astype(np.int64)


def _declared(domain: dict | None, prepare: dict | None, df: pd.DataFrame) -> dict:
    from ..errors import DataValidationError, DomainError

    spec: dict = {}
    for name, v in (domain or {}).items():
        if name not in df.columns:
            raise DataValidationError(f"--domain names a column not in the data: {name!r}")
        if isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= MAX_STATES:
            states = list(range(v))
        elif isinstance(v, list):
            states = list(v)
        else:
            raise DomainError(
                f"--domain {name!r}: give a size from 1 to {MAX_STATES:,} or a list of labels, "
                f"got {v!r}"
            )
        spec[name] = {"categories": states, "missing": False}
    spec.update(_as_spec(prepare))
    return spec


def _as_spec(prepare: dict | None) -> dict:
    """A ``--prepare`` file's spec: the file itself, or the spec of a plan (``--plan-out``)."""
    if prepare is None:
        return {}
    if prepare.get("format") != "pgm_dp.Preparation":
        return prepare
    from ..prepare.table import Preparation

    return Preparation.from_json(json.dumps(prepare)).to_spec()


def table_spec(df: pd.DataFrame, args) -> dict:
    """The ``prepare_plan`` spec of ``df`` from the flags (module docstring): a whole-number
    column read as categories is ``{"categories": "data"}``, so that the plan records the
    read (its source ``data (non-private)``, in ``nonprivate_reads``)."""
    from ..prepare.columns import identifier_reason

    spec = _person(df, _declared(args.domain, args.prepare, df), args)
    if not args.categories_from_data:
        return spec
    for name in df.columns:
        col = df[name]
        if name in spec or identifier_reason(col, name, 0.5) is not None:
            continue
        values = _whole_numbers(col)
        if values is not None and len(values) <= SMALL_INTEGER_STATES:
            spec[name] = {"categories": "data"}
    return spec


def _person(df: pd.DataFrame, spec: dict, args) -> dict:
    """``spec`` with ``--person`` declared in it; ``--max-records-per-person`` above 1
    without a person column refused (before anything is read)."""
    from ..errors import DataValidationError, PrivacyParameterError
    from ..prepare.persons import with_person

    asked, k = getattr(args, "person", None), getattr(args, "max_records_per_person", 1)
    if asked is not None and asked not in df.columns:
        raise DataValidationError(f"--person names a column not in the data: {asked!r}")
    try:
        spec, person = with_person(spec, asked)
    except ValueError as err:
        raise type(err)(str(err).replace("person=", "--person ")) from None
    if person is None and k > 1:
        raise PrivacyParameterError(
            "--max-records-per-person needs a person column: --person COLUMN, or "
            '"COLUMN": "person" in --prepare SPEC.json'
        )
    return spec


def check_table(df: pd.DataFrame, spec: dict, args) -> None:
    """Every column that the spec and the flags leave undecided, in one error in the flags'
    words (with a spec that decides them all), before JAX is imported or anything spent."""
    from ..errors import PgmDpError
    from ..prepare.derived import split_derived
    from ..prepare.table import check_spec

    try:
        base, derived = split_derived(df, spec)  # derived columns are not prepared
        check_spec(
            df.drop(columns=[d.name for d in derived]),
            base,
            **_prepare_options(args, compress=False),
        )
    except PgmDpError as err:
        raise _in_flags(err) from None


def _prepare_options(args, compress: bool = True) -> dict:
    """``prepare_plan``'s options from the flags (without ``compress`` when not asked)."""
    missing = {"state": True, "refuse": False, "data": "data"}[args.missing]
    out = dict(
        categories="data" if args.categories_from_data else None,
        bounds="data" if args.bounds_from_data else None,
        missing=missing,
        drop_identifiers=args.drop_identifiers,
    )
    return {**out, "compress": not args.no_compress} if compress else out


def _workload(text: str | None):
    if text is None or text in ("2way", "3way"):
        return text
    doc = json.loads(Path(text).read_text())
    return [tuple(c) if isinstance(c, list) else c for c in doc]


def _say_warnings(caught) -> None:
    """Non-private reads (recorded in the plan) as notes with the way to declare instead,
    other warnings as ``warning:`` lines, all on stderr, each once."""
    from .._progress import end_line
    from ..prepare.table import NonPrivateWarning
    from ..table.report import WorseThanIndependentWarning

    end_line()
    seen: set = set()
    for w in caught:
        if str(w.message) in seen:  # once, though every epsilon of compare prepares anew
            continue
        seen.add(str(w.message))
        if issubclass(w.category, NonPrivateWarning):
            print(f"note: {_read_lines(_flag_words(str(w.message)))}", file=sys.stderr)
        elif issubclass(w.category, WorseThanIndependentWarning):
            print(f"warning: {w.message}", file=sys.stderr)
            say(f"WARNING: {w.message}")
        else:
            print(f"warning: {w.message}", file=sys.stderr)


#: ``prepare_plan``'s wording -> the flags that say the same on the command line.
_FLAGS = [
    ("drop_identifiers=True", "--drop-identifiers"),
    ("person=column", "--person COLUMN"),
    ("max_records_per_person", "--max-records-per-person"),
    ("categories='data'", "--categories-from-data"),
    ("bounds='data'", "--bounds-from-data"),
    ("missing=False", "--missing refuse"),
    ("other=True", '"other": true in --prepare SPEC.json'),
    ("spec=", "--prepare SPEC.json with "),
    ("spec ", "--prepare SPEC.json "),
]


def _read_lines(text: str) -> str:
    """A non-private-read warning (``head: read; read; ...``) as one read per line, then the
    way to declare instead."""
    head, sep, reads = text.partition(": ")
    if not sep:
        return f"{text}\n  {DECLARE_HINT}"
    listed = "".join(f"\n  - {r}" for r in reads.split("; "))
    return f"{head}:{listed}\n  {DECLARE_HINT}"


def _flag_words(text: str) -> str:
    """``prepare_plan``'s wording in the command line's words."""
    for api, flag in _FLAGS:
        text = text.replace(api, flag)
    return text


def _in_flags(err: Exception) -> Exception:
    """The same error, its message in the command line's words."""
    return type(err)(_flag_words(str(err)))


def fit_from_table(args, data: pd.DataFrame, spec: dict, budget):
    """The fit of ``--data`` without ``--cliques`` (``spec`` from :func:`table_spec`, checked
    by :func:`check_table`): prepare, select (AIM or MST), measure, fit; the plan, release
    and report written where asked; returns the :class:`Fit`."""
    from ..errors import PgmDpError
    from ..privacy.budget import budget_text
    from ..table.report import format_report

    what = "AIM" if args.selection == "aim" else "MST"
    say(
        f"preparing {data.shape[1]} columns, then selecting marginals ({what}) at "
        f"{budget_text(budget)} ..."
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            tf = _fit(data, spec, budget, args)
        except PgmDpError as err:
            raise _in_flags(err) from None
    _say_warnings(caught)
    say(tf.plan.report(total=budget))
    say(format_report(tf.report))
    for path, text in (
        (args.plan_out, tf.plan.to_json()),
        (args.release_out, tf.release.to_json()),
        (args.report, json.dumps(tf.report, indent=1)),
    ):
        if path is not None:
            Path(path).write_text(text)
            say(f"written: {path}")
    return tf.fit


def _fit(data, spec, budget, args):
    from ..table.fit import fit_table

    return fit_table(
        data,
        spec,
        budget=budget,
        rng=args.seed,
        learner=args.learner,
        selection=args.selection,
        workload=_workload(args.workload),
        max_model_size=args.max_model_size,
        max_rounds=args.max_rounds,
        prepare_share=args.prepare_share,
        mst_fraction=args.selection_fraction,
        check_share=getattr(args, "check_share", None),
        max_records_per_person=getattr(args, "max_records_per_person", 1),
        **_prepare_options(args),
    )
