"""Data preparation (pgm_dp.prepare): identifiers, categories, bins, private quantiles,
missing values, MST compression, and that nothing is spent on a refused input.

Randomised checks use fixed seeds; each states its false-alarm rate under a correct
implementation."""

from __future__ import annotations

import dataclasses
import io
import math
import time

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pgm_dp import BudgetExceededError, DataValidationError, DomainError, NoisyMarginals
from pgm_dp.prepare import NonPrivateWarning, Preparation, prepare_plan
from pgm_dp.prepare.binning import private_quantiles, quantile_utility
from pgm_dp.privacy import ZCDP, Accountant, PureDP

#: Δ' of the exact exponential mechanism for a utility of sensitivity 1: the lattice 2^-20
#: (2^20 <= Δ/g < 2^21) and D = ceil(Δ/g) + 1 lattice units (pgm_dp.privacy.argmax).
DELTA_LATTICE = 1 + 2.0**-20

SPEC = {
    "sex": ["F", "M"],
    "age": {"bins": [0, 18, 30, 45, 65, 120]},
    "city": ["north", "south", "east", "west", "isle", "fjord", "moor"],
    "income": {"bounds": [0, 200_000], "n_bins": 4},
}


def _frame(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    """Strings with None and empty strings, floats with NaN, rare categories, a bool."""
    rng = np.random.default_rng(seed)
    sex = rng.choice(np.array(["F", "M", "", None], dtype=object), n, p=[0.48, 0.47, 0.03, 0.02])
    age = rng.integers(0, 100, n).astype(float)
    age[rng.random(n) < 0.05] = np.nan
    city = rng.choice(
        ["north", "south", "east", "west", "isle", "fjord", "moor"],
        n,
        p=[0.3, 0.3, 0.2, 0.1994, 0.0002, 0.0002, 0.0002],
    )
    income = rng.gamma(2.0, 20_000.0, n)
    return pd.DataFrame({"sex": sex, "age": age, "city": city, "income": income})


def _to_csv_and_back(df: pd.DataFrame) -> pd.DataFrame:
    buf = io.StringIO()
    df.to_csv(buf)  # writes the row index as an unnamed first column
    buf.seek(0)
    return pd.read_csv(buf)


# -- public bins -------------------------------------------------------------------------------
def test_public_bins_encode_decode_and_cost_nothing():
    df = _frame()
    acc = Accountant(ZCDP(1.0))
    plan = prepare_plan(df, SPEC, accountant=acc)
    assert plan.budget_spent is None and acc.charges == () and plan.one_way is None
    age = plan.column("age")
    assert age.states == ("[0, 18)", "[18, 30)", "[30, 45)", "[45, 65)", "[65, 120]", "<missing>")
    codes = plan.encode(df)
    want = np.digitize(df.age.fillna(-1), [18, 30, 45, 65])
    want[df.age.isna().to_numpy()] = 5
    np.testing.assert_array_equal(codes.column("age"), want)
    assert plan.column("income").edges == (0.0, 50_000.0, 100_000.0, 150_000.0, 200_000.0)
    back = plan.decode(codes, rng=0)
    assert back.age[df.age == 20].eq("[18, 30)").all() and back.age[df.age.isna()].isna().all()
    mids = plan.decode(codes, rng=0, numeric="midpoint").age
    assert mids[df.age == 20].eq(24.0).all()


def test_out_of_range_numbers_clipped_or_refused_without_values():
    df = pd.DataFrame({"age": [-5.0, 10.0, 130.0, 777.0] * 10})
    plan = prepare_plan(df, {"age": {"bins": [0, 50, 120]}}, missing=False)
    assert plan.encode(df).column("age").tolist()[:4] == [0, 0, 1, 1]
    messages = []
    for extra in (0, 1):  # one more out-of-range record: the same refusal, word for word
        data = pd.concat([df, pd.DataFrame({"age": [500.0] * extra})], ignore_index=True)
        with pytest.raises(DataValidationError, match="'age': some records lie outside") as info:
            prepare_plan(data, {"age": {"bins": [0, 50, 120], "clip": False}})
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert not any(v in messages[0] for v in ("777", "500", "130", "30 ", "31 "))


# -- private quantiles -------------------------------------------------------------------------
def test_private_quantile_follows_the_exponential_mechanism_formula():
    """Smith 2011 / McSherry-Talwar: P(c) ∝ exp(ε u(c) / (2Δ')), u(c) = -|#{x < c} - q n|.
    Chi-square goodness of fit of 4000 draws; false-alarm rate 1e-3."""
    x = np.array([0.5, 1.5, 1.7, 2.2, 4.9, 5.1, 6.3, 7.7, 7.9, 7.95])
    eps, grid, q = 0.8, 8, 0.5
    cand = 8 * np.arange(1, grid) / grid
    u = quantile_utility(np.sort(x), cand, q)
    p = np.exp(eps * (u - u.max()) / (2 * DELTA_LATTICE))
    p /= p.sum()
    gen = np.random.default_rng(1)
    draws = [
        private_quantiles(x, [q], (0, 8), budget=PureDP(eps), grid=grid, rng=gen)[0]
        for _ in range(4000)
    ]
    counts = np.array([np.sum(np.isclose(draws, c)) for c in cand])
    assert counts.sum() == 4000
    assert stats.chisquare(counts, 4000 * p).pvalue > 1e-3


def test_private_quantiles_are_accurate_by_the_utility_theorem():
    """The exponential mechanism's utility theorem: P[u(c) <= -(2Δ'/ε)(ln G + t)] <= e^-t.
    With t = 12 each of the 9 quantiles fails with probability <= 6e-6."""
    rng = np.random.default_rng(2)
    x = rng.normal(50, 15, 20_000)
    eps, grid, t = 0.5, 1000, 12.0
    qs = [i / 10 for i in range(1, 10)]
    out = private_quantiles(x, qs, (0, 100), budget=PureDP(eps), grid=grid, rng=3)
    bound = 2 * DELTA_LATTICE / eps * (math.log(grid - 1) + t)
    ranks = np.searchsorted(np.sort(np.clip(x, 0, 100)), out, side="left")
    assert np.all(np.abs(ranks - np.array(qs) * x.size) <= bound), (ranks, bound)


@pytest.mark.parametrize("budget", [PureDP(0.9), ZCDP(0.3)])
def test_private_quantile_bins_charge_the_accountant(budget):
    df = _frame()
    acc = Accountant(budget)
    plan = prepare_plan(
        df, {**SPEC, "age": {"bounds": [0, 120], "quantiles": 4}}, budget=budget, rng=0,
        accountant=acc, compress=False,
    )  # fmt: skip
    assert len(acc.charges) == 3 and plan.charges == acc.charges
    each = 0.3 if isinstance(budget, PureDP) else math.sqrt(2 * 0.3 / 3)
    for ch in acc.charges:
        assert ch.mechanism.startswith("exponential") and "'age'" in ch.what
        assert isinstance(ch.cost, PureDP) and ch.cost.epsilon == pytest.approx(each)
        assert ch.scale == pytest.approx(2 * DELTA_LATTICE / each)
    spent = plan.budget_spent
    assert (spent.epsilon if isinstance(budget, PureDP) else spent.rho) == pytest.approx(
        budget.epsilon if isinstance(budget, PureDP) else budget.rho
    )
    edges = plan.column("age").edges
    assert edges[0] == 0 and edges[-1] == 120 and list(edges) == sorted(set(edges))
    assert plan.column("age").source.startswith("private quantiles")


def test_numeric_column_needs_public_bounds():
    df = _frame()[["age"]]
    with pytest.raises(DataValidationError, match="numeric column 'age' needs public bounds"):
        prepare_plan(df, budget=ZCDP(1.0))
    with pytest.warns(NonPrivateWarning, match="bounds of 'age'"):
        plan = prepare_plan(df, bounds="data", budget=ZCDP(1.0), rng=0, compress=False)
    assert any("bounds of 'age'" in r for r in plan.nonprivate_reads)
    assert "WITHOUT privacy" in plan.report() and "bounds of 'age'" in plan.report()


def test_integer_columns_are_categorical_only_when_declared():
    df = pd.DataFrame({"children": np.tile([0, 1, 2, 3], 50)})
    with pytest.raises(DataValidationError, match="'children' needs public bounds"):
        prepare_plan(df, categories="data")
    plan = prepare_plan(df, {"children": [0, 1, 2, 3, 4]}, missing=False)
    assert plan.column("children").kind == "categorical"
    assert plan.domain.labels_of("children") == (0, 1, 2, 3, 4)
    assert plan.encode(df).column("children").tolist()[:4] == [0, 1, 2, 3]


# -- categorical columns -----------------------------------------------------------------------
def test_undeclared_categories_need_categories_data_and_warn_once():
    df = _frame()[["city"]]
    with pytest.raises(DataValidationError, match="'city' needs declared categories"):
        prepare_plan(df)
    with pytest.warns(NonPrivateWarning) as record:
        plan = prepare_plan(df, categories="data")
    assert len(record) == 1 and "without differential privacy" in str(record[0].message).lower()
    assert plan.column("city").source == "data (non-private)"
    k = df.city.nunique()
    assert plan.nonprivate_reads == (f"the {k} categories of 'city' (categories='data')",)


def test_values_outside_declared_categories_other_or_refused():
    df = pd.DataFrame({"sex": ["F", "M", "X-secret"] * 10})
    with pytest.raises(DataValidationError, match="'sex': records have values outside") as e:
        prepare_plan(df, {"sex": ["F", "M"]})
    assert "X-secret" not in str(e.value)
    plan = prepare_plan(df, {"sex": {"categories": ["F", "M"], "other": True}})
    assert plan.domain.labels_of("sex") == ("F", "M", "<other>", "<missing>")
    assert plan.decode(plan.encode(df), rng=0).sex.tolist()[:3] == ["F", "M", "<other>"]


def test_reserved_or_repeated_categories_refused():
    df = pd.DataFrame({"sex": ["F", "M"] * 10})
    with pytest.raises(DomainError, match="reserved"):
        prepare_plan(df, {"sex": ["F", "M", "<missing>"]})
    with pytest.raises(DomainError, match="not distinct"):
        prepare_plan(df, {"sex": ["F", "M", "F"]})


# -- identifiers -------------------------------------------------------------------------------
def test_to_csv_index_column_refused_then_dropped():
    df = _frame()
    back = _to_csv_and_back(df)
    assert back.columns[0] == "Unnamed: 0"
    acc = Accountant(ZCDP(1.0))
    with pytest.raises(DataValidationError, match="'Unnamed: 0'.*DataFrame.to_csv"):
        prepare_plan(back, SPEC, budget=ZCDP(1.0), rng=0, accountant=acc)
    assert acc.charges == ()
    with pytest.warns(NonPrivateWarning, match="Unnamed: 0"):
        plan = prepare_plan(
            back, SPEC, drop_identifiers=True, budget=ZCDP(1.0), rng=0, accountant=acc
        )
    assert plan.dropped == ("Unnamed: 0",) and "Unnamed: 0" not in plan.names
    assert "Dropped columns" in plan.report()
    pd.testing.assert_frame_equal(plan.encode(back).to_frame(), plan.encode(df).to_frame())


@pytest.mark.parametrize(
    "column, reason",
    [
        (lambda n, r: r.permutation(n) + 1, "row numbers"),
        (lambda n, r: np.arange(n) * 7 + 100, "all distinct"),
        (
            lambda n, r: np.array([f"person{i:05d}" for i in r.permutation(n)], dtype=object),
            "distinct values",
        ),
    ],
    ids=["range", "distinct-integers", "names"],
)
def test_identifier_like_columns_named_without_values(column, reason):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"key": column(3000, rng), "sex": rng.choice(["F", "M"], 3000)})
    with pytest.raises(DataValidationError, match=f"'key': .*{reason}") as info:
        prepare_plan(df, {"sex": ["F", "M"]}, categories="data")
    assert "person0" not in str(info.value) and "'sex'" not in str(info.value)


def test_continuous_numbers_and_declared_columns_are_not_identifiers():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=500), "id": np.arange(500)})
    plan = prepare_plan(df, {"x": {"bins": [-9, 0, 9]}, "id": {"bins": [0, 250, 500]}})
    assert plan.names == ("x", "id")


def test_identifier_check_is_fast_on_50k_rows():
    rng = np.random.default_rng(0)
    n = 50_000
    df = pd.DataFrame(
        {
            "name": np.array([f"n{i}" for i in range(n)], dtype=object),
            "town": rng.choice([f"t{i}" for i in range(40)], n),
            "age": rng.integers(0, 99, n).astype(float),
        }
    )
    start = time.perf_counter()
    with pytest.warns(NonPrivateWarning):
        plan = prepare_plan(
            df, {"age": {"bins": [0, 50, 100]}}, categories="data", drop_identifiers=True
        )
    assert time.perf_counter() - start < 10.0
    assert plan.dropped == ("name",)


# -- missing values ----------------------------------------------------------------------------
def test_missing_values_are_their_own_state():
    df = pd.DataFrame({"sex": ["F", None, "", "  ", "M", np.nan], "age": [1.0, np.nan, 3, 4, 5, 6]})
    spec = {"sex": ["F", "M"], "age": {"bins": [0, 10]}}
    plan = prepare_plan(df, spec)
    assert plan.encode(df).column("sex").tolist() == [0, 2, 2, 2, 1, 2]
    back = plan.decode(plan.encode(df), rng=0)
    assert back.sex.isna().tolist() == [False, True, True, True, False, True]
    assert back.age.isna().tolist() == [False, True, False, False, False, False]
    with pytest.raises(DataValidationError, match="'sex' has missing values"):
        prepare_plan(df, spec, missing=False)
    with pytest.warns(NonPrivateWarning, match="whether 'age' has missing"):
        plan = prepare_plan(df.assign(age=1.0), spec, missing="data")
    assert plan.column("age").states == ("[0, 10]",) and plan.column("sex").missing


# -- compression (MST) -------------------------------------------------------------------------
def test_rare_categories_merged_and_expanded_back():
    df = _frame(n=20_000, seed=3)
    acc = Accountant(ZCDP(2.0))
    plan = prepare_plan(df, SPEC, budget=ZCDP(0.1), rng=5, accountant=acc)
    rel = plan.one_way
    assert isinstance(rel, NoisyMarginals) and rel.domain == plan.full_domain
    d = len(plan.names)
    assert rel.noise[("city",)].scale == pytest.approx(math.sqrt(d / 0.2), rel=1e-6)  # σ²=d/(2ρ)
    assert acc.charges[-1].cost == ZCDP(0.1) and plan.budget_spent == ZCDP(0.1)
    city = plan.column("city")
    sigma = math.sqrt(rel.noise[("city",)].variance)
    y = np.asarray(rel.noisy[("city",)], dtype=float)
    assert city.merged == tuple(np.flatnonzero(y < 3 * sigma))  # MST's rule
    rare = {"isle", "fjord", "moor"}
    assert {city.states[i] for i in city.merged} >= rare
    assert set(city.labels) >= {"north", "south", "east", "west", "<rare>"}
    codes = plan.encode(df)
    back = plan.decode(codes, rng=0)
    keep = ~df.city.isin([city.states[i] for i in city.merged])
    assert back.city[keep].tolist() == df.city[keep].tolist()
    merged_labels = {city.states[i] for i in city.merged}
    drawn = back.city[~keep].fillna("<missing>")  # a drawn missing state decodes to NaN
    assert set(drawn) <= merged_labels
    # uniform expansion: chi-square over the merged states, false-alarm rate 1e-3
    counts = drawn.value_counts().reindex(sorted(merged_labels), fill_value=0)
    assert stats.chisquare(counts).pvalue > 1e-3
    counts_c, var_c = plan.compressed_measurements()["city"]
    m = len(city.merged)
    assert counts_c[-1] == pytest.approx(y[list(city.merged)].sum())
    assert var_c[-1] == pytest.approx(m * sigma**2) and var_c[0] == pytest.approx(sigma**2)


def test_compression_under_pure_dp_uses_discrete_laplace():
    df = _frame(n=5000, seed=4)
    plan = prepare_plan(df, SPEC, budget=PureDP(1.0), rng=0)
    model = plan.one_way.noise[("sex",)]
    assert model.kind == "discrete_laplace" and model.scale == pytest.approx(len(plan.names))
    assert plan.charges[-1].cost == PureDP(1.0)
    back = plan.decode(plan.encode(df), rng=0, expand="noisy")
    assert set(back.sex.dropna()) <= {"F", "M"}


def test_decode_reads_labelled_categories_too():
    df = _frame(n=2000, seed=6)
    plan = prepare_plan(df, SPEC, budget=ZCDP(1.0), rng=0)
    codes = plan.encode(df)
    labelled = plan.domain.decode(codes.array)
    pd.testing.assert_frame_equal(plan.decode(labelled, rng=1), plan.decode(codes, rng=1))


# -- purity, refusals and budget ---------------------------------------------------------------
def test_caller_frame_is_never_modified_and_plan_is_frozen():
    df = _frame()
    before = df.copy()
    plan = prepare_plan(df, SPEC, budget=ZCDP(1.0), rng=0)
    codes = plan.encode(df)
    codes_before = codes.array.copy()
    plan.decode(codes, rng=0)
    pd.testing.assert_frame_equal(df, before)
    np.testing.assert_array_equal(codes.array, codes_before)
    assert not codes.array.flags.writeable
    assert isinstance(plan, Preparation)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.columns = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.columns[0].merged = ()  # type: ignore[misc]


@pytest.mark.parametrize(
    "change, kwargs, error",
    [
        (lambda df: _to_csv_and_back(df), {}, DataValidationError),  # identifier
        (lambda df: df.assign(sex="Q"), {}, DataValidationError),  # undeclared category
        (lambda df: df.assign(extra=1.5), {}, DataValidationError),  # numeric without bounds
        (lambda df: df.assign(age="old"), {}, DataValidationError),  # not a number
        (lambda df: df, {"spec": {**SPEC, "age": {"bins": [0, 0]}}}, DomainError),
        (lambda df: df, {"spec": {**SPEC, "sex": {"categoris": []}}}, DomainError),
        (lambda df: df, {"spec": {**SPEC, "nope": ["a"]}}, DataValidationError),
        (lambda df: df, {"max_states": 5}, DomainError),
        (lambda df: df, {"mechanism": "laplace"}, ValueError),  # Laplace needs a PureDP budget
        (lambda df: df, {"budget": ZCDP(5.0)}, BudgetExceededError),  # beyond the accountant
        (lambda df: df.iloc[:0], {}, DataValidationError),
    ],
)
def test_refused_inputs_spend_nothing(change, kwargs, error):
    acc = Accountant(ZCDP(1.0))
    args = {"spec": {**SPEC, "age": {"bounds": [0, 120]}}, "budget": ZCDP(0.5), **kwargs}
    with pytest.raises(error):
        prepare_plan(change(_frame()), rng=0, accountant=acc, **args)
    assert acc.charges == ()


def test_budget_needed_for_private_steps():
    df = _frame()
    with pytest.raises(ValueError, match="budget is needed for private quantiles"):
        prepare_plan(df, {**SPEC, "age": {"bounds": [0, 120]}})
    with pytest.raises(ValueError, match="PureDP or ZCDP"):
        from pgm_dp.privacy import ApproxDP

        prepare_plan(df, SPEC, budget=ApproxDP(1.0, 1e-6))


def test_plan_json_round_trip():
    df = _frame(n=5000, seed=7)
    with pytest.warns(NonPrivateWarning):
        plan = prepare_plan(
            _to_csv_and_back(df), {**SPEC, "age": {"bounds": [0, 120]}}, drop_identifiers=True,
            budget=ZCDP(1.0), rng=0,
        )  # fmt: skip
    again = Preparation.from_json(plan.to_json())
    assert again.columns == plan.columns and again.domain == plan.domain
    assert again.one_way == plan.one_way and again.charges == plan.charges
    assert again.report() == plan.report()
    pd.testing.assert_frame_equal(again.encode(df).to_frame(), plan.encode(df).to_frame())


def test_report_states_reads_and_charges():
    df = _frame()
    with pytest.warns(NonPrivateWarning):
        plan = prepare_plan(df, {**SPEC, "city": {"categories": "data"}}, budget=ZCDP(1.0), rng=0)
    text = plan.report()
    for word in ("sex", "categorical", "numeric", "categories of 'city'", "ρ = 1",
                 "one-way marginals", "number of records is not released"):  # fmt: skip
        assert word in text, word
    assert str(plan) == text


def test_an_integer_beyond_float64_in_bins_or_bounds_is_a_domain_error():
    df = pd.DataFrame({"age": [1.0, 2.0, 3.0] * 10})
    for entry in ({"bins": [0, 10**400]}, {"bounds": [0, 10**400], "n_bins": 2}):
        with pytest.raises(DomainError, match="finite"):
            prepare_plan(df, {"age": entry}, missing=False)
