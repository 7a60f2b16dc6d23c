import functools

import numpy as np
import pytest

from pgm_dp import ConvergenceWarning, Domain, MarkovRandomField, PureDP, release_marginals
from pgm_dp.inference.backend import TRW, Schedule
from pgm_dp.inference.counting import trw_counting_numbers
from pgm_dp.inference.loopy_bp import loopy_bp
from pgm_dp.learners.cgm import CGMEM
from pgm_dp.learners.cgm.conditioning import bethe_start, diagonal_scale
from pgm_dp.models import third_order_chain

# These tests pin CGM-EM's numerics in the paper's setting, N public (Bernstein et al.); the
# library's default estimates N from the noisy tables instead.
release_marginals = functools.partial(release_marginals, total="public")


def test_bethe_start_reproduces_tree_marginals():
    dom = Domain(list("ABCD"), [2, 3, 2, 3])
    cliques = (("A", "B"), ("B", "C"), ("C", "D"), ("B", "D"))[:3]
    rng = np.random.default_rng(2)
    truth = MarkovRandomField(dom, cliques, [rng.normal(size=dom.sizes(c)) for c in cliques])
    mu = truth.marginals()
    tables = bethe_start(dom, cliques, mu, [0.0] * len(cliques))
    res = loopy_bp(dom, cliques, tables)
    for c, m in zip(cliques, res.factor_marginals, strict=True):
        np.testing.assert_allclose(m, mu[c], atol=1e-8)


def test_diagonal_scale_is_positive_and_normalised():
    mu = np.array([0.0, 0.01, 0.3, 0.69])
    s = diagonal_scale(mu, np.full(4, 50.0), True, 1e4, 1e-5)
    assert np.all(s > 0) and np.isclose(np.mean(s**2), 1.0)
    assert s[2] > s[1] > s[0]


def test_diagonal_scale_without_priors_is_bounded_below():
    """Without priors an empty cell has no curvature: its scale is held at 1e-4 (a unit
    step in the scaled coordinates moves its potential by 1e4, not by 1e15)."""
    mu = np.array([0.0, 1e-12, 0.3, 0.7])
    s = diagonal_scale(mu, np.full(4, 50.0), True, 1e4, 0.0, 0.0)
    assert np.all(np.isfinite(s)) and np.min(s) == pytest.approx(1e-4)
    assert s[3] > s[2] > s[1] >= s[0]


def test_direct_scale_is_the_unshrunk_curvature():
    """The direct objective's ``h = var^2 / v_n`` against EM's ``var^2 / (var + v_n)``:
    the ratio of the two grows with the cell's variance, as ``(var + v_n) / v_n``."""
    mu, b, total = np.array([0.01, 0.1, 0.3]), np.full(3, 5.0), 1e4
    em = diagonal_scale(mu, b, True, total, 0.0)
    direct = diagonal_scale(mu, b, True, total, 0.0, direct=True)
    var, noise = mu * (1 - mu), 2 * 25.0 / total
    ratio, want = (direct / em) ** 2, (var + noise) / noise  # each up to its normalisation
    np.testing.assert_allclose(ratio / ratio[0], want / want[0], rtol=1e-12)


@pytest.mark.parametrize("inference", ["loopy_bp", "trw_bp"])
def test_loopy_cgm_converges_to_the_exact_fit_on_a_tree(inference):
    """Loopy and tree-reweighted BP are exact on a tree (TRW's counting numbers are 1)."""
    truth = third_order_chain(4, 2, rng=0)
    tree = MarkovRandomField(truth.domain, truth.cliques[:3], truth.log_potentials[:3])
    release = release_marginals(tree.sample(3000, rng=1), tree, budget=PureDP(1.0), rng=2)
    exact = CGMEM().fit(release, tree)
    loopy = CGMEM(inference=inference).fit(release, tree)
    assert loopy.info["converged"]
    assert abs(loopy.info["objective"] - exact.info["objective"]) < 1e-6  # both at tol 1e-5


def _small_grid(n, k):
    names = [f"X{i}" for i in range(n * n)]
    edges = [(r * n + c, r * n + c + 1) for r in range(n) for c in range(n - 1)]
    edges += [(r * n + c, (r + 1) * n + c) for r in range(n - 1) for c in range(n)]
    dom = Domain(names, [k] * (n * n))
    cliques = [(names[a], names[b]) for a, b in edges]
    rng = np.random.default_rng(3)
    return MarkovRandomField(dom, cliques, [rng.normal(size=(k, k)) for _ in cliques])


def test_trw_start_reproduces_grid_marginals():
    grid = _small_grid(3, 3)
    mu = grid.marginals()
    rho = trw_counting_numbers(grid.domain, grid.cliques)
    tables = bethe_start(grid.domain, grid.cliques, mu, [0.0] * len(grid.cliques), rho)
    res = loopy_bp(grid.domain, grid.cliques, tables, counting="trw")
    for c, m in zip(grid.cliques, res.factor_marginals, strict=True):
        np.testing.assert_allclose(m, mu[c], atol=1e-8)


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_trw_cgm_converges_on_a_small_grid():
    grid = _small_grid(4, 3)
    data = grid.sample(20000, rng=1)
    release = release_marginals(data, grid, budget=PureDP(1.0), rng=2)
    fit = CGMEM(inference="trw_bp").fit(release, grid)
    assert fit.info["converged"]
    for t in fit.info["inferred_statistics"].values():
        assert abs(float(t.sum()) - 20000) < 1e-3


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_a_fit_whose_bp_did_not_converge_is_not_reported_converged():
    grid = _small_grid(3, 2)
    release = release_marginals(grid.sample(5000, rng=1), grid, budget=PureDP(1.0), rng=2)
    one_sweep = TRW(repeated=Schedule(0.0, 1e-9, 1, adaptive=True))  # one BP sweep per call
    with pytest.warns(ConvergenceWarning):
        fit = CGMEM(inference=one_sweep, max_iters=20).fit(release, grid)  # else 9 its
    assert not fit.info["converged"]
