"""Benchmark: compile time and scale (issue #21).

Run from the repository root:

    python benchmarks/bench_scale.py chain             # first calls, T = 10..160
    python benchmarks/bench_scale.py grid --n 30 --k 5 # TRW BP, CGM-EM(trw_bp) and mbi
    python benchmarks/bench_scale.py grid --n 10 --k 3 --kl

1. ``chain``: on the third-order chain (k = 10), each T in a fresh process, the first call
   (build + compile + run) of ``jax.jit(jax.grad(log_partition))`` on the model (one array
   per clique), of the same on one flat parameter vector, and of the MLE objective
   (``fit_marginals``' compiled value and gradient);
2. ``grid``: on an n x n pairwise grid (Dirichlet(1) potentials, k states), the first and a
   later ``marginals(method=...)`` call, then ``CGMEM(inference=--inference)`` (default
   ``trw_bp``, tree-reweighted BP; ``loopy_bp`` the Bethe BP) on a Laplace release (N = 1e5
   Gibbs records, epsilon = 1; ``--records-cache FILE`` keeps the records between runs),
   fitted twice (first call with compiling, then compiled): time, convergence, L-BFGS
   iterations, peak resident memory and the mean L1 error of its BP clique marginals
   against the records' empirical marginals; beside it, on the same release, mbi's mirror
   descent with its convex-GBP marginal oracle (``mbi.approximate_oracles.mirror_descent``,
   step ``2 / (L N)`` as mbi's exact mirror descent, where mbi is installed), in a child
   process stopped after ``--mbi-timeout`` seconds, its L1 printed at 10, 30, 100, 300, ...
   iterations so that a stopped run reports what it reached. ``--kl`` adds the exact KL
   (junction tree: small grids only) of CGM-EM's model, of the closed-form naive MLE under
   the same inference (CGM-EM's start) and of that inference's MLE of the truth's exact
   marginals (what it reaches without noise); ``--exact-naive`` also fits naive MLE
   exactly (slow: the grid's junction tree). ``--cgm-max-iters`` caps CGM-EM's L-BFGS
   iterations; every 10 of them are reported with the time so far.
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
    from pgm_dp.learners.mle import _value_and_grad
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
    fn = jax.jit(_value_and_grad(jt, tuple(mrf.domain.sizes(c) for c in mrf.cliques)))
    jax.block_until_ready(fn(flat, np.zeros_like(flat), np.float64(1e-4)))
    objective = time.perf_counter() - start
    return f"{model:.2f} {vector:.2f} {objective:.2f} {len(mrf.cliques)}"


def grid_model(n: int, k: int):
    from pgm_dp.models.families import dirichlet_pairwise

    edges = [(r * n + c, r * n + c + 1) for r in range(n) for c in range(n - 1)]
    edges += [(r * n + c, (r + 1) * n + c) for r in range(n - 1) for c in range(n)]
    return dirichlet_pairwise(edges, n * n, k, rng=0)


def mbi_convex_gbp(release, truth, iters: int, checkpoint=None) -> tuple[dict, float]:
    """mbi's mirror descent with convex GBP on ``release``: (marginals, seconds);
    ``checkpoint(iteration, marginals, seconds)`` is called at iterations 10, 30, 100, ...
    (compile included in ``seconds``)."""
    import numpy as np
    from mbi import marginal_loss
    from mbi.approximate_oracles import mirror_descent

    from pgm_dp.learners.mbi import to_mbi_measurements

    total = float(release.total)
    start, seen = time.perf_counter(), [0]
    marks = {m for m in (10, 30, 100, 300, 1000, 3000) if m < iters}
    dom, measurements = to_mbi_measurements(release)
    loss = marginal_loss.from_linear_measurements(measurements, dom)

    def ours(mu) -> dict:
        by_set = {frozenset(c): c for c in mu.cliques}
        return {
            c: np.asarray(mu[by_set[frozenset(c)]].transpose(c).values) / total
            for c in truth.cliques
        }

    def callback(mu) -> None:
        seen[0] += 1
        if checkpoint is not None and seen[0] in marks:
            checkpoint(seen[0], ours(mu), time.perf_counter() - start)

    mu = mirror_descent(
        dom,
        loss,
        known_total=total,
        stepsize=2.0 / (loss.lipschitz * total),
        iters=iters,
        callback_fn=callback,
    )
    return ours(mu), time.perf_counter() - start


def grid_mbi(path: str, iters: int) -> None:
    """Child process of ``grid``: mbi's convex GBP on the pickled (release, truth,
    empirical marginals) at ``path``; one line per checkpoint, so that a run stopped by
    its timeout still reports the iterations it reached."""
    import pickle

    from pgm_dp.compare.metrics import marginal_l1_error

    with open(path, "rb") as fh:
        release, truth, empirical = pickle.load(fh)

    def checkpoint(it: int, margs: dict, seconds: float) -> None:
        error = marginal_l1_error(margs, empirical)
        print(f"mbi convex-GBP mirror descent ({it} iterations): {seconds:.1f} s, L1 {error:.4f}")
        sys.stdout.flush()

    margs, seconds = mbi_convex_gbp(release, truth, iters, checkpoint)
    checkpoint(iters, margs, seconds)


def run_mbi_capped(release, truth, empirical, iters: int, timeout: float) -> None:
    """:func:`grid_mbi` in a fresh process, stopped after ``timeout`` seconds."""
    import pickle
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/release.pkl"
        with open(path, "wb") as fh:
            pickle.dump((release, truth, empirical), fh)
        cmd = [sys.executable, __file__, "grid-mbi", "--release", path, "--mbi-iters", str(iters)]
        start = time.perf_counter()
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            stdout, stopped = out.stdout, False
        except subprocess.TimeoutExpired as exc:
            stdout, stopped = exc.stdout or "", True
            stdout = stdout.decode() if isinstance(stdout, bytes) else stdout
        lines = [line for line in stdout.splitlines() if line.startswith("mbi")]
        seconds = time.perf_counter() - start
        for line in lines:
            print(line, flush=True)
        if stopped:
            print(f"mbi convex GBP: not finished after {timeout:.0f} s (stopped)", flush=True)
        else:
            print(f"(mbi child process {seconds:.1f} s in all)", flush=True)
            if not lines:
                print(out.stderr.strip().splitlines()[-1:], flush=True)


def grid_kl(truth, release, fit, inference: str, exact_naive: bool) -> None:
    """Exact KL from ``truth`` to CGM-EM's model, to the closed-form naive MLE under the same
    inference (:func:`~pgm_dp.learners.cgm.conditioning.bethe_naive`, CGM-EM's start), to that
    inference's MLE of the truth's exact marginals (what it reaches without noise) and,
    with ``exact_naive``, to the naive MLE fitted exactly."""
    from pgm_dp.compare.metrics import kl_divergence
    from pgm_dp.inference.backend import get_backend
    from pgm_dp.learners import NaiveMLE
    from pgm_dp.learners.cgm.conditioning import bethe_naive, bethe_start

    start = time.perf_counter()
    rho = get_backend(inference).counting_numbers(truth.domain, truth.cliques)
    naive = truth.replace(bethe_naive(release.in_order(truth.cliques), truth, rho))
    exact = truth.marginals()  # the MLE of the truth's own marginals: no noise, N = oo
    tables = bethe_start(truth.domain, truth.cliques, exact, [1e-12] * len(exact), rho)
    floor = truth.replace(tables)
    line = (
        f"KL(truth || CGMEM {inference}) {kl_divergence(truth, fit.model):.4f}, "
        f"KL(truth || closed-form naive MLE, {inference}) {kl_divergence(truth, naive):.4f}, "
        f"KL(truth || {inference} MLE of the true marginals) {kl_divergence(truth, floor):.4f}"
    )
    print(f"{line} ({time.perf_counter() - start:.1f} s)", flush=True)
    if exact_naive:
        naive = NaiveMLE().fit(release, truth)
        print(f"KL(truth || naive MLE, exact) {kl_divergence(truth, naive.model):.4f}")


def grid_records(truth, records: int, cache: str | None):
    """``records`` Gibbs samples of ``truth`` (seed 1), read from / written to the pickle
    ``cache`` when given (data generation, not part of any fit)."""
    import os
    import pickle

    if cache and os.path.exists(cache):
        with open(cache, "rb") as fh:
            data = pickle.load(fh)
        if len(data) == records:
            print(f"records read from {cache}", flush=True)
            return data
    start = time.perf_counter()
    data = truth.sample(records, rng=1, method="gibbs")
    print(f"Gibbs sampling of {records} records: {time.perf_counter() - start:.1f} s", flush=True)
    if cache:
        with open(cache, "wb") as fh:
            pickle.dump(data, fh)
    return data


def grid_fit(truth, release, empirical, args, label: str):
    """One ``CGMEM(inference=args.inference)`` fit, timed, with its L1 and peak RSS."""
    from pgm_dp._progress import progress_hook
    from pgm_dp.compare.metrics import marginal_l1_error
    from pgm_dp.learners import CGMEM

    start, seen = time.perf_counter(), [0]

    def report(what: str, _: int) -> None:
        seen[0] += what == "cgm"
        if what == "cgm" and seen[0] % 10 == 0:
            elapsed = time.perf_counter() - start
            print(f"  CGM-EM: {seen[0]} iterations, {elapsed:.0f} s", flush=True)

    learner = CGMEM(inference=args.inference, max_iters=args.cgm_max_iters)
    with progress_hook(report):
        fit = learner.fit(release, truth)
    seconds = time.perf_counter() - start
    error = marginal_l1_error(fit.model.marginals(args.inference), empirical)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(
        f"CGMEM({args.inference}), {label}: {seconds:.1f} s, converged {fit.info['converged']} "
        f"({fit.info['iterations']} iterations, {fit.info['nlbp_iterations']} NLBP iterations, "
        f"max gradient {fit.info['max_gradient']:.1e}), L1 {error:.4f}, "
        f"peak RSS {peak:.2f} GiB (whole process)",
        flush=True,
    )
    return fit


def grid(n: int, k: int, records: int, kl: bool, args) -> None:
    import numpy as np

    from pgm_dp.compare.metrics import marginal_l1_error
    from pgm_dp.learners.naive_mle import noisy_pseudo_marginals
    from pgm_dp.privacy import PureDP, release_marginals
    from pgm_dp.stats import sufficient_statistics

    truth = grid_model(n, k)
    for call in ("first", "later"):
        start = time.perf_counter()
        truth.marginals(args.inference)
        print(
            f"grid {n}x{n} k={k}: {call} {args.inference} marginals "
            f"{time.perf_counter() - start:.2f} s"
        )
    data = grid_records(truth, records, args.records_cache)
    release = release_marginals(data, truth, budget=PureDP(1.0), rng=2, total="public")
    counts = sufficient_statistics(data, truth.cliques, truth.domain)
    empirical = {c: np.asarray(t) / len(data) for c, t in counts.items()}
    noisy = marginal_l1_error(noisy_pseudo_marginals(release, project=True), empirical)
    print(f"L1 of the noisy tables projected onto the simplex: {noisy:.4f}", flush=True)
    fit = grid_fit(truth, release, empirical, args, "first fit (compile included)")
    grid_fit(truth, release, empirical, args, "second fit (compiled)")
    if kl:
        grid_kl(truth, release, fit, args.inference, args.exact_naive)
    try:
        import mbi  # noqa: F401
    except ImportError:
        print("mbi not installed: no convex-GBP comparison")
    else:
        run_mbi_capped(release, truth, empirical, args.mbi_iters, args.mbi_timeout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["chain", "grid", "chain-one", "grid-mbi"])
    parser.add_argument("--T", type=int, nargs="*", default=[10, 20, 40, 80, 160])
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--kl", action="store_true")
    parser.add_argument("--mbi-iters", type=int, default=1000)
    parser.add_argument("--mbi-timeout", type=float, default=1800.0)
    parser.add_argument("--exact-naive", action="store_true")
    parser.add_argument("--cgm-max-iters", type=int, default=3000)
    parser.add_argument("--release")
    parser.add_argument("--inference", choices=["loopy_bp", "trw_bp"], default="trw_bp")
    parser.add_argument("--records-cache", help="pickle of the Gibbs records (read / written)")
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
    elif args.what == "grid-mbi":
        grid_mbi(args.release, args.mbi_iters)
    else:
        grid(args.n, args.k, args.records, args.kl, args)


if __name__ == "__main__":
    main()
