"""Structural zeros, the plug-in covariance's fallback and the sampled posterior p-value."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from pgm_dp import Domain, MarkovRandomField
from pgm_dp.bayes import posterior, predictive_check, workload_intervals
from pgm_dp.bayes.model import Problem, prepare
from pgm_dp.bayes.plugin import finite_covariance
from pgm_dp.bayes.zeros import ZERO_LOG_POTENTIAL, structural_zeros
from pgm_dp.errors import DomainError
from pgm_dp.privacy import PureDP, release_marginals

DOM = Domain(["A", "B", "C"], [3, 3, 2])
CLIQUES = [("A", "B"), ("B", "C")]


def _diagonal_data(n: int = 2000, seed: int = 0) -> np.ndarray:
    """``B = A`` (the 6 off-diagonal cells of ``A, B`` are structural zeros), ``C`` noisy."""
    gen = np.random.default_rng(seed)
    a = gen.integers(3, size=n)
    c = (gen.random(n) < 0.3 + 0.2 * a).astype(int)
    return np.stack([a, a, c], axis=1)


def _release(data, eps: float, seed: int, cliques=CLIQUES):
    mrf = MarkovRandomField(DOM, cliques)
    return release_marginals(data, mrf, budget=PureDP(eps), rng=seed), mrf


def test_the_rule_combines_every_table_that_contains_a_cell():
    """A cell is flagged iff its inverse-variance combined noisy count, from its own table and
    every larger table summed to it, is at most ``t`` sd; never every cell of a table."""
    shapes = ((2,), (2, 2))
    y = np.array([5.0, 95.0, -3.0, 2.0, 40.0, 60.0])  # A: [5, 95]; A,B: rows [-3, 2], [40, 60]
    var = np.array([4.0, 4.0, 1.0, 1.0, 1.0, 1.0])
    problem = Problem(y, 100.0, var, (False,) * 6, None, (("A",), ("A", "B")), shapes)
    # A = 0: own 5 (var 4), from A,B: -1 (var 2); combined (5/4 - 1/2) / (3/4) = 1 > 0.
    assert structural_zeros(problem, 0.0).tolist() == [False, False, True, False, False, False]
    assert structural_zeros(problem, 1.2).tolist() == [True, False, True, False, False, False]
    everything = problem._replace(y=np.full(6, -1.0))
    assert not structural_zeros(everything, 0.0).any()


def test_structural_zeros_are_zero_and_their_neighbours_covered():
    """``B = A``: the flagged cells are off the diagonal, their table draws are 0 (intervals
    ``[0, ~0]``), and each table's draws still sum to 1."""
    data = _diagonal_data()
    rel, mrf = _release(data, 1.0, 1)
    flagged = prepare(rel, mrf, 0.0).offset[:9] == ZERO_LOG_POTENTIAL
    off_diagonal = ~np.eye(3, dtype=bool).ravel()
    assert flagged.any() and not np.any(flagged & ~off_diagonal)
    idata = posterior(rel, mrf, method="laplace", covariance="plugin", num_samples=400,
                      num_chains=1, rng=0, zeros=0.0)  # fmt: skip
    ab = workload_intervals(idata, mrf.cliques, [("A", "B")], level=0.9)[("A", "B")]
    assert np.all(ab.lower.ravel()[flagged] == 0.0)
    assert np.all(ab.upper.ravel()[flagged] < 1.0 / len(data))
    draws = idata.posterior["table:A,B"].values.reshape(400, 9)
    assert np.allclose(draws.sum(1), 1.0, atol=1e-6)  # the mass went to the other cells


def test_zeros_none_models_no_structural_zero():
    rel, mrf = _release(_diagonal_data(), 1.0, 1)
    assert not np.any(prepare(rel, mrf, None).offset)
    with pytest.raises(DomainError, match="zeros"):
        posterior(rel, mrf, zeros=float("nan"))


def test_a_pair_summed_out_of_a_triple_covers_its_zeros():
    """The pair ``A, B`` read from the released triple: summed from unclipped draws, its
    zero cells' intervals reach 0 (clipped draws summed over ``C`` did not)."""
    data = _diagonal_data(seed=3)
    rel, mrf = _release(data, 0.5, 2, [("A", "B", "C")])
    idata = posterior(rel, mrf, method="laplace", covariance="plugin", num_samples=400,
                      num_chains=1, rng=0)  # fmt: skip
    iv = workload_intervals(idata, mrf.cliques, [("A", "B")], level=0.9)[("A", "B")]
    assert np.all(iv.lower.ravel()[~np.eye(3, dtype=bool).ravel()] == 0.0)


def test_the_plugin_covariance_falls_back_towards_the_mode(monkeypatch):
    """Where ``Sigma`` is not finite (here: made so above log-potential 10), it is taken at
    the first halving of the point towards zero where it is, and that point is returned;
    with no such point the error is raised."""
    module = importlib.import_module("pgm_dp.bayes.plugin")  # the name is the function's
    rel, mrf = _release(_diagonal_data(), 1.0, 1)
    problem = prepare(rel, mrf, None)
    exact = module.plugin_covariance

    def fragile(problem, theta):
        if np.max(np.abs(theta)) > 10:
            raise DomainError("the plug-in covariance is not finite at this theta")
        return exact(problem, theta)

    monkeypatch.setattr(module, "plugin_covariance", fragile)
    x = np.full(problem.size, 50.0)
    x1, sigma = finite_covariance(problem, x)
    assert np.allclose(x1, 50.0 / 8) and np.allclose(sigma, exact(problem, x1))
    monkeypatch.setattr(module, "plugin_covariance", lambda *a: fragile(problem, np.inf))
    with pytest.raises(DomainError, match="not finite"):
        finite_covariance(problem, x)


def test_the_check_flags_an_independence_model_of_a_correlated_table():
    """Power: the independent model (naive MLE of the one-way tables) against the release of
    ``A, B`` where ``B = A``: the pair's p-value is 0; the correct structure passes."""
    data = _diagonal_data()
    rel, _ = _release(data, 1.0, 1, [("A", "B"), ("A",), ("B",)])
    ab = np.clip(rel.noisy[("A", "B")], 1e-3, None)
    joint = MarkovRandomField(DOM, [("A", "B")], [np.log(ab / ab.sum())])
    marg = [ab.sum(1) / ab.sum(), ab.sum(0) / ab.sum()]
    product = MarkovRandomField(DOM, [("A",), ("B",)], [np.log(m) for m in marg])
    bad = predictive_check(rel, product, replicates=100, rng=0)
    good = predictive_check(rel, joint, replicates=100, rng=0)
    assert bad.p_values[("A", "B")] == 0.0 and good.min_p > 0.01
