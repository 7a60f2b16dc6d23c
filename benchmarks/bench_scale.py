"""Benchmark: compile time and scale (issue #21).

Run from the repository root:

    python benchmarks/bench_scale.py chain     # first call of jit(grad(log Z)), T = 10..160
    python benchmarks/bench_scale.py grid      # loopy BP and CGM-EM(loopy) on grids

1. ``chain``: on the third-order chain (k = 10), the first call (build + compile + run)
   of ``jax.jit(jax.grad(log_partition))``, each T in a fresh process;
2. ``grid``: on an n x n pairwise grid (Dirichlet(1) potentials, k states), the first and a
   later ``marginals(method="loopy_bp")`` call, then ``CGMEM(inference="loopy_bp")`` on a
   Laplace release (N = 1e5 Gibbs records, epsilon = 1): time, peak resident memory,
   convergence and the mean L1 error of its loopy-BP clique marginals against the
   records' empirical marginals.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time


def chain_first_call(T: int) -> float:
    import jax

    from pgm_dp.models import third_order_chain

    mrf = third_order_chain(T, 10, rng=0)
    start = time.perf_counter()
    jax.block_until_ready(jax.jit(jax.grad(lambda m: m.log_partition()))(mrf))
    return time.perf_counter() - start


def grid_model(n: int, k: int):
    from pgm_dp.models.families import dirichlet_pairwise

    edges = [(r * n + c, r * n + c + 1) for r in range(n) for c in range(n - 1)]
    edges += [(r * n + c, (r + 1) * n + c) for r in range(n - 1) for c in range(n)]
    return dirichlet_pairwise(edges, n * n, k, rng=0)


def grid(n: int, k: int, records: int) -> None:
    import numpy as np

    from pgm_dp.learners import CGMEM
    from pgm_dp.metrics import marginal_l1_error
    from pgm_dp.privacy import PureDP, release_marginals
    from pgm_dp.stats import sufficient_statistics

    truth = grid_model(n, k)
    for call in ("first", "later"):
        start = time.perf_counter()
        truth.marginals("loopy_bp")
        print(f"grid {n}x{n} k={k}: {call} loopy marginals {time.perf_counter() - start:.2f} s")
    data = truth.sample(records, rng=1, method="gibbs")
    release = release_marginals(data, truth, budget=PureDP(1.0), rng=2)
    counts = sufficient_statistics(data, truth.cliques, truth.domain)
    empirical = {c: np.asarray(t) / len(data) for c, t in counts.items()}
    start = time.perf_counter()
    fit = CGMEM(inference="loopy_bp").fit(release, truth)
    seconds = time.perf_counter() - start
    error = marginal_l1_error(fit.model.marginals("loopy_bp"), empirical)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(
        f"CGMEM(loopy_bp): {seconds:.1f} s, converged {fit.info['converged']}, "
        f"L1 {error:.4f}, peak RSS {peak:.2f} GiB (whole process)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["chain", "grid", "chain-one"])
    parser.add_argument("--T", type=int, nargs="*", default=[10, 20, 40, 80, 160])
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--records", type=int, default=100_000)
    args = parser.parse_args()
    if args.what == "chain-one":
        print(f"{chain_first_call(args.T[0]):.2f}")
    elif args.what == "chain":
        for T in args.T:  # a fresh process each: nothing cached between sizes
            cmd = [sys.executable, __file__, "chain-one", "--T", str(T)]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            print(f"T = {T:4d}: first call {float(out.strip().splitlines()[-1]):6.2f} s")
    else:
        grid(args.n, args.k, args.records)


if __name__ == "__main__":
    main()
