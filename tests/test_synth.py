"""Synthetic records of a private fit (``pgm_dp.table.synth``, ``pgm-dp sample``): decoded to the
table's own values, exact, seeded, the same in chunks as at once, written as CSV / Parquet."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

import pgm_dp
from pgm_dp import PureDP
from pgm_dp.cli import main
from pgm_dp.errors import DataValidationError, DomainError
from pgm_dp.io import save_fit
from pgm_dp.prepare.columns import MISSING
from pgm_dp.table.fit import fit_table
from pgm_dp.table.synth import (
    BLOCK,
    CHUNK,
    NUMBERS,
    Synthesizer,
    full_codes,
    iter_table,
    sample_dask,
    sample_table,
    write_table,
)

CITIES = ["Lyon", "Nice", "Paris", "Lille", "Metz"]
AGE_BINS = [18, 30, 45, 60, 90]


def _people(n: int, seed: int = 0) -> pd.DataFrame:
    """Dependent columns; ``city`` and ``income`` have missing values, ``smoker`` none."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n).astype(float)
    city = rng.choice(CITIES, n, p=[0.3, 0.2, 0.3, 0.15, 0.05]).astype(object)
    smoker = np.where(rng.random(n) < np.where(age < 40, 0.6, 0.15), "yes", "no")
    income = np.round(rng.gamma(2.0, 15.0, n) + np.where(smoker == "yes", 0, 10), 1)
    df = pd.DataFrame({"age": age, "city": city, "smoker": smoker, "income": income})
    df.loc[rng.random(n) < 0.1, "city"] = None
    df.loc[rng.random(n) < 0.2, "income"] = np.nan
    return df


SPEC = {
    "age": {"bins": AGE_BINS},
    "city": CITIES,
    "smoker": {"categories": ["no", "yes"], "missing": False},
    "income": {"bins": [0, 20, 40, 80, 200]},
}


@pytest.fixture(scope="module")
def table_fit():
    return fit_table(_people(4000), SPEC, budget=PureDP(3.0), rng=0, max_rounds=4)


@pytest.fixture(scope="module")
def fit_file(table_fit, tmp_path_factory):
    return save_fit(table_fit.fit, tmp_path_factory.mktemp("synth") / "model.npz")


def test_records_are_the_tables_own_values(table_fit):
    df = pgm_dp.sample_table(table_fit, 3000, rng=1)
    assert list(df.columns) == ["age", "city", "smoker", "income"]
    assert set(df.city.dropna()) <= set(CITIES)
    assert set(df.smoker) <= {"no", "yes"} and not df.smoker.isna().any()  # no missing state
    labels = [s for s in table_fit.plan.column("age").states if s != MISSING]
    assert set(df.age.dropna()) <= set(labels) and labels[0] == "[18, 30)"
    text = df.astype(object).to_numpy().ravel()
    assert not any(isinstance(v, str) and v.startswith("<") for v in text)  # never "<missing>"
    assert 0.03 < df.income.isna().mean() < 0.4  # missing values where the model has mass


def test_numbers_uniform_fall_in_the_bins_of_the_interval_records(table_fit):
    iv = sample_table(table_fit, 2000, rng=4)
    un = sample_table(table_fit, 2000, rng=4, numbers="uniform")
    mid = sample_table(table_fit, 2000, rng=4, numbers="midpoint")
    assert un.age.dtype == np.float64 and mid.income.dtype == np.float64
    assert iv.city.equals(un.city)  # same records, only the numbers are written otherwise
    for name, edges in (("age", AGE_BINS), ("income", [0, 20, 40, 80, 200])):
        x = un[name].to_numpy()
        assert np.array_equal(np.isnan(x), iv[name].isna().to_numpy())
        codes = np.searchsorted(edges[1:-1], x[~np.isnan(x)], side="right")
        labels = np.asarray(table_fit.plan.column(name).states)[codes]
        assert np.array_equal(labels, iv[name].dropna().astype(str).to_numpy())
        lo, hi = np.asarray(edges)[codes], np.asarray(edges)[codes + 1]
        m = mid[name].dropna().to_numpy()
        np.testing.assert_allclose(m, (lo + hi) / 2)
        assert len(set(x[~np.isnan(x)])) > len(edges)  # drawn, not one value per bin


def test_records_follow_the_model_exactly(table_fit):
    """Frequencies of re-encoded records against the model's exact marginals."""
    n = 40000
    df = sample_table(table_fit, n, rng=2, numbers="midpoint")
    codes = full_codes(table_fit.plan, df).array
    model = table_fit.fit.model
    names = list(model.domain.attributes)
    for clique in [("age",), ("city",), ("age", "smoker"), ("city", "income")]:
        cols = [codes[:, names.index(v)] for v in clique]
        shape = model.domain.sizes(clique)
        freq = np.bincount(np.ravel_multi_index(cols, shape), minlength=np.prod(shape)) / n
        want = np.asarray(model.marginal(clique)).ravel()
        assert 0.5 * np.abs(freq - want).sum() < 0.02, clique


def test_seeded_records_repeat_and_chunks_are_the_same_records(table_fit):
    a = sample_table(table_fit, 2 * BLOCK + 77, rng=5)
    assert a.equals(sample_table(table_fit, 2 * BLOCK + 77, rng=5))
    assert not a.equals(sample_table(table_fit, 2 * BLOCK + 77, rng=6))
    for size in (1, BLOCK, 2 * BLOCK + 1):
        chunks = list(iter_table(table_fit, 2 * BLOCK + 77, rng=5, chunk_size=size))
        assert len(chunks) == -(-(2 * BLOCK + 77) // (-(-size // BLOCK) * BLOCK))
        assert pd.concat(chunks).equals(a)
    head = sample_table(table_fit, 100, rng=5)  # a prefix of the same stream
    assert head.equals(a.iloc[:100])


def test_missing_never_conditions_the_model(table_fit):
    df = sample_table(table_fit, 20000, rng=3, missing="never")
    assert not df.isna().any().any()
    model = table_fit.fit.model
    p = np.asarray(model.marginal(("city",)))[: len(CITIES)]
    freq = df.city.value_counts(normalize=True).reindex(CITIES).to_numpy()
    # the conditional differs from the renormalised marginal only through dependence on
    # income's missing state; within sampling error of it here
    assert 0.5 * np.abs(freq - p / p.sum()).sum() < 0.03


def test_csv_and_parquet_hold_the_same_records(table_fit, fit_file, tmp_path):
    pytest.importorskip("pyarrow")
    want = sample_table(fit_file, 1000, rng=7)
    pq = write_table(fit_file, 1000, tmp_path / "s.parquet", rng=7, chunk_size=BLOCK)
    back = pd.read_parquet(pq)
    for name in want.columns:
        got = back[name].astype(object).where(back[name].notna(), None).tolist()
        exp = want[name].astype(object).where(want[name].notna(), None).tolist()
        assert got == exp, name
    csv = write_table(fit_file, 1000, tmp_path / "s.csv", rng=7, numbers="uniform")
    back = pd.read_csv(csv)
    exp = sample_table(fit_file, 1000, rng=7, numbers="uniform")
    np.testing.assert_allclose(back.income.to_numpy(), exp.income.to_numpy())
    assert back.city.fillna("").tolist() == exp.city.astype(object).fillna("").tolist()


def test_the_sample_command_writes_csv_and_parquet(fit_file, tmp_path, capsys):
    pytest.importorskip("pyarrow")
    for name in ("s.csv", "s.parquet"):
        out = tmp_path / name
        argv = ["sample", str(fit_file), "-n", "500", "--out", str(out), "--seed", "3"]
        assert main([*argv, "--numbers", "uniform"]) == 0
        assert f"written: {out} (500 records, numbers as uniform" in capsys.readouterr().out
        back = pd.read_csv(out) if name.endswith("csv") else pd.read_parquet(out)
        want = sample_table(fit_file, 500, rng=3, numbers="uniform")
        assert list(back.columns) == list(want.columns) and len(back) == 500
        np.testing.assert_allclose(back.age.to_numpy(), want.age.to_numpy())
    with pytest.raises(SystemExit) as exc:  # refused while parsing
        main(["sample", str(fit_file), "-n", "5", "--out", str(tmp_path / "s.txt")])
    assert exc.value.code == 2 and "name the output .csv or .parquet" in capsys.readouterr().err


def test_the_commands_lists_match_the_modules():
    from pgm_dp.cli import sample

    assert sample.NUMBERS == NUMBERS and sample.CHUNK == CHUNK


def test_bad_input_is_refused(table_fit, tmp_path):
    bare = pgm_dp.learners.Fit(table_fit.fit.model, {}, {})
    with pytest.raises(DataValidationError, match="no preparation"):
        sample_table(bare, 10)
    with pytest.raises(DomainError, match="numbers"):
        sample_table(table_fit, 10, numbers="bins")
    with pytest.raises(DomainError, match="missing"):
        sample_table(table_fit, 10, missing="drop")
    for n in (0, 2.5, True):
        with pytest.raises(DataValidationError, match="n must be"):
            sample_table(table_fit, n)
    with pytest.raises(DataValidationError, match="format"):
        write_table(table_fit, 10, tmp_path / "s.json")
    assert not (tmp_path / "s.json").exists()


def test_a_dask_frame_holds_the_same_records(table_fit):
    pytest.importorskip("dask.dataframe")
    lazy = sample_dask(table_fit, 3 * BLOCK, rng=8, chunk_size=BLOCK)
    assert lazy.npartitions == 3
    assert lazy.compute(scheduler="sync").equals(sample_table(table_fit, 3 * BLOCK, rng=8))


def test_the_synthesizer_draws_nothing_from_the_budget(table_fit):
    before = dict(table_fit.fit.info)
    synth = Synthesizer(table_fit)
    synth.chunk(synth.entropy(0), 0, 10)
    assert table_fit.fit.info == before


@pytest.mark.parametrize(
    "field, value",
    [("merged", [0, 99]), ("merged", [3]), ("merged", [2, 1]), ("missing_to", 99),
     ("missing_to", -1), ("missing_to", 0), ("merged", [0, True])],
)  # fmt: skip
def test_sample_refuses_a_plan_with_codes_out_of_range(table_fit, tmp_path, capsys, field, value):
    """A saved fit's plan with ``merged`` / ``missing_to`` outside its column's states (or
    ``missing_to`` beside a missing state): refused by ``sample_table`` and ``pgm-dp
    sample`` with a one-line error, nothing written."""
    doc = json.loads(table_fit.fit.info["preparation"])
    doc["columns"][1][field] = value  # city: five categories and '<missing>'
    info = {**table_fit.fit.info, "preparation": json.dumps(doc)}
    path = save_fit(replace(table_fit.fit, info=info), tmp_path / "m.npz")
    with pytest.raises(DataValidationError, match=field):
        sample_table(path, 10)
    out = tmp_path / "s.csv"
    assert main(["sample", str(path), "-n", "10", "--out", str(out)]) == 2
    assert field in capsys.readouterr().err and not out.exists()


def test_every_way_to_get_records_gives_the_same_records_and_dtypes(
    table_fit, fit_file, tmp_path, capsys
):
    """One sampler and one decoder: ``TableFit.sample``, ``sample_table`` of a fit, of its
    file, ``iter_table`` and a :class:`Synthesizer` give the same records with the same
    dtypes for the same seed (``category`` columns, float64 numbers drawn within bins);
    ``write_table`` and ``pgm-dp sample`` write the same file, holding those records."""
    n, seed = BLOCK + 5, 11
    for numbers in ("interval", "uniform"):
        want = sample_table(table_fit, n, rng=seed, numbers=numbers)
        synth = Synthesizer(fit_file, numbers)
        ways = {
            "TableFit.sample": table_fit.sample(n, rng=seed, numbers=numbers),
            "Fit": sample_table(table_fit.fit, n, rng=seed, numbers=numbers),
            "file": sample_table(fit_file, n, rng=seed, numbers=numbers),
            "iter_table": pd.concat(
                iter_table(fit_file, n, rng=seed, numbers=numbers, chunk_size=BLOCK)
            ),  # fmt: skip
            "Synthesizer": synth.chunk(synth.entropy(seed), 0, n),
        }
        for name, got in ways.items():
            pd.testing.assert_frame_equal(got, want, check_index_type=False, obj=name)
        assert isinstance(want.city.dtype, pd.CategoricalDtype)
        assert list(want.city.cat.categories) == CITIES
        if numbers == "uniform":
            assert want.age.dtype == np.float64
    out = tmp_path / "cli.csv"
    argv = ["sample", str(fit_file), "-n", str(n), "--out", str(out), "--seed", str(seed)]
    assert main(argv) == 0
    capsys.readouterr()
    written = write_table(table_fit, n, tmp_path / "py.csv", rng=seed)
    assert out.read_bytes() == written.read_bytes()
    back = pd.read_csv(out, keep_default_na=False, na_values=[""])
    want = sample_table(table_fit, n, rng=seed)
    for name in want.columns:
        exp = want[name].astype(object).where(want[name].notna(), None).tolist()
        assert back[name].astype(object).where(back[name].notna(), None).tolist() == exp


def test_the_one_decoder_keeps_each_labels_type_and_missing_values():
    """:meth:`ColumnPlan.decode`: a ``Categorical`` of the declared labels as they are
    (integers stay integers, booleans booleans, ``"<other>"`` kept), the missing state a
    missing value; midpoints and within-bin numbers as float64."""
    from pgm_dp.prepare import ColumnPlan

    ints = ColumnPlan.categorical("k", (3, 1, 2), "declared", missing=True, other=True)
    got = ints.decode(np.array([0, 1, 2, 3, 4]))
    assert isinstance(got, pd.Categorical) and list(got.categories) == [3, 1, 2, "<other>"]
    assert got.tolist()[:4] == [3, 1, 2, "<other>"] and pd.isna(got[4])
    assert all(type(v) is int for v in got.tolist()[:3])
    flags = ColumnPlan.categorical("b", (False, True), "bool", missing=False, other=False)
    assert flags.decode(np.array([1, 0])).tolist() == [True, False]
    age = ColumnPlan.numeric("age", (0.0, 10.0, 30.0), "public bins", missing=True)
    codes = np.array([0, 1, 2])
    assert age.decode(codes).tolist()[:2] == ["[0, 10)", "[10, 30]"]
    mid = age.decode(codes, "midpoint")
    assert mid.dtype == np.float64 and mid[:2].tolist() == [5.0, 20.0] and np.isnan(mid[2])
    within = age.decode(codes, "uniform", np.array([0.5, 0.25, 0.9]))
    assert within[:2].tolist() == [5.0, 15.0] and np.isnan(within[2])
