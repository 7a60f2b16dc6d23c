"""Benchmark: compiled time per fit of naive MLE, CGM-EM and mbi on cgm-grid cells.

For each cell (graph, k, N, epsilon, Laplace or Gaussian release; T variables) one release
is drawn and every learner is fitted twice, interleaved: the first fit compiles, the second
is timed. mbi's mirror descent is one run of 3,000 iterations whose 1,000-iteration
checkpoint is read off (its ``seconds`` exclude compilation). ``--previous`` also times
CGM-EM with the defaults before 2026-11-25's start and E-step rules (``cgm_prev``: the naive
MLE's start where ``N / b^2 > 100``, else uniform; Newton's E-step where ``N / b^2 > 1e4``)
and prints both fits' KL. Prints one row per cell (with CGM-EM's ``KL(truth || fit)``) and
the medians over the cells. ``--sample m`` runs a seeded stratified subset: ``m`` cells
drawn (``--seed``) from the N x epsilon x mechanism combinations of each (graph, k)
stratum. Needs the ``bench`` extra (mbi).

Run: ``python benchmarks/bench_cgm_grid.py [--graphs chain er tree] [--k 2 4 6 10]
[--N 10000 100000 1000000] [--eps 0.1 1] [--mechanisms laplace gaussian] [--T 5]
[--previous] [--sample m --seed s]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import _repo  # noqa: F401  (the repository root on sys.path when run from a clone)

from pgm_dp.compare.graphs import GRAPHS
from pgm_dp.compare.metrics import kl_divergence
from pgm_dp.learners import CGMEM, NaiveMLE
from pgm_dp.learners.mbi import fit_mbi
from pgm_dp.privacy import ApproxDP, PureDP, release_marginals
from pgm_dp.rng import derived_generator


def _timed(fit) -> tuple[float, object]:
    fit()  # compiles (or loads from the cache)
    start = time.perf_counter()
    out = fit()
    return time.perf_counter() - start, out


def previous_cgm(release) -> CGMEM:
    """CGM-EM with the start and E-step rules of the defaults before 2026-11-25."""
    scale = min(float(release.noise[c].scale) for c in release.cliques)
    stiffness = float(release.total) / scale**2
    init = "naive" if stiffness > 100 else "uniform"
    return CGMEM(init=init, estep="newton" if stiffness > 1e4 else "nlbp")


def cell(graph: str, T: int, k: int, N: int, eps: float, mechanism: str, previous=False) -> dict:
    """Seconds per compiled fit of each learner on one release of one cell (and, with
    ``previous``, both CGM fits' KL)."""
    truth = GRAPHS[graph](T, k, rng=derived_generator(0, "bench", graph, T, k))
    data = truth.sample(N, derived_generator(0, "bench-data", graph, T, k, N))
    budget = ApproxDP(eps, 1.0 / N) if mechanism == "gaussian" else PureDP(eps)
    gen = derived_generator(0, "bench-release", graph, T, k, N, eps, mechanism)
    release = release_marginals(
        data, truth, budget=budget, mechanism=mechanism, rng=gen, total="public"
    )
    row = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence is the grid's business, not timing's
        row["naive"], _ = _timed(lambda: NaiveMLE().fit(release, truth))
        row["cgm"], fit = _timed(lambda: CGMEM().fit(release, truth))
        if previous:
            row["cgm_prev"], prev = _timed(lambda: previous_cgm(release).fit(release, truth))
    mbi = {f.iterations: f.seconds for f in fit_mbi(release, truth, (1000, 3000))}
    row.update(mbi1000=mbi[1000], mbi3000=mbi[3000])
    row["kl_cgm"] = kl_divergence(truth, fit.model)
    if previous:
        row["kl_prev"] = kl_divergence(truth, prev.model)
    return row


def cells(args) -> list[tuple]:
    """The grid's cells ``(graph, k, N, eps, mechanism)``, or with ``args.sample`` a seeded
    stratified subset: that many per (graph, k) stratum."""
    out = []
    for graph in args.graphs:
        for k in args.k:
            combos = [(N, e, m) for N in args.N for e in args.eps for m in args.mechanisms]
            if args.sample:
                gen = derived_generator(args.seed, "bench_cgm_grid", graph, k)
                picked = gen.choice(len(combos), size=min(args.sample, len(combos)), replace=False)
                combos = [combos[i] for i in sorted(picked)]
            out.extend((graph, k, *c) for c in combos)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", nargs="+", default=["chain", "er", "tree"])
    parser.add_argument("--k", type=int, nargs="+", default=[2, 4, 6, 10])
    parser.add_argument("--N", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--eps", type=float, nargs="+", default=[0.1, 1.0])
    parser.add_argument("--mechanisms", nargs="+", default=["laplace", "gaussian"])
    parser.add_argument("--T", type=int, default=5)
    parser.add_argument("--previous", action="store_true", help="also the previous defaults")
    parser.add_argument("--sample", type=int, default=0, help="cells per (graph, k) stratum")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows = []
    for graph, k, N, eps, mech in cells(args):
        row = cell(graph, args.T, k, N, eps, mech, args.previous)
        rows.append(row)
        times = " ".join(f"{n} {s:.4g}" for n, s in row.items())
        print(f"{graph} k={k} N={N} eps={eps} {mech}: {times}", flush=True)
    times = [n for n in rows[0] if not n.startswith("kl_")]
    med = {n: statistics.median(r[n] for r in rows) for n in times}
    print("median seconds per fit:", {n: round(s, 4) for n, s in med.items()})
    print(f"median KL(truth || CGM-EM): {statistics.median(r['kl_cgm'] for r in rows):.6g}")
    for cgm in ("cgm", "cgm_prev") if args.previous else ("cgm",):
        faster = sum(r[cgm] <= r["mbi1000"] for r in rows)
        within = sum(r[cgm] <= 2 * r["naive"] for r in rows)
        print(
            f"{cgm} / naive MLE (medians): {med[cgm] / med['naive']:.2f}x; cells where "
            f"{cgm} <= mbi 1000 it.: {faster} of {len(rows)}; <= 2x naive: {within}"
        )
    if args.previous:
        ratios = sorted(r["kl_cgm"] / r["kl_prev"] for r in rows)
        print(
            f"KL cgm / cgm_prev: median {statistics.median(ratios):.4f}, range "
            f"{ratios[0]:.4f}-{ratios[-1]:.4f}, beyond 1%: {sum(abs(x - 1) > 0.01 for x in ratios)}"
        )


if __name__ == "__main__":
    main()
