"""The corpus of :mod:`table_corpus`: on pure ε and on zCDP, the spec that ``pgm-dp
prepare`` writes for each table runs through :func:`~pgm_dp.table.fit.fit_table` unchanged,
or the fit refuses with a ``ValueError`` before anything is charged; synthetic records come
back in the table's own values. No assertion here has a false-alarm rate (accounting,
refusals, types and ranges only)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from table_corpus import TABLES, table

from pgm_dp.cli.prepare import starting_spec
from pgm_dp.prepare import NonPrivateWarning
from pgm_dp.privacy import ZCDP, Accountant, PureDP
from pgm_dp.table.fit import fit_table
from pgm_dp.table.synth import sample_table

BUDGETS = {"pure": PureDP(0.5), "zcdp": ZCDP(0.05)}
#: Tables the package refuses, before any charge, and why.
REFUSED = {"tuple_name": "column names"}


def _written(df: pd.DataFrame) -> dict:
    """The spec ``pgm-dp prepare`` writes for ``df``: its JSON text read back where every
    name is text (a file's names are), the spec itself otherwise."""
    spec = starting_spec(df, {})
    if all(isinstance(c, str) for c in df.columns):
        spec = json.loads(json.dumps(spec))
    return spec


@pytest.mark.parametrize("notion", list(BUDGETS))
@pytest.mark.parametrize("name", list(TABLES))
def test_a_prepared_spec_fits_or_is_refused_before_any_charge(name, notion):
    df = table(name)
    before = df.copy()
    budget = BUDGETS[notion]
    acc = Accountant(budget)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonPrivateWarning)
        if name in REFUSED:
            with pytest.raises(ValueError, match=REFUSED[name]):
                fit_table(df, _written(df), budget=budget, rng=0, accountant=acc)
            assert acc.charges == ()
            return
        tf = fit_table(df, _written(df), budget=budget, rng=0, accountant=acc)
    pd.testing.assert_frame_equal(df, before)
    assert acc.charges and tf.fit.info["budget"] == acc.spent
    json.loads(tf.plan.to_json())
    _records_in_the_tables_values(tf)


def _records_in_the_tables_values(tf) -> None:
    """Categories come back as the table's values (integers as integers); whole-number
    columns drawn within bins (``numbers="uniform"``) as integers within their bins."""
    rows = sample_table(tf, 50, rng=1)
    uniform = sample_table(tf, 50, rng=1, numbers="uniform")
    assert list(rows.columns) == list(tf.plan.names)
    for c in tf.plan.columns:
        values = set(rows[c.name].dropna())
        if c.kind == "categorical":
            assert values <= set(c.states), c.name
            kinds = {type(v) for v in c.states[: c.n_categories]}
            if kinds == {int}:
                assert rows[c.name].cat.categories.dtype.kind == "i", c.name
        elif c.integer:
            x = uniform[c.name]
            assert x.dtype.kind == "i" or str(x.dtype) == "Int64", c.name
            lo, hi = c.edges[0], c.edges[-1]
            assert x.dropna().between(np.ceil(lo), np.floor(hi)).all(), c.name
            bins = rows[c.name].dropna().map(lambda s: json.loads(s.replace(")", "]")))
            for (a, b), v in zip(bins, x.dropna(), strict=True):  # a bin without a whole
                empty = np.ceil(a) > np.floor(b) or np.ceil(a) == b  # number: the nearest
                assert a <= v <= b or (empty and abs(v - (a + b) / 2) <= 0.5), (c.name, a, b, v)
