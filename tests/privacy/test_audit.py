"""Statistical DP audits of every mechanism, and of deliberately under-noised versions.

Each audit (:mod:`pgm_dp.privacy.audit`) returns a lower confidence bound on ``ε`` whose
family-wise false-alarm rate is ``ALPHA = 1e-3``: if the claim is true, the probability that
``epsilon_lower > ε`` is at most 0.1 % (seeds are fixed, so the outcome is deterministic). The
same audit applied to the mechanism with its noise scale divided by 3 must detect the violation
(``epsilon_lower > ε``); this checks that the audits have power.
"""

from __future__ import annotations

import numpy as np
import pytest

from pgm_dp import Domain, sufficient_statistics
from pgm_dp.privacy import (
    ZCDP,
    ApproxDP,
    PureDP,
    discrete_gaussian_mechanism,
    discrete_laplace_mechanism,
    exponential_mechanism,
    gaussian_mechanism,
    laplace_mechanism,
    perturb,
    release_marginals,
    report_noisy_max,
    zcdp_to_approx_dp,
)
from pgm_dp.privacy.audit import (
    audit_categorical,
    audit_thresholds,
    epsilon_lower_bound,
    privacy_loss_statistic_laplace,
)

ALPHA = 1e-3
N = 200_000


def _pair(run, seed):
    """Outputs on neighbouring scalar queries q(a) = 1, q(b) = 0 (sensitivity 1)."""
    return run(np.ones(N), seed), run(np.zeros(N), seed + 1)


@pytest.mark.parametrize("weaken", [1.0, 3.0])
def test_laplace(weaken):
    eps = 1.0

    def run(x, s):
        return laplace_mechanism(x, l1_sensitivity=1.0, budget=PureDP(eps * weaken), rng=s)

    a, b = _pair(run, 10)
    res = audit_thresholds(a, b, thresholds=np.linspace(-4, 5, 19), alpha=ALPHA)
    if weaken == 1:
        assert res.consistent_with(eps) and res.epsilon_lower > 0.8  # tight and powerful
    else:
        assert not res.consistent_with(eps), res


@pytest.mark.parametrize("weaken", [1.0, 3.0])
def test_gaussian_approx_dp(weaken):
    budget = ApproxDP(1.0, 1e-5)
    # issue #16: the lattice Gaussian is calibrated through zCDP (CKS), not the analytic
    # Gaussian (proved for continuous noise only); integer queries need no rounding slack
    sigma = perturb(np.zeros(1, np.int64), kind="gaussian", sensitivity=1.0, budget=budget)[1].scale

    def run(x, s):  # understating the sensitivity by 3 divides sigma by 3
        x = x.astype(np.int64)
        return gaussian_mechanism(x, l2_sensitivity=1.0 / weaken, budget=budget, rng=s)

    a, b = _pair(run, 20)
    np.testing.assert_allclose(b.std(), sigma / weaken, rtol=0.01)
    grid = np.linspace(-2, 3, 11) * sigma
    res = audit_thresholds(a, b, thresholds=grid, delta=budget.delta, alpha=ALPHA)
    assert res.consistent_with(budget.epsilon) == (weaken == 1), res


@pytest.mark.parametrize("weaken", [1.0, 3.0])
def test_discrete_laplace(weaken):
    eps = 1.0

    def run(x, s):
        return discrete_laplace_mechanism(
            x.astype(np.int64), l1_sensitivity=1, budget=PureDP(eps * weaken), rng=s
        )

    a, b = _pair(run, 30)
    res = audit_thresholds(a, b, thresholds=np.arange(-5, 7), alpha=ALPHA)
    assert res.consistent_with(eps) == (weaken == 1), res
    if weaken == 1:
        assert res.epsilon_lower > 0.8


@pytest.mark.parametrize("weaken", [1.0, 3.0])
def test_discrete_gaussian(weaken):
    rho, delta = 0.05, 1e-5
    claim = zcdp_to_approx_dp(rho, delta)  # rho-zCDP => (eps, delta)-DP (CKS 2020)

    def run(x, s):
        return discrete_gaussian_mechanism(
            x.astype(np.int64), l2_sensitivity=1, budget=ZCDP(rho * weaken**2), rng=s
        )

    a, b = _pair(run, 40)
    res = audit_thresholds(a, b, thresholds=np.arange(-8, 10), delta=delta, alpha=ALPHA)
    assert res.consistent_with(claim.epsilon) == (weaken == 1), (res, claim)


K = 20
SCORES_A = np.zeros(K)
SCORES_B = np.concatenate([[1.0], -np.ones(K - 1)])  # every score moves by <= 1


@pytest.mark.slow  # a long audit: the second tier
@pytest.mark.parametrize("weaken", [1.0, 3.0])
@pytest.mark.parametrize("select", [exponential_mechanism, report_noisy_max])
def test_selection(select, weaken):
    eps, n = 1.0, 30_000
    g = np.random.default_rng(50)

    def draws(scores):
        return np.array(
            [select(scores, sensitivity=1.0, budget=PureDP(eps * weaken), rng=g) for _ in range(n)]
        )

    res = audit_categorical(draws(SCORES_A), draws(SCORES_B), categories=range(K), alpha=ALPHA)
    assert res.consistent_with(eps) == (weaken == 1), res


@pytest.mark.slow  # a long audit: the second tier
@pytest.mark.parametrize("weaken", [1.0, 3.0])
def test_release_marginals_worst_case_neighbours(weaken):
    """D_a = D_b plus one record: each of the |C| = 3 tables differs in one cell (Prop. 3)."""
    dom = Domain(["A", "B", "C"], [2, 2, 2])
    cliques = [("A", "B"), ("B", "C"), ("A", "C")]
    base = np.random.default_rng(0).integers(0, 2, size=(20, 3))
    d_b, d_a = base, np.vstack([base, [[0, 0, 0]]])
    eps, n = 1.0, 15_000
    cells = [(0, 0)] * 3  # the changed cell of each table

    def stat(data, seed):
        g = np.random.default_rng(seed)
        out = np.empty((n, 3))
        for i in range(n):
            rel = release_marginals(data, cliques, dom, budget=PureDP(eps * weaken), rng=g)
            out[i] = [rel.noisy[c][cell] for c, cell in zip(cliques, cells, strict=True)]
        return out

    ta = sufficient_statistics(d_a, cliques, dom)
    tb = sufficient_statistics(d_b, cliques, dom)
    ma = np.array([ta[c][cell] for c, cell in zip(cliques, cells, strict=True)])
    mb = np.array([tb[c][cell] for c, cell in zip(cliques, cells, strict=True)])
    scale = len(cliques) / eps  # the claimed Laplace scale |C|/eps (Eq. 3)
    la = privacy_loss_statistic_laplace(stat(d_a, 60), ma, mb, scale)
    lb = privacy_loss_statistic_laplace(stat(d_b, 61), ma, mb, scale)
    grid = np.concatenate([[-1 + 1e-9], np.linspace(-0.75, 0.75, 7), [1 - 1e-9]])
    res = audit_thresholds(la, lb, thresholds=grid, alpha=ALPHA)
    assert res.consistent_with(eps) == (weaken == 1), res
    if weaken == 1:
        assert res.epsilon_lower > 0.6


def test_epsilon_lower_bound_basic_properties():
    # identical distributions: no evidence of privacy loss
    res = epsilon_lower_bound(np.array([500, 500]), np.array([500, 500]), 1000, 1000)
    assert res.epsilon_lower == 0.0 and res.alpha == ALPHA
    # delta absorbs small events
    res = epsilon_lower_bound(np.array([10]), np.array([0]), 10_000, 10_000, delta=0.01)
    assert res.epsilon_lower == 0.0
    with pytest.raises(ValueError):
        epsilon_lower_bound(np.array([1, 2]), np.array([1]), 10, 10)
