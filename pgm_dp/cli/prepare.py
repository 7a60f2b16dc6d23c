"""``pgm-dp prepare``: write a starting spec for ``--prepare`` from a table, WITHOUT privacy.

Every column gets an entry that ``pgm-dp fit --prepare SPEC.json`` (and
:func:`pgm_dp.prepare.prepare_plan`) accepts unchanged: ``"person"`` for a column that looks
like the identifier of a person with several rows (:func:`pgm_dp.prepare.persons.person_reason`:
the budget then protects each person, :mod:`pgm_dp.prepare.persons`), ``{"drop": true,
"from_data": true}`` for identifier-like columns, the categories seen in the data for text
columns and for whole-number columns with at most 16 values, the minimum and maximum for other
number columns (binned at private quantiles), ``[false, true]`` or ``[0, 1]`` for flags
(booleans, 0/1 columns). Columns declared by
``--prepare`` or ``--domain`` are kept as declared. Every value read from the data is marked
``"from_data": true``: a plan made from such an entry lists the read among its non-private
reads. Check each marked entry against public knowledge (a codebook, a census's categories,
plausible ranges), edit it, and delete the mark: the spec then declares public facts and
nothing is read without privacy. No budget is spent; nothing is released but the file. Which
column is a person's identifier is read from the data too, and said on the terminal: check it
as well.

Columns that are, in the data, a fixed function of an earlier categorical column (one-hot
copies of a category, the labels of a code: :func:`copies`) are named in a note with the
``derived_from`` entry that keeps them exact and out of the model
(:mod:`pgm_dp.prepare.derived`); the spec itself is not changed.
"""

from __future__ import annotations

from . import _args

__all__ = ["add_parser", "starting_spec", "copies", "COPY_SOURCE_STATES"]

#: Most categories of a column that :func:`copies` checks as the source of a copy.
COPY_SOURCE_STATES = 50


def _plain(v):
    return v.item() if hasattr(v, "item") else v


def starting_spec(df, declared: dict) -> dict:
    """The spec of ``df`` (module docstring), ``declared`` entries kept."""
    import numpy as np
    import pandas as pd

    from ..prepare._spec import DROP_FROM_DATA
    from ..prepare.columns import flag_states, identifier_reason, missing_mask
    from ..prepare.persons import PERSON, person_reason
    from ._table import MAX_STATES, SMALL_INTEGER_STATES, _whole_numbers

    spec: dict = {}
    for name in df.columns:
        col = df[name]
        if name in declared:
            spec[name] = declared[name]
        elif person_reason(col, name) is not None and PERSON not in spec.values():
            spec[name] = PERSON
        elif identifier_reason(col, name, 0.5, MAX_STATES) is not None:
            spec[name] = dict(DROP_FROM_DATA)
        elif (flag := flag_states(col)) is not None:
            spec[name] = {"categories": list(flag), "from_data": True}
        elif (w := _whole_numbers(col)) is not None and len(w) <= SMALL_INTEGER_STATES:
            spec[name] = {"categories": [int(v) for v in w], "from_data": True}
        elif pd.api.types.is_numeric_dtype(col):
            x = col.dropna().to_numpy(dtype=float)
            x = x[np.isfinite(x)]
            lo, hi = (float(x.min()), float(x.max())) if x.size else (0.0, 1.0)
            spec[name] = {"bounds": [lo, hi if hi > lo else lo + 1.0], "from_data": True}
            if w is not None:  # whole numbers: drawn within bins as whole numbers
                spec[name]["integer"] = True
        else:
            uniq = [_plain(v) for v in pd.unique(col[~missing_mask(col)])]
            try:
                cats = sorted(uniq)
            except TypeError:
                cats = sorted(uniq, key=str)
            spec[name] = {"categories": cats, "from_data": True}
    return spec


def copies(df, spec: dict) -> dict:
    """``{column: derived entry}`` for every column that is, in ``df`` (read WITHOUT
    privacy), a function of an earlier column, both with at most :data:`COPY_SOURCE_STATES`
    values (a one-hot copy, a label of a code): a ``{"derived_from": source, "map":
    {...}}`` entry. Columns with missing values, and dropped ones, are left out."""
    import numpy as np
    import pandas as pd

    codes = {}
    for name in df.columns:
        if spec.get(name) != "drop" and df[name].notna().all():
            c, values = pd.factorize(df[name])
            if 1 < len(values) <= COPY_SOURCE_STATES:
                codes[name] = (c, values)
    out: dict = {}
    names = list(codes)
    for j, name in enumerate(names):
        c, values = codes[name]
        for source in names[:j]:
            s, labels = codes[source]
            if source in out or len(values) > len(labels):
                continue
            seen = np.bincount(s * len(values) + c, minlength=len(labels) * len(values))
            if np.all((seen.reshape(len(labels), len(values)) > 0).sum(1) <= 1):
                first = np.unique(s, return_index=True)[1]
                pairs = sorted((str(labels[s[i]]), _plain(values[c[i]])) for i in first)
                out[name] = {"derived_from": str(source), "map": dict(pairs)}
                break
    return out


def _say_copies(found: dict) -> None:
    import json
    import sys

    if not found:
        return
    entries = "".join(f"\n  {json.dumps(str(k))}: {json.dumps(v)}," for k, v in found.items())
    print(
        "note: in the data (read WITHOUT privacy), these columns are a fixed function of "
        "another one; modelled, a copy costs selections and comes back blurred by the noise. "
        f"To keep each exact and out of the model, put its entry in the spec:{entries}",
        file=sys.stderr,
    )


def _run(args) -> None:
    import json
    import sys
    from pathlib import Path

    from ..prepare._spec import is_drop
    from ._data import read_data, say
    from ._table import _declared

    data = read_data(args.data)
    declared = _declared(args.domain, args.prepare, data)
    spec = starting_spec(data, declared)
    lines = [f" {json.dumps(str(k))}: {json.dumps(v, allow_nan=False)}" for k, v in spec.items()]
    Path(args.out).write_text("{\n" + ",\n".join(lines) + "\n}\n")
    _say_copies(copies(data, spec))
    marked = [repr(n) for n, e in spec.items() if isinstance(e, dict) and e.get("from_data")]
    dropped = [repr(n) for n, e in spec.items() if is_drop(e) and n not in declared]
    persons = [repr(n) for n, e in spec.items() if e == "person" and n not in declared]
    if dropped:
        say(f"identifier-like, dropped: {', '.join(dropped)}")
    if persons:
        print(
            f"note: read from the data WITHOUT privacy: {', '.join(persons)} looks like the "
            'identifier of a person with several rows and is declared "person" (the budget '
            "protects each person; see pgm-dp fit --max-records-per-person); check it, or "
            'make it "drop" to protect single records',
            file=sys.stderr,
        )
    if marked:
        print(
            f"note: read from the data WITHOUT privacy for {', '.join(marked)}: each entry is "
            'marked "from_data": true; check it against public knowledge, then delete the '
            "mark (a marked entry stays a non-private read in every plan made from it)",
            file=sys.stderr,
        )
    say(f"written: {args.out} (use it with pgm-dp fit --data {args.data} --prepare {args.out})")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "prepare",
        help="write a starting spec for --prepare (values read WITHOUT privacy)",
        description=__doc__,
    )
    p.add_argument("data", type=_args.existing_file, help="CSV or Parquet file")
    p.add_argument("--out", type=_args.output_file, default="spec.json", help="spec file (JSON)")
    p.add_argument(
        "--prepare",
        type=_args.domain_file,
        default=None,
        metavar="SPEC.json",
        help="declarations to keep (a spec, or a plan written by fit --plan-out)",
    )
    p.add_argument(
        "--domain", type=_args.domain_file, default=None, help="JSON {name: size or [labels]}"
    )
    p.set_defaults(func=_run)
