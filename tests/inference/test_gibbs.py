"""Gibbs samplers against brute-force enumeration on small loopy models.

Distribution tests are chi-square goodness-of-fit tests of the joint histogram of the *final*
states of independent chains (one sample per chain, so the counts are multinomial up to the
negligible burn-in bias after 30 sweeps of a 5-6 variable model) against the exact joint from
enumeration; cells with expected count < 5 are pooled. Each test rejects at p < 1e-3, i.e. a
false-alarm rate of 0.1 % per test for an exact sampler; seeds are fixed so runs are
deterministic.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import chisquare

from pgm_dp.errors import DataValidationError, DomainError
from pgm_dp.inference.gibbs import gibbs_pairwise, greedy_colouring
from pgm_dp.ising import gibbs_ising

ALPHA = 1e-3


def _chi2_pvalue(codes: np.ndarray, probs: np.ndarray) -> float:
    """p-value of the pooled chi-square test of state indices ``codes`` against ``probs``."""
    n = codes.size
    obs = np.bincount(codes, minlength=probs.size).astype(float)
    exp = n * probs
    small = exp < 5
    if small.any():
        obs = np.r_[obs[~small], obs[small].sum()]
        exp = np.r_[exp[~small], exp[small].sum()]
    return float(chisquare(obs, exp).pvalue)


def _loopy_J(p: int = 5, seed: int = 0) -> np.ndarray:
    """Cycle 0-1-2-3-4-0 plus chord 0-2, mixed-sign couplings."""
    rng = np.random.default_rng(seed)
    J = np.zeros((p, p))
    for i, j in [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0), (0, 2)]:
        J[i, j] = J[j, i] = rng.uniform(-0.8, 0.8)
    return J


def _ising_exact(J, theta, beta, convention):
    p = J.shape[0]
    states = np.array(list(itertools.product([-1.0, 1.0], repeat=p)))
    c = 0.5 if convention == "pairwise" else 1.0
    logw = c * beta * np.einsum("si,ij,sj->s", states, J, states) + states @ theta
    w = np.exp(logw - logw.max())
    return states, w / w.sum()


def _state_index(samples: np.ndarray) -> np.ndarray:
    bits = (samples > 0).astype(np.int64)
    return bits @ (2 ** np.arange(samples.shape[1])[::-1])


@pytest.mark.parametrize("convention", ["pairwise", "quadratic"])
@pytest.mark.parametrize("scan", ["blocked", "sequential"])
@pytest.mark.parametrize("sparse", [False, True])
def test_ising_matches_enumeration(convention, scan, sparse):
    J = _loopy_J()
    theta = np.array([0.3, -0.2, 0.0, 0.1, -0.4])
    beta = 0.6  # strong enough to matter, weak enough to mix in 30 sweeps (2x for quadratic)
    _, probs = _ising_exact(J, theta, beta, convention)
    Jin = sp.csr_matrix(J) if sparse else J
    s = gibbs_ising(
        Jin,
        theta,
        n_chains=20_000,
        n_sweeps=30,
        rng=1,
        beta=beta,
        convention=convention,
        scan=scan,
    )
    assert s.shape == (20_000, 5) and s.dtype == np.float64
    assert _chi2_pvalue(_state_index(s), probs) > ALPHA


def test_ising_conventions_differ_by_factor_two():
    """'quadratic' at beta equals 'pairwise' at 2*beta (same seed -> identical draws)."""
    J = _loopy_J()
    a = gibbs_ising(J, n_chains=50, n_sweeps=5, rng=3, beta=0.7, convention="quadratic")
    b = gibbs_ising(J, n_chains=50, n_sweeps=5, rng=3, beta=1.4, convention="pairwise")
    np.testing.assert_array_equal(a, b)


def test_ising_prising_conditional():
    """Two spins: P(s1 = s2) = e^{βJ} / (e^{βJ} + e^{-βJ}) under PrIsing's Eq. 1 (pairwise)."""
    J = np.array([[0.0, 0.8], [0.8, 0.0]])
    s = gibbs_ising(J, n_chains=40_000, n_sweeps=10, rng=5, beta=1.0)
    agree = np.mean(s[:, 0] == s[:, 1])
    exact = np.exp(0.8) / (np.exp(0.8) + np.exp(-0.8))
    assert abs(agree - exact) < 4.5 * np.sqrt(exact * (1 - exact) / 40_000)


def test_ising_reproducible_and_input_untouched():
    J = _loopy_J()
    J0 = J.copy()
    init = np.ones(5)
    a = gibbs_ising(J, n_chains=7, n_sweeps=4, rng=11, init=init)
    b = gibbs_ising(J, n_chains=7, n_sweeps=4, rng=np.random.default_rng(11), init=init)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(J, J0)
    np.testing.assert_array_equal(init, np.ones(5))
    c = gibbs_ising(J, n_chains=3, n_sweeps=0, rng=0, init=-np.ones((3, 5)))
    np.testing.assert_array_equal(c, -np.ones((3, 5)))


@pytest.mark.parametrize(
    "J, kw",
    [
        (np.array([[0.0, 1.0], [0.5, 0.0]]), {}),  # asymmetric
        (np.array([[1.0, 0.0], [0.0, 0.0]]), {}),  # diagonal
        (np.array([[0.0, np.nan], [np.nan, 0.0]]), {}),
        (np.zeros((2, 3)), {}),
        (np.zeros((2, 2)), {"theta": np.zeros(3)}),
        (np.zeros((2, 2)), {"init": np.array([1.0, 0.0])}),
    ],
)
def test_ising_rejects_bad_input(J, kw):
    with pytest.raises(DataValidationError):
        gibbs_ising(J, n_chains=2, n_sweeps=1, rng=0, **kw)


def test_ising_rejects_bad_settings():
    J = np.zeros((2, 2))
    for kw in ({"n_chains": 0}, {"n_sweeps": -1}, {"scan": "random"}, {"convention": "x"}):
        args = {"n_chains": 2, "n_sweeps": 1, **kw}
        with pytest.raises(DomainError):
            gibbs_ising(J, rng=0, **args)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_greedy_colouring_is_proper(seed):
    A = sp.random(60, 60, density=0.2, random_state=seed, format="csr")
    A = sp.csr_array(((A + A.T) > 0).astype(float))
    A.setdiag(0)
    A.eliminate_zeros()
    classes = greedy_colouring(A)
    assert sorted(np.concatenate(classes).tolist()) == list(range(60))
    dense = A.toarray()
    for c in classes:
        assert not dense[np.ix_(c, c)].any()
    deg = int(np.diff(A.indptr).max())
    assert len(classes) <= deg + 1  # greedy never needs more than max degree + 1 colours


# -- pairwise ----------------------------------------------------------------------------------


def _pairwise_model(seed: int = 0, with_zero: bool = False):
    rng = np.random.default_rng(seed)
    sizes = (2, 3, 2, 3, 2, 3)
    edges = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 0), (1, 4)]  # loops + chord
    cliques = [(v,) for v in range(6)] + edges
    pots = [rng.normal(0, 0.5, size=sizes[v]) for v in range(6)]
    pots += [rng.normal(0, 0.8, size=(sizes[a], sizes[b])) for a, b in edges]
    if with_zero:
        pots[6][1, 2] = -np.inf  # clique (0, 1): x0 = 1 with x1 = 2 is impossible
    return sizes, cliques, pots


def _pairwise_exact(sizes, cliques, pots):
    states = np.array(list(itertools.product(*[range(k) for k in sizes])))
    logw = np.zeros(len(states))
    for c, t in zip(cliques, pots, strict=True):
        logw += t[tuple(states[:, v] for v in c)]
    w = np.exp(logw - logw[np.isfinite(logw)].max())
    return states, w / w.sum()


def _code_index(x: np.ndarray, sizes) -> np.ndarray:
    return np.ravel_multi_index(tuple(x.T), sizes)


@pytest.mark.parametrize("scan", ["blocked", "sequential"])
@pytest.mark.parametrize("with_zero", [False, True])
def test_pairwise_matches_enumeration(scan, with_zero):
    sizes, cliques, pots = _pairwise_model(with_zero=with_zero)
    _, probs = _pairwise_exact(sizes, cliques, pots)
    init = np.zeros(6, dtype=int)  # feasible under the structural zero
    x = gibbs_pairwise(
        sizes,
        cliques,
        pots,
        n_chains=20_000,
        n_sweeps=30,
        burn_in=29,
        rng=2,
        init=init,
        scan=scan,
    )
    assert x.shape == (20_000, 6) and x.dtype == np.int64
    if with_zero:
        assert not np.any((x[:, 0] == 1) & (x[:, 1] == 2))
    assert _chi2_pvalue(_code_index(x, sizes), probs) > ALPHA


def test_pairwise_collection_order_and_counts():
    sizes, cliques, pots = _pairwise_model()
    x = gibbs_pairwise(sizes, cliques, pots, n_chains=4, n_sweeps=10, burn_in=4, thin=2, rng=0)
    assert x.shape == (4 * 3, 6)
    y = gibbs_pairwise(
        sizes, cliques, pots, n_chains=4, n_sweeps=10, burn_in=4, thin=2, rng=0, n_samples=5
    )
    np.testing.assert_array_equal(y, x[:5])
    last = gibbs_pairwise(sizes, cliques, pots, n_chains=4, n_sweeps=10, burn_in=9, rng=0)
    np.testing.assert_array_equal(last, x[-4:])  # the last record holds the final states


def test_pairwise_marginals_many_records():
    """Single-variable marginals from thinned records of several chains (loose check)."""
    sizes, cliques, pots = _pairwise_model(seed=4)
    states, probs = _pairwise_exact(sizes, cliques, pots)
    x = gibbs_pairwise(sizes, cliques, pots, n_chains=500, n_sweeps=220, burn_in=20, thin=4, rng=9)
    for v, k in enumerate(sizes):
        exact = np.bincount(states[:, v], weights=probs, minlength=k)
        emp = np.bincount(x[:, v], minlength=k) / len(x)
        assert np.max(np.abs(emp - exact)) < 0.02


def test_pairwise_reproducible():
    sizes, cliques, pots = _pairwise_model()
    a = gibbs_pairwise(sizes, cliques, pots, n_chains=5, n_sweeps=6, rng=8)
    b = gibbs_pairwise(sizes, cliques, pots, n_chains=5, n_sweeps=6, rng=8)
    np.testing.assert_array_equal(a, b)


def test_pairwise_rejects_bad_input():
    sizes, cliques, pots = _pairwise_model()
    with pytest.raises(DomainError, match="size <= 2"):
        gibbs_pairwise((2, 2, 2), [(0, 1, 2)], [np.zeros((2, 2, 2))], n_chains=1, n_sweeps=2, rng=0)
    with pytest.raises(DomainError):
        gibbs_pairwise(sizes, [(0, 0)], [np.zeros((2, 2))], n_chains=1, n_sweeps=2, rng=0)
    with pytest.raises(DomainError):
        gibbs_pairwise(sizes, [(0, 1)], [np.zeros((3, 2))], n_chains=1, n_sweeps=2, rng=0)
    with pytest.raises(DomainError):
        gibbs_pairwise(sizes, [(0, 9)], [np.zeros((2, 2))], n_chains=1, n_sweeps=2, rng=0)
    with pytest.raises(DataValidationError):
        gibbs_pairwise((2, 2), [(0, 1)], [np.full((2, 2), np.nan)], n_chains=1, n_sweeps=2, rng=0)
    with pytest.raises(DomainError):
        gibbs_pairwise(sizes, cliques, pots, n_chains=2, n_sweeps=4, n_samples=100, rng=0)
    with pytest.raises(DomainError):
        gibbs_pairwise(sizes, cliques, pots, n_chains=2, n_sweeps=4, burn_in=4, rng=0)
    with pytest.raises(DataValidationError):
        gibbs_pairwise(sizes, cliques, pots, n_chains=2, n_sweeps=4, rng=0, init=np.full(6, 3))
    # x0 = 0 is forbidden by its unary and (x0, x1) = (1, 2) by the pair: from init (1, 2) the
    # first update (of x0) has no state of positive probability
    unary = np.array([-np.inf, 0.0])
    pair = np.zeros((2, 3))
    pair[1, 2] = -np.inf
    with pytest.raises(DataValidationError, match="zero probability"):
        gibbs_pairwise(
            (2, 3),
            [(0,), (0, 1)],
            [unary, pair],
            n_chains=2,
            n_sweeps=2,
            rng=0,
            init=np.array([1, 2]),
        )
