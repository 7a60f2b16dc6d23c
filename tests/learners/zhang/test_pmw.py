"""PMW on parity queries (Hardt & Rothblum 2010), as Zhang et al. (2020) Alg. 5 uses it."""

import math

import numpy as np
import pytest

from pgm_dp.errors import DataValidationError, ModelTooLargeError, PrivacyParameterError
from pgm_dp.ising import gibbs_ising
from pgm_dp.learners import PMW, pmw_release
from pgm_dp.learners.zhang import error_bounds, pmw_plan, release_parities
from pgm_dp.learners.zhang.pmw import PMW_MAX_VARIABLES, parity_queries, parity_sums, walsh
from pgm_dp.models import ising
from pgm_dp.privacy import ZCDP, Accountant, ApproxDP, PureDP


@pytest.fixture(scope="module")
def spins():
    A = np.zeros((6, 6))
    A[0, 1] = A[1, 0] = 0.8
    A[2, 3] = A[3, 2] = -0.6
    return gibbs_ising(A, n_chains=5000, n_sweeps=30, rng=0)


def _true(z, qs):
    return np.array([np.prod(z[:, list(q)], axis=1).mean() for q in qs])


def test_walsh_gives_every_parity_of_a_table():
    rng = np.random.default_rng(0)
    x = rng.random(8)
    u = np.arange(8)
    z = np.where((u[:, None] >> np.arange(3)) & 1, 1.0, -1.0)
    out = walsh(x)
    for mask in range(8):
        idx = [i for i in range(3) if mask >> i & 1]
        assert out[mask] == pytest.approx(np.sum(x * np.prod(z[:, idx], axis=1)))


def test_answers_approach_the_truth_as_the_budget_grows(spins):
    qs = parity_queries(6, 2)
    truth = _true(spins, qs)
    errors = []
    for rho in (0.1, 10.0, 1000.0):  # at 0.1 the derived threshold lets nothing through
        errs = [np.abs(pmw_release(spins, qs, ZCDP(rho), rng=s).answers - truth).mean()
                for s in range(3)]  # fmt: skip
        errors.append(np.mean(errs))
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.005


def test_budget_is_charged_once_in_zcdp_or_approx_dp(spins):
    qs = parity_queries(6, 1)
    acc = Accountant(ZCDP(1.0))
    res = pmw_release(spins, qs, ZCDP(0.5), rng=0, accountant=acc)
    assert acc.spent == ZCDP(0.5) == res.spent
    acc = Accountant(ApproxDP(1.0, 1e-6))
    res = pmw_release(spins, qs, ApproxDP(1.0, 1e-6), rng=0, accountant=acc)
    assert acc.spent.epsilon <= 1.0 + 1e-9 and res.spent.rho > 0


def test_too_many_variables_are_refused_before_allocating():
    p = PMW_MAX_VARIABLES + 1
    z = np.ones((3, p))
    acc = Accountant(ZCDP(1.0))
    with pytest.raises(ModelTooLargeError):
        pmw_release(z, [(0,)], ZCDP(1.0), accountant=acc)
    with pytest.raises(DataValidationError):
        pmw_release(np.zeros((3, 2)), [(0,)], ZCDP(1.0), accountant=acc)
    assert acc.spent.rho == 0


def test_registered_pmw_returns_the_synthetic_distribution(spins):
    truth = ising(np.zeros((6, 6)))
    codes = ((spins + 1) / 2).astype(int)
    fit = PMW(t=2).fit(codes, truth, budget=ZCDP(100.0), rng=0)
    pair = np.asarray(fit.model.marginal(["X0", "X1"]))
    corr = pair[0, 0] + pair[1, 1] - pair[0, 1] - pair[1, 0]
    target = np.mean(spins[:, 0] * spins[:, 1])
    assert 0.2 < corr <= target + 0.02  # one multiplicative step moves x part of the way
    released = fit.info["answers"][fit.info["queries"].index((0, 1))]
    assert released == pytest.approx(target, abs=0.02)
    assert math.isclose(float(np.sum(pair)), 1.0)


def test_parity_sums_are_exact(spins):
    qs = parity_queries(6, 3)
    brute = [int(np.prod(spins[:, list(q)], axis=1).sum()) for q in qs]
    assert parity_sums(spins, qs).tolist() == brute


def test_the_plan_never_runs_out_of_updates_on_its_own_bound():
    """K covers the potential argument: at most 0.56 p / nu^2 updates (nu = bound / 4)."""
    for n, m, p, rho in [(1000, 21, 6, 0.1), (10**5, 136, 16, 1.0), (10**4, 65535, 16, 10.0)]:
        plan = pmw_plan(n, m, p, rho)
        nu = plan.bound / 4
        assert plan.max_updates == m or plan.max_updates >= 0.56 * p / nu**2
        assert plan.alpha == pytest.approx(3 * nu)
        assert plan.eps0 == pytest.approx(math.sqrt(rho / plan.max_updates))


def test_release_uses_the_mechanism_with_the_smaller_bound(spins):
    qs = parity_queries(6, 2)
    truth = _true(spins, qs)
    acc = Accountant(ZCDP(1.0))
    out = release_parities(spins, qs, ZCDP(1.0), rng=0, accountant=acc)
    assert out.mechanism == min(out.bounds, key=out.bounds.get) == "gaussian"
    assert acc.spent == ZCDP(1.0) == out.spent and len(acc.charges) == 1
    assert np.max(np.abs(out.answers - truth)) <= out.bounds["gaussian"]
    pure = release_parities(spins, None, PureDP(1.0), t=2, rng=0)
    assert pure.mechanism == "laplace" and set(pure.bounds) == {"laplace"}
    assert np.max(np.abs(pure.answers - truth)) <= pure.bounds["laplace"]


def test_forced_pmw_keeps_its_bound_and_a_wrong_budget_is_refused_before_charging(spins):
    qs = parity_queries(6, 2)
    truth = _true(spins, qs)
    for seed in range(3):
        out = release_parities(spins, qs, ZCDP(50.0), mechanism="pmw", rng=seed)
        assert out.mechanism == "pmw" and out.updates is not None
        assert np.max(np.abs(out.answers - truth)) <= out.bounds["pmw"]
    acc = Accountant(PureDP(1.0))
    with pytest.raises(PrivacyParameterError):
        release_parities(spins, qs, PureDP(1.0), mechanism="pmw", accountant=acc)
    assert acc.spent.epsilon == 0


def test_per_query_noise_wins_the_bounds_for_few_queries_and_many_records():
    bounds = error_bounds(10**5, 136, 16, ZCDP(1.0))
    assert bounds["gaussian"] < bounds["pmw"] / 10


def test_parity_counts_move_by_at_most_one_per_query_on_neighbouring_data():
    """The calibration's premise (per-query noise: L2 sensitivity sqrt(m), L1 m): replacing
    one record changes each count of records with q_I = +1 by at most 1."""
    rng = np.random.default_rng(0)
    qs = parity_queries(6, 6)
    z = np.where(rng.random((300, 6)) < 0.5, 1.0, -1.0)
    counts = (parity_sums(z, qs) + len(z)) // 2
    for trial in range(20):
        other = z.copy()
        other[trial] = np.where(rng.random(6) < 0.5, 1.0, -1.0)
        moved = np.abs((parity_sums(other, qs) + len(z)) // 2 - counts)
        assert moved.max() <= 1
        assert np.sqrt((moved**2).sum()) <= np.sqrt(len(qs)) and moved.sum() <= len(qs)
