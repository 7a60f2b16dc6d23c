"""Benchmark: releasing 1e6 table cells with exact discrete Laplace noise (target <= 1 s).

Compares, for 10**6 cells:

* ``release_marginals`` end to end (validation, counting, exact noise) on one 1000 x 1000 clique
  table, with the default ``"discrete_laplace"`` and the paper's ``"laplace"`` (exact discrete
  Laplace on a lattice 2^k, floating-point safe), both with the default CSPRNG (``rng=None``:
  ChaCha20) and with a seeded PCG64;
* the exact vectorised sampler ``sample_discrete_laplace`` alone, at several scales;
* numpy's floating-point (inexact) Laplace sampler;
* the exact discrete Gaussian sampler;
* OpenDP's exact discrete Laplace (``make_laplace`` on integers), timed on a smaller vector and
  extrapolated linearly to 10**6 (labelled as such).

Run: ``python benchmarks/bench_release.py [--cells N] [--opendp-cells M] [--repeats R]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from pgm_dp import Domain
from pgm_dp.privacy import PureDP, release_marginals
from pgm_dp.privacy.samplers import (
    sample_discrete_gaussian,
    sample_discrete_laplace,
    sample_laplace,
)


def best_of(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=10**6)
    ap.add_argument("--opendp-cells", type=int, default=10**5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--records", type=int, default=10**5)
    args = ap.parse_args()
    n, reps = args.cells, args.repeats
    side = int(round(np.sqrt(n)))
    rows: list[tuple[str, float, str]] = []

    dom = Domain(["A", "B"], [side, side])
    data = np.random.default_rng(0).integers(0, side, size=(args.records, 2))
    g = np.random.default_rng(1)
    for mech in ("discrete_laplace", "laplace"):
        for eps in (1.0, 0.3):
            for rng_name, rng in (("ChaCha20 default", None), ("PCG64 seeded", g)):
                t = best_of(
                    lambda eps=eps, mech=mech, rng=rng: release_marginals(
                        data, [("A", "B")], dom, budget=PureDP(eps), mechanism=mech, rng=rng
                    ),
                    reps,
                )
                label = f"release_marginals {mech} (eps={eps}, {rng_name})"
                rows.append((label, t, "exact, fp-safe"))
    for scale in (1.0, 10 / 3, 100.0):
        t = best_of(lambda s=scale: sample_discrete_laplace(s, side * side, g), reps)
        rows.append((f"sample_discrete_laplace (b={scale:.4g})", t, "exact"))
    t = best_of(lambda: sample_laplace(1.0, side * side, g), reps)
    rows.append(("numpy Laplace via sample_laplace (b=1)", t, "floating point, inexact"))
    t = best_of(lambda: sample_discrete_gaussian(3.0, side * side, g), reps)
    rows.append(("sample_discrete_gaussian (sigma=3)", t, "exact"))

    try:
        import opendp.prelude as dp

        dp.enable_features("contrib")
        m = args.opendp_cells
        meas = dp.m.make_laplace(
            dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int), 1.0
        )
        zeros = [0] * m
        t = best_of(lambda: meas(zeros), max(1, reps - 1))
        label = f"OpenDP make_laplace int (b=1), measured on {m:,} cells"
        rows.append((label, t, "exact"))
        rows.append(
            (
                f"OpenDP make_laplace int, EXTRAPOLATED x{side * side / m:g}",
                t * side * side / m,
                "exact (extrapolated)",
            )
        )
    except ImportError:
        rows.append(("OpenDP not installed", float("nan"), "-"))

    print(f"Release of {side * side:,} table cells (best of {reps}; target <= 1 s)")
    width = max(len(r[0]) for r in rows)
    ref = next((secs for name, secs, _ in rows if "EXTRAPOLATED" in name), float("nan"))
    for name, secs, kind in rows:
        print(f"  {name:<{width}}  {secs:8.3f} s   {kind:<22}  x{secs / ref:6.3f} of OpenDP")


if __name__ == "__main__":
    main()
