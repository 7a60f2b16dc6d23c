"""PrIsing (Chakraborty, Chatterjee & Dalal, AISTATS 2024): Eq. 3-6 and Algorithm 1."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import brentq

from pgm_dp.errors import BudgetExceededError, DataValidationError, PrivacyParameterError
from pgm_dp.ising.gibbs import gibbs_ising
from pgm_dp.ising.networks import (
    check_coupling,
    erdos_renyi_graph,
    karate_club,
    load_polblogs,
    scale_erdos_renyi,
    scale_regular,
    scale_symmetric,
)
from pgm_dp.ising.prising import (
    _fields,
    _first_root,
    mple,
    prising,
    prising_batch,
    prising_calibration,
    pseudo_likelihood_score,
)
from pgm_dp.ising.prising_cells import draw_units
from pgm_dp.privacy import Accountant, ApproxDP, PureDP

# 3-node weighted path, hand-checkable: row sums (.5, .75, .25), d = 3 * row = (1.5, 2.25, .75)
J3 = np.array([[0.0, 0.5, 0.0], [0.5, 0.0, 0.25], [0.0, 0.25, 0.0]])


def _small_graph() -> np.ndarray:
    g = nx.circulant_graph(12, [1, 2])
    g.add_edge(0, 6)
    return nx.to_numpy_array(g) / 4.0


# -- Eq. 3-6 ------------------------------------------------------------------------------------


def test_score_matches_eq4_and_is_minus_derivative_of_log_pl():
    J = _small_graph()
    rng = np.random.default_rng(0)
    sig = rng.choice([-1.0, 1.0], size=12)
    m = J @ sig
    for beta in (0.0, 0.3, 1.7):
        direct = -sum(m[i] * (sig[i] - math.tanh(beta * m[i])) for i in range(12)) / 12
        assert pseudo_likelihood_score(beta, sig, J) == pytest.approx(direct, abs=1e-14)

    def log_pl(b):  # Eq. 3: sum_i log f_i, f_i = e^{b m_i s_i} / (2 cosh(b m_i))
        return float(np.sum(b * m * sig - np.log(2 * np.cosh(b * m))))

    h = 1e-6
    for beta in (0.2, 0.9):
        num = -(log_pl(beta + h) - log_pl(beta - h)) / (2 * h) / 12
        assert pseudo_likelihood_score(beta, sig, J) == pytest.approx(num, abs=1e-8)


def test_score_vectorised_shapes():
    J = _small_graph()
    S = np.random.default_rng(1).choice([-1.0, 1.0], size=(5, 12))
    betas = np.linspace(0, 2, 7)
    assert pseudo_likelihood_score(betas, S[0], J).shape == (7,)
    assert pseudo_likelihood_score(0.5, S, J).shape == (5,)
    grid = pseudo_likelihood_score(betas[:, None], S, J)
    assert grid.shape == (7, 5)
    assert grid[3, 2] == pytest.approx(pseudo_likelihood_score(betas[3], S[2], J))
    assert np.all(np.diff(grid, axis=0) >= 0)  # L is non-decreasing in beta


def test_mple_matches_brentq_dense_and_sparse():
    J = _small_graph()
    sig = np.array([1, 1, 1, 1, 1, -1, 1, 1, -1, -1, -1, 1.0])
    ref = brentq(lambda b: pseudo_likelihood_score(b, sig, J), 0.0, 50.0, xtol=1e-14)
    assert mple(sig, J) == pytest.approx(ref, rel=1e-10)
    assert mple(sig, sp.csr_matrix(J)) == pytest.approx(ref, rel=1e-10)
    batch = mple(np.stack([sig, sig]), J)
    np.testing.assert_allclose(batch, ref, rtol=1e-10)


def test_mple_root_at_zero_boundary_and_infinite():
    J = _small_graph()
    assert mple(np.ones(3), np.zeros((3, 3))) == 0.0  # L == 0: root at 0
    alt = np.array([1, 1, 1, -1, 1, 1, -1, -1, 1, -1, -1, 1.0])
    assert pseudo_likelihood_score(0.0, alt, J) > 0  # no root in [0, inf)
    assert mple(alt, J) == 0.0
    assert mple(alt, J, no_root="inf") == math.inf
    with pytest.warns(RuntimeWarning, match="no root"):
        assert mple(np.ones(12), J) == math.inf  # every node agrees with its field


@pytest.mark.parametrize("beta, tol_mean, max_sd", [(0.5, 0.15, 0.5), (1.5, 0.05, 0.12)])
def test_mple_recovers_beta_on_erdos_renyi(beta, tol_mean, max_sd):
    """ER n=1000, p = n^{-1/3}, J = A/(n p) (paper Sec. 4.1), 200 replicates.

    Corollary 3.2 / Bhattacharya & Mukherjee: sd ~ sqrt(p_n) = n^{-1/6} ~ 0.32 for beta < 1 and
    ~ 1/sqrt(n) ~ 0.03 for beta > 1; the mean of 200 replicates is then within ~4 standard
    errors (0.09 / 0.01) plus the small finite-n bias of the tolerances used.
    """
    n = 1000
    p = n ** (-1 / 3)
    J = scale_erdos_renyi(erdos_renyi_graph(n, p, rng=10), p)
    S = gibbs_ising(J, n_chains=200, n_sweeps=60, rng=11, beta=beta)
    est = mple(S, J)
    assert abs(est.mean() - beta) < tol_mean
    assert est.std() < max_sd


# -- Algorithm 1 --------------------------------------------------------------------------------


@pytest.mark.parametrize("eps, delta", [(2.0, 0.0), (2.0, 0.01), (0.5, 1e-6)])
def test_calibration_formulas_on_hand_checkable_J(eps, delta):
    c = prising_calibration(J3, eps, delta)
    assert c.n == 3
    assert c.zeta == pytest.approx(8 * 2.25 / 3)  # max_j 8 d_j / n = 6
    # Delta_min = max_j 24/(eps n) sum_i d_i J_ij; (J d) = (1.125, .9375, .5625)
    assert c.Delta_min == pytest.approx(24 / (eps * 3) * 1.125)
    assert c.Delta == c.Delta_min
    if delta > 0:
        assert c.mechanism == "gaussian"
        gamma = 6 * math.sqrt(8 * math.log(2 / delta) + 4 * eps) / eps
        assert c.noise_scale == pytest.approx(gamma)
        assert c.budget == ApproxDP(eps, delta)
    else:
        assert c.mechanism == "laplace"
        assert c.noise_scale == pytest.approx(2 * 6 / eps)
        assert c.budget == PureDP(eps)


def test_prising_draws_through_samplers_and_solves_the_perturbed_equation():
    """``b`` is exact lattice noise (spacing scale 2^-40, issue #16: not numpy's float
    sampler); the release is the grid cell holding the root of Algorithm 1's equation."""
    sig = np.array([1.0, 1.0, -1.0])
    seen = set()
    for delta in (0.0, 0.05):
        for seed in range(6):
            res = prising(sig, J3, 3.0, delta, rng=seed)
            z = draw_units(res.mechanism, 1, np.random.default_rng(seed))[0]
            b = float(z) * res.calibration.noise_spacing

            def lhs(beta, b=b, res=res):
                return pseudo_likelihood_score(beta, sig, J3) + (res.Delta * beta + b) / 3

            seen.add(res.boundary)
            if res.boundary:
                assert res.estimate == 0.0 and lhs(0.0) > 0
            else:
                root = brentq(lhs, 0.0, 100.0, xtol=1e-14)
                g = res.resolution
                assert abs(res.estimate - root) <= g / 2 + 1e-12
                assert (res.estimate / g - 0.5) == pytest.approx(round(res.estimate / g - 0.5))
    assert seen == {True, False}


def test_prising_bigger_Delta_allowed_smaller_rejected():
    c = prising_calibration(J3, 1.0, 0.0)
    res = prising(np.ones(3), J3, 1.0, 0.0, rng=0, Delta=2 * c.Delta_min)
    assert res.Delta == 2 * c.Delta_min and res.calibration.Delta_min == c.Delta_min
    with pytest.raises(PrivacyParameterError, match="below the minimum"):
        prising(np.ones(3), J3, 1.0, 0.0, rng=0, Delta=0.99 * c.Delta_min)


def test_private_estimate_tends_to_mple_as_epsilon_grows():
    """Delta = O(1/eps); the Laplace scale 2 zeta/eps = O(1/eps) but the Gaussian
    gamma = zeta sqrt(8 log(2/delta) + 4 eps)/eps = O(eps^{-1/2}) for large eps, so the gap
    to the MPLE shrinks like 1/eps (delta = 0) or 1/sqrt(eps) (delta > 0)."""
    J = _small_graph()
    s = np.array([1, 1, 1, 1, 1, -1, 1, 1, -1, -1, -1, 1.0])
    target = mple(s, J)  # 0.63
    g = 2e-5  # the released grid; about the finest eps = 1e6 allows on this J
    for delta, tol in ((0.0, 1e-4), (1e-3, 1e-2)):
        gaps = [
            abs(prising(s, J, e, delta, rng=4, resolution=g).estimate - target)
            for e in (1e2, 1e4, 1e6)
        ]
        assert gaps[2] < gaps[1] < gaps[0]
        assert gaps[2] < tol
    est = prising_batch(np.tile(s, (200, 1)), J, 1e5, 0.0, rng=5)
    assert np.max(np.abs(est - target)) < 1e-2


def test_accountant_is_charged_before_noise():
    sig = np.array([1.0, 1.0, -1.0])
    acc = Accountant(ApproxDP(2.0, 1e-3))
    prising(sig, J3, 1.0, 1e-4, rng=0, accountant=acc)
    prising(sig, J3, 0.5, 0.0, rng=0, accountant=acc)
    assert [type(c.cost) for c in acc.charges] == [ApproxDP, PureDP]
    assert acc.charges[0].scale == pytest.approx(prising_calibration(J3, 1.0, 1e-4).noise_scale)
    gen = np.random.default_rng(7)
    with pytest.raises(BudgetExceededError):
        prising(sig, J3, 1.0, 0.0, rng=gen, accountant=acc)
    assert len(acc.charges) == 2
    # nothing was drawn from the generator
    assert gen.random() == np.random.default_rng(7).random()


@pytest.mark.parametrize(
    "J",
    [
        np.array([[0.0, 1.0, 0.0], [0.5, 0.0, 0.0], [0.0, 0.0, 0.0]]),  # asymmetric
        np.array([[0.0, -1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]),  # negative
        np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]),  # diagonal
        np.ones((3, 2)),  # not square
        np.array([[0.0, np.nan, 0.0], [np.nan, 0.0, 0.0], [0.0, 0.0, 0.0]]),
        np.zeros((3, 3)),  # no edges: beta not identifiable, zeta = 0
        sp.csr_matrix(np.array([[0.0, 2.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])),
    ],
)
def test_bad_J_rejected_before_charging(J):
    acc = Accountant(PureDP(10.0))
    with pytest.raises(DataValidationError):
        prising(np.ones(3), J, 1.0, 0.0, rng=0, accountant=acc)
    assert acc.charges == ()


@pytest.mark.parametrize(
    "sigma",
    [
        np.ones(4),
        np.array([1.0, 0.0, 1.0]),
        np.array([1.0, np.nan, 1.0]),
        np.ones((2, 3)),
        np.array(["a", "b", "c"]),
        np.array([1.0, 2.0, -1.0]),
    ],
)
def test_bad_sigma_rejected_before_charging(sigma):
    acc = Accountant(PureDP(10.0))
    with pytest.raises(DataValidationError):
        prising(sigma, J3, 1.0, 0.0, rng=0, accountant=acc)
    assert acc.charges == ()


def test_zero_one_codes_get_a_hint():
    with pytest.raises(DataValidationError, match="2\\*x - 1"):
        mple(np.array([1, 0, 1]), J3)


@pytest.mark.parametrize(
    "eps, delta",
    [(0.0, 0.0), (-1.0, 0.0), (1.0, 1.0), (1.0, -0.1), (math.inf, 0.0), (1.0, math.nan)],
)
def test_bad_privacy_parameters(eps, delta):
    acc = Accountant(PureDP(10.0))
    with pytest.raises(PrivacyParameterError):
        prising(np.ones(3), J3, eps, delta, rng=0, accountant=acc)
    assert acc.charges == ()


def test_inputs_not_mutated_and_reproducible():
    J = _small_graph()
    J0 = J.copy()
    sig = np.array([1, 1, 1, 1, 1, -1, 1, 1, -1, -1, -1, 1.0])
    s0 = sig.copy()
    a = prising(sig, J, 1.0, 1e-3, rng=9)
    b = prising(sig, sp.csr_array(J), 1.0, 1e-3, rng=np.random.default_rng(9))
    assert a.estimate == pytest.approx(b.estimate, rel=1e-12)
    np.testing.assert_array_equal(J, J0)
    np.testing.assert_array_equal(sig, s0)


# -- networks and J scalings (pgm_dp.models.networks) ------------------------------------------


def test_erdos_renyi_graph_and_scaling():
    A = erdos_renyi_graph(400, 0.05, rng=3)
    assert A.shape == (400, 400) and abs(A - A.T).max() == 0 and A.diagonal().max() == 0
    assert set(np.unique(A.data)) == {1.0}
    edges = A.sum() / 2
    mean = 0.05 * 400 * 399 / 2
    assert abs(edges - mean) < 5 * math.sqrt(mean)
    np.testing.assert_array_equal(A.toarray(), erdos_renyi_graph(400, 0.05, rng=3).toarray())
    J = scale_erdos_renyi(A, 0.05)
    assert J.max() == pytest.approx(1 / 20)
    with pytest.raises(DataValidationError):
        scale_erdos_renyi(2 * A, 0.05)  # not 0/1


def test_scale_regular_and_symmetric():
    ring = sp.csr_array(nx.to_scipy_sparse_array(nx.cycle_graph(8)))
    np.testing.assert_allclose(scale_regular(ring).sum(axis=1), 1.0)
    with pytest.raises(DataValidationError, match="regular"):
        scale_regular(sp.csr_array(nx.to_scipy_sparse_array(nx.path_graph(4))))
    g = nx.star_graph(3)
    g.add_node(4)  # isolated
    A = nx.to_numpy_array(g)
    J = scale_symmetric(A).toarray()
    assert J[0, 1] == pytest.approx(1 / math.sqrt(3))
    assert not J[4].any() and not J[:, 4].any()
    np.testing.assert_array_equal(J, J.T)


def test_shipped_networks():
    A, s = load_polblogs(largest_component=False)
    assert A.shape == (1490, 1490) and A.sum() == 2 * 16705 and int((s == 1).sum()) == 732
    A, s = load_polblogs()
    assert A.shape == (1222, 1222) and int((s == -1).sum()) == 586
    A, s, names = load_polblogs(max_degree=50, drop_isolated=True, return_names=True)
    assert A.shape == (816, 816) and int((s == -1).sum()) == 382 and len(names) == 816
    assert np.asarray(A.sum(axis=1)).min() >= 1 and np.asarray(A.sum(axis=1)).max() <= 50
    A, s = karate_club()
    assert A.shape == (34, 34) and A.sum() == 156 and s[0] == 1 and s[33] == -1
    J = scale_symmetric(A)
    assert prising_calibration(J, 1.0, 0.0).zeta > 0


# -- statistical DP audit -----------------------------------------------------------------------

_R = 100_000  # noise draws per outcome vector
_Z = 4.5  # per-bin slack in standard errors; ~41 bins -> false-alarm rate < 41 * 3.4e-6


def _histograms(x1, x2, bins=40):
    """Counts of the atom at 0 and of pooled-quantile bins of the positive values."""
    pos = np.concatenate([x1[x1 > 0], x2[x2 > 0]])
    edges = np.unique(np.quantile(pos, np.linspace(0, 1, bins + 1)))
    edges[0], edges[-1] = 0.0, np.inf
    c1 = np.r_[np.sum(x1 == 0), np.histogram(x1[x1 > 0], edges)[0]]
    c2 = np.r_[np.sum(x2 == 0), np.histogram(x2[x2 > 0], edges)[0]]
    return c1.astype(float), c2.astype(float)


def _loss_lower_bound(x1, x2, min_count=500):
    """Largest lower confidence bound of |log P(bin|s) / P(bin|s')| over populated bins."""
    c1, c2 = _histograms(x1, x2)
    ok = (c1 >= min_count) & (c2 >= min_count)
    lr = np.abs(np.log(c1[ok] / c2[ok]))
    return float(np.max(lr - _Z * np.sqrt(1 / c1[ok] + 1 / c2[ok])))


def _delta_excess(x1, x2, eps):
    """Largest lower confidence bound of P(bin|s) - e^eps P(bin|s') over all bins, both ways."""
    c1, c2 = _histograms(x1, x2)
    worst = -np.inf
    for a, b in ((c1, c2), (c2, c1)):
        p, q = a / _R, b / _R
        se = np.sqrt(p * (1 - p) / _R + math.exp(2 * eps) * q * (1 - q) / _R)
        worst = max(worst, float(np.max(p - math.exp(eps) * q - _Z * se)))
    return worst


def _neighbours():
    J = _small_graph()
    s = np.array([1, 1, 1, 1, 1, -1, 1, 1, -1, -1, -1, 1.0])
    s2 = s.copy()
    s2[0] = -1.0  # the pair differs in one node; their MPLEs are 0.63 and 0
    return J, s, s2


@pytest.mark.parametrize(
    "eps, delta", [(1.0, 0.0), pytest.param(1.0, 1e-3, marks=pytest.mark.slow)]
)
def test_dp_audit_on_neighbouring_outcomes(eps, delta):
    J, s, s2 = _neighbours()
    x1 = prising_batch(np.tile(s, (_R, 1)), J, eps, delta, rng=1)
    x2 = prising_batch(np.tile(s2, (_R, 1)), J, eps, delta, rng=2)
    if delta == 0:
        assert _loss_lower_bound(x1, x2) <= eps
    else:
        assert _delta_excess(x1, x2, eps) <= delta


def test_dp_audit_flags_an_under_noised_mechanism():
    """The audit has power: noise and Delta divided by 20 break eps = 1 and are detected."""
    J, s, s2 = _neighbours()
    Jc = check_coupling(J, nonnegative=True)
    cal = prising_calibration(J, 1.0, 0.0)
    gen = np.random.default_rng(3)
    out = []
    for sig in (s, s2):
        b = gen.laplace(0.0, cal.noise_scale / 20, _R)
        est, _ = _first_root(
            _fields(Jc, sig[None]), sig[None], cal.Delta / 20 / 12, b / 12, "boundary"
        )
        out.append(est)
    assert _loss_lower_bound(*out) > 1.0
