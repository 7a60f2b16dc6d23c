"""``pgm-dp fit --data`` end to end on real-looking tables: preparation, AIM, the fit, its
report and the check against the private independent model; ``compare --data``.

Tables written with ``DataFrame.to_csv()`` (index column included) stand for the public
tables a user brings. Every privacy draw is seeded; no test here has a false-alarm rate
(the assertions are about accounting, refusals and round trips, not about noise)."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from pgm_dp import load_adult
from pgm_dp.cli import main
from pgm_dp.compare.table import compare_on_table, print_table, split_table
from pgm_dp.io import load
from pgm_dp.prepare import prepare_plan
from pgm_dp.privacy import ZCDP, Accountant, ApproxDP, PureDP
from pgm_dp.select import aim
from pgm_dp.select.plan import aim_rounds, one_way_share, split_budget
from pgm_dp.table.fit import fit_table
from pgm_dp.table.report import WorseThanIndependentWarning, build_report, independent_check
from pgm_dp.table.selection import one_way_measurements
from pgm_dp.table.synth import expand_model, sample_table

CITIES = ["Lyon", "Nice", "Paris", "Lille", "Metz"]


def _people(n: int, seed: int = 0) -> pd.DataFrame:
    """Dependent columns: age (whole numbers), city, smoker (depends on age), visits."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n)
    city = rng.choice(CITIES, n, p=[0.3, 0.2, 0.3, 0.15, 0.05])
    smoker = np.where(rng.random(n) < np.where(age < 40, 0.6, 0.15), "yes", "no")
    visits = np.clip(rng.poisson(np.where(smoker == "yes", 4, 1)), 0, 6)
    df = pd.DataFrame({"age": age, "city": city, "smoker": smoker, "visits": visits})
    df.loc[rng.random(n) < 0.05, "city"] = None  # missing values: a state of their own
    return df


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """A table written with ``df.to_csv()``: its index becomes an ``Unnamed: 0`` column; a
    case id with many distinct values rides along."""
    tmp = tmp_path_factory.mktemp("table")
    df = _people(2400)
    df["caseid"] = [f"{i % 1150}:{i % 7}" for i in range(len(df))]
    df.to_csv(tmp / "people.csv")
    return tmp


def test_identifier_columns_are_refused_by_name(table, capsys):
    code = main(["fit", "--data", str(table / "people.csv"), "--out", str(table / "m.npz")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("pgm-dp fit: error: 6 columns need a decision:\n"), err
    assert "'Unnamed: 0'" in err and "'caseid'" in err and "--drop-identifiers" in err
    assert "\n      'caseid': " in err  # one identifier per line


def test_numeric_columns_need_bounds_or_the_flag_that_reads_them(table, capsys):
    argv = ["fit", "--data", str(table / "people.csv"), "--drop-identifiers"]
    assert main([*argv, "--categories-from-data", "--out", str(table / "m.npz")]) == 2
    err = capsys.readouterr().err
    assert "'age' needs public bounds" in err and "--bounds-from-data" in err


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_a_to_csv_table_fits_end_to_end_and_decodes_to_its_values(table, capsys):
    out = table / "m.npz"
    argv = ["fit", "--data", str(table / "people.csv"), "--drop-identifiers",
            "--categories-from-data", "--bounds-from-data", "--epsilon", "2", "--seed", "0",
            "--learner", "naive", "--out", str(out), "--report", str(table / "r.json"),
            "--plan-out", str(table / "plan.json"),
            "--release-out", str(table / "rel.json")]  # fmt: skip
    assert main(argv) == 0
    cap = capsys.readouterr()
    assert "Dropped columns" in cap.out and "'caseid'" in cap.out
    assert "Selected by AIM: " in cap.out and "Privacy budget: the guarantee is" in cap.out
    assert "the 7 categories of 'visits' (--categories-from-data)" in cap.err
    assert "--prepare SPEC.json" in cap.err  # with the way to declare it instead
    report = json.loads((table / "r.json").read_text())
    assert report["budget_spent"] == str(PureDP(2.0)) or "epsilon=2" in report["budget_spent"]
    assert {s["step"].split(":")[0] for s in report["steps"]} == {"prepare", "AIM"}
    assert report["independent_check"]["worse_than_independent"] is False
    fit = load(out)
    assert fit.info["report"]["selected"] == report["selected"]
    rows = sample_table(out, 300, rng=1)
    assert list(rows.columns) == ["age", "city", "smoker", "visits"]
    assert set(rows.city.dropna()) <= set(CITIES) and set(rows.smoker) <= {"yes", "no"}
    assert rows.age.dropna().astype(str).str.startswith("[").all()  # binned: intervals
    assert set(rows.visits.dropna()) <= set(range(7))
    assert main(["evaluate", "--model", str(out), "--data", str(table / "people.csv")]) == 0
    assert "held-out log-likelihood = -" in capsys.readouterr().out


@pytest.mark.slow
def test_delta_runs_in_zcdp_end_to_end(table, capsys):
    argv = ["fit", "--data", str(table / "people.csv"), "--drop-identifiers",
            "--categories-from-data", "--bounds-from-data", "--epsilon", "1", "--delta", "1e-6",
            "--seed", "0", "--learner", "naive", "--out", str(table / "d.npz"), "--max-rounds", "6",
            "--release-out", str(table / "d.json")]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "(ε, δ) = (1, 1e-06)" in out and "ε = 1, δ = 1e-06" in out  # the guarantee
    assert "% of the total" in out and "ρ = " in out  # the steps, in zCDP
    rel = json.loads((table / "d.json").read_text())
    assert "gaussian" in json.dumps(rel["noise"])
    assert "laplace" not in json.dumps(rel["noise"])


def test_fit_table_spends_exactly_its_budget_in_named_steps():
    df = _people(3000, seed=3)
    spec = {"age": {"bins": [18, 30, 45, 60, 90]}, "visits": list(range(7)), "city": CITIES,
            "smoker": ["no", "yes"]}  # fmt: skip
    acc = Accountant(PureDP(1.0))
    tf = fit_table(
        df, spec, budget=PureDP(1.0), rng=0, accountant=acc, max_rounds=6, check_share=0
    )  # fmt: skip (its accounting: tests/test_workload_check.py)
    assert acc.spent.epsilon == pytest.approx(1.0)
    assert not tf.plan.nonprivate_reads  # everything declared: nothing read without privacy
    whats = [c.what for c in acc.charges]
    assert whats[0].startswith("prepare: one-way marginals") and "aim round 0" not in " ".join(
        whats
    )
    assert acc.charges[0].cost.epsilon == pytest.approx(1 / 3)  # MST's third
    assert tf.report["learner"] == "naive" and tf.report["selection"] == "aim"
    assert set(tf.release.cliques) >= {(c,) for c in spec}  # one-way tables reused
    assert tf.fit.info["budget"] == acc.spent


def test_mst_selection_and_its_refusals():
    df = _people(2000, seed=4)
    spec = {"age": {"bins": [18, 40, 90]}, "visits": list(range(7)), "city": CITIES,
            "smoker": ["no", "yes"]}  # fmt: skip
    tf = fit_table(df, spec, budget=PureDP(2.0), rng=0, selection="mst")
    assert tf.report["selection"] == "mst" and len(tf.report["selected"]) == 3
    with pytest.raises(ValueError, match="pure epsilon"):
        fit_table(df, spec, budget=ApproxDP(1.0, 1e-6), selection="mst")
    with pytest.raises(ValueError, match="fits records"):
        fit_table(df, spec, budget=PureDP(1.0), learner="psgd")


def test_one_way_share_rule():
    """MST's third, at least 0.15 of a pure epsilon up to half of it; zCDP: 0.15 of rho, at
    least 5e-4 up to a third."""
    assert one_way_share(PureDP(1.0)) == pytest.approx(1 / 3)
    assert one_way_share(PureDP(3.0)) == pytest.approx(1 / 3)
    assert one_way_share(PureDP(0.3)) == pytest.approx(0.5)
    assert one_way_share(PureDP(0.4)) == pytest.approx(0.375)
    assert one_way_share(PureDP(0.01)) == pytest.approx(0.5)  # never more than half
    assert one_way_share(ApproxDP(0.3, 0.0)) == pytest.approx(0.5)  # delta = 0 is pure
    assert one_way_share(ApproxDP(0.3, 1e-9)) == pytest.approx(1 / 3)
    assert one_way_share(ApproxDP(1.0, 1e-9)) == pytest.approx(0.15)
    assert one_way_share(ZCDP(0.002)) == pytest.approx(0.25)
    assert one_way_share(ZCDP(0.001)) == pytest.approx(1 / 3)


def test_fit_table_default_share_follows_the_rule():
    df = _people(2000, seed=5)
    spec = {"age": {"bins": [18, 40, 90]}, "visits": list(range(7)), "city": CITIES,
            "smoker": ["no", "yes"]}  # fmt: skip
    acc = Accountant(PureDP(0.3))
    fit_table(df, spec, budget=PureDP(0.3), rng=0, accountant=acc, max_rounds=4, check_share=0)
    assert acc.charges[0].cost.epsilon == pytest.approx(0.15)  # half of a small epsilon
    assert acc.spent.epsilon == pytest.approx(0.3)


def test_budget_split_and_rounds():
    notion, amount, first, rest = split_budget(ApproxDP(1.0, 1e-6), 1 / 3)
    assert notion == "zcdp" and first.rho == pytest.approx(amount / 3)
    assert isinstance(rest, ZCDP) and rest.rho == pytest.approx(2 * amount / 3)
    assert split_budget(PureDP(3.0), 1 / 3)[2] == PureDP(1.0)
    # more records or more epsilon: more rounds, within [d, 2 d] (pure) / [d, 16 d] (zCDP)
    few, many = (aim_rounds(n, [50] * 5, "pure", 1.0, 6) for n in (1000, 100_000))
    assert few == 6 and many == 12
    assert aim_rounds(10**9, [4], "zcdp", 1.0, 6) == 96


def test_aim_starts_from_measurements_paid_for_elsewhere():
    df = _people(2000, seed=5)
    spec = {"age": {"bins": [18, 40, 90]}, "visits": list(range(7)), "city": CITIES,
            "smoker": ["no", "yes"]}  # fmt: skip
    plan = prepare_plan(df, spec, budget=PureDP(0.5), rng=0)
    measured = one_way_measurements(plan)
    codes = plan.encode(df)
    acc = Accountant(PureDP(0.5))
    res = aim(codes, plan.domain, PureDP(0.5), rng=1, accountant=acc, max_rounds=3,
              measured=measured)  # fmt: skip
    assert res.rounds[0].measure_cost == 0 and res.rounds[0].used == 0
    assert not any("round 0" in c.what for c in acc.charges)
    assert acc.spent.epsilon == pytest.approx(0.5)
    with pytest.raises(ValueError, match="measured"):
        aim(codes, plan.domain, PureDP(0.5), rng=1, measured=[("age",)])


@pytest.mark.slow
def test_a_model_worse_than_the_independent_one_warns():
    df = _people(3000, seed=6)
    spec = {"age": {"bins": [18, 40, 90]}, "visits": list(range(7)), "city": CITIES,
            "smoker": ["no", "yes"]}  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error", WorseThanIndependentWarning)
        tf = fit_table(df, spec, budget=PureDP(2.0), rng=0, max_rounds=6)  # good: no warning
    uniform = tf.fit.model.replace([np.zeros(t.shape) for t in tf.fit.model.log_potentials])
    check = independent_check(uniform, tf.release)
    assert check["worse_than_independent"] and check["fitted"] > check["independent"]
    acc = Accountant(PureDP(2.0))
    with pytest.warns(WorseThanIndependentWarning, match="private independent model"):
        report = build_report(uniform, tf.release, tf.plan, tf.selection, acc, "uniform")
    assert report["independent_check"]["worse_than_independent"]


def test_compare_on_table_scores_learners_on_one_release(tmp_path):
    df = _people(2000, seed=7)
    spec = {"age": {"bins": [18, 40, 90]}, "visits": list(range(7)), "city": CITIES,
            "smoker": ["no", "yes"]}  # fmt: skip
    res = compare_on_table(df, spec, epsilons=[1.0], learners=["naive"], seed=0,
                           out_dir=tmp_path, plot=False, max_rounds=4)  # fmt: skip
    runs = res.runs.set_index("learner")
    assert list(runs.index) == ["independent", "naive"] and res.plot is None
    assert (runs.n_test == 400).all() and (runs.loglik_test < 0).all()
    assert runs.loc["naive", "tvd2_test"] < runs.loc["independent", "tvd2_test"]
    first, second = split_table(df, 0.2, seed=0), split_table(df, 0.2, seed=0)
    assert first[1].index.tolist() == second[1].index.tolist()  # --seed reproduces the split


def test_compare_on_table_names_a_learner_whose_family_the_table_is_outside():
    """Zhang et al.'s learners need two states per variable: on a table with more they are
    skipped with the reason, and the others are still scored (one run, not a traceback)."""
    df = _people(600, seed=8)
    spec = {"age": {"bins": [18, 40, 90]}, "visits": list(range(7)), "city": CITIES,
            "smoker": ["no", "yes"]}  # fmt: skip
    res = compare_on_table(df, spec, epsilons=[1.0], learners=["naive", "zhang_ising_np"],
                           seed=0, plot=False, max_rounds=2)  # fmt: skip
    runs = res.runs.set_index("learner")
    assert runs.loc["naive", "skipped"] == "" and np.isfinite(runs.loc["naive", "loglik_test"])
    assert runs.loc["zhang_ising_np", "skipped"] and np.isnan(
        runs.loc["zhang_ising_np", "tvd2_test"]
    )
    assert "zhang_ising_np: not fitted:" in print_table(res)


@pytest.mark.slow
def test_compare_data_end_to_end(table, capsys):
    argv = ["compare", "--data", str(table / "people.csv"), "--drop-identifiers",
            "--categories-from-data", "--bounds-from-data", "--eps", "1", "--seed", "0",
            "--learners", "naive", "--out", str(table / "cmp")]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "loglik_test" in out and "tvd2_test" in out and "independent" in out
    runs = pd.read_csv(table / "cmp" / "compare_data.csv")
    assert set(runs.learner) == {"independent", "naive"} and (runs.loglik_test < 0).all()
    assert (table / "cmp" / "compare_data.png").exists()
    naive = runs.set_index("learner").loc["naive"]
    assert naive.tvd2_test <= runs.set_index("learner").loc["independent"].tvd2_test


def test_adult_subset_end_to_end(tmp_path, capsys):
    """The shipped Adult table (a slice of columns and rows, declared domain), ε = 1."""
    df, dom = load_adult()
    cols = ["age", "marital-status", "sex", "income>50K"]
    df[cols].head(5000).to_csv(tmp_path / "adult.csv", index=False)
    (tmp_path / "dom.json").write_text(json.dumps({c: dom.size([c]) for c in cols}))
    argv = ["fit", "--data", str(tmp_path / "adult.csv"), "--domain",
            str(tmp_path / "dom.json"), "--epsilon", "1", "--seed", "0", "--learner", "naive",
            "--max-rounds", "6", "--out", str(tmp_path / "a.npz")]  # fmt: skip
    assert main(argv) == 0
    cap = capsys.readouterr()
    assert "WITHOUT privacy" not in cap.err  # the domain is declared
    assert "'age'" in cap.out and "'<rare>'" in cap.out  # rare ages merged privately
    fit = load(tmp_path / "a.npz")
    assert fit.info["report"]["independent_check"]["worse_than_independent"] is False


@pytest.mark.slow
def test_adult_end_to_end_default_command(tmp_path, capsys):
    """The whole shipped Adult table through ``pgm-dp fit --data`` (naive learner)."""
    from importlib import resources

    data = resources.files("pgm_dp").joinpath("data")
    argv = ["fit", "--data", str(data / "adult.csv.gz"), "--domain",
            str(data / "adult-domain.json"), "--epsilon", "1", "--seed", "0",
            "--learner", "naive", "--out", str(tmp_path / "a.npz")]  # fmt: skip
    assert main(argv) == 0
    report = load(tmp_path / "a.npz").info["report"]
    assert (
        len(report["selected"]) >= 13 and not report["independent_check"]["worse_than_independent"]
    )


def test_the_saved_model_is_the_decoded_distribution_on_the_full_domain():
    """``expand_model``: a merged state gets ``1/m`` of its ``"<rare>"`` group, checked
    against the compressed model's marginals (one-way and a pair)."""
    df = _people(1500, seed=8)
    spec = {"age": {"bins": [18, 30, 40, 50, 60, 70, 80, 90]}, "visits": list(range(12)),
            "city": CITIES, "smoker": ["no", "yes"]}  # fmt: skip
    tf = fit_table(df, spec, budget=PureDP(0.5), rng=0, max_rounds=4)
    merged = {c.name: c for c in tf.plan.columns if c.merged}
    assert "visits" in merged  # visits 7..11 never occur: merged privately
    small = tf.selection.model  # AIM's own fit, on the compressed domain
    full = expand_model(small, tf.plan)
    assert full.domain.shape == tf.plan.full_domain.shape
    for name in ("visits", "age"):
        c = tf.plan.column(name)
        want = np.asarray(small.marginal((name,)))[np.asarray(c.code_map)]
        if c.merged:
            want[list(c.merged)] /= len(c.merged)
        np.testing.assert_allclose(np.asarray(full.marginal((name,))), want, atol=1e-9)
    c = tf.plan.column("visits")
    pair = np.asarray(full.marginal(("smoker", "visits")))
    comp = np.asarray(small.marginal(("smoker", "visits")))[:, np.asarray(c.code_map)]
    comp[:, list(c.merged)] /= len(c.merged)
    np.testing.assert_allclose(pair, comp, atol=1e-9)
    assert tf.fit.model.domain.shape == full.domain.shape  # what fit_table saves


@pytest.mark.parametrize(
    "options, message",
    [
        ({"workload": [("age", "nope")]}, "workload names columns"),
        ({"workload": "4way"}, "workload must be"),
        ({"max_model_size": 0}, "max_model_size"),
        ({"max_rounds": 0}, "max_rounds"),
        ({"learner": "nope"}, "unknown learner"),
        ({"selection": "mwem"}, "selection must be"),
        ({"prepare_share": 1.0}, "one-way share"),
    ],
)
def test_bad_options_are_refused_before_anything_is_spent(options, message):
    df = _people(300, seed=9)
    spec = {"age": {"bins": [18, 40, 90]}, "visits": list(range(7)), "city": CITIES,
            "smoker": ["no", "yes"]}  # fmt: skip
    acc = Accountant(PureDP(1.0))
    with pytest.raises(ValueError, match=message):
        fit_table(df, spec, budget=PureDP(1.0), accountant=acc, **options)
    assert acc.charges == ()
