"""Benchmark: compile time and scale (issue #21).

Run from the repository root:

    python benchmarks/bench_scale.py chain             # first calls, T = 10..160
    python benchmarks/bench_scale.py grid --n 30 --k 5 # loopy BP, CGM-EM(loopy) and mbi
    python benchmarks/bench_scale.py grid --n 10 --k 3 --kl

1. ``chain``: on the third-order chain (k = 10), each T in a fresh process, the first call
   (build + compile + run) of ``jax.jit(jax.grad(log_partition))`` on the model (one array
   per clique), of the same on one flat parameter vector, and of the MLE objective
   (``fit_marginals``' compiled value and gradient);
2. ``grid``: on an n x n pairwise grid (Dirichlet(1) potentials, k states), the first and a
   later ``marginals(method="loopy_bp")`` call, then ``CGMEM(inference="loopy_bp")`` on a
   Laplace release (N = 1e5 Gibbs records, epsilon = 1): time, peak resident memory,
   convergence and the mean L1 error of its loopy-BP clique marginals against the
   records' empirical marginals; beside it, on the same release, mbi's mirror descent with
   its convex-GBP marginal oracle (``mbi.approximate_oracles.mirror_descent``, step
   ``2 / (L N)`` as mbi's exact mirror descent, where mbi is installed). ``--kl`` adds
   the exact KL of CGM-EM's and naive MLE's models (junction tree: small grids only).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time


def chain_first_calls(T: int) -> str:
    import jax
    import numpy as np

    from pgm_dp.inference.stacked_pass import stacked_log_partition_flat
    from pgm_dp.learners.base import flatten_tables
    from pgm_dp.learners.mle import _objective
    from pgm_dp.models import third_order_chain

    mrf = third_order_chain(T, 10, rng=0)
    jax.block_until_ready(jax.numpy.zeros(1) + 1)  # JAX's backend starts outside the clock
    start = time.perf_counter()
    jax.block_until_ready(jax.jit(jax.grad(lambda m: m.log_partition()))(mrf))
    model = time.perf_counter() - start
    start = time.perf_counter()
    jt = mrf.junction_tree()
    flat = flatten_tables(mrf.log_potentials)
    jax.block_until_ready(jax.jit(jax.grad(lambda x: stacked_log_partition_flat(jt, x)))(flat))
    vector = time.perf_counter() - start
    start = time.perf_counter()
    fn = _objective(jt, tuple(mrf.domain.sizes(c) for c in mrf.cliques))
    np.asarray(fn(flat, np.zeros_like(flat), np.float64(1e-4)))
    objective = time.perf_counter() - start
    return f"{model:.2f} {vector:.2f} {objective:.2f} {len(mrf.cliques)}"


def grid_model(n: int, k: int):
    from pgm_dp.models.families import dirichlet_pairwise

    edges = [(r * n + c, r * n + c + 1) for r in range(n) for c in range(n - 1)]
    edges += [(r * n + c, (r + 1) * n + c) for r in range(n - 1) for c in range(n)]
    return dirichlet_pairwise(edges, n * n, k, rng=0)


def mbi_convex_gbp(release, truth, iters: int) -> tuple[dict, float]:
    """mbi's mirror descent with convex GBP on ``release``: (marginals, seconds)."""
    import numpy as np
    from mbi import marginal_loss
    from mbi.approximate_oracles import mirror_descent

    from pgm_dp.learners.mbi import to_mbi_measurements

    total = float(release.total)
    start = time.perf_counter()
    dom, measurements = to_mbi_measurements(release)
    loss = marginal_loss.from_linear_measurements(measurements, dom)
    mu = mirror_descent(
        dom, loss, known_total=total, stepsize=2.0 / (loss.lipschitz * total), iters=iters
    )
    seconds = time.perf_counter() - start
    by_set = {frozenset(c): c for c in mu.cliques}
    margs = {
        c: np.asarray(mu[by_set[frozenset(c)]].transpose(c).values) / total for c in truth.cliques
    }
    return margs, seconds


def grid(n: int, k: int, records: int, kl: bool, mbi_iters: int) -> None:
    import numpy as np

    from pgm_dp.learners import CGMEM, NaiveMLE
    from pgm_dp.metrics import kl_divergence, marginal_l1_error
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
        f"CGMEM(loopy_bp): {seconds:.1f} s, converged {fit.info['converged']} "
        f"({fit.info['iterations']} iterations, max gradient {fit.info['max_gradient']:.1e}), "
        f"L1 {error:.4f}, peak RSS {peak:.2f} GiB (whole process)",
        flush=True,
    )
    try:
        margs, mbi_seconds = mbi_convex_gbp(release, truth, mbi_iters)
        mbi_error = marginal_l1_error(margs, empirical)
        print(
            f"mbi convex-GBP mirror descent ({mbi_iters} iterations): {mbi_seconds:.1f} s, "
            f"L1 {mbi_error:.4f}",
            flush=True,
        )
    except ImportError:
        print("mbi not installed: no convex-GBP comparison")
    if kl:
        naive = NaiveMLE().fit(release, truth)
        print(
            f"KL(truth || CGMEM loopy) {kl_divergence(truth, fit.model):.4f}, "
            f"KL(truth || naive MLE) {kl_divergence(truth, naive.model):.4f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["chain", "grid", "chain-one"])
    parser.add_argument("--T", type=int, nargs="*", default=[10, 20, 40, 80, 160])
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--kl", action="store_true")
    parser.add_argument("--mbi-iters", type=int, default=1000)
    args = parser.parse_args()
    if args.what == "chain-one":
        print(chain_first_calls(args.T[0]))
    elif args.what == "chain":
        print("first calls: jit(grad(log Z)) on the model / on one flat vector / MLE objective")
        for T in args.T:  # a fresh process each: nothing cached between sizes
            cmd = [sys.executable, __file__, "chain-one", "--T", str(T)]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            model, vector, objective, tables = out.strip().splitlines()[-1].split()
            print(
                f"T = {T:4d} ({tables} tables): {float(model):6.2f} s / {float(vector):6.2f} s"
                f" / {float(objective):6.2f} s",
                flush=True,
            )
    else:
        grid(args.n, args.k, args.records, args.kl, args.mbi_iters)


if __name__ == "__main__":
    main()
