"""Integer-coded categories: once a table is encoded, its codes are :class:`Codes`, which no
later step reads by label, so categories that are numbers (``[0, 1, 2, 5]``, years, 0/1
flags, a declared order ``[2, 1, 0]``) go through ``prepare`` → ``fit --prepare`` unchanged,
and whether a table runs never depends on one record's value after a charge.

Every privacy draw is seeded; the statistical assertion (declared order) has a false-alarm
rate below 1e-6 (stated where it is made)."""

import json

import numpy as np
import pandas as pd
import pytest

from pgm_dp import Domain, sufficient_statistics
from pgm_dp.cli import main
from pgm_dp.domain import Codes
from pgm_dp.errors import DataValidationError
from pgm_dp.prepare import NonPrivateWarning, prepare_plan
from pgm_dp.privacy import ZCDP, Accountant, PureDP
from pgm_dp.table.fit import fit_table
from pgm_dp.table.synth import sample_table

BUDGETS = [PureDP(1.0), ZCDP(0.5)]


def test_codes_are_never_read_by_label():
    dom = Domain.from_dict({"d": [2, 1, 0], "e": [0, 1, 5]})
    codes = Codes([[0, 2], [1, 0], [2, 1]], dom)
    np.testing.assert_array_equal(dom.encode(codes), [[0, 2], [1, 0], [2, 1]])
    # the same integers in a frame are labels: read by label
    frame = pd.DataFrame({"d": [0, 1, 2], "e": [5, 0, 1]})
    np.testing.assert_array_equal(dom.encode(frame), [[2, 2], [1, 0], [0, 1]])
    # a sub-domain takes its columns; the tables are those of the codes
    np.testing.assert_array_equal(Domain.from_dict({"e": [0, 1, 5]}).encode(codes), [[2], [0], [1]])
    tables = sufficient_statistics(codes, [("d", "e")], dom)
    np.testing.assert_array_equal(tables[("d", "e")], [[0, 0, 1], [1, 0, 0], [0, 1, 0]])
    # codes travel with their domain: another meaning of the same codes is refused
    with pytest.raises(DataValidationError, match="another domain"):
        Domain.from_dict({"d": [0, 1, 2], "e": [0, 1, 5]}).encode(codes)
    with pytest.raises(DataValidationError, match="another domain"):
        Domain(["d", "e"], [3, 4]).encode(codes)
    with pytest.raises(DataValidationError, match="outside"):
        Codes([[3, 0]], dom)
    assert not codes.array.flags.writeable and dom.codes(codes).array.tolist() == [
        [0, 2], [1, 0], [2, 1],
    ]  # fmt: skip


def _neighbours(n: int = 2000) -> tuple[pd.DataFrame, pd.DataFrame]:
    """D: ``d`` in {0, 1, 2}; D': D plus one record with ``d = 5`` (issue's pair)."""
    rng = np.random.default_rng(0)
    d = rng.integers(0, 3, n)
    e = np.where(rng.random(n) < 0.2 + 0.25 * d, "yes", "no")
    df = pd.DataFrame({"d": d, "e": e})
    return df, pd.concat([df, pd.DataFrame({"d": [5], "e": ["no"]})], ignore_index=True)


@pytest.mark.parametrize("budget", BUDGETS, ids=["pure", "zcdp"])
def test_a_neighbouring_pair_releases_on_both_sides(budget):
    spec = {"d": [0, 1, 2, 5], "e": ["no", "yes"]}
    for data in _neighbours():
        acc = Accountant(budget)
        tf = fit_table(data, spec, budget=budget, rng=0, accountant=acc, max_rounds=2)
        assert tf.plan.column("d").states[:4] == (0, 1, 2, 5)
        assert [c.what.split(":")[0] for c in acc.charges][:1] == ["prepare"]
        assert tf.fit.info["budget"] == acc.spent


def test_declared_categories_keep_their_declared_order_end_to_end():
    n = 4000
    rng = np.random.default_rng(1)
    d = rng.choice([2, 1, 0], n, p=[0.7, 0.2, 0.1])
    df = pd.DataFrame({"d": d, "e": np.where(d == 2, "a", "b")})
    spec = {"d": [2, 1, 0], "e": ["a", "b"]}
    plan = prepare_plan(df, spec, budget=PureDP(1.0), rng=0)
    np.testing.assert_array_equal(
        plan.encode(df).column("d")[:20], [[2, 1, 0].index(v) for v in d[:20]]
    )
    tf = fit_table(df, spec, budget=PureDP(8.0), rng=0, max_rounds=2)
    labels = tf.fit.model.domain.labels_of("d")
    p = np.asarray(tf.fit.model.marginal(["d"]))
    got = dict(zip(labels, p, strict=True))
    # noise of scale ~1 on counts of 4000: the probabilities are within 0.02 with
    # probability above 1 - 1e-6
    assert got[2] == pytest.approx(0.7, abs=0.03) and got[0] == pytest.approx(0.1, abs=0.03)
    rows = sample_table(tf, 2000, rng=2)
    share = (rows.d == 2).mean()
    assert 0.64 < share < 0.76  # binomial sd 0.01: 6 sd
    assert rows.d.cat.categories.dtype.kind == "i"  # the user's integers, not strings


@pytest.fixture(scope="module")
def survey(tmp_path_factory):
    """A survey table as ``df.to_csv()`` writes it: years, 0/1 flags, counts, text, and
    the index column."""
    rng = np.random.default_rng(3)
    n = 600
    year = rng.integers(1984, 1989, n)
    flag = (rng.random(n) < 0.3 + 0.1 * (year - 1984)).astype(int)
    df = pd.DataFrame({
        "year": year, "flag": flag, "children": rng.integers(0, 5, n),
        "sex": rng.choice(["F", "M"], n),
    })  # fmt: skip
    tmp = tmp_path_factory.mktemp("survey")
    df.to_csv(tmp / "t.csv")
    return tmp


@pytest.mark.parametrize("privacy", [[], ["--delta", "1e-6"]], ids=["pure", "zcdp"])
def test_a_spec_written_by_prepare_runs_through_fit_unchanged(survey, privacy, capsys):
    data, spec = str(survey / "t.csv"), str(survey / "spec.json")
    assert main(["prepare", data, "--out", spec]) == 0
    written = json.loads((survey / "spec.json").read_text())
    assert written["year"]["categories"] == [1984, 1985, 1986, 1987, 1988]
    assert written["Unnamed: 0"] == {"drop": True, "from_data": True}
    out = str(survey / "m.npz")
    fit = ["fit", "--data", data, "--prepare", spec, "--epsilon", "1", *privacy,
           "--max-rounds", "2", "--seed", "0", "--out", out]  # fmt: skip
    assert main(fit) == 0, capsys.readouterr().err
    assert main(["sample", out, "-n", "300", "--seed", "1", "--out", str(survey / "s.csv")]) == 0
    rows = pd.read_csv(survey / "s.csv")
    for name, values in (("year", range(1984, 1989)), ("flag", (0, 1)), ("children", range(5))):
        assert rows[name].dtype.kind == "i" and set(rows[name]) <= set(values), name


def test_categories_from_data_run_through_fit(survey, capsys):
    fit = ["fit", "--data", str(survey / "t.csv"), "--drop-identifiers", "--categories-from-data",
           "--epsilon", "1", "--max-rounds", "2", "--seed", "0", "--out", str(survey / "c.npz"),
           "--plan-out", str(survey / "plan.json")]  # fmt: skip
    assert main(fit) == 0, capsys.readouterr().err
    again = ["fit", "--data", str(survey / "t.csv"), "--prepare", str(survey / "plan.json"),
             "--epsilon", "1", "--max-rounds", "2", "--seed", "1",
             "--out", str(survey / "p.npz")]  # fmt: skip
    assert main(again) == 0, capsys.readouterr().err


def test_an_undeclared_flag_is_decided_by_its_values_and_listed_as_read():
    n = 200
    df = pd.DataFrame({"smoker": [True, False] * (n // 2), "flag": [0, 1] * (n // 2)})
    holed = df.astype(object)
    holed.loc[0, "smoker"] = None  # object dtype now: one missing cell
    holed["flag"] = df.flag.where(np.arange(n) > 0)  # floats with a NaN
    for frame in (df, holed):
        with pytest.warns(NonPrivateWarning, match="is a flag"):
            plan = prepare_plan(frame)
        assert plan.column("smoker").states == (False, True, "<missing>")
        assert plan.column("flag").states == (0, 1, "<missing>")
        assert sum("is a flag" in r for r in plan.nonprivate_reads) == 2
        assert plan.to_spec()["flag"] == {
            "categories": [0, 1], "other": False, "missing": True, "from_data": True,
        }  # fmt: skip
        back = plan.decode(plan.encode(frame), rng=0)
        assert back.flag.tolist()[1:4] == [1, 0, 1] and back.smoker.tolist()[1:3] == [False, True]


def test_whole_numbers_are_declared_or_read_with_the_bounds():
    df = pd.DataFrame({"age": np.arange(300) % 70 + 18, "income": np.linspace(0, 1, 300)})
    with pytest.warns(NonPrivateWarning, match="'age' holds whole numbers"):
        plan = prepare_plan(
            df, {"age": {"bounds": "data", "n_bins": 4}, "income": {"bins": [0, 1]}}
        )
    assert plan.column("age").integer and not plan.column("income").integer
    assert plan.to_spec()["age"]["integer"] is True and "integer" not in plan.to_spec()["income"]
    spec = {"age": {"bounds": "data", "n_bins": 4, "integer": False}, "income": {"bins": [0, 1]}}
    with pytest.warns(NonPrivateWarning, match="bounds of 'age'"):
        assert not prepare_plan(df, spec).column("age").integer
    with pytest.raises(ValueError, match="mixes categories"):
        prepare_plan(df, {"age": {"categories": [1], "integer": True}})
