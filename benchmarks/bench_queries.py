"""Benchmark: every 2-way (and 3-way) marginal of a model fitted on UCI Adult.

A tree over Adult's 14 attributes is chosen by private MST selection (ε = 1) and fitted by
naive MLE to a Laplace release of its 13 pairs (ε = 1); then all 91 pairs are asked of it:

* ``batch``: ``model.marginals(pairs)``, one NumPy calibration of the junction tree, each
  pair a belief sum or variable elimination along the tree (:mod:`pgm_dp.inference.queries`);
* ``one by one``: ``model.marginal(pair)`` for each pair (one calibration each);
* ``before``: the path ``model.marginal`` took before, a junction tree of the model's cliques
  plus the pair, compiled and calibrated per pair; timed on ``--before`` of the pairs
  inside no clique (the persistent compilation cache off) and scaled to all of those (a
  lower bound: the pairs inside a clique also compiled a program each).

Median of ``--repeat`` calls. ``--triples`` also times all 364 three-way marginals in one
batch. Prints the ratios; target: all 91 pairs in at most 1 s.

Run: ``python benchmarks/bench_queries.py [--before 3] [--repeat 5] [--triples]``.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import time

os.environ.setdefault("PGM_DP_NO_CACHE", "1")  # "before" compiles as a first call does

import _repo  # noqa: E402, F401  (the repository root on sys.path)
import jax.numpy as jnp  # noqa: E402

from pgm_dp import MarkovRandomField, PureDP  # noqa: E402
from pgm_dp.datasets import load_adult  # noqa: E402
from pgm_dp.inference.junction_tree import clique_marginals  # noqa: E402
from pgm_dp.learners import NaiveMLE  # noqa: E402
from pgm_dp.privacy import release_marginals  # noqa: E402
from pgm_dp.select import select_cliques  # noqa: E402


def fitted_tree() -> MarkovRandomField:
    data, domain = load_adult()
    sel = select_cliques(data, PureDP(1.0), domain, rng=1)
    mrf = MarkovRandomField(domain, sel.cliques)
    release = release_marginals(data, mrf, budget=PureDP(1.0), rng=2)
    return NaiveMLE().fit(release, mrf).model


def before(mrf: MarkovRandomField, query):
    """The former ``marginal``: the query added to the junction tree, compiled per query."""
    jt = mrf.junction_tree(extra=(query,))
    pots = mrf.log_potentials + (jnp.zeros(mrf.domain.sizes(query)),)
    return clique_marginals(jt, pots, (query,))[0][0]


def median_seconds(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=int, default=3, help="pairs timed on the old path")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--triples", action="store_true")
    args = parser.parse_args()
    mrf = fitted_tree()
    pairs = list(itertools.combinations(mrf.domain.attributes, 2))
    outside = [q for q in pairs if mrf.junction_tree().containing(q) is None]
    print(f"model cliques: {list(mrf.cliques)}")
    print(f"{len(pairs)} pairs, {len(outside)} inside no clique")
    batch = median_seconds(lambda: mrf.marginals(pairs), args.repeat)
    single = median_seconds(lambda: [mrf.marginal(q) for q in pairs], args.repeat)
    print(f"batch, all {len(pairs)} pairs: {batch:.4f} s")
    print(f"one by one, all {len(pairs)} pairs: {single:.4f} s")
    if args.before > 0:
        sample = outside[: args.before]
        start = time.perf_counter()
        for q in sample:
            before(mrf, q)
        per_pair = (time.perf_counter() - start) / len(sample)
        old = per_pair * len(outside)
        print(f"before: {per_pair:.2f} s per pair outside the cliques ({len(sample)} timed)")
        print(f"before, {len(outside)} such pairs (scaled): {old:.0f} s")
        print(f"ratio before / batch: {old / batch:,.0f}x; / one by one: {old / single:,.0f}x")
    if args.triples:
        triples = list(itertools.combinations(mrf.domain.attributes, 3))
        seconds = median_seconds(lambda: mrf.marginals(triples), max(1, args.repeat // 2))
        print(f"batch, all {len(triples)} triples: {seconds:.3f} s")


if __name__ == "__main__":
    main()
