"""Issue #16 (1): Mironov (2012) reachability attack on floating-point noise.

numpy's Laplace is ``scale * log(2U)`` (``U < 1/2``) or ``-scale * log(2 - 2U)`` with
``U = k / 2^53``. We re-implement it bit for bit and decide, for a released float ``y``, whether
some ``k`` produces ``y`` from the count ``c``. On the old sampler most releases from ``0`` are
impossible from ``1``; every mechanism the package now uses releases lattice points
``g (rint(x/g) + Z)`` whose noise ``Z`` has full integer support, so every release from ``c`` is
reachable from ``c + 1`` (and vice versa).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pgm_dp import Domain
from pgm_dp.privacy import ZCDP, PureDP, perturb, release_marginals
from pgm_dp.privacy.lattice import sample_lattice_gaussian, sample_lattice_laplace

_TWO53 = 2**53


def _numpy_noise(k: int, scale: float) -> float:
    u = k * (1.0 / 9007199254740992.0)
    if u >= 0.5:
        return 0.0 - scale * math.log(2.0 - u - u)
    return 0.0 + scale * math.log(u + u)


def reachable_numpy(y: float, c: float, scale: float) -> bool:
    """Whether numpy's Laplace sampler can output ``y`` from ``c`` (``y = c + noise``)."""
    t = y - c
    lo, hi = t - 4 * math.ulp(y) - 4 * math.ulp(c), t + 4 * math.ulp(y) + 4 * math.ulp(c)
    ks = []
    for v in (lo, hi):
        if v < 0:
            ks.append(math.exp(v / scale) / 2 * _TWO53)
        else:
            ks.append((1 - math.exp(-v / scale) / 2) * _TWO53)
    k0, k1 = int(min(ks)) - 2, int(max(ks)) + 3
    if k1 - k0 > 200_000:
        return True  # too many candidates to rule out: count as reachable (conservative)
    return any(c + _numpy_noise(k, scale) == y for k in range(max(1, k0), min(_TWO53, k1)))


def test_attack_succeeds_on_the_old_numpy_float_laplace():
    gen = np.random.default_rng(0)
    ys = 0.0 + gen.laplace(0.0, 1.0, 300)  # the old default: count 0, eps = 1, one cell
    assert all(reachable_numpy(y, 0.0, 1.0) for y in ys)  # the re-implementation is exact
    only_from_0 = np.mean([not reachable_numpy(y, 1.0, 1.0) for y in ys])
    assert only_from_0 > 0.5, only_from_0  # distinguishable exactly


def _on_lattice(y: np.ndarray, exponent: int) -> bool:
    units = np.ldexp(np.asarray(y, dtype=np.float64), -exponent)
    return bool(np.all(units == np.rint(units)) and np.all(np.abs(units) < 2.0**53))


def _outputs(kind: str, c: int) -> tuple[np.ndarray, int]:
    """300 releases of the count ``c`` by mechanism ``kind`` and the exponent of its lattice."""
    x = np.full(300, c, dtype=np.int64)
    if kind in ("discrete_laplace", "laplace"):
        y, m = perturb(x, kind=kind, sensitivity=1, budget=PureDP(1.0), rng=c)
    else:
        y, m = perturb(x, kind=kind, sensitivity=1, budget=ZCDP(0.5), rng=c)
    if kind.startswith("discrete"):
        return y, 0
    bits = 20 if kind == "laplace" else 10
    return y, math.frexp(m.scale)[1] - 1 - bits


@pytest.mark.parametrize("kind", ["discrete_laplace", "discrete_gaussian", "laplace", "gaussian"])
def test_attack_fails_on_every_release_mechanism(kind):
    for c in (0, 1):
        y, k = _outputs(kind, c)
        # support from c' = g (rint(c'/g) + Z), Z ~ full-support integer noise: y is reachable
        # from c' iff (y - c') is a lattice point; counts are lattice points (g <= 1)
        for other in (c, 1 - c):
            assert _on_lattice(y - other, k), (kind, c, other)


def test_attack_fails_on_release_marginals_default_and_laplace():
    dom = Domain(["A"], [2])
    for mech in ("discrete_laplace", "laplace"):
        for rows, seed in (([[0]], 1), ([[0], [0]], 2)):  # counts (1, 0) vs (2, 0)
            rel = release_marginals(
                rows, [("A",)], dom, budget=PureDP(1.0), mechanism=mech, rng=seed
            )
            y = np.asarray(rel.noisy[("A",)], dtype=np.float64)
            k = 0 if mech == "discrete_laplace" else math.frexp(1.0)[1] - 1 - 20
            assert _on_lattice(y - 1, k) and _on_lattice(y - 2, k)


@pytest.mark.parametrize("sampler", [sample_lattice_laplace, sample_lattice_gaussian])
def test_attack_fails_on_prising_and_dpsgd_noise(sampler):
    scale = 3.7  # PrIsing's b and DP-SGD's noise: x + lattice noise of this scale
    bits = 20 if sampler is sample_lattice_laplace else 10
    k = math.frexp(scale)[1] - 1 - bits
    for c in (0.0, 1.0):
        y = c + sampler(scale, 300, rng=int(c))
        assert _on_lattice(y, k) and _on_lattice(y - (1.0 - c), k)
