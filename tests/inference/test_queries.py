"""Any marginal from one calibrated junction tree (:mod:`pgm_dp.inference.queries`),
against brute-force enumeration: trees, loopy models, queries inside and outside the
model's cliques, one-, two- and three-way, any axis order."""

from __future__ import annotations

import itertools

import jax
import numpy as np
import pytest
from conftest import brute_log_z, brute_marginal

from pgm_dp import Domain, DomainError, MarkovRandomField
from pgm_dp.inference.queries import batch_marginals, calibrated
from pgm_dp.models import erdos_renyi, third_order_chain

TREE = (("A", "B"), ("B", "C"), ("B", "D"), ("D", "E"), ("E", "F"))
LOOPY = (("A", "B"), ("B", "C"), ("C", "D"), ("D", "E"), ("E", "F"), ("F", "A", "C"))


def _model(cliques, seed, scale=1.0):
    dom = Domain(list("ABCDEF"), [2, 3, 2, 4, 2, 3])
    g = np.random.default_rng(seed)
    return MarkovRandomField(dom, cliques, [scale * g.normal(size=dom.sizes(c)) for c in cliques])


def _all_queries(attrs, ways=(1, 2, 3)):
    out = []
    for k in ways:
        for q in itertools.combinations(attrs, k):
            out += [q, q[::-1]] if k > 1 else [q]  # axes in another order too
    return out


@pytest.mark.parametrize("cliques", [TREE, LOOPY], ids=["tree", "loopy"])
def test_every_query_matches_brute_force(cliques):
    mrf = _model(cliques, 0)
    queries = _all_queries(mrf.domain.attributes)
    got = mrf.marginals(queries)
    assert list(got) == queries
    jt = mrf.junction_tree()
    assert any(jt.containing(q) is None for q in queries)  # some are out of every clique
    for q in queries:
        want = brute_marginal(mrf, q)
        assert got[q].shape == want.shape
        np.testing.assert_allclose(got[q], want, atol=1e-12, err_msg=str(q))
        np.testing.assert_allclose(mrf.marginal(q), want, atol=1e-12, err_msg=str(q))


def test_batch_function_and_log_z():
    mrf = _model(LOOPY, 1)
    jt = mrf.junction_tree()
    tree = calibrated(jt, mrf.log_potentials)
    assert tree.log_z == pytest.approx(brute_log_z(mrf), abs=1e-10)
    queries = [("E", "B", "A"), ("D", "A"), ("C",)]
    for q, m in zip(queries, batch_marginals(jt, mrf.log_potentials, queries), strict=True):
        np.testing.assert_allclose(m, brute_marginal(mrf, q), atol=1e-12)


def test_larger_models_and_a_forest():
    chain = third_order_chain(7, 3, rng=2)  # triples, treewidth 2
    loopy = erdos_renyi(8, 2, 0.5, rng=3)
    dom = Domain(list("ABCDE"), [2, 3, 2, 2, 3])
    forest = MarkovRandomField(dom, [("A", "B"), ("D", "E")], [np.ones((2, 3)), np.eye(2, 3)])
    for mrf in (chain, loopy, forest):
        attrs = mrf.domain.attributes
        queries = [q for k in (2, 3) for q in itertools.combinations(attrs, k)][::3]
        for q, m in mrf.marginals(queries).items():
            np.testing.assert_allclose(m, brute_marginal(mrf, q), atol=1e-12, err_msg=str(q))


def test_peaked_and_impossible_states():
    """Potentials that underflow the probability pass (log-space fallback) and ``-inf``
    cells (zero separators) give the brute-force tables; an all-impossible model is refused."""
    mrf = _model(TREE, 4, scale=400.0)
    for q in [("A", "F"), ("C", "E", "A")]:
        np.testing.assert_allclose(mrf.marginal(q), brute_marginal(mrf, q), atol=1e-9)
    dom = Domain(list("ABC"), [2, 2, 2])
    zero = np.array([[0.0, -np.inf], [-np.inf, 0.0]])
    mrf = MarkovRandomField(dom, [("A", "B"), ("B", "C")], [zero, np.zeros((2, 2))])
    np.testing.assert_allclose(mrf.marginal(("C", "A")), brute_marginal(mrf, ("C", "A")))
    dead = MarkovRandomField(dom, [("A", "B")], [np.full((2, 2), -np.inf)])
    with pytest.raises(DomainError, match="probability zero"):
        dead.marginal(("A", "C"))


def test_traced_queries_are_differentiable():
    mrf = _model(TREE, 5)

    def prob(m):
        return m.marginals([("A", "F")])[("A", "F")][0, 1]

    grad = jax.grad(prob)(mrf)
    eps, k = 1e-6, 0
    bumped = [np.array(t) for t in mrf.log_potentials]
    bumped[k][0, 0] += eps
    numeric = (float(prob(mrf.replace(bumped))) - float(prob(mrf))) / eps
    assert float(grad.log_potentials[k][0, 0]) == pytest.approx(numeric, rel=1e-4, abs=1e-8)
    np.testing.assert_allclose(
        jax.jit(lambda m: m.marginal(("C", "E")))(mrf), brute_marginal(mrf, ("C", "E"))
    )


def test_approximate_backends_answer_queries_inside_cliques():
    mrf = _model(LOOPY, 6, scale=0.3)
    got = mrf.marginals([("C", "F"), ("B",)], method="trw_bp")
    clique = mrf.marginals("trw_bp")[("F", "A", "C")]
    np.testing.assert_allclose(got[("C", "F")], np.asarray(clique).sum(axis=1).T)
    with pytest.raises(DomainError, match="inside no clique"):
        mrf.marginals([("A", "D")], method="loopy_bp")


def test_bad_queries_are_refused():
    mrf = _model(TREE, 7)
    with pytest.raises(DomainError):
        mrf.marginals([("A", "Z")])
    with pytest.raises(DomainError, match="repeated"):
        mrf.marginals([("A", "A")])
    with pytest.raises(DomainError, match="not a set"):
        mrf.marginals([{"A", "B"}])
