"""Derived columns (:mod:`pgm_dp.prepare.derived`): declared in the spec, not modelled, and
back exactly in synthetic records."""

import json

import numpy as np
import pandas as pd
import pytest

from pgm_dp.cli import main
from pgm_dp.errors import DataValidationError, DomainError
from pgm_dp.prepare.derived import split_derived
from pgm_dp.privacy import PureDP
from pgm_dp.table.fit import fit_table
from pgm_dp.table.synth import sample_table

SEX = {"Male": 1, "Female": 0}


def _table(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    """A category with its one-hot copies (``is_male``, ``is_female``) and a label column."""
    rng = np.random.default_rng(seed)
    sex = rng.choice(["Male", "Female"], n, p=[0.6, 0.4])
    work = np.where(rng.random(n) < np.where(sex == "Male", 0.7, 0.5), "yes", "no")
    region = rng.choice(["n", "s", "e"], n)
    return pd.DataFrame({
        "sex": sex, "is_male": (sex == "Male").astype(int), "work": work,
        "is_female": (sex == "Female").astype(int), "region": region,
        "region_name": pd.Series(region).map({"n": "North", "s": "South", "e": "East"}),
    })  # fmt: skip


SPEC = {
    "sex": ["Male", "Female"], "work": ["yes", "no"], "region": ["n", "s", "e"],
    "is_male": {"derived_from": "sex", "map": SEX},
    "is_female": {"derived_from": "sex", "map": {"Male": 0, "Female": 1}},
    "region_name": {"derived_from": "region", "map": {"n": "North", "s": "South", "e": "East"}},
}  # fmt: skip


def test_derived_columns_are_not_modelled_and_come_back_exactly():
    df = _table()
    tf = fit_table(df, SPEC, budget=PureDP(1.0), rng=0)
    assert set(tf.plan.names) == {"sex", "work", "region"}  # nothing spent on the copies
    assert not any(set(c) & {"is_male", "is_female", "region_name"} for c in tf.selection.cliques)
    for records in (tf.sample(5000, rng=1), sample_table(tf.fit, 5000, rng=1)):
        assert (records["is_male"] == (records["sex"] == "Male").astype(int)).all()
        assert (records["is_female"] + records["is_male"] == 1).all()
        assert (records["region_name"].str[0].str.lower() == records["region"].astype(str)).all()
    assert df.columns.tolist() == _table().columns.tolist()  # the caller's frame untouched


def test_the_cli_saves_and_samples_derived_columns(tmp_path, capsys):
    _table().to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "spec.json").write_text(json.dumps(SPEC))
    model, out = tmp_path / "m.npz", tmp_path / "s.csv"
    assert (
        main(
            [
                "fit",
                "--data",
                str(tmp_path / "t.csv"),
                "--prepare",
                str(tmp_path / "spec.json"),
                "--epsilon",
                "1",
                "--seed",
                "0",
                "--out",
                str(model),
                "-q",
            ]
        )
        == 0
    )
    assert main(["sample", str(model), "-n", "2000", "--out", str(out), "--seed", "0"]) == 0
    records = pd.read_csv(out)
    assert (records["is_male"] == (records["sex"] == "Male").astype(int)).all()
    assert records.columns.tolist()[-3:] == ["is_male", "is_female", "region_name"]


@pytest.mark.parametrize(
    "entry, error, words",
    [
        ({"derived_from": "sex", "map": {"Male": 1}}, DataValidationError, "no key"),
        ({"derived_from": "sex", "map": {"Male": 0, "Female": 1}}, DataValidationError,
         "not its map"),
        ({"derived_from": "nope", "map": SEX}, DataValidationError, "source 'nope'"),
        ({"derived_from": "sex", "map": {}}, DomainError, "non-empty map"),
        ({"derived_from": "sex", "map": SEX, "bins": [0, 1]}, DomainError, "exactly"),
    ],
)  # fmt: skip
def test_bad_declarations_are_refused_before_anything_is_spent(entry, error, words):
    with pytest.raises(error, match=words):
        split_derived(_table(50), {**SPEC, "is_male": entry})


def test_a_derived_source_must_not_be_derived_itself():
    spec = {**SPEC, "sex": {"derived_from": "is_male", "map": {"1": "Male", "0": "Female"}}}
    with pytest.raises(DataValidationError, match="not derived itself"):
        split_derived(_table(50), spec)


def test_prepare_names_the_copies_with_entries_that_run(tmp_path, capsys):
    from pgm_dp.cli.prepare import copies

    df = _table(400)
    found = copies(df, {})
    assert found == {key: SPEC[key] for key in ("is_male", "is_female", "region_name")}
    assert copies(df.assign(is_male=np.arange(400) % 2), {}).keys() == {"is_female", "region_name"}
    df.to_csv(tmp_path / "t.csv", index=False)
    assert main(["prepare", str(tmp_path / "t.csv"), "--out", str(tmp_path / "s.json")]) == 0
    err = capsys.readouterr().err
    assert '\n  "is_male": {"derived_from": "sex", "map": {"Female": 0, "Male": 1}},' in err
    spec = {**json.loads((tmp_path / "s.json").read_text()), **found}
    base, derived = split_derived(df, spec)  # the entries hold on the data they came from
    assert [d.name for d in derived] == ["is_male", "is_female", "region_name"]
