"""Benchmark: compiled time per fit of naive MLE, CGM-EM and mbi on ``pgm-dp cgm-grid`` cells.

For each cell (graph, k, N, epsilon, Laplace or Gaussian release; T variables) one release
is drawn and every learner is fitted twice, interleaved: the first fit compiles, the second
is timed. mbi's mirror descent is one run of 3,000 iterations whose 1,000-iteration
checkpoint is read off (its ``seconds`` exclude compilation). Prints one row per cell and
the medians over the cells. Needs the ``bench`` extra (mbi).

Run: ``python benchmarks/bench_cgm_grid.py [--graphs chain er tree] [--k 2 4 6 10]
[--N 10000 100000 1000000] [--eps 0.1 1] [--mechanisms laplace gaussian] [--T 5]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

from pgm_dp.experiments.compare import GRAPHS
from pgm_dp.learners import CGMEM, NaiveMLE
from pgm_dp.learners.mbi import fit_mbi
from pgm_dp.privacy import ApproxDP, PureDP, release_marginals
from pgm_dp.rng import derived_generator


def _timed(fit) -> float:
    fit()  # compiles (or loads from the cache)
    start = time.perf_counter()
    fit()
    return time.perf_counter() - start


def cell(graph: str, T: int, k: int, N: int, eps: float, mechanism: str) -> dict:
    """Seconds per compiled fit of each learner on one release of one cell."""
    truth = GRAPHS[graph](T, k, rng=derived_generator(0, "bench", graph, T, k))
    data = truth.sample(N, derived_generator(0, "bench-data", graph, T, k, N))
    budget = ApproxDP(eps, 1.0 / N) if mechanism == "gaussian" else PureDP(eps)
    gen = derived_generator(0, "bench-release", graph, T, k, N, eps, mechanism)
    release = release_marginals(data, truth, budget=budget, mechanism=mechanism, rng=gen)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence is the grid's business, not timing's
        naive = _timed(lambda: NaiveMLE().fit(release, truth))
        cgm = _timed(lambda: CGMEM().fit(release, truth))
    mbi = {f.iterations: f.seconds for f in fit_mbi(release, truth, (1000, 3000))}
    return {"naive": naive, "cgm": cgm, "mbi1000": mbi[1000], "mbi3000": mbi[3000]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", nargs="+", default=["chain", "er", "tree"])
    parser.add_argument("--k", type=int, nargs="+", default=[2, 4, 6, 10])
    parser.add_argument("--N", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--eps", type=float, nargs="+", default=[0.1, 1.0])
    parser.add_argument("--mechanisms", nargs="+", default=["laplace", "gaussian"])
    parser.add_argument("--T", type=int, default=5)
    args = parser.parse_args()
    rows = []
    for graph in args.graphs:
        for k in args.k:
            for N in args.N:
                for eps in args.eps:
                    for mech in args.mechanisms:
                        row = cell(graph, args.T, k, N, eps, mech)
                        rows.append(row)
                        times = " ".join(f"{n} {s:.3f}" for n, s in row.items())
                        print(f"{graph} k={k} N={N} eps={eps} {mech}: {times} s", flush=True)
    med = {n: statistics.median(r[n] for r in rows) for n in rows[0]}
    print("median seconds per fit:", {n: round(s, 4) for n, s in med.items()})
    print(f"CGM / naive MLE (medians): {med['cgm'] / med['naive']:.2f}x")
    faster = sum(r["cgm"] <= r["mbi1000"] for r in rows)
    within = sum(r["cgm"] <= 2 * r["naive"] for r in rows)
    print(f"cells where CGM <= mbi 1000 it.: {faster} of {len(rows)}; <= 2x naive: {within}")


if __name__ == "__main__":
    main()
