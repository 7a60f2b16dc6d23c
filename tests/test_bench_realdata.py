"""The real-data benchmark's scoring (benchmarks/bench_realdata.py) on tiny tables: exact
marginals, TVD, log-likelihood and sampling of a calibrated junction tree against brute force
over the full joint; the harness's pgm_dp side end to end on a tiny table."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

from _realdata_tree import CalibratedTree, data_marginal, load_tree, mean_tvd, save_tree  # noqa: E402

from pgm_dp import Domain, MarkovRandomField  # noqa: E402

NAMES = ["a", "b", "c", "d", "e"]
SHAPE = [2, 3, 2, 4, 3]
CLIQUES = [("a", "b"), ("b", "c", "d"), ("d", "e")]


def _model(seed: int = 0) -> MarkovRandomField:
    rng = np.random.default_rng(seed)
    dom = Domain(NAMES, SHAPE)
    return MarkovRandomField(dom, CLIQUES, [rng.normal(size=dom.sizes(c)) for c in CLIQUES])


def _joint(mrf: MarkovRandomField) -> np.ndarray:
    """The full joint by enumeration (axes in NAMES order)."""
    logp = np.zeros(SHAPE)
    for c, t in zip(mrf.cliques, mrf.log_potentials, strict=True):
        idx = [NAMES.index(v) for v in c]
        logp = logp + np.expand_dims(np.asarray(t), [k for k in range(5) if k not in idx])
    p = np.exp(logp - logp.max())
    return p / p.sum()


def _tree(mrf: MarkovRandomField) -> CalibratedTree:
    from pgm_dp.inference.junction_tree import clique_marginals

    jt = mrf.junction_tree()
    margs, _ = clique_marginals(jt, mrf.log_potentials, jt.cliques)
    return CalibratedTree(NAMES, SHAPE, jt.cliques, margs, jt.edges)


def _brute(joint: np.ndarray, query) -> np.ndarray:
    idx = [NAMES.index(v) for v in query]
    keep = np.einsum(joint, list(range(5)), idx)
    return keep


def test_marginals_and_log_prob_match_brute_force():
    mrf = _model()
    joint, tree = _joint(mrf), _tree(mrf)
    for r in (1, 2, 3):
        for q in itertools.permutations(NAMES, r):
            np.testing.assert_allclose(tree.marginal(q), _brute(joint, q), atol=1e-12)
    codes = np.array(list(itertools.product(*map(range, SHAPE))))
    np.testing.assert_allclose(tree.log_prob(codes), np.log(joint[tuple(codes.T)]), atol=1e-10)


def test_forest_and_round_trip(tmp_path):
    """A product model (singleton cliques, no edges) and the .npz format."""
    rng = np.random.default_rng(1)
    tables = [rng.dirichlet(np.ones(k)) for k in SHAPE]
    save_tree(tmp_path / "t.npz", NAMES, SHAPE, [(v,) for v in NAMES], tables, [])
    tree = load_tree(tmp_path / "t.npz")
    want = np.einsum(tables[0], [0], tables[3], [1], tables[4], [2], [0, 1, 2])
    np.testing.assert_allclose(tree.marginal(("a", "d", "e")), want, atol=1e-14)


def test_tvd_against_brute_force_and_sampler():
    """mean_tvd of the model's marginals equals a direct computation; i.i.d. samples' pair
    tables approach the model's (20,000 draws: a TVD above 0.05 would be a many-sigma
    event for tables of at most 12 cells)."""
    mrf = _model(2)
    joint, tree = _joint(mrf), _tree(mrf)
    data = tree.sample(20_000, np.random.default_rng(3))
    pairs = list(itertools.combinations(range(5), 2))
    got = mean_tvd(data, SHAPE, pairs, lambda s: tree.marginal(tuple(NAMES[i] for i in s)))
    direct = []
    for i, j in pairs:
        counts = np.zeros((SHAPE[i], SHAPE[j]))
        np.add.at(counts, (data[:, i], data[:, j]), 1)
        direct.append(0.5 * np.abs(counts / len(data) - _brute(joint, (NAMES[i], NAMES[j]))).sum())
    assert got == pytest.approx(np.mean(direct), abs=1e-12)
    assert max(direct) < 0.05
    np.testing.assert_allclose(data_marginal(data, (0,), SHAPE), _brute(joint, ("a",)), atol=0.02)


def test_harness_pgm_dp_side(tmp_path):
    """One pgm_dp fit through the command line on a tiny table, scored end to end."""
    import bench_realdata as bench

    rng = np.random.default_rng(0)
    tree = _tree(_model(4))
    codes = tree.sample(600, rng)
    folder = tmp_path / "data" / "tiny"
    folder.mkdir(parents=True)
    import json

    import pandas as pd

    frame = pd.DataFrame(codes, columns=NAMES)
    frame.iloc[:480].to_csv(folder / "train.csv", index=False)
    (folder / "domain.json").write_text(json.dumps(dict(zip(NAMES, SHAPE, strict=True))))
    info = {"folder": folder, "train": codes[:480], "test": codes[480:],
            "domain": dict(zip(NAMES, SHAPE, strict=True))}  # fmt: skip
    args = SimpleNamespace(out=tmp_path, timeout=600, max_triples=4, peer_python=sys.executable,
                           aim_max_model_size=80.0, aim_max_iters=100,
                           warm_cache=False, xla="peers")  # fmt: skip
    row = bench.one_run("tiny", info, 3.0, 0, "independent", args)
    assert row["status"] == "ok", row.get("note")
    assert row["n_pairs"] == 10 and row["n_triples"] == 4
    assert np.isfinite(row["loglik_test"]) and row["cpu_s"] > 0 and row["maxrss_mb"] > 0
    from pgm_dp.io import load_fit

    fitted = load_fit(tmp_path / "models" / "tiny" / "independent_eps3_seed0.npz").model
    joint = _joint(fitted)
    brute = []
    for i, j in itertools.combinations(range(5), 2):
        counts = np.zeros((SHAPE[i], SHAPE[j]))
        np.add.at(counts, (codes[:480, i], codes[:480, j]), 1)
        brute.append(0.5 * np.abs(counts / 480 - _brute(joint, (NAMES[i], NAMES[j]))).sum())
    assert row["tvd2"] == pytest.approx(np.mean(brute), abs=1e-10)
    assert row["loglik_test"] == pytest.approx(
        np.mean(np.log(joint[tuple(codes[480:].T)])), abs=1e-10
    )
