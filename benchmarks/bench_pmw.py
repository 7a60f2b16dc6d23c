"""Benchmark: parity queries by PMW against per-query Laplace and Gaussian noise.

A random 16-node 4-regular Ising model (couplings ±0.3, random signs, seed 0), ``n`` records
drawn by Gibbs sampling; query sets: all parities of order ``<= t`` for ``t`` in ``--orders``
(``m`` = 16, 136, 2516, 65535 for t = 1, 2, 4, 16). Per cell (n, m, rho) and seed, the max
error over the queries of: PMW with its derived ``K`` and threshold
(:func:`pgm_dp.learners.zhang.pmw_plan`), per-query discrete Gaussian at ``rho``-zCDP,
per-query discrete Laplace at pure ``eps = sqrt(2 rho)`` (which is ``rho``-zCDP), and what
:func:`release_parities` chooses (``auto``). The table also prints both a-priori bounds
(probability 0.95) and the ratio of ``auto``'s measured error to the better per-query
mechanism's (``<= 1`` is the target).

Run: ``python benchmarks/bench_pmw.py [--n 1000 10000 100000] [--rho 0.1 1] [--seeds 2]
[--orders 1 2 4 16] [--out results/pmw.csv]``.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import math
import time

import _repo  # noqa: F401  (the repository root on sys.path: reproductions)
import numpy as np
from tqdm import tqdm

from pgm_dp.ising import gibbs_ising
from pgm_dp.learners.zhang import parity_queries, release_parities
from pgm_dp.learners.zhang.pmw import parity_sums
from pgm_dp.privacy import ZCDP, PureDP
from reproductions.zhang2020.experiments import random_ising

P = 16
_MEASURED = ("err", "vs_per_query")


def _max_error(data, queries, budget, mechanism, seed, truth) -> tuple[float, str, dict, float]:
    start = time.process_time()
    out = release_parities(data, queries, budget, mechanism=mechanism, rng=seed)
    cpu = time.process_time() - start
    return float(np.max(np.abs(out.answers - truth))), out.mechanism, out.bounds, cpu


def _cell(data, t: int, rho: float, seed: int) -> dict:
    queries = parity_queries(P, t)
    truth = parity_sums(data, queries) / data.shape[0]
    row: dict = {"n": data.shape[0], "m": len(queries), "rho": rho, "seed": seed}
    for name, budget in [
        ("pmw", ZCDP(rho)),
        ("gaussian", ZCDP(rho)),
        ("laplace", PureDP(math.sqrt(2 * rho))),
        ("auto", ZCDP(rho)),
    ]:
        mech = "laplace" if name == "laplace" else name
        err, used, bounds, cpu = _max_error(data, queries, budget, mech, seed, truth)
        row[f"{name}_err"], row[f"{name}_cpu"] = err, cpu
        if name == "auto":
            row["auto_uses"] = used
            row["bound_gaussian"], row["bound_pmw"] = bounds["gaussian"], bounds["pmw"]
    row["auto_vs_per_query"] = row["auto_err"] / min(row["gaussian_err"], row["laplace_err"])
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--rho", type=float, nargs="+", default=[0.1, 1.0])
    ap.add_argument("--orders", type=int, nargs="+", default=[1, 2, 4, 16])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--out", default=None, help="CSV of every run")
    args = ap.parse_args()
    J, _ = random_ising(P, degree=4, rng=0, low=0.3, high=0.3)
    pool = gibbs_ising(J, n_chains=max(args.n), n_sweeps=50, rng=1)
    cells = list(itertools.product(args.n, args.orders, args.rho, range(args.seeds)))
    rows = [_cell(pool[:n], t, rho, s) for n, t, rho, s in tqdm(cells, desc="cells")]
    if args.out:
        with open(args.out, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    cols = ["n", "m", "rho", "PMW", "Gaussian", "Laplace", "auto (uses)", "auto / per-query",
            "bounds G / PMW"]  # fmt: skip
    print("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
    for key, group in itertools.groupby(rows, key=lambda r: (r["n"], r["m"], r["rho"])):
        g = list(group)
        med = {k: float(np.median([r[k] for r in g])) for k in g[0] if k.endswith(_MEASURED)}
        uses = "/".join(sorted({r["auto_uses"] for r in g}))
        cells = [*key, *(f"{med[k]:.4f}" for k in ("pmw_err", "gaussian_err", "laplace_err")),
                 f"{med['auto_err']:.4f} ({uses})", f"{med['auto_vs_per_query']:.2f}",
                 f"{g[0]['bound_gaussian']:.3g} / {g[0]['bound_pmw']:.3g}"]  # fmt: skip
        print("| " + " | ".join(str(c) for c in cells) + " |")


if __name__ == "__main__":
    main()
