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


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
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
            "domain": dict(zip(NAMES, SHAPE, strict=True)), "target": NAMES[-1],
            "clf_acc_real": 0.5}  # fmt: skip
    args = SimpleNamespace(out=tmp_path, timeout=600, max_triples=4, peer_python=sys.executable,
                           aim_max_model_size=80.0, aim_max_iters=100,
                           warm_cache=False, xla="peers")  # fmt: skip
    row = bench.one_run("tiny", info, 3.0, 0, "independent", args)
    assert row["status"] == "ok", row.get("note")
    assert row["n_pairs"] == 10 and row["n_triples"] == 4
    assert 0 <= row["clf_acc"] <= 1 and row["clf_acc_real"] == 0.5
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


def _row(data, eps, seed, method, **kw):
    return {"data": data, "eps": eps, "seed": seed, "method": method, "status": "ok", **kw}


def test_rerun_drops_only_the_named_methods_rows(tmp_path):
    """``--rerun pgmdp`` removes pgm_dp's rows of the selected cells and keeps the peers'."""
    import bench_realdata as bench

    path = tmp_path / "runs.csv"
    rows = [_row(d, e, s, m, tvd2=0.1) for d in ("adult", "fair") for e in (0.3, 1.0)
            for s in (0, 1) for m in ("pgmdp", "mst", "aim")]  # fmt: skip
    for r in rows:
        bench.append_run(path, r)
    gone = bench.drop_runs(path, ["adult"], [1.0], range(2), ["pgmdp"])
    left = bench.read_runs(path)
    assert gone == 2 and len(left) == len(rows) - 2
    assert not any(r["method"] == "pgmdp" and r["data"] == "adult" and float(r["eps"]) == 1.0
                   for r in left)  # fmt: skip
    assert sum(r["method"] == "pgmdp" for r in left) == 6
    assert sum(r["method"] in ("mst", "aim") for r in left) == 16
    assert bench.drop_runs(path, ["adult"], [1.0], range(2), ["pgmdp"]) == 0


def test_rerun_arguments():
    """``--rerun M`` alone runs only M; with ``--methods`` it adds M; bare ``--rerun``
    reruns every selected method; without it nothing is rerun."""
    import bench_realdata as bench

    assert bench.parse(["--rerun", "pgmdp"]).methods == ["pgmdp"]
    a = bench.parse(["--methods", "mst", "--rerun", "pgmdp"])
    assert a.methods == ["mst", "pgmdp"] and a.rerun == ["pgmdp"]
    a = bench.parse(["--methods", "mst", "aim", "--rerun"])
    assert a.rerun == ["mst", "aim"]
    assert bench.parse(["--methods", "mst"]).rerun is None


def test_append_run_rewrites_an_older_layout(tmp_path):
    """A runs.csv written with other columns is rewritten in the current layout first."""
    import csv

    import bench_realdata as bench

    path = tmp_path / "runs.csv"
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["data", "eps", "seed", "method", "status", "tvd2"])
        w.writeheader()
        w.writerow(_row("fair", 1.0, 0, "mst", tvd2=0.05))
    bench.append_run(path, _row("fair", 1.0, 0, "pgmdp", tvd2=0.04, cpu_s=3.0))
    with open(path, newline="") as fh:
        assert next(csv.reader(fh)) == bench.FIELDS
    rows = bench.read_runs(path)
    assert [(r["method"], r["tvd2"]) for r in rows] == [("mst", "0.05"), ("pgmdp", "0.04")]


def test_report_medians_and_ratios():
    """Medians over seeds (a repeated run: the last row counts), ratios pgm_dp / peer and
    log-likelihood differences per cell; a cell without AIM leaves AIM's columns blank."""
    from _realdata_report import ratio_table, summarise

    metrics = dict(tvd3=0.2, tvd2_sample=0.1, tvd3_sample=0.2, maxrss_mb=1, score_s=1)
    rows = []
    for s, (p, m) in enumerate([(0.1, 0.2), (0.3, 0.4), (0.2, 0.1)]):
        rows.append(_row("t", 1.0, s, "pgmdp", tvd2=p, cpu_s=1, loglik_test=-2, **metrics))
        rows.append(_row("t", 1.0, s, "mst", tvd2=m, cpu_s=4, loglik_test=-3, **metrics))
    rows.append(_row("t", 1.0, 2, "pgmdp", tvd2=0.9, cpu_s=1, loglik_test=-2, **metrics))
    rows.append({**_row("t", 1.0, 0, "aim"), "status": "timeout"})
    med = summarise(rows).set_index("method")
    assert med.loc["pgmdp", "tvd2"] == pytest.approx(0.3)  # of 0.1, 0.3, 0.9
    assert med.loc["mst", "tvd2"] == pytest.approx(0.2) and "aim" not in med.index
    line = ratio_table(med.reset_index()).splitlines()[-1]
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[:4] == ["t", "1", "1.50", ""]
    assert cells[-2:] == ["+1.000", ""]
