import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import brute_log_z, brute_marginal, random_model

from pgm_dp import Domain, MarkovRandomField, ModelTooLargeError
from pgm_dp.inference.junction_tree import build_junction_tree, elimination_order
from pgm_dp.models import third_order_chain


@pytest.mark.parametrize("seed", range(12))
def test_marginals_and_log_z_equal_brute_force(seed):
    rng = np.random.default_rng(seed)
    mrf = random_model(rng, n_vars=int(rng.integers(2, 7)), n_cliques=int(rng.integers(1, 7)))
    assert abs(float(mrf.log_partition()) - brute_log_z(mrf)) < 1e-10
    for cl, marg in mrf.marginals().items():
        np.testing.assert_allclose(np.asarray(marg), brute_marginal(mrf, cl), atol=1e-10)


def test_loops_and_higher_order_cliques(rng):
    dom = Domain(["A", "B", "C", "D", "E"], [2, 3, 1, 2, 3])
    cliques = [("A", "B"), ("B", "C", "D"), ("D", "E"), ("E", "A"), ("C",), ("A", "D", "E")]
    pots = [rng.normal(size=dom.sizes(c)) * 2 for c in cliques]
    mrf = MarkovRandomField(dom, cliques, pots)
    assert abs(float(mrf.log_partition()) - brute_log_z(mrf)) < 1e-10
    for cl, marg in mrf.marginals().items():
        np.testing.assert_allclose(np.asarray(marg), brute_marginal(mrf, cl), atol=1e-10)


@pytest.mark.parametrize("query", [("A", "C"), ("E", "B"), ("D",), ("C", "E", "A"), ("B", "A")])
def test_marginal_of_any_subset(rng, query):
    dom = Domain(["A", "B", "C", "D", "E"], [2, 3, 2, 2, 3])
    cliques = [("A", "B"), ("B", "C"), ("C", "D"), ("D", "E")]
    mrf = MarkovRandomField(dom, cliques, [rng.normal(size=dom.sizes(c)) for c in cliques])
    got = np.asarray(mrf.marginal(query))
    np.testing.assert_allclose(got, brute_marginal(mrf, query), atol=1e-10)
    assert got.shape == dom.sizes(query)


def test_disconnected_model_and_isolated_variables(rng, message_scaling):
    dom = Domain(["A", "B", "C", "D"], [2, 2, 3, 4])
    mrf = MarkovRandomField(dom, [("A", "B")], [rng.normal(size=(2, 2))])
    assert abs(float(mrf.log_partition()) - brute_log_z(mrf)) < 1e-10
    np.testing.assert_allclose(np.asarray(mrf.marginal(("D",))), np.full(4, 0.25), atol=1e-12)
    np.testing.assert_allclose(
        np.asarray(mrf.marginal(("B", "C"))), brute_marginal(mrf, ("B", "C")), atol=1e-12
    )


def test_gradient_of_log_z_is_the_marginals(rng, message_scaling):
    mrf = random_model(rng, 5, 5)
    assert mrf.junction_tree().edges  # messages are passed
    grads = jax.grad(lambda m: m.log_partition())(mrf)
    for cl, g in zip(mrf.cliques, grads.log_potentials, strict=True):
        np.testing.assert_allclose(np.asarray(g), brute_marginal(mrf, cl), atol=1e-10)


def test_gradient_is_exact_where_the_fast_pass_underflows(message_scaling):
    # Under jax.grad the log-space branch is taken; no NaN may leak from the discarded pass.
    dom = Domain(["A", "B", "C"], [2, 2, 2])
    pots = [np.array([[0.0, -2000.0], [-2000.0, -2000.0]]), np.array([[-2000.0, 0.0], [0.0, 0.0]])]
    mrf = MarkovRandomField(dom, [("A", "B"), ("B", "C")], pots)
    grads = jax.grad(lambda m: m.log_partition())(mrf)
    for cl, g in zip(mrf.cliques, grads.log_potentials, strict=True):
        np.testing.assert_allclose(np.asarray(g), brute_marginal(mrf, cl), atol=1e-10)


def test_large_potentials_are_stable():
    rng = np.random.default_rng(1)
    mrf = random_model(rng, 5, 6, scale=200.0)
    assert abs(float(mrf.log_partition()) - brute_log_z(mrf)) < 1e-8
    for cl, marg in mrf.marginals().items():
        np.testing.assert_allclose(np.asarray(marg), brute_marginal(mrf, cl), atol=1e-10)


def test_too_large_is_refused_before_allocation():
    dom = Domain([f"X{i}" for i in range(8)], [50] * 8)
    cliques = [(f"X{i}", f"X{j}") for i in range(8) for j in range(i + 1, 8)]  # complete graph
    with pytest.raises(ModelTooLargeError, match="max_cells"):
        build_junction_tree(dom, cliques)
    mrf = MarkovRandomField(dom, cliques)  # declaring is fine; exact inference is refused
    with pytest.raises(ModelTooLargeError):
        mrf.marginals()


def test_min_fill_finds_treewidth_of_third_order_chain():
    mrf = third_order_chain(10, 10, rng=0)
    jt = mrf.junction_tree()
    assert max(len(c) for c in jt.cliques) == 4  # treewidth 3
    order, _ = elimination_order(mrf.domain, mrf.cliques)
    assert sorted(order) == sorted(mrf.domain.attributes)


def test_running_intersection_property():
    mrf = third_order_chain(8, 2, rng=0)
    jt = mrf.junction_tree()
    import networkx as nx

    tree = nx.Graph(list(jt.edges))
    for v in mrf.domain.attributes:
        holding = [i for i, c in enumerate(jt.cliques) if v in c]
        assert nx.is_connected(tree.subgraph(holding))


@pytest.fixture(params=["unscaled", "rescaled"])
def message_scaling(request, monkeypatch):
    """Run the probability-space pass in both of its modes: unscaled messages (small
    domains) and messages rescaled to maximum 1 (forced here by a tiny margin)."""
    from pgm_dp.inference import junction_tree, scaled_pass

    if request.param == "rescaled":
        monkeypatch.setattr(scaled_pass, "RESCALE_LOG_CELLS", 0.0)
    junction_tree._compiled_marginals.cache_clear()
    yield request.param
    junction_tree._compiled_marginals.cache_clear()


def test_fast_and_log_space_passes_agree_and_fallback_is_taken(message_scaling):
    from pgm_dp.inference.junction_tree import _compiled_marginals

    rng = np.random.default_rng(3)
    mrf = random_model(rng, 6, 6)
    jt = mrf.junction_tree()
    fast, z_fast, ok = _compiled_marginals(jt, jt.factor_cliques, "fast")(mrf.log_potentials)
    slow, z_slow = _compiled_marginals(jt, jt.factor_cliques, "log")(mrf.log_potentials)
    assert bool(ok) and abs(float(z_fast) - float(z_slow)) < 1e-10
    for a, b in zip(fast, slow, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-12)
    # Two factors that disagree by 2000 nats: the scaled product underflows everywhere, the
    # flag says so, and the public function falls back to the log-space pass.
    dom = Domain(["A", "B"], [2, 2])
    pots = [
        np.array([[0.0, -2000.0], [-2000.0, -2000.0]]),
        np.array([[-2000.0, -2000.0], [-2000.0, 0.0]]),
    ]
    frustrated = MarkovRandomField(dom, [("A", "B"), ("B", "A")], pots)
    jt2 = frustrated.junction_tree()
    *_, ok2 = _compiled_marginals(jt2, jt2.factor_cliques, "fast")(frustrated.log_potentials)
    assert not bool(ok2)
    assert abs(float(frustrated.log_partition()) - brute_log_z(frustrated)) < 1e-9
    for cl, m in frustrated.marginals().items():
        np.testing.assert_allclose(np.asarray(m), brute_marginal(frustrated, cl), atol=1e-10)


@pytest.mark.parametrize("spread", [50.0, 300.0, 3000.0])
def test_fast_pass_is_exact_or_falls_back_on_wide_potentials(message_scaling, spread):
    # Potentials spanning `spread` nats: the fast pass either agrees with the log-space
    # pass or says it cannot be trusted; the public result is exact either way.
    from pgm_dp.inference.junction_tree import _compiled_marginals

    rng = np.random.default_rng(11)
    base = random_model(rng, 6, 7)
    pots = [spread * rng.standard_normal(np.shape(t)) for t in base.log_potentials]
    mrf = MarkovRandomField(base.domain, base.cliques, pots)
    jt = mrf.junction_tree()
    assert jt.edges  # messages are passed
    fast, z_fast, ok = _compiled_marginals(jt, jt.factor_cliques, "fast")(mrf.log_potentials)
    slow, z_slow = _compiled_marginals(jt, jt.factor_cliques, "log")(mrf.log_potentials)
    if spread == 50.0:
        assert bool(ok)  # both modes trust themselves on moderate potentials
    if spread == 3000.0 and message_scaling == "unscaled":
        assert not bool(ok)
    if bool(ok):
        assert abs(float(z_fast) - float(z_slow)) < 1e-9 * max(1.0, abs(float(z_slow)))
        for a, b in zip(fast, slow, strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-12)
    assert abs(float(mrf.log_partition()) - brute_log_z(mrf)) < 1e-9 * max(1, spread)
    for cl, m in mrf.marginals().items():
        np.testing.assert_allclose(np.asarray(m), brute_marginal(mrf, cl), atol=1e-10)


def test_structural_zeros_in_marginals():
    dom = Domain(["A", "B", "C"], [2, 3, 2])
    with np.errstate(divide="ignore"):
        t = np.log(np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 1.0]]))
    mrf = MarkovRandomField(dom, [("A", "B"), ("B", "C")], [t, np.ones((3, 2))])
    for cl, m in mrf.marginals().items():
        np.testing.assert_allclose(np.asarray(m), brute_marginal(mrf, cl), atol=1e-12)


def test_jit_program_runs_at_top_level_and_inside_jit_and_grad():
    from pgm_dp._config import jit_program

    f = jit_program(lambda x, ys: jnp.sum(x * x) + sum(jnp.sum(y) for y in ys))
    x, ys = jnp.arange(3.0), [jnp.ones(2), jnp.ones(3)]
    assert float(f(x, ys)) == pytest.approx(10.0)
    assert float(jax.jit(f)(x, ys)) == pytest.approx(10.0)
    np.testing.assert_allclose(jax.grad(f)(x, ys), 2 * x)


def test_fast_pass_never_forms_a_clique_table_it_can_factor_away():
    """On the third-order chain (cliques of 10^4 cells, pairwise factors) every message and
    read is contracted factor by factor: no intermediate reaches the size of a clique."""
    from pgm_dp.inference.scaled_pass import scaled_pass

    mrf = third_order_chain(10, 10, rng=0)
    jt = build_junction_tree(mrf.domain, mrf.cliques)
    assert max(mrf.domain.size(c) for c in jt.cliques) == 10**4
    pots = tuple(mrf.log_potentials)
    jaxpr = jax.make_jaxpr(lambda p: scaled_pass(jt, jt.factor_cliques, p))(pots).jaxpr
    biggest = max(math.prod(v.aval.shape) for eqn in jaxpr.eqns for v in eqn.outvars)
    assert biggest < 10**4
