"""Benchmark: all-clique marginals and contingency tables, against pgmpy, mbi and pandas.

Run from the repository root (mbi comes with the ``bench`` extra):

    pip install -e ".[bench]"
    python benchmarks/bench_inference.py

Times (median of repeated calls, after JIT compilation where there is one):
1. all clique marginals of the third-order chain (T=10, k=10, Dirichlet(1) potentials):
   pgm_dp's junction tree vs pgmpy ``BeliefPropagation`` (calibrate + read the clique beliefs,
   its junction tree built once; for the same output as pgm_dp's, also sum each of the 24
   model cliques' normalised marginal out of them; and with its tree built on every call, as
   this script timed it before) vs mbi's default CPU junction-tree oracle on the same
   log-potentials;
2. contingency tables of all 24 edge cliques for 1e6 records: ``sufficient_statistics`` vs
   ``pandas.DataFrame.groupby(...).size()``;
3. (no reference) the gradient of ``log Z`` (``jax.jit(jax.grad(...))``, what the learners
   differentiate) on the same chain with k = 10 and k = 20.
Prints the ratios; targets: >= 50x pgmpy, >= 2x mbi, >= 3x pandas.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import jax
import numpy as np

import pgm_dp
from pgm_dp.models import third_order_chain


def median_time(fn, repeat: int, number: int = 1) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
    return statistics.median(times)


def interleaved(contenders: dict, rounds: int) -> dict[str, list[float]]:
    """Per-call time of each contender, ``rounds`` times, the contenders taking turns in
    every round, so that a slow spell of a shared machine hits all of them alike.
    ``contenders[name] = (fn, calls per timing)``."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, (fn, number) in contenders.items():
            start = time.perf_counter()
            for _ in range(number):
                fn()
            times[name].append((time.perf_counter() - start) / number)
    return times


def pgm_dp_marginals(mrf):
    def run():  # NumPy tables when called eagerly: ready on return; blocking is a no-op
        return jax.block_until_ready(mrf.marginals())

    run()  # compile
    return run


def pgmpy_marginals(mrf, variant: str = "calibrate"):
    """pgmpy's ``BeliefPropagation`` on the model (pgmpy's junction tree built once, as
    pgm_dp's is): ``"calibrate"`` calibrates and reads the (unnormalised) junction-tree
    clique beliefs; ``"same_output"`` also returns what pgm_dp does, each model clique's
    normalised marginal summed out of the smallest belief holding it (checked against
    pgm_dp once); ``"build"`` is ``"calibrate"`` with the ``BeliefPropagation`` object (its
    junction tree) built anew on every call."""
    from pgmpy.inference import BeliefPropagation

    net = mrf.to_pgmpy()
    built = BeliefPropagation(net)

    def beliefs(bp=None):
        bp = bp or built
        bp.calibrate()
        return bp.get_clique_beliefs()

    holders = {cl: min((k for k in beliefs() if set(cl) <= set(k)), key=len) for cl in mrf.cliques}

    def clique_marginals():
        held = beliefs()
        out = {}
        for cl, key in holders.items():
            factor = held[key]
            m = factor.marginalize([v for v in factor.variables if v not in cl], inplace=False)
            m.normalize()
            out[cl] = m
        return out

    if variant == "build":
        return lambda: beliefs(BeliefPropagation(net))
    if variant == "calibrate":
        return beliefs
    ours = mrf.marginals()
    for cl, factor in clique_marginals().items():
        got = np.transpose(factor.values, [factor.variables.index(v) for v in cl])
        assert np.allclose(got, ours[cl], atol=1e-10), "pgmpy's marginals disagree"
    return clique_marginals


def mbi_marginals(mrf):
    try:
        import mbi
        from mbi import marginal_oracles
    except ImportError:
        return None
    dom = mbi.Domain(list(mrf.domain.attributes), list(mrf.domain.shape))
    factors = {cl: mbi.Factor(dom.project(cl), np.asarray(t)) for cl, t in mrf.potentials.items()}
    potentials = mbi.CliqueVector(dom, list(mrf.cliques), factors)
    oracle = marginal_oracles.default_oracle(list(mrf.cliques), dom)

    def run():
        out = oracle(potentials)
        for cl in mrf.cliques:
            out[cl].values.block_until_ready()

    run()
    run.__name__ = oracle.__name__
    return run


def bench_gradient(k, repeat, rng):
    mrf = third_order_chain(10, k, rng)
    grad = jax.jit(jax.grad(lambda m: m.log_partition()))
    jax.block_until_ready(grad(mrf))  # compile
    return median_time(lambda: jax.block_until_ready(grad(mrf)), repeat, number=20)


def bench_tables(n_rows, repeat, rng):
    import pandas as pd

    mrf = third_order_chain(10, 10, rng)
    data = mrf.sample(n_rows, rng)
    cliques = mrf.cliques

    def ours():
        return pgm_dp.sufficient_statistics(data, cliques, mrf.domain)

    def pandas_groupby():
        return {cl: data.groupby(list(cl)).size() for cl in cliques}

    check = ours()
    ref = pandas_groupby()
    for cl in cliques:
        got = check[cl][tuple(np.asarray(ref[cl].index.codes[i]) for i in range(2))]
        assert np.array_equal(got, ref[cl].to_numpy()), "tables disagree with pandas"
    del pd
    return median_time(ours, repeat), median_time(pandas_groupby, repeat)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    rng = np.random.default_rng(args.seed)
    mrf = third_order_chain(10, 10, rng)

    contenders = {
        "pgm_dp": (pgm_dp_marginals(mrf), 20),
        "pgmpy": (pgmpy_marginals(mrf), 1),
        "pgmpy_same": (pgmpy_marginals(mrf, "same_output"), 1),
        "pgmpy_build": (pgmpy_marginals(mrf, "build"), 1),
    }
    mbi_run = mbi_marginals(mrf)
    if mbi_run is not None:
        contenders["mbi"] = (mbi_run, 20)
    times = interleaved(contenders, args.repeat)
    ours = statistics.median(times["pgm_dp"])

    def ratio(name):  # median over rounds of the round's ratio
        return statistics.median(t / o for t, o in zip(times[name], times["pgm_dp"], strict=True))

    print("All-clique marginals, third-order chain T=10, k=10 (24 edge cliques);")
    print(f"  median of {args.repeat} interleaved rounds, ratio = median of per-round ratios")
    print(f"  pgm_dp junction tree      {ours * 1e3:9.3f} ms")
    pgmpy_t = statistics.median(times["pgmpy"])
    print(f"  pgmpy BeliefPropagation   {pgmpy_t * 1e3:9.3f} ms   ratio {ratio('pgmpy'):8.1f}x")
    for name, what in (
        ("pgmpy_same", "+ the 24 clique marginals"),
        ("pgmpy_build", "+ its tree built"),
    ):
        t, r = statistics.median(times[name]), ratio(name)
        print(f"    {what:<25}{t * 1e3:9.3f} ms   ratio {r:8.1f}x")
    if mbi_run is None:
        print("  mbi                       not installed (pip install -e '.[bench]')")
    else:
        mbi_t = statistics.median(times["mbi"])
        name = mbi_run.__name__
        print(f"  mbi {name:<22}{mbi_t * 1e3:9.3f} ms   ratio {ratio('mbi'):8.1f}x")
    for k in (10, 20):
        t = bench_gradient(k, args.repeat, rng)
        print(f"Gradient of log Z, third-order chain T=10, k={k}: {t * 1e3:9.3f} ms")
    ours_t, pandas_t = bench_tables(args.rows, max(3, args.repeat // 3), rng)
    print(f"Contingency tables, {args.rows:,} rows, 24 cliques")
    print(f"  pgm_dp sufficient_statistics {ours_t * 1e3:9.1f} ms")
    ratio = pandas_t / ours_t
    print(f"  pandas groupby().size()      {pandas_t * 1e3:9.1f} ms   ratio {ratio:6.1f}x")


if __name__ == "__main__":
    main()
