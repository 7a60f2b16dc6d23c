"""The scanned, stacked junction-tree pass: exact like the unrolled one (forced on small
models, where brute force is possible) and chosen by size."""

import jax
import numpy as np
import pytest
from conftest import brute_log_z, brute_marginal, random_model

import pgm_dp.inference.junction_tree as jt_module
from pgm_dp import Domain, MarkovRandomField
from pgm_dp.inference.stacked_pass import stacked_flat_marginals, stacked_marginals
from pgm_dp.learners.base import flatten_tables
from pgm_dp.models import third_order_chain


@pytest.fixture
def force_stacked(monkeypatch):
    monkeypatch.setattr(jt_module, "STACKED_MIN_CLIQUES", 1)
    monkeypatch.setattr(jt_module, "STACKED_MAX_PADDING", np.inf)


@pytest.mark.parametrize("seed", range(8))
def test_stacked_marginals_and_log_z_equal_brute_force(seed, force_stacked):
    rng = np.random.default_rng(seed)
    mrf = random_model(rng, n_vars=int(rng.integers(2, 7)), n_cliques=int(rng.integers(1, 7)))
    assert jt_module.use_stacked(mrf.junction_tree())
    assert abs(float(mrf.log_partition()) - brute_log_z(mrf)) < 1e-10
    for cl, marg in mrf.marginals().items():
        np.testing.assert_allclose(np.asarray(marg), brute_marginal(mrf, cl), atol=1e-10)


def test_stacked_gradient_and_any_subset(rng, force_stacked):
    dom = Domain(["A", "B", "C", "D", "E"], [2, 3, 1, 2, 3])
    cliques = [("A", "B"), ("B", "C", "D"), ("D", "E"), ("E", "A"), ("C",), ("A", "D", "E")]
    mrf = MarkovRandomField(dom, cliques, [rng.normal(size=dom.sizes(c)) * 2 for c in cliques])
    grads = jax.jit(jax.grad(lambda m: m.log_partition()))(mrf)
    for cl, g in zip(mrf.cliques, grads.log_potentials, strict=True):
        np.testing.assert_allclose(np.asarray(g), brute_marginal(mrf, cl), atol=1e-10)
    for query in [("E", "B"), ("D",), ("C", "E", "A")]:
        np.testing.assert_allclose(mrf.marginal(query), brute_marginal(mrf, query), atol=1e-10)


def test_stacked_with_impossible_states(force_stacked):
    mrf = MarkovRandomField(
        Domain(["A", "B", "C"], [2, 2, 2]),
        [("A", "B"), ("B", "C")],
        [np.array([[0.0, -np.inf], [0.0, 0.0]]), np.zeros((2, 2))],
    )
    assert float(mrf.log_partition()) == pytest.approx(np.log(6), abs=1e-12)


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_long_chain_takes_the_stacked_pass_and_agrees_with_the_unrolled_one():
    mrf = third_order_chain(22, 3, rng=0)
    jt = mrf.junction_tree()
    assert jt_module.use_stacked(jt)
    fast, log_z = jt_module.scaled_marginals(jt, mrf.cliques, mrf.log_potentials)[:2]
    got, got_z = stacked_marginals(jt, mrf.cliques, mrf.log_potentials)
    assert abs(float(got_z) - float(log_z)) < 1e-10
    for a, b in zip(got, fast, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-12)


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_flat_marginals_and_second_derivatives(rng, force_stacked):
    dom = Domain(["A", "B", "C", "D"], [2, 3, 2, 2])
    cliques = [("B", "A"), ("B", "C", "D"), ("D", "A"), ("C",)]
    mrf = MarkovRandomField(dom, cliques, [rng.normal(size=dom.sizes(c)) for c in cliques])
    flat = flatten_tables(mrf.log_potentials)
    mu, log_z = stacked_flat_marginals(mrf.junction_tree(), flat)
    expect = flatten_tables([brute_marginal(mrf, c) for c in cliques])
    np.testing.assert_allclose(np.asarray(mu), expect, atol=1e-10)
    assert abs(float(log_z) - brute_log_z(mrf)) < 1e-10
    shapes = [dom.sizes(c) for c in cliques]

    def log_partition(x):
        tables, start = [], 0
        for s in shapes:
            tables.append(x[start : start + int(np.prod(s))].reshape(s))
            start += int(np.prod(s))
        return mrf.replace(tables).log_partition()

    hess = np.asarray(jax.jacfwd(jax.grad(log_partition))(flat))  # the covariance of the
    np.testing.assert_allclose(hess, hess.T, atol=1e-10)  # indicators: symmetric, and
    np.testing.assert_allclose(hess[:6, :6].sum(), 0.0, atol=1e-10)  # a table's rows sum to 0
