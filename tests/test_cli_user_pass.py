"""One pass through a new table as a user makes it (issue: for users): every undecided column
in one refusal whose spec runs unchanged, the plan and ``pgm-dp prepare``'s file read back
by ``--prepare``, ``compare --data`` with the preparation flags and a record learner, samples
without missing values where the table has none, reports without contradictions, clean
``--help``; and the privacy of what the user path saves and prints (no exact count of
records, every non-private read recorded, bad declarations refused in one line).

Tables are small and seeded; the end-to-end fits share one module fixture (marked slow)."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from pgm_dp.cli import main
from pgm_dp.errors import DataValidationError, DomainError
from pgm_dp.prepare import NonPrivateWarning, Preparation, check_spec, prepare_plan
from pgm_dp.privacy import ZCDP, PureDP


def _table(n: int = 600, seed: int = 0) -> pd.DataFrame:
    """Nine variables of a survey, none declared: text, whole numbers, reals, a boolean."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n)
    return pd.DataFrame(
        {
            "age": age,
            "sex": rng.choice(["F", "M"], n),
            "region": rng.choice(["north", "south", "east", "west"], n),
            "health": np.where(age > 60, "fair", rng.choice(["good", "fair"], n)),
            "children": rng.integers(0, 4, n),
            "income": rng.gamma(2.0, 20_000.0, n).round(2),
            "smoker": rng.random(n) < 0.2,
            "visits": rng.poisson(2, n),
            "score": rng.normal(size=n),
        }
    )


def _spec_in(message: str) -> dict:
    """The spec a refusal ends with (JSON, one column per line, after 'with')."""
    return json.loads(message.rsplit(" with\n", 1)[1])


@pytest.fixture(scope="module")
def csv(tmp_path_factory):
    """The table written by ``DataFrame.to_csv()``: its index is a tenth, unnamed column."""
    path = tmp_path_factory.mktemp("user") / "survey.csv"
    _table().to_csv(path)
    return path


# -- one refusal, a spec that runs -------------------------------------------------------------
def test_every_undecided_column_in_one_refusal_before_jax(csv):
    code = (
        "import sys; from pgm_dp.cli import main; "
        f"rc = main(['fit', '--data', {str(csv)!r}, '--out', 'unused.npz']); "
        "print(rc, 'jax' in sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.stdout.split() == ["2", "False"], run.stdout + run.stderr
    err = run.stderr.strip()
    lines = err.splitlines()  # one column per line, then the spec, one column per line
    assert lines[0] == "pgm-dp fit: error: 9 columns need a decision:", err
    assert "  - column 'sex' needs declared categories" in lines
    assert '  "sex": {"categories": "data"},' in lines and lines[-1] == "}"
    assert max(map(len, lines)) < 240, err
    for name in ("Unnamed: 0", "age", "sex", "region", "health", "children", "income",
                 "visits", "score"):  # fmt: skip
        assert f"'{name}'" in err, name
    assert "'smoker'" not in err  # booleans need no declaration
    spec = _spec_in(err)
    assert spec["Unnamed: 0"] == {"drop": True, "from_data": True}
    assert spec["sex"] == {"categories": "data"}
    assert spec["income"] == {"bounds": "data"}


def test_the_printed_spec_is_accepted_unchanged_and_its_reads_recorded(csv, capsys):
    assert main(["fit", "--data", str(csv), "--out", "unused.npz"]) == 2
    spec = _spec_in(capsys.readouterr().err)
    df = pd.read_csv(csv)
    check_spec(df, spec)  # nothing left undecided
    with pytest.warns(NonPrivateWarning):
        plan = prepare_plan(df, spec, budget=PureDP(1.0), rng=0)
    assert plan.dropped == ("Unnamed: 0",)
    assert plan.column("sex").source == "data (non-private)"
    assert any("bounds of 'income'" in r for r in plan.nonprivate_reads)


def test_prepare_writes_a_spec_that_runs_unchanged_and_keeps_its_marks(csv, tmp_path, capsys):
    out = tmp_path / "spec.json"
    assert main(["prepare", str(csv), "--out", str(out)]) == 0
    cap = capsys.readouterr()
    assert "WITHOUT privacy" in cap.err and '"from_data": true' in cap.err
    spec = json.loads(out.read_text())
    assert spec["Unnamed: 0"] == {"drop": True, "from_data": True}
    assert spec["smoker"] == {"categories": [False, True], "from_data": True}  # a flag
    assert spec["children"] == {"categories": [0, 1, 2, 3], "from_data": True}
    assert spec["sex"] == {"categories": ["F", "M"], "from_data": True}
    df = pd.read_csv(csv)
    with pytest.warns(NonPrivateWarning):
        plan = prepare_plan(df, spec, budget=PureDP(1.0), rng=0)
    marked = [n for n, e in spec.items() if isinstance(e, dict)]
    assert all(any(repr(n) in r for r in plan.nonprivate_reads) for n in marked)
    del spec["sex"]["from_data"]  # reviewed: the categories are public knowledge
    with pytest.warns(NonPrivateWarning):  # the others are still marked
        plan = prepare_plan(df, spec, budget=PureDP(1.0), rng=0)
    assert plan.column("sex").source == "declared"
    assert not any("'sex'" in r for r in plan.nonprivate_reads)


def test_a_drop_read_from_the_data_keeps_its_mark_in_every_spec(csv, tmp_path, capsys):
    """An identifier-like column dropped by a look at the data (``--drop-identifiers``,
    ``pgm-dp prepare``, the refusal's spec) stays a non-private read in every spec written
    from it: ``to_spec``, ``--plan-out`` read back by ``--prepare``, ``pgm-dp prepare``."""
    df = pd.read_csv(csv)
    declared = {"age": {"bounds": [0, 120]}, "income": {"bins": [0, 5e4, 1e6]},
                "score": {"bounds": [-5, 5], "n_bins": 4}, "visits": list(range(20)),
                "children": [0, 1, 2, 3], "sex": ["F", "M"], "health": ["good", "fair"],
                "region": ["north", "south", "east", "west"]}  # fmt: skip
    with pytest.warns(NonPrivateWarning):
        plan = prepare_plan(df, declared, drop_identifiers=True, budget=PureDP(1.0), rng=0)
    spec = plan.to_spec()
    assert spec["Unnamed: 0"] == {"drop": True, "from_data": True}
    with pytest.warns(NonPrivateWarning, match="'Unnamed: 0' dropped as identifier-like"):
        again = prepare_plan(df, json.loads(json.dumps(spec)), budget=PureDP(1.0), rng=1)
    assert again.dropped == ("Unnamed: 0",) and again.to_spec()["Unnamed: 0"] == spec["Unnamed: 0"]
    (tmp_path / "plan.json").write_text(plan.to_json())
    out = tmp_path / "spec.json"
    assert main(["prepare", str(csv), "--prepare", str(tmp_path / "plan.json"), "--out",
                 str(out)]) == 0  # fmt: skip
    assert json.loads(out.read_text())["Unnamed: 0"] == {"drop": True, "from_data": True}
    reviewed = {**spec, "Unnamed: 0": "drop"}  # a public decision: no read
    assert not any("Unnamed" in r for r in prepare_plan(df, reviewed).nonprivate_reads)
    with pytest.raises(DomainError, match="a drop is"):
        prepare_plan(df, {**spec, "Unnamed: 0": {"drop": False}})


def test_a_plan_is_a_spec_that_prepares_the_table_the_same_way(csv):
    df = pd.read_csv(csv)
    spec = {"Unnamed: 0": "drop", "age": {"bounds": [0, 120]}, "income": {"bins": [0, 5e4, 1e6]},
            "score": {"bounds": [-5, 5], "n_bins": 4}, "visits": list(range(20)),
            "children": [0, 1, 2, 3], "sex": ["F", "M"], "health": ["good", "fair"],
            "region": ["north", "south", "east", "west"],
            "smoker": [False, True]}  # fmt: skip
    plan = prepare_plan(df, spec, budget=PureDP(1.0), rng=0)
    text = json.loads(plan.to_json())
    again = Preparation.from_json(json.dumps(text)).to_spec()
    json.dumps(again)  # JSON types only
    plan2 = prepare_plan(df, again, budget=PureDP(1.0), rng=1)
    assert plan2.names == plan.names and plan2.dropped == plan.dropped
    assert [c.edges for c in plan2.columns] == [c.edges for c in plan.columns]
    assert plan2.nonprivate_reads == ()


# -- privacy of what the user path prints and saves --------------------------------------------
def _with_row_numbers(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    return pd.DataFrame(
        {"id": np.arange(n), "name": [f"p{i}" for i in range(n)], "sex": rng.choice(["F", "M"], n)}
    )


def test_neighbouring_tables_get_the_same_identifier_messages_and_plan():
    """D and D + 1 record: the refusal, and the saved plan's reads and notes, are identical
    (no count of records in them)."""
    texts, saved = [], []
    for n in (1000, 1001):
        df = _with_row_numbers(n)
        with pytest.raises(DataValidationError) as info:
            check_spec(df, {"sex": ["F", "M"]})
        texts.append(str(info.value))
        with pytest.warns(NonPrivateWarning):
            plan = prepare_plan(df, {"sex": ["F", "M"]}, drop_identifiers=True)
        doc = json.loads(plan.to_json())
        saved.append((doc["dropped"], doc["nonprivate_reads"], doc["notes"]))
    assert texts[0] == texts[1] and saved[0] == saved[1]
    assert "row numbers" in texts[0] and "1,000" not in texts[0] and "999" not in texts[0]


def test_neighbouring_tables_get_the_same_cli_refusal(tmp_path, capsys):
    errs = []
    for n in (1000, 1001):
        path = tmp_path / f"t{n}.csv"
        _with_row_numbers(n).to_csv(path, index=False)
        assert main(["fit", "--data", str(path), "--out", str(tmp_path / "m.npz")]) == 2
        errs.append(capsys.readouterr().err.replace(f"t{n}.csv", "t.csv"))
    assert errs[0] == errs[1]
    assert "1,000" not in errs[0] and "1000" not in errs[0]


def test_wide_text_column_dropped_with_the_drop_recorded():
    """A text column with more distinct values than max_states (but fewer than half the
    records) is identifier-like: dropped with drop_identifiers and saved as such."""
    n = 3000
    df = pd.DataFrame({"code": [f"c{i % 1200}" for i in range(n)], "sex": ["F", "M"] * 1500})
    with pytest.warns(NonPrivateWarning):
        plan = prepare_plan(df, {"sex": ["F", "M"]}, drop_identifiers=True)
    assert plan.dropped == ("code",)
    assert plan.nonprivate_reads == (
        "'code' dropped as identifier-like: it has more than 1,000 distinct values",
    )


def test_categories_from_data_of_an_integer_column_are_saved_as_read(tmp_path, capsys):
    from pgm_dp.cli._table import table_spec

    df = pd.DataFrame({"kids": [0, 1, 2, 3] * 50, "sex": ["F", "M"] * 100})

    class Args:
        domain = prepare = None
        categories_from_data = True

    spec = table_spec(df, Args)
    with pytest.warns(NonPrivateWarning):
        plan = prepare_plan(df, spec, categories="data")
    assert plan.column("kids").source == "data (non-private)"
    assert "the 4 categories of 'kids' (categories='data')" in plan.nonprivate_reads


@pytest.mark.parametrize(
    "domain, words",
    [({"sex": 10**12}, "size from 1 to 1,000"), ({"sex": 2.5}, "size from 1"),
     ({"sex": "FM"}, "list of labels"), ({"sex": True}, "size from 1")],
    ids=["huge", "float", "string", "bool"],
)  # fmt: skip
def test_bad_domain_declarations_are_one_line_errors(domain, words, tmp_path, capsys):
    data = tmp_path / "t.csv"
    pd.DataFrame({"sex": ["F", "M"] * 20}).to_csv(data, index=False)
    (tmp_path / "d.json").write_text(json.dumps(domain))
    argv = ["fit", "--data", str(data), "--domain", str(tmp_path / "d.json"), "--out", "x.npz"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err, err


def test_a_deeply_nested_spec_is_a_one_line_error(tmp_path, capsys):
    data = tmp_path / "t.csv"
    pd.DataFrame({"sex": ["F", "M"] * 20}).to_csv(data, index=False)
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(SystemExit) as info:
        main(["fit", "--data", str(data), "--prepare", str(tmp_path / "deep.json")])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "nested too deeply" in err


def test_bounds_whose_width_overflows_are_refused():
    df = pd.DataFrame({"x": [0.0, 1.0] * 20})
    with pytest.raises(DomainError, match="too far apart"):
        prepare_plan(df, {"x": {"bounds": [-1e308, 1e308]}}, budget=PureDP(1.0), rng=0)


# -- the missing state -------------------------------------------------------------------------
def test_a_table_without_missing_values_has_no_missing_state_after_compression():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"sex": rng.choice(["F", "M"], 2000), "age": rng.uniform(0, 99, 2000)})
    spec = {"sex": ["F", "M"], "age": {"bins": [0, 30, 60, 100]}}
    plan = prepare_plan(df, spec, budget=ZCDP(0.5), rng=0)
    assert all("<missing>" not in labels for labels in plan.domain.labels)
    assert all("<missing>" not in labels for labels in plan.full_domain.labels)
    assert set(plan.one_way.noisy[("sex",)].shape) == {2}
    codes = np.random.default_rng(1).integers(0, 2, (500, 2))
    assert not plan.decode(codes, rng=0).isna().any().any()
    # missing values met later (a held-out table) take the most common noisy state
    assert plan.encode(pd.DataFrame({"sex": [None], "age": [np.nan]})).shape == (1, 2)
    # where the data have many missing values, the state stays
    df.loc[: len(df) // 4, "sex"] = None
    plan = prepare_plan(df, spec, budget=ZCDP(0.5), rng=0)
    assert "<missing>" in plan.domain.labels_of("sex")


def test_help_is_plain_text_with_one_default_each(capsys):
    for command in ("fit", "compare", "prepare", "evaluate"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = capsys.readouterr().out
        assert "``" not in text and ":func:" not in text and ":mod:" not in text, command
        assert "(default: None)" not in text, command
        for paragraph in text.split("\n  -"):
            assert paragraph.count("(default:") <= 1, paragraph


# -- end to end (one fit, one comparison) ------------------------------------------------------
@pytest.fixture(scope="module")
def fitted(csv, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fit")
    spec = tmp / "spec.json"
    assert main(["prepare", str(csv), "--out", str(spec)]) == 0
    argv = ["fit", "--data", str(csv), "--prepare", str(spec), "--epsilon", "3", "--seed", "0",
            "--max-rounds", "4", "--out", str(tmp / "m.npz"),
            "--plan-out", str(tmp / "plan.json")]  # fmt: skip
    assert main(argv) == 0
    return tmp


@pytest.mark.slow
def test_fit_samples_have_no_missing_values_and_the_plan_reads_back(fitted, csv, capsys):
    from pgm_dp.table.synth import sample_table

    rows = sample_table(fitted / "m.npz", 2000, rng=0)
    assert not rows.isna().any().any()
    plan = Preparation.from_json((fitted / "plan.json").read_text())
    assert not any(c.missing for c in plan.columns)  # folded: the table has no missing value
    assert all("treated as public" not in n for n in plan.notes)
    assert plan.column("sex").source == "spec, read from data"
    for c in plan.columns:  # no column is "declared" while its values were read
        if any(repr(c.name) in r for r in plan.nonprivate_reads):
            assert c.source != "declared", c
    argv = ["fit", "--data", str(csv), "--prepare", str(fitted / "plan.json"), "--epsilon", "3",
            "--seed", "1", "--max-rounds", "2", "--out", str(fitted / "m2.npz")]  # fmt: skip
    assert main(argv) == 0
    capsys.readouterr()
    assert main(["evaluate", "--model", str(fitted / "m.npz"), "--data", str(csv)]) == 0
    out = capsys.readouterr().out
    assert "nats per record" in out and "private independent model (baseline" in out


@pytest.mark.slow
def test_compare_data_takes_the_preparation_flags_and_a_record_learner(fitted, csv, capsys):
    out = fitted / "cmp"
    argv = ["compare", "--data", str(csv), "--prepare", str(fitted / "spec.json"), "--eps", "3",
            "--learners", "naive", "psgd", "--out", str(out), "--no-plot"]  # fmt: skip
    assert main(argv) == 0
    cap = capsys.readouterr()
    runs = pd.read_csv(out / "compare_data.csv")
    assert set(runs.learner) == {"independent", "naive", "psgd"}
    assert np.isfinite(runs.loglik_test).all()
    notes = [line for line in cap.err.splitlines() if line.startswith("note:")]
    assert len(notes) == len(set(notes))


def test_compare_prints_compile_and_per_fit_time_apart(capsys):
    from pgm_dp.compare.graphs import column_labels, print_times

    runs = pd.DataFrame(
        {
            "learner": ["naive", "cgm", "naive", "cgm"],
            "seconds": [3.0, 69.0, 0.1, 0.33],
            "first_fit": [True, True, False, False],
        }
    )
    print_times(runs, column_labels())
    out = capsys.readouterr().out
    assert "compilation included" in out and "69.00 s" in out
    assert "later fit (compiled)" in out and "3.3x" in out and "690" not in out


def test_predictive_check_repr_is_a_summary():
    from pgm_dp.bayes.checks import PredictiveCheck

    table = np.zeros((200, 7, 7))
    check = PredictiveCheck({("a", "b"): 1.0}, {("a", "b"): table}, {("a", "b"): 0.25})
    assert repr(check) == "PredictiveCheck(1 tables, min_p=0.25, p<0.01: [])"
    flagged = PredictiveCheck({("a", "b"): 1.0}, {("a", "b"): table}, {("a", "b"): 0.001})
    assert repr(flagged) == "PredictiveCheck(1 tables, min_p=0.001, p<0.01: [a,b])"


def test_a_record_learner_gets_what_the_preparation_left():
    from pgm_dp import learners
    from pgm_dp.compare.table import record_budget
    from pgm_dp.privacy import ApproxDP
    from pgm_dp.select.plan import one_way_share, split_budget

    df = pd.DataFrame({"sex": ["F", "M"] * 300})
    budget = PureDP(1.0)
    share = one_way_share(budget)
    plan = prepare_plan(df, {"sex": ["F", "M"]}, budget=PureDP(share), rng=0)
    b = record_budget(learners.get("psgd"), plan, budget, 600, {})
    assert b.epsilon == pytest.approx(1.0 - share) and b.delta == pytest.approx(1 / 600)
    approx = ApproxDP(1.0, 1e-6)  # the fit runs in zCDP: the plan spent its share of rho
    share = one_way_share(approx)
    plan = prepare_plan(df, {"sex": ["F", "M"]}, budget=split_budget(approx, share)[2], rng=0)
    b = record_budget(learners.get("psgd"), plan, approx, 600, {})
    assert b.epsilon == pytest.approx(1.0 - share) and b.delta == 1e-6
    assert record_budget(learners.get("nonprivate"), plan, budget, 600, {}) is None
