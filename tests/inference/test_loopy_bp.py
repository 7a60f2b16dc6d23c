import numpy as np
import pytest
from conftest import brute_log_z, brute_marginal

from pgm_dp import Domain, MarkovRandomField
from pgm_dp.inference.loopy_bp import loopy_bp
from pgm_dp.models import ising, third_order_chain


def _tree_model(rng, higher_order=False):
    dom = Domain(["A", "B", "C", "D", "E", "F"], [2, 3, 2, 4, 1, 3])
    cliques = [("A", "B"), ("B", "C"), ("B", "D"), ("D", "E"), ("E", "F"), ("A",), ("D",)]
    if higher_order:
        cliques = [("A", "B", "C"), ("C", "D"), ("D", "E", "F"), ("B",)]
    return MarkovRandomField(dom, cliques, [rng.normal(size=dom.sizes(c)) for c in cliques])


@pytest.mark.parametrize("higher_order", [False, True])
@pytest.mark.parametrize("damping", [0.0, 0.5])
def test_bp_is_exact_on_trees(rng, higher_order, damping):
    mrf = _tree_model(rng, higher_order)
    bp = mrf.marginals(method="loopy_bp", damping=damping)
    exact = mrf.marginals()
    for cl in mrf.cliques:
        np.testing.assert_allclose(np.asarray(bp[cl]), np.asarray(exact[cl]), atol=1e-9)
    assert abs(float(mrf.log_partition("loopy_bp", damping=damping)) - brute_log_z(mrf)) < 1e-9


def test_bethe_log_z_with_impossible_states_is_exact_on_a_tree():
    mrf = MarkovRandomField(
        Domain(["A", "B"], [2, 2]), [("A", "B")], [np.array([[0.0, -np.inf], [0.0, 0.0]])]
    )
    assert float(mrf.log_partition("loopy_bp")) == pytest.approx(np.log(3), abs=1e-12)


def test_bp_variable_marginals_and_convergence_flag(rng):
    mrf = _tree_model(rng)
    res = loopy_bp(mrf.domain, mrf.cliques, mrf.log_potentials)
    assert bool(res.converged)
    for v, m in zip(mrf.domain.attributes, res.variable_marginals, strict=True):
        np.testing.assert_allclose(np.asarray(m), brute_marginal(mrf, (v,)), atol=1e-9)


def test_bp_on_loopy_weak_coupling_is_close(rng):
    # On a loopy graph BP pair beliefs miss the indirect correlations, O(J^2) per path.
    A = 0.01 * np.triu(rng.normal(size=(6, 6)), 1)
    mrf = ising(A + A.T, rng.normal(scale=0.3, size=6))
    bp = mrf.marginals(method="loopy_bp")
    for cl, m in mrf.marginals().items():
        np.testing.assert_allclose(np.asarray(bp[cl]), np.asarray(m), atol=1e-3)
    assert abs(float(mrf.log_partition("loopy_bp")) - float(mrf.log_partition())) < 1e-3


def test_bp_on_third_order_chain_runs_and_normalises():
    mrf = third_order_chain(10, 4, rng=3)
    res = loopy_bp(mrf.domain, mrf.cliques, mrf.log_potentials, damping=0.5, max_iters=500)
    for m in res.factor_marginals:
        assert abs(float(m.sum()) - 1.0) < 1e-10
    assert np.isfinite(float(res.log_z))


def test_bad_damping():
    mrf = third_order_chain(4, 2, rng=0)
    with pytest.raises(ValueError):
        loopy_bp(mrf.domain, mrf.cliques, mrf.log_potentials, damping=1.0)


def test_stacked_factors_in_any_axis_order_are_exact_on_a_tree(rng):
    # several factors per shape, cliques given against the domain's order, padded states
    dom = Domain(["A", "B", "C", "D", "E", "F", "G"], [3, 2, 3, 5, 2, 1, 4])
    cliques = [("B", "A"), ("C", "A"), ("A", "D"), ("E", "D"), ("G", "E", "F"), ("D",), ("C",)]
    mrf = MarkovRandomField(dom, cliques, [rng.normal(size=dom.sizes(c)) for c in cliques])
    res = loopy_bp(mrf.domain, mrf.cliques, mrf.log_potentials, damping=0.3)
    assert bool(res.converged)
    for cl, m in zip(mrf.cliques, res.factor_marginals, strict=True):
        np.testing.assert_allclose(m, brute_marginal(mrf, cl), atol=1e-9)
    for v, m in zip(dom.attributes, res.variable_marginals, strict=True):
        np.testing.assert_allclose(m, brute_marginal(mrf, (v,)), atol=1e-9)
    assert abs(float(res.log_z) - brute_log_z(mrf)) < 1e-9


def test_convergence_flag_is_false_when_capped():
    mrf = third_order_chain(8, 3, rng=1)
    res = loopy_bp(mrf.domain, mrf.cliques, mrf.log_potentials, max_iters=2)
    assert int(res.iterations) == 2 and not bool(res.converged)
