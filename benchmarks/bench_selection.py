"""Private clique selection and fit on UCI Adult: pgm_dp's pipeline vs mbi's MST mechanism.

``python benchmarks/bench_selection.py [--seeds 0 1] [--skip-mbi]`` (needs the ``bench``
extra for mbi). Score: the mean total variation distance over all 91 two-way marginals of
the 14 Adult attributes between the data and the fitted model's marginals; and wall time.

* **pgm_dp**: ``pgm-dp fit --data adult.csv --domain adult-domain.json --epsilon 1`` (the
  command line, run as a subprocess): private MST selection of a spanning tree (McKenna et
  al. 2021) with 0.2 ε (``--selection-fraction``), Laplace release of the tree's tables
  with 0.8 ε, CGM-EM on the tree's and the selection's one-way tables. Pure ε = 1 DP, which
  is stronger than MST's (1, 1e-9).
* **mbi MST**: MST of McKenna, Miklau & Sheldon (2021) at (ε, δ) = (1, 1e-9), written here
  against mbi 2.0's ``MirrorDescent`` (Gaussian one-way and tree measurements at
  ``σ = sqrt(3 / (2ρ))``, tree by the exponential mechanism on the one-way model's L1
  errors with ρ/3, 1000 and 5000 mirror-descent steps); the domain compression step of the
  original is left out. TVD of the fitted model's marginals (the original scores synthetic
  data sampled from it).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from pgm_dp import load_adult
from pgm_dp.privacy import ApproxDP, zcdp_rho_within


def pair_tables(codes: np.ndarray, shape) -> dict:
    out = {}
    for i, j in itertools.combinations(range(len(shape)), 2):
        flat = codes[:, i] * shape[j] + codes[:, j]
        t = np.bincount(flat, minlength=shape[i] * shape[j]).reshape(shape[i], shape[j])
        out[(i, j)] = t / t.sum()
    return out


def mean_tvd(truth: dict, marginal) -> float:
    return float(np.mean([0.5 * np.abs(t - marginal(p)).sum() for p, t in truth.items()]))


def run_pgm_dp(data, domain, seed: int, tmp: Path) -> tuple[float, float]:
    from pgm_dp.io import load_fit

    data.to_csv(tmp / "adult.csv", index=False)
    (tmp / "domain.json").write_text(json.dumps(domain.to_dict()))
    cmd = [sys.executable, "-m", "pgm_dp.cli", "fit", "--data", str(tmp / "adult.csv"),
           "--domain", str(tmp / "domain.json"), "--epsilon", "1", "--seed", str(seed),
           "--out", str(tmp / "m.npz")]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    seconds = time.perf_counter() - start
    model = load_fit(tmp / "m.npz").model
    names = domain.attributes
    tvd = mean_tvd(pair_tables(data.to_numpy(), domain.shape), _model_pairs(model, names))
    return tvd, seconds


def _model_pairs(model, names):
    """Exact pair marginals of a tree of pair cliques: ``P(a, b)`` chains the conditionals
    ``P(v_{i+1} | v_i)`` of the clique marginals along the tree path from ``a`` to ``b``."""
    import networkx as nx

    tree = nx.Graph()
    tree.add_nodes_from(names)
    joint = {}
    for clique, table in model.marginals().items():
        if len(clique) != 2:  # one-way cliques lie inside the pairs' tables
            continue
        a, b = clique
        tree.add_edge(a, b)
        joint[(a, b)], joint[(b, a)] = np.asarray(table), np.asarray(table).T

    def marginal(pair):
        path = nx.shortest_path(tree, names[pair[0]], names[pair[1]])
        m = joint[(path[0], path[1])]
        for u, v in itertools.pairwise(path[1:]):
            pu = joint[(u, v)].sum(axis=1, keepdims=True)
            m = m @ (joint[(u, v)] / np.where(pu > 0, pu, 1))
        return m

    return marginal


def mbi_mst(codes: np.ndarray, names, shape, epsilon, delta, rng) -> object:
    import mbi

    rho = zcdp_rho_within(ApproxDP(epsilon, delta))
    sigma = math.sqrt(3 / (2 * rho))
    dom = mbi.Domain(tuple(names), tuple(shape))
    counts = {}

    def table(clique):
        if clique not in counts:
            idx = [names.index(c) for c in clique]
            flat = np.ravel_multi_index(codes[:, idx].T, [shape[i] for i in idx])
            counts[clique] = np.bincount(flat, minlength=math.prod(shape[i] for i in idx))
        return counts[clique].astype(float)

    def measure(cliques):
        return [
            mbi.LinearMeasurement(table(c) + rng.normal(0, sigma, table(c).size), c, stddev=sigma)
            for c in cliques
        ]

    log1 = measure([(n,) for n in names])
    est = mbi.estimation.MirrorDescent().estimate(dom, log1, iters=1000)
    pairs = list(itertools.combinations(names, 2))
    weights = {p: np.abs(table(p) - np.ravel(est.project(p).datavector())).sum() for p in pairs}
    eps_em = math.sqrt(8 * (rho / 3) / (len(names) - 1))
    comp = {n: n for n in names}

    def root(a):
        while comp[a] != a:
            a = comp[a]
        return a

    tree = []
    for _ in range(len(names) - 1):
        cand = [p for p in pairs if root(p[0]) != root(p[1])]
        q = 0.5 * eps_em * np.array([weights[p] for p in cand])
        prob = np.exp(q - q.max())
        p = cand[rng.choice(len(cand), p=prob / prob.sum())]
        comp[root(p[0])] = root(p[1])
        tree.append(p)
    return mbi.estimation.MirrorDescent().estimate(dom, log1 + measure(tree), iters=5000)


def run_mbi(data, domain, seed: int) -> tuple[float, float]:
    names = list(domain.attributes)
    codes = data.to_numpy()
    start = time.perf_counter()
    model = mbi_mst(codes, names, domain.shape, 1.0, 1e-9, np.random.default_rng(seed))
    seconds = time.perf_counter() - start

    def marginal(pair):
        t = np.asarray(model.project((names[pair[0]], names[pair[1]])).datavector())
        t = np.clip(t, 0, None).reshape(domain.shape[pair[0]], domain.shape[pair[1]])
        return t / t.sum()

    return mean_tvd(pair_tables(codes, domain.shape), marginal), seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--skip-mbi", action="store_true")
    a = ap.parse_args()
    data, domain = load_adult()
    for seed in a.seeds:  # interleaved per seed
        with tempfile.TemporaryDirectory() as tmp:
            tvd, sec = run_pgm_dp(data, domain, seed, Path(tmp))
        print(f"seed {seed}: pgm_dp  TVD {tvd:.4f}  {sec:6.1f} s", flush=True)
        if not a.skip_mbi:
            tvd_m, sec_m = run_mbi(data, domain, seed)
            print(f"seed {seed}: mbi MST TVD {tvd_m:.4f}  {sec_m:6.1f} s  "
                  f"(time ratio mbi/pgm_dp {sec_m / sec:.1f}x)", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
