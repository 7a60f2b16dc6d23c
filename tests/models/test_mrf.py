import jax
import numpy as np
import pandas as pd
import pytest
from conftest import brute_log_z

import pgm_dp
from pgm_dp import DataValidationError, Domain, DomainError, MarkovRandomField
from pgm_dp.models import erdos_renyi, ising, pairwise, third_order_chain


def test_public_api_example():
    dom = Domain(["A", "B", "C"], [2, 3, 4])
    assert Domain.from_dict({"A": 2, "B": 3, "C": 4}) == dom
    mrf = MarkovRandomField(dom, cliques=[("A", "B"), ("B", "C")], log_potentials=None)
    margs = mrf.marginals(method="junction_tree")
    assert set(margs) == {("A", "B"), ("B", "C")}
    np.testing.assert_allclose(np.asarray(margs[("A", "B")]), np.full((2, 3), 1 / 6))
    assert mrf.marginal(("A", "C")).shape == (2, 4)
    assert float(mrf.log_partition()) == pytest.approx(np.log(24))
    df = mrf.sample(10, np.random.default_rng(0))
    assert isinstance(df, pd.DataFrame) and df.shape == (10, 3)


def test_log_potentials_as_mapping_and_immutability():
    dom = Domain(["A", "B"], [2, 2])
    mrf = MarkovRandomField(dom, [("A", "B"), ("A",)], {("A",): [0.0, 1.0]})
    np.testing.assert_allclose(np.asarray(mrf.potentials[("A", "B")]), np.zeros((2, 2)))
    with pytest.raises(AttributeError):
        mrf.cliques = ()
    other = mrf.replace([np.ones((2, 2)), np.zeros(2)])
    assert float(other.log_partition()) == pytest.approx(1 + np.log(4))


def test_mrf_is_a_pytree():
    mrf = third_order_chain(5, 3, rng=0)
    leaves, treedef = jax.tree_util.tree_flatten(mrf)
    assert len(leaves) == len(mrf.cliques)
    doubled = jax.tree_util.tree_map(lambda x: 2 * x, mrf)
    assert isinstance(doubled, MarkovRandomField) and doubled.cliques == mrf.cliques
    assert jax.jit(lambda m: m.log_partition())(mrf) == pytest.approx(float(mrf.log_partition()))


@pytest.mark.parametrize(
    "cliques, pots, err",
    [
        ([("A", "Z")], None, DomainError),  # unknown variable
        ([("A", "A")], None, DomainError),  # repeated variable
        ([("A", "B")], [np.zeros((3, 2))], DomainError),  # wrong table shape
        ([("A", "B")], [np.full((2, 3), np.nan)], DomainError),  # NaN potential
        ([("A", "B")], [[[0.0, np.nan, 0.0], [0.0] * 3]], DomainError),  # NaN in a list
        ([("A", "B")], [jax.numpy.full((2, 3), jax.numpy.nan)], DomainError),  # NaN, JAX array
        ([("A", "B")], [np.full((2, 3), np.inf)], DomainError),  # +inf potential
        ([("A", "B"), ("A", "B")], None, DomainError),  # duplicate clique
        ([("A", "B")], {("B", "C"): np.zeros((3, 2))}, DomainError),  # potential for unknown clique
    ],
)
def test_bad_model_declarations(cliques, pots, err):
    dom = Domain(["A", "B", "C"], [2, 3, 2])
    with pytest.raises(err):
        MarkovRandomField(dom, cliques, pots)


@pytest.mark.parametrize(
    "sizes",
    [{"A": 0}, {"A": 2.5}, {"A": -1}],
)
def test_bad_domains(sizes):
    with pytest.raises(DomainError):
        Domain.from_dict(sizes)


def test_families_structure():
    chain = third_order_chain(10, 10, rng=0)
    assert len(chain.cliques) == 7 + 8 + 9
    assert all(1 <= abs(int(a[1:]) - int(b[1:])) <= 3 for a, b in chain.cliques)
    for t in chain.log_potentials:  # Dirichlet(1) draws: exp sums to one over the k*k cells
        assert float(np.exp(np.asarray(t)).sum()) == pytest.approx(1.0)
    er = erdos_renyi(10, 4, 0.3, rng=1)
    import networkx as nx

    assert nx.is_connected(nx.Graph([(a, b) for a, b in er.cliques]))
    assert (
        third_order_chain(6, 3, rng=5).potentials.keys()
        == third_order_chain(6, 3, rng=5).potentials.keys()
    )
    np.testing.assert_array_equal(
        np.asarray(erdos_renyi(8, 3, 0.5, rng=2).log_potentials[0]),
        np.asarray(erdos_renyi(8, 3, 0.5, rng=2).log_potentials[0]),
    )


def test_ising_matches_definition():
    rng = np.random.default_rng(0)
    A = np.triu(rng.normal(size=(4, 4)), 1)
    A = A + A.T
    theta = rng.normal(size=4)
    mrf = ising(A, theta)
    import itertools

    z = np.array(list(itertools.product([-1, 1], repeat=4)))
    energy = np.einsum("ni,ij,nj->n", z, np.triu(A, 1), z) + z @ theta
    log_z = np.log(np.exp(energy).sum())
    assert float(mrf.log_partition()) == pytest.approx(log_z, abs=1e-12)
    codes = (z + 1) // 2
    np.testing.assert_allclose(mrf.log_prob(codes), energy - log_z, atol=1e-12)


def test_families_and_queries_refuse_bad_arguments():
    for call in (
        lambda: third_order_chain(2.5, 3),
        lambda: erdos_renyi(0, 3),
        lambda: ising(0.0),
        lambda: third_order_chain(4, 2, rng=0).marginal({"X0", "X1"}),  # a set has no order
        lambda: third_order_chain(4, 2, rng=0).sample(True),
    ):
        with pytest.raises(ValueError):
            call()


def test_pairwise_matches_definition():
    rng = np.random.default_rng(1)
    p, k = 3, 3
    W = np.zeros((p, p, k, k))
    for i in range(p):
        for j in range(i + 1, p):
            W[i, j] = rng.normal(size=(k, k))
            W[j, i] = W[i, j].T
    Theta = rng.normal(size=(p, k))
    mrf = pairwise(W, Theta)
    assert float(mrf.log_partition()) == pytest.approx(brute_log_z(mrf), abs=1e-12)
    x = np.array([[0, 1, 2]])
    e = W[0, 1][0, 1] + W[0, 2][0, 2] + W[1, 2][1, 2] + Theta[0, 0] + Theta[1, 1] + Theta[2, 2]
    assert mrf.unnormalized_log_prob(x)[0] == pytest.approx(e)
    with pytest.raises(ValueError):
        W[0, 1, 0, 1] += 1.0  # breaks W[i, j] = W[j, i].T
        pairwise(W, Theta)
    block = np.ones((k, k))
    for bad in ({(-1, 0): block}, {(0, 5): block}, {(0, 1): block, (1, 0): block.T}):
        with pytest.raises(ValueError, match="W"):  # out of range, or one pair given twice
            pairwise(bad, Theta)


def test_log_prob_validates_data():
    mrf = third_order_chain(4, 3, rng=0)
    with pytest.raises(DataValidationError):
        mrf.log_prob(np.array([[0, 1, 2, 3]]))


def test_sufficient_statistics_api():
    dom = Domain(["A", "B", "C"], [2, 3, 4])
    df = pd.DataFrame({"C": [3, 0, 3], "A": [0, 1, 0], "B": [2, 2, 2]})
    tabs = pgm_dp.sufficient_statistics(df, [("A", "B"), ("C", "A")], dom)
    assert tabs[("A", "B")].dtype == np.int64
    assert (
        tabs[("A", "B")][0, 2] == 2
        and tabs[("C", "A")][3, 0] == 2
        and tabs[("C", "A")].shape == (4, 2)
    )
