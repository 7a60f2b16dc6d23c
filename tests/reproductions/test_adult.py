"""Fast smoke tests of the Adult held-out log-likelihood experiment (paper Sec. 4.2)."""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
import pytest

from pgm_dp.errors import PrivacyParameterError
from pgm_dp.learners import PSGD
from reproductions.bernstein2017.adult import ADULT_CHAIN, run_adult, split_records
from reproductions.bernstein2017.cli_adult import add_parser

pytestmark = pytest.mark.slow  # end-to-end runs: the second tier (pytest -m slow)

COLUMNS = ("education-num", "income>50K", "sex")


def test_run_adult_tiny(tmp_path):
    res = run_adult(
        columns=COLUMNS,
        epsilons=(0.01,),
        trials=1,
        learners=("nonprivate", "naive"),
        progress=False,
        out_dir=tmp_path,
    )
    runs = res.runs
    assert list(runs.columns) == ["epsilon", "trial", "learner", "heldout_ll", "seconds"]
    assert set(runs.learner) == {"nonprivate", "naive"} and set(runs.epsilon) == {0.01}
    assert list(res.summary.columns) == ["nonprivate", "naive"]
    nonpriv = res.summary.loc[0.01, "nonprivate"]
    assert np.isfinite(nonpriv) and nonpriv >= res.summary.loc[0.01, "naive"]
    assert nonpriv > res.uniform_ll  # the fitted chain beats the all-zero model
    assert res.skipped == ()
    assert res.csv == tmp_path / "adult_heldout.csv" and res.plot.stat().st_size > 0
    pd.testing.assert_frame_equal(pd.read_csv(res.csv), runs, check_dtype=False)


def test_psgd_error_is_skipped(monkeypatch):
    def refuse(self, data, mrf, **kwargs):
        raise PrivacyParameterError("unreachable epsilon")

    monkeypatch.setattr(PSGD, "fit", refuse)
    res = run_adult(
        columns=("sex", "income>50K"),
        epsilons=(0.5,),
        trials=1,
        learners=("psgd",),
        progress=False,
        out_dir=None,
    )
    assert res.skipped == (0.5,) and res.runs.empty and res.csv is None


def test_split_and_validation():
    data = pd.DataFrame({"a": np.arange(100)})
    train, test = split_records(data, 0.25, 3)
    assert len(train) == 75 and len(test) == 25
    assert sorted(np.r_[train.a, test.a]) == list(range(100))
    with pytest.raises(ValueError):
        run_adult(learners=("nope",), progress=False, out_dir=None)
    with pytest.raises(ValueError):
        run_adult(trials=0, progress=False, out_dir=None)


def test_add_parser_defaults():
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["adult", "--eps", "0.5", "1"])
    assert args.eps == [0.5, 1.0] and args.columns == list(ADULT_CHAIN) and callable(args.func)
