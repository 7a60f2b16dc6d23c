"""Private-PGM's MST and AIM beside pgm_dp's learners (``pgm-dp compare --data --peers``)
and the calibrated junction tree that scores them (``pgm_dp.compare.calibrated_tree``)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd
import pytest

from pgm_dp import Domain
from pgm_dp.cli import main
from pgm_dp.compare.calibrated_tree import CalibratedTree
from pgm_dp.compare.peers import N_BINS, _public_spec, check_peers
from pgm_dp.inference.junction_tree import clique_marginals
from pgm_dp.models import MarkovRandomField


def test_a_calibrated_tree_is_its_model_again():
    rng = np.random.default_rng(0)
    dom = Domain(["a", "b", "c", "d"], [2, 3, 2, 4])
    cliques = [("a", "b"), ("b", "c"), ("c", "d")]
    mrf = MarkovRandomField(dom, cliques, [rng.normal(size=dom.sizes(c)) for c in cliques])
    jt = mrf.junction_tree()
    margs, _ = clique_marginals(jt, mrf.log_potentials, jt.cliques)
    tree = CalibratedTree(list(dom.attributes), list(dom.shape), jt.cliques, margs, jt.edges)
    grid = np.array(np.meshgrid(*[range(k) for k in dom.shape], indexing="ij")).reshape(4, -1).T
    want = np.asarray(mrf.log_prob(grid))
    np.testing.assert_allclose(tree.log_prob(grid), want, atol=1e-9)
    np.testing.assert_allclose(np.asarray(tree.to_model().log_prob(grid)), want, atol=1e-9)


def test_the_peers_get_public_bins_where_pgm_dp_draws_private_quantiles():
    df = pd.DataFrame({"x": [1.5, 2.0], "n": [1, 2], "s": ["a", "b"], "y": [0.1, 0.2]})
    spec = {"y": {"bounds": [0, 1], "quantiles": 4}, "n": ["1", "2"]}
    out = _public_spec(df, spec)
    assert out["x"] == {"n_bins": N_BINS} and out["y"] == {"bounds": [0, 1], "n_bins": 4}
    assert out["n"] == ["1", "2"] and "s" not in out


def test_peers_are_checked_before_any_work(monkeypatch):
    with pytest.raises(ValueError, match="unknown peers"):
        check_peers(["privbayes"])
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ImportError, match="mbi>=2.0"):
        check_peers([])


@pytest.mark.slow
def test_compare_with_peers_scores_mst_beside_the_learners(tmp_path, capsys):
    pytest.importorskip("mbi")
    rng = np.random.default_rng(0)
    n = 2000
    a = rng.integers(0, 3, n)
    df = pd.DataFrame({"a": a, "b": (a + rng.integers(0, 2, n)) % 3,
                       "c": np.where(rng.random(n) < 0.8, a, 1)})  # fmt: skip
    df.to_csv(tmp_path / "t.csv", index=False)
    argv = ["compare", "--data", str(tmp_path / "t.csv"), "--eps", "2",
            "--categories-from-data", "--learners", "naive", "--peers", "mst",
            "--out", str(tmp_path), "--no-plot"]  # fmt: skip
    assert main(argv) == 0
    runs = pd.read_csv(tmp_path / "compare_data.csv")
    assert set(runs.learner) == {"independent", "naive", "mst (mbi)"}
    mst = runs[runs.learner == "mst (mbi)"].iloc[0]
    assert mst.seconds > 0 and np.isfinite(mst.loglik_test) and 0 <= mst.tvd2_test < 0.2
    assert "mst (mbi)" in capsys.readouterr().out
