"""A user's table on the command line: its preparation spec from the flags, and the
private fit of :func:`pgm_dp.workflow.fit_table` with what it read and reports printed.

The spec (:func:`table_spec`): ``--domain`` declares every state of its columns (sizes
``n`` mean the codes ``0..n-1``; no missing state); ``--prepare SPEC.json`` declares any
column as :func:`pgm_dp.prepare.prepare_plan` reads it and overrides ``--domain``. With
``--categories-from-data``, an undeclared column of whole numbers with at most
:data:`SMALL_INTEGER_STATES` distinct values is categorical (its values read from the data,
said so); other number columns are binned. Undeclared text columns with more than
:data:`MAX_STATES` distinct values look like case identifiers: they are named in the
refusal with the record identifiers ``prepare_plan`` finds, or dropped with
``--drop-identifiers``.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from ._data import say

__all__ = ["table_spec", "fit_from_table", "SMALL_INTEGER_STATES", "MAX_STATES", "DECLARE_HINT"]

#: Largest number of distinct whole numbers read as categories (``--categories-from-data``).
SMALL_INTEGER_STATES = 16
#: Most categories of a text column before it counts as an identifier (``prepare_plan``'s).
MAX_STATES = 1000
#: How to declare instead what was read from the data.
DECLARE_HINT = (
    "declare it instead in --prepare SPEC.json ({column: [categories]} or {column: "
    '{"bounds": [lo, hi]}}); --plan-out writes the plan to start from'
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
    from ..errors import DataValidationError

    spec: dict = {}
    for name, v in (domain or {}).items():
        if name not in df.columns:
            raise DataValidationError(f"--domain names a column not in the data: {name!r}")
        states = list(range(v)) if isinstance(v, int) else list(v)
        spec[name] = {"categories": states, "missing": False}
    spec.update(prepare or {})
    return spec


def table_spec(df: pd.DataFrame, args, reads: list[str]) -> dict:
    """The ``prepare_plan`` spec of ``df`` from the flags (module docstring); what it reads
    from the data without privacy is appended to ``reads``."""
    from ..errors import DataValidationError
    from ..prepare.columns import identifier_reason

    spec = _declared(args.domain, args.prepare, df)
    wide = {}
    for name in df.columns:
        if name in spec:
            continue
        col = df[name]
        values = _whole_numbers(col) if args.categories_from_data else None
        if values is not None and len(values) <= SMALL_INTEGER_STATES:
            if identifier_reason(col, name, 0.5) is None:
                spec[name] = {"categories": [int(v) for v in values]}
                reads.append(f"the {len(values)} values of whole-number column {name!r}")
        elif not pd.api.types.is_numeric_dtype(col) and col.nunique() > MAX_STATES:
            wide[name] = col.nunique()
    if wide and args.drop_identifiers:
        for name, n in wide.items():
            spec[name] = "drop"
            reads.append(f"{name!r} dropped as identifier-like: {n:,} distinct values")
    elif wide:
        found = [
            f"{n!r}: {reason}"
            for n in df.columns
            if n not in spec and (reason := identifier_reason(df[n], n, 0.5)) is not None
        ]
        found += [f"{n!r}: {k:,} distinct values of {len(df):,}" for n, k in wide.items()]
        raise DataValidationError(
            "columns that look like record identifiers: " + "; ".join(found) + ". A model of "
            "an identifier memorises records: drop them with --drop-identifiers (or "
            '{column: "drop"} in --prepare SPEC.json), or declare them there if they are '
            "variables"
        )
    return spec


def _prepare_options(args) -> dict:
    missing = {"state": True, "refuse": False, "data": "data"}[args.missing]
    return dict(
        categories="data" if args.categories_from_data else None,
        bounds="data" if args.bounds_from_data else None,
        missing=missing,
        drop_identifiers=args.drop_identifiers,
        compress=not args.no_compress,
    )


def _workload(text: str | None):
    if text is None or text in ("2way", "3way"):
        return text
    doc = json.loads(Path(text).read_text())
    return [tuple(c) if isinstance(c, list) else c for c in doc]


def _say_warnings(caught, reads: list[str]) -> None:
    """Non-private reads as notes (with the way to declare instead), other warnings as
    ``warning:`` lines, all on stderr."""
    from ..fit_report import WorseThanIndependentWarning
    from ..prepare import NonPrivateWarning

    for r in reads:
        print(f"note: read from the data WITHOUT privacy: {r}; {DECLARE_HINT}", file=sys.stderr)
    for w in caught:
        if issubclass(w.category, NonPrivateWarning):
            print(f"note: {w.message}; {DECLARE_HINT}", file=sys.stderr)
        elif issubclass(w.category, WorseThanIndependentWarning):
            print(f"warning: {w.message}", file=sys.stderr)
            say(f"WARNING: {w.message}")
        else:
            print(f"warning: {w.message}", file=sys.stderr)


#: ``prepare_plan``'s wording -> the flags that say the same on the command line.
_FLAGS = [
    ("drop_identifiers=True", "--drop-identifiers"),
    ("categories='data'", "--categories-from-data"),
    ("bounds='data'", "--bounds-from-data"),
    ("missing=False", "--missing refuse"),
    ("other=True", '"other": true in --prepare SPEC.json'),
    ("spec=", "--prepare SPEC.json with "),
    ("spec ", "--prepare SPEC.json "),
]


def _in_flags(err: Exception) -> Exception:
    """The same error, its message in the command line's words."""
    text = str(err)
    for api, flag in _FLAGS:
        text = text.replace(api, flag)
    return type(err)(text)


def fit_from_table(args, data: pd.DataFrame, budget):
    """The fit of ``--data`` without ``--cliques``: prepare, select (AIM or MST), measure,
    fit; the plan, release and report written where asked; returns the :class:`Fit`."""
    from ..errors import PgmDpError
    from ..fit_report import format_report

    reads: list[str] = []
    spec = table_spec(data, args, reads)
    what = "AIM" if args.selection == "aim" else "MST"
    say(f"preparing {data.shape[1]} columns, then selecting marginals ({what}) at {budget} ...")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            tf = _fit(data, spec, budget, args)
        except PgmDpError as err:
            raise _in_flags(err) from None
    _say_warnings(caught, reads)
    say(tf.plan.report())
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
    from ..workflow import fit_table

    return fit_table(
        data, spec, budget=budget, rng=args.seed, learner=args.learner,
        selection=args.selection, workload=_workload(args.workload),
        max_model_size=args.max_model_size, max_rounds=args.max_rounds,
        prepare_share=args.prepare_share, mst_fraction=args.selection_fraction,
        **_prepare_options(args),
    )  # fmt: skip
