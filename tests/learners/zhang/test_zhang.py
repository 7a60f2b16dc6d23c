"""Alg. 2 (Ising) and Alg. 3 (pairwise over [k]) of Zhang et al. (2020)."""

from dataclasses import fields

import numpy as np
import pytest

from pgm_dp.compare.graphs import budget_for
from pgm_dp.errors import DataValidationError, DomainError, PrivacyParameterError
from pgm_dp.ising import gibbs_ising
from pgm_dp.learners import ZhangIsing, ZhangPairwise, get, learn_ising, learn_pairwise, make
from pgm_dp.learners.zhang.frank_wolfe import pfw_lipschitz, pfw_noise_scale
from pgm_dp.models import ising, pairwise, third_order_chain
from pgm_dp.privacy import ZCDP, Accountant, ApproxDP

A = np.array(
    [[0.0, 0.6, 0.0, -0.4], [0.6, 0.0, 0.5, 0.0], [0.0, 0.5, 0.0, 0.3], [-0.4, 0.0, 0.3, 0.0]]
)


@pytest.fixture(scope="module")
def spins():
    return gibbs_ising(A, theta=np.array([0.2, 0, -0.1, 0]), n_chains=15_000, n_sweeps=30, rng=0)


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_learn_ising_recovers_a_small_model_and_splits_rho_over_nodes(spins):
    acc = Accountant(ZCDP(4.0))
    est = learn_ising(spins, lam=1.5, rho=4.0, max_steps=300, rng=1, accountant=acc)
    assert acc.spent.rho == pytest.approx(4.0)  # p runs of rho / p
    n, p = spins.shape  # Alg. 1 line 3 with rho' = rho / p and ||C||_1 = 2 lambda
    assert est.sum_scale / n == pytest.approx(
        pfw_noise_scale(pfw_lipschitz(1.0), 3.0, est.steps, n, 1.0)
    )
    assert np.max(np.abs(est.A - A)) < 0.15
    ref = learn_ising(spins, lam=1.5, rho=None, max_steps=400)
    assert np.max(np.abs(ref.A - A)) < 0.1 and ref.spent is None


def test_registered_ising_learner_gives_an_mrf_of_the_given_structure(spins):
    truth = ising(A, np.array([0.2, 0, -0.1, 0]))
    codes = ((spins + 1) / 2).astype(int)
    fit = make("zhang_ising", max_steps=200).fit(codes, truth, budget=ZCDP(4.0), rng=2)
    assert fit.model.cliques == truth.cliques
    table = fit.model.potentials[("X0", "X1")]
    assert abs(float(table[1, 1]) - 0.6) < 0.15
    rho = (np.sqrt(np.log(1000) + 1) - np.sqrt(np.log(1000))) ** 2  # Lemma 2.14 (2), delta=1/N
    assert budget_for(get("zhang_ising"), 1.0, 1000).rho == pytest.approx(rho)  # compare's
    assert not get("zhang_ising_np").private
    with pytest.raises(PrivacyParameterError):  # a ValueError: the CLI's one-line refusal
        ZhangIsing().fit(codes, truth, budget=ApproxDP(1.0, 1e-5))


def test_learners_refuse_models_they_cannot_fit_before_spending():
    chain = third_order_chain(5, 3, rng=0)
    data = chain.sample(50, rng=1)
    acc = Accountant(ZCDP(1.0))
    with pytest.raises(DomainError):  # 3-state variables: not an Ising model
        ZhangIsing().fit(data, chain, budget=ZCDP(1.0), accountant=acc)
    assert acc.spent.rho == 0.0
    with pytest.raises(DataValidationError):
        learn_ising(np.zeros((10, 3)), lam=1.0, rho=1.0, accountant=acc)


def _centered_pairwise(p, k, rng):
    W = np.zeros((p, p, k, k))
    for i in range(p - 1):  # a chain
        w = rng.uniform(-1, 1, (k, k))
        w -= w.mean(axis=0, keepdims=True)
        w -= w.mean(axis=1, keepdims=True)
        W[i, i + 1], W[i + 1, i] = w, w.T
    return W


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_learn_pairwise_recovers_a_small_model_and_splits_rho():
    p, k = 3, 3
    W = _centered_pairwise(p, k, np.random.default_rng(0))
    truth = pairwise(W, np.zeros((p, k)))
    data = truth.sample(15_000, rng=1)
    codes = truth.domain.encode(data)
    acc = Accountant(ZCDP(20.0))
    est = learn_pairwise(codes, k, lam=2.0, rho=20.0, max_steps=300, rng=2, accountant=acc)
    assert acc.spent.rho == pytest.approx(20.0 * (k - 1) / k)  # k(k-1)p runs of rho/(k^2 p)
    expect = pfw_noise_scale(pfw_lipschitz(1.0), 2 * 2.0 * k, est.steps, 1, 20.0 / (k * k * p))
    assert est.sum_scale == pytest.approx(expect)
    assert np.max(np.abs(est.W - W)) < 0.25
    fit = ZhangPairwise(lam=2.0, max_steps=300).fit(data, truth, budget=None)
    assert fit.model.cliques == truth.cliques
    assert np.max(np.abs(fit.info["W"] - W)) < 0.2


def test_the_algorithms_take_a_zcdp_budget_or_the_papers_bare_rho(spins):
    by_budget = learn_ising(spins[:2000], lam=1.5, rho=ZCDP(2.0), max_steps=30, rng=1)
    by_rho = learn_ising(spins[:2000], lam=1.5, rho=2.0, max_steps=30, rng=1)
    np.testing.assert_array_equal(by_budget.A, by_rho.A)
    assert by_budget.spent == by_rho.spent == ZCDP(2.0)


def test_the_estimates_return_no_count_of_the_data_beyond_the_noisy_parameters():
    """Two tables of the same public size whose subsets ``S_uv`` differ: everything the
    estimates return besides the noisy parameters is the same (no per-sub-problem scale,
    which would give every ``|S_uv|`` exactly)."""
    gen = np.random.default_rng(0)
    a = gen.integers(0, 3, size=(300, 3))
    b = a.copy()
    b[:40, 0] = 0  # other |S_uv| for node 0, same n
    noisy = {"W", "Theta", "A", "theta"}
    for learn in (
        lambda z: learn_pairwise(z, 3, lam=1.0, rho=1.0, steps=5, rng=0),
        lambda z: learn_ising(2.0 * (z % 2) - 1.0, lam=1.0, rho=1.0, steps=5, rng=0),
    ):
        ea, eb = learn(a), learn(b)
        rest = [f.name for f in fields(ea) if f.name not in noisy]
        assert rest and all(getattr(ea, f) == getattr(eb, f) for f in rest)
