import numpy as np
import pytest
from conftest import brute_log_z, brute_marginal

from pgm_dp import Domain, MarkovRandomField
from pgm_dp.inference.counting import trw_counting_numbers
from pgm_dp.inference.factor_graph import factor_graph
from pgm_dp.inference.loopy_bp import loopy_bp, loopy_bp_flat
from pgm_dp.learners.base import flatten_tables


def _grid(n, k, rng, scale=1.0):
    names = [f"X{i}" for i in range(n * n)]
    edges = [(r * n + c, r * n + c + 1) for r in range(n) for c in range(n - 1)]
    edges += [(r * n + c, (r + 1) * n + c) for r in range(n - 1) for c in range(n)]
    cliques = [(names[a], names[b]) for a, b in edges] + [(names[0],)]
    dom = Domain(names, [k] * (n * n))
    pots = [scale * rng.normal(size=dom.sizes(c)) for c in cliques]
    return MarkovRandomField(dom, cliques, pots)


def _tree(rng):
    dom = Domain(["A", "B", "C", "D", "E", "F"], [2, 3, 2, 4, 1, 3])
    cliques = [("A", "B"), ("B", "C"), ("D", "B"), ("D", "E"), ("E", "F"), ("A",), ("D",)]
    return MarkovRandomField(dom, cliques, [rng.normal(size=dom.sizes(c)) for c in cliques])


def test_edge_appearance_probabilities():
    tree = _tree(np.random.default_rng(0))
    np.testing.assert_allclose(trw_counting_numbers(tree.domain, tree.cliques), 1.0)
    dom = Domain(list("ABCDE"), [2] * 5)
    cycle = tuple(zip("ABCDE", "BCDEA", strict=True))
    np.testing.assert_allclose(trw_counting_numbers(dom, cycle), 4 / 5)  # 4 of 5 edges per tree
    grid = _grid(4, 2, np.random.default_rng(0))
    rho = trw_counting_numbers(grid.domain, grid.cliques)
    assert abs(rho[:-1].sum() - 15.0) < 1e-9 and rho[-1] == 1.0  # |V| - 1; the unary clique
    assert np.all((rho > 0) & (rho <= 1))


def test_higher_order_cliques_keep_every_variable_count_non_negative():
    dom = Domain(list("ABCD"), [2, 2, 2, 2])
    cliques = (("A", "B", "C"), ("B", "C", "D"), ("A", "D"), ("A",))
    rho = trw_counting_numbers(dom, cliques)
    assert rho[-1] == 1.0
    for v in "ABCD":
        assert sum(r for r, c in zip(rho[:-1], cliques[:-1], strict=True) if v in c) <= 1.0
    chain = (("A", "B", "C"), ("C", "D"))  # an acyclic factor graph: BP is exact, rho = 1
    np.testing.assert_allclose(trw_counting_numbers(dom, chain), 1.0)


def test_trw_with_unit_counts_on_a_tree_is_exact(rng):
    mrf = _tree(rng)
    res = loopy_bp(mrf.domain, mrf.cliques, mrf.log_potentials, counting="trw")
    assert bool(res.converged)
    for c, m in zip(mrf.cliques, res.factor_marginals, strict=True):
        np.testing.assert_allclose(m, brute_marginal(mrf, c), atol=1e-9)
    assert abs(float(res.log_z) - brute_log_z(mrf)) < 1e-9


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_trw_fixed_point_is_unique_and_bounds_log_z(rng):
    mrf = _grid(3, 3, rng, scale=1.5)  # strong couplings around 4-cycles
    graph = factor_graph(mrf.domain, mrf.cliques)
    rho = trw_counting_numbers(mrf.domain, mrf.cliques)
    flat = flatten_tables(mrf.log_potentials)
    starts = [None] + [rng.normal(scale=3.0, size=(graph.n_edges, graph.width)) for _ in range(3)]
    results = [loopy_bp_flat(graph, 0.5, 1e-12, 20000, flat, init=s, rho=rho) for s in starts]
    results += [  # the adaptive damping schedule, from no damping
        loopy_bp_flat(graph, 0.0, 1e-12, 20000, flat, init=s, rho=rho, adaptive=True)
        for s in starts
    ]
    for res in results:
        assert bool(res.converged)
        np.testing.assert_allclose(res.marginals, results[0].marginals, atol=1e-8)
        assert abs(float(res.log_z) - float(results[0].log_z)) < 1e-8
    assert float(results[0].log_z) >= brute_log_z(mrf)  # TRW's -F is an upper bound


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_trw_log_z_gradient_is_the_pseudo_marginals(rng):
    mrf = _grid(3, 2, rng)
    graph = factor_graph(mrf.domain, mrf.cliques)
    rho = trw_counting_numbers(mrf.domain, mrf.cliques)
    flat = flatten_tables(mrf.log_potentials)
    res = loopy_bp_flat(graph, 0.5, 1e-13, 20000, flat, rho=rho)
    for i in (0, 5, flat.size - 1):
        e = np.zeros_like(flat)
        e[i] = 1e-5
        up = loopy_bp_flat(graph, 0.5, 1e-13, 20000, flat + e, rho=rho).log_z
        down = loopy_bp_flat(graph, 0.5, 1e-13, 20000, flat - e, rho=rho).log_z
        assert abs(float(up - down) / 2e-5 - float(res.marginals[i])) < 1e-6


def test_bad_counting_numbers(rng):
    mrf = _tree(rng)
    with pytest.raises(ValueError):
        loopy_bp(mrf.domain, mrf.cliques, mrf.log_potentials, counting="convex")
    with pytest.raises(ValueError):
        loopy_bp(mrf.domain, mrf.cliques, mrf.log_potentials, counting=np.zeros(7))


def test_large_graphs_average_random_spanning_forests(monkeypatch):
    import pgm_dp.inference.counting as counting

    grid = _grid(4, 2, np.random.default_rng(0))
    exact = trw_counting_numbers(grid.domain, grid.cliques)
    monkeypatch.setattr(counting, "_DENSE_LIMIT", 0)
    rho = counting._counting_numbers(grid.domain, grid.cliques)
    assert abs(rho[:-1].sum() - 15.0) < 1e-9  # every forest holds |V| - 1 edges
    assert np.all((rho > 0) & (rho <= 1)) and np.max(np.abs(rho - exact)) < 0.25
