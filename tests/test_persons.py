"""Persons with several records on the table path (:mod:`pgm_dp.prepare.persons`): the bound
of K rows per person, every sensitivity times K, the person column recognised, refused until
declared, never modelled, and the split of ``compare --data`` by person.

Every draw is seeded; the one statistical test (the audit) has its false-alarm rate stated."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from pgm_dp.cli import main
from pgm_dp.cli.prepare import starting_spec
from pgm_dp.compare.table import compare_on_table, split_table
from pgm_dp.errors import DataValidationError, DomainError, PrivacyParameterError
from pgm_dp.io import load
from pgm_dp.prepare import Preparation, bound_records, prepare_plan, with_person
from pgm_dp.prepare.binning import private_quantiles
from pgm_dp.prepare.persons import person_reason
from pgm_dp.privacy import ZCDP, Accountant, PureDP, release_marginals
from pgm_dp.select import aim, select_cliques
from pgm_dp.select.plan import aim_rounds
from pgm_dp.table.check import check_noise, independent_model, release_check
from pgm_dp.table.fit import fit_table

SPEC = {"sex": ["F", "M"], "region": ["N", "S", "E"], "income": {"bounds": [0, 100]}}


def _panel(persons: int = 500, seed: int = 0) -> pd.DataFrame:
    """A panel: ``persons`` persons with 1 to 5 rows each, an ``id`` column, a person-level
    ``sex``, a row-level ``region`` and ``income``."""
    rng = np.random.default_rng(seed)
    rows = rng.integers(1, 6, persons)
    pid = np.repeat(np.arange(7000, 7000 + persons), rows)
    sex = np.repeat(rng.choice(["F", "M"], persons), rows)
    region = rng.choice(["N", "S", "E"], len(pid), p=[0.5, 0.3, 0.2])
    income = np.clip(rng.normal(np.where(sex == "F", 40, 55), 12), 0, 100).round(1)
    return pd.DataFrame({"id": pid, "sex": sex, "region": region, "income": income})


# -- bounding --------------------------------------------------------------------------------
def test_bounding_keeps_at_most_k_rows_per_person_and_never_mutates_the_frame():
    df = _panel(300)
    before = df.copy()
    for k in (1, 2, 3):
        out = bound_records(df, "id", k, rng=k)
        pd.testing.assert_frame_equal(df, before)
        sizes, full = out.groupby("id").size(), df.groupby("id").size()
        assert sizes.max() <= k
        assert (sizes == np.minimum(full, k)).all()  # every person kept, with min(rows, k)
        assert out.index.isin(df.index).all() and out.index.is_monotonic_increasing
        pd.testing.assert_frame_equal(out, df.loc[out.index])  # rows as they were
        pd.testing.assert_frame_equal(bound_records(out, "id", k, rng=9), out)  # idempotent
    missing = pd.DataFrame({"id": [None, None, np.nan, 1.0], "x": [1, 2, 3, 4]})
    assert len(bound_records(missing, "id", 1, rng=0)) == 2  # missing ids: one person


def test_the_kept_rows_of_a_person_are_uniform():
    """Each of a person's 5 rows is kept with probability K/5 (400 seeds: a binomial
    deviation of 5 standard deviations would be needed to fail)."""
    df = pd.DataFrame({"id": [1] * 5 + [2] * 3, "row": range(8)})
    kept = np.zeros(8)
    for seed in range(400):
        kept[bound_records(df, "id", 2, rng=seed)["row"].to_numpy()] += 1
    p = np.array([2 / 5] * 5 + [2 / 3] * 3)
    assert np.all(np.abs(kept / 400 - p) < 5 * np.sqrt(p * (1 - p) / 400))


def test_bounding_refuses_a_bad_k_or_column():
    df = _panel(20)
    with pytest.raises(PrivacyParameterError, match="max_records_per_person"):
        bound_records(df, "id", 0)
    with pytest.raises(DataValidationError, match="not in the data"):
        bound_records(df, "nope", 2)


# -- every sensitivity times K -----------------------------------------------------------------
def _charges(acc: Accountant, prefix: str) -> list:
    return [c for c in acc.charges if c.what.startswith(prefix)]


@pytest.mark.parametrize("budget", [PureDP(1.0), ZCDP(0.5)])
def test_the_preparations_noise_scales_with_k(budget):
    """The private quantiles (exponential mechanism) and the one-way release: K=3 gives 3x
    the noise scale of K=1 at the same cost."""
    df = _panel(200)
    scales = {}
    for k in (1, 3):
        acc = Accountant(budget)
        plan = prepare_plan(df, {**SPEC, "id": "person"}, budget=budget, rng=0, accountant=acc,
                            max_records_per_person=k)  # fmt: skip
        quantile = _charges(acc, "prepare: quantile")[0]
        one_way = plan.one_way.noise[("sex",)]
        scales[k] = (quantile.scale, one_way.scale, plan.one_way.sensitivity)
        assert plan.max_records_per_person == k and plan.person == "id"
    assert scales[3] == pytest.approx(tuple(3 * s for s in scales[1]), rel=1e-6)


def test_private_quantiles_sensitivity_is_k():
    x = np.arange(100.0)
    for k in (1, 3):
        acc = Accountant(PureDP(1.0))
        private_quantiles(x, [0.5], (0, 100), budget=PureDP(1.0), rng=0, accountant=acc,
                          max_records_per_person=k)  # fmt: skip
        assert acc.charges[0].scale == pytest.approx(2.0 * k, rel=1e-5)  # 2 K / epsilon


def _codes(n=600, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    return np.column_stack([a, (a + rng.integers(0, 2, n)) % 3, rng.integers(0, 2, n)])


@pytest.mark.parametrize("budget", [PureDP(1.0), ZCDP(0.5)])
def test_aims_selection_and_measurements_scale_with_k(budget):
    """AIM's first round (the same costs whatever K): the selection's charge scale (2 Δ/ε),
    the measurement's noise scale, the one-way tables' noise and the score's bias: 3x."""
    from pgm_dp import Domain

    dom = Domain(["a", "b", "c"], [3, 3, 2])
    out = {}
    for k in (1, 3):
        acc = Accountant(budget)
        res = aim(_codes(), dom, budget, rng=0, accountant=acc, max_rounds=6,
                  max_records_per_person=k)  # fmt: skip
        select, measure = _charges(acc, "aim round 1: select")[0], res.rounds[1]
        one_way = res.measurements.noise_models()[0]
        out[k] = (select.scale, measure.scale, one_way.scale, res.rounds[0].scale)
        assert res.last_scored.records_per_person == k
    assert out[3] == pytest.approx(tuple(3 * s for s in out[1]), rel=1e-6)


def test_msts_selection_and_measurement_scale_with_k():
    from pgm_dp import Domain

    dom = Domain(["a", "b", "c"], [3, 3, 2])
    out = {}
    for k in (1, 3):
        acc = Accountant(PureDP(1.0))
        sel = select_cliques(_codes(), PureDP(1.0), dom, rng=0, accountant=acc,
                             max_records_per_person=k)  # fmt: skip
        edge = _charges(acc, "select_cliques: edge")[0]
        out[k] = (edge.scale, sel.one_way.noise[("a",)].scale)
    assert out[3] == pytest.approx(tuple(3 * s for s in out[1]), rel=1e-6)


def test_the_workload_checks_noise_scales_with_k():
    from pgm_dp import Domain

    dom = Domain(["a", "b", "c"], [3, 3, 2])
    rel = release_marginals(_codes(), [("a",), ("b",), ("c",), ("a", "b")], dom,
                            budget=PureDP(1.0), rng=0)  # fmt: skip
    ind = independent_model(rel)
    wl = [(("a", "b"), 1.0), (("b", "c"), 1.0)]
    scales = [
        release_check(_codes(), dom, wl, ind, rel, PureDP(0.1), rng=0, accountant=None, k=k)[
            "noise_scale"
        ]
        for k in (1, 3)
    ]
    assert scales[1] == pytest.approx(3 * scales[0], rel=1e-5)  # lattice rounding
    assert check_noise(ZCDP(0.1), 1000.0, 3) == pytest.approx(3 * check_noise(ZCDP(0.1), 1000.0))


def test_aims_planned_rounds_account_for_k():
    """K times the noise per round: as many rounds as a third of the records allow."""
    many = aim_rounds(20_000, [50] * 5, "pure", 1.0, 20)
    fewer = aim_rounds(20_000, [50] * 5, "pure", 1.0, 20, sensitivity=3)
    assert fewer < many and fewer == aim_rounds(20_000 / 3, [50] * 5, "pure", 1.0, 20)


@pytest.mark.parametrize("selection", ["aim", "mst"])
def test_fit_table_scales_every_step_with_k(selection):
    """Every charge of the table path at K=3 has 3x the noise scale of K=1 (MST's steps are
    not adaptive; AIM's first round has the same costs whatever K)."""
    df = _panel(300)
    groups = ["prepare: quantile", "prepare: one-way"]
    groups += (["aim round 1: select", "aim round 1: measure"] if selection == "aim" else
               ["select_cliques: one-way", "select_cliques: edge", "mst: measure"])  # fmt: skip
    scales = {}
    for k in (1, 3):
        acc = Accountant(PureDP(1.0))
        fit_table(df, SPEC, budget=PureDP(1.0), rng=0, accountant=acc, person="id",
                  max_records_per_person=k, selection=selection, max_rounds=4,
                  check_share=0)  # fmt: skip
        scales[k] = [_charges(acc, g)[0].scale for g in groups]
    assert scales[3] == pytest.approx([3 * s for s in scales[1]], rel=1e-6)


def test_audit_one_person_moves_the_bounded_release_by_at_most_e_epsilon():
    """A statistical audit of bounding + the K-scaled one-way release (pure ε = 1): D
    (persons of at most K=2 rows) and D' = D plus a person with 5 rows, all in cell 1. The
    pipeline (bounding, then :func:`release_marginals`) gives the bounded count and the noise
    scale of each; the tail event ``noisy count >= t`` is then estimated from 40 000 exact
    discrete Laplace draws at that scale. Its probability ratio is at most e^ε (at the limit
    here: the exact discrete Laplace reaches it in the tail); calibrated to one record, it
    is about e^2. The estimate of the ratio is within 8 % with probability > 0.9999."""
    from pgm_dp import Domain
    from pgm_dp.privacy.samplers import sample_discrete_laplace

    base = pd.DataFrame({"id": [1, 1, 2, 3, 3, 4], "x": [0, 1, 1, 0, 0, 1]})
    extra = pd.DataFrame({"id": [9] * 5, "x": [1] * 5})
    dom = Domain(["x"], [2])

    def tail(df, k: int, per_person: int) -> float:
        runs = set()
        for seed in range(5):  # the bounded count and the scale, whatever the draw
            gen = np.random.default_rng(seed)
            kept = bound_records(df, "id", k, gen)[["x"]].to_numpy()
            rel = release_marginals(kept, [("x",)], dom, budget=PureDP(1.0), rng=gen,
                                    max_records_per_person=per_person)  # fmt: skip
            runs.add((int((kept == 1).sum()), rel.noise[("x",)].scale))
        ((count, scale),) = runs
        noise = sample_discrete_laplace(scale, 40_000, rng=k + per_person)
        return float(np.mean(count + noise >= 3 + 2))

    pair = (base, pd.concat([base, extra], ignore_index=True))
    ratio = tail(pair[1], 2, 2) / tail(pair[0], 2, 2)
    assert ratio <= math.e * 1.08
    assert tail(pair[1], 2, 1) / tail(pair[0], 2, 1) > 2 * math.e  # the audit bites


# -- the person column: recognised, refused, declared, never modelled --------------------------
def test_person_reason_needs_an_id_name_and_repeated_values():
    df = _panel(100)
    assert person_reason(df["id"], "id") is not None
    assert person_reason(df["id"].astype(str), "person_id") is not None
    assert person_reason(df["id"], "income_level") is None  # no id in the name
    assert person_reason(pd.Series(np.arange(300)), "id") is None  # all distinct: a record id
    assert person_reason(pd.Series(np.arange(300) % 5), "id") is None  # 60 rows per value
    assert person_reason(df["income"], "pid") is None  # fractions are measurements


def test_fit_refuses_an_undeclared_person_column_before_any_charge():
    df = _panel(200)
    for options in ({}, {"drop_identifiers": True}):
        acc = Accountant(PureDP(1.0))
        with pytest.raises(DataValidationError, match="'id'.*person") as err:
            fit_table(df, SPEC, budget=PureDP(1.0), rng=0, accountant=acc, **options)
        assert "drop" in str(err.value) and not acc.charges
    with pytest.raises(PrivacyParameterError, match="needs a person column"):
        fit_table(df, {**SPEC, "id": "drop"}, budget=PureDP(1.0), max_records_per_person=2)


def test_the_person_declaration_and_its_conflicts():
    assert with_person({"id": "person"}, None) == ({"id": "person"}, "id")
    assert with_person({"x": [1]}, "id") == ({"x": [1], "id": "person"}, "id")
    with pytest.raises(DomainError):
        with_person({"id": "drop"}, "id")
    with pytest.raises(DomainError):
        with_person({"pid": "person"}, "id")
    with pytest.raises(DomainError, match="more than one person"):
        prepare_plan(_panel(30).assign(pid=1), {"id": "person", "pid": "person"})


def test_the_plan_and_the_report_state_the_guarantee_per_person():
    df = _panel(300)
    before = df.copy()
    tf = fit_table(df, {**SPEC, "id": "person"}, budget=PureDP(1.0), rng=0,
                   max_records_per_person=3, max_rounds=4)  # fmt: skip
    pd.testing.assert_frame_equal(df, before)  # the caller's frame is never modified
    unit = "person (column 'id') with at most 3 records"
    assert tf.report["guarantee"] == f"PureDP(epsilon=1.0) per {unit}"
    assert unit in tf.plan.report()
    doc = json.loads(tf.plan.to_json())
    assert (doc["person"], doc["max_records_per_person"], doc["privacy_unit"]) == ("id", 3, unit)
    back = Preparation.from_json(tf.plan.to_json())
    assert (back.person, back.max_records_per_person) == ("id", 3)
    assert back.to_spec()["id"] == "person"
    assert "id" not in tf.plan.names and "id" not in tf.sample(20, rng=0).columns
    plain = fit_table(df.drop(columns="id"), SPEC, budget=PureDP(1.0), rng=0, max_rounds=4)
    assert plain.report["guarantee"] == "PureDP(epsilon=1.0) per record"


def test_a_panel_through_prepare_then_fit_prepare(tmp_path, capsys):
    """The panel's ``id`` is written as ``"person"`` by ``pgm-dp prepare``; ``fit --prepare``
    runs with it and the synthetic records have no id column."""
    df = _panel(500)
    df.to_csv(tmp_path / "panel.csv", index=False)
    assert starting_spec(df, {})["id"] == "person"
    assert main(["prepare", str(tmp_path / "panel.csv"), "--out", str(tmp_path / "s.json")]) == 0
    spec = json.loads((tmp_path / "s.json").read_text())
    assert spec["id"] == "person"
    assert "'id' looks like the identifier of a person" in capsys.readouterr().err
    out = tmp_path / "m.npz"
    args = ["--epsilon", "1", "--seed", "0", "--max-records-per-person", "2", "--max-rounds", "4"]
    data = ["--data", str(tmp_path / "panel.csv"), "--prepare", str(tmp_path / "s.json")]
    code = main(["fit", *data, *args, "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0 and "per person (column 'id') with at most 2 records" in text
    fit = load(out)
    from pgm_dp.table.synth import sample_table

    records = sample_table(fit, 50, rng=0)
    assert "id" not in records.columns and list(records.columns) == ["sex", "region", "income"]


def test_the_cli_refuses_an_undeclared_person_and_a_k_without_one(tmp_path, capsys):
    df = _panel(200)
    df.to_csv(tmp_path / "panel.csv", index=False)
    (tmp_path / "s.json").write_text(json.dumps(SPEC))
    base = ["fit", "--data", str(tmp_path / "panel.csv"), "--prepare", str(tmp_path / "s.json"),
            "--epsilon", "1", "--out", str(tmp_path / "m.npz")]  # fmt: skip
    assert main([*base, "--drop-identifiers"]) != 0
    assert "--person COLUMN" in capsys.readouterr().err
    assert main([*base, "--person", "nope"]) != 0
    assert "--person names a column not in the data" in capsys.readouterr().err
    df.drop(columns="id").to_csv(tmp_path / "panel.csv", index=False)
    assert main([*base, "--max-records-per-person", "3"]) != 0
    assert "needs a person column" in capsys.readouterr().err
    assert not (tmp_path / "m.npz").exists()


# -- compare --data by person ---------------------------------------------------------------------
def test_compare_splits_by_person():
    df = _panel(400)
    train, test = split_table(df, 0.25, 0, person="id")
    assert not set(train["id"]) & set(test["id"])
    assert len(train) + len(test) == len(df)
    assert test["id"].nunique() == 100
    plain = split_table(df, 0.25, 0)  # without a person: rows, as before
    assert len(plain[1]) == round(len(df) * 0.25)
    with pytest.raises(PrivacyParameterError, match="record learner"):
        compare_on_table(df, SPEC, epsilons=[1.0], learners=["naive", "psgd"], person="id")


def test_prepare_table_bounds_once_and_encodes_the_kept_rows():
    """One pass over the table: at most K rows of each person kept, once, and the codes it
    hands on are those rows encoded by the final plan (rare states merged, a missing state
    folded away, edges at private quantiles), as ``Preparation.encode`` gives them."""
    from pgm_dp.prepare import prepare_table

    gen = np.random.default_rng(0)
    n = 2000
    df = pd.DataFrame(
        {
            "id": np.repeat(np.arange(500), 4),
            "c": gen.choice(list("abcdefgh"), n, p=[0.5, 0.3, 0.1, 0.05, 0.02, 0.01, 0.01, 0.01]),
            "x": gen.uniform(0, 100, n),
            "y": gen.choice([1.0, 2.0, np.nan], n),
        }
    )
    spec = {"id": "person", "c": list("abcdefgh"), "x": {"bounds": [0, 100]}}
    spec["y"] = {"bins": [0, 1.5, 3]}
    out = prepare_table(df, spec, budget=PureDP(1.0), rng=0, max_records_per_person=2)
    plan = out.preparation
    assert any(c.merged for c in plan.columns)
    assert any(c.missing_to is not None for c in plan.columns)
    assert plan.column("x").source.startswith("private quantiles")
    rows = df.loc[out.codes.index]
    assert len(rows) == 1000 and (rows.groupby("id").size() == 2).all()
    np.testing.assert_array_equal(out.codes.array, plan.encode(rows).array)
    again = prepare_plan(df, spec, budget=PureDP(1.0), rng=0, max_records_per_person=2)
    assert again.to_json() == plan.to_json()
