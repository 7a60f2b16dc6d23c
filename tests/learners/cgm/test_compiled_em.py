"""CGM-EM's L-BFGS loop as one compiled program: its traced gauge projection is the NumPy
one, and a second fit of one structure compiles nothing."""

import jax
import numpy as np
import pytest

from pgm_dp import Domain
from pgm_dp.learners.cgm import CGMEM
from pgm_dp.learners.cgm.compiled import traced_gauge_projector
from pgm_dp.models import third_order_chain
from pgm_dp.models.gauge import gauge_projector
from pgm_dp.privacy import PureDP, release_marginals


@pytest.mark.parametrize("k", [2, 3])
def test_traced_gauge_projection_is_the_numpy_one(k):
    truth = third_order_chain(5, k, rng=0)
    size = sum(truth.domain.size(c) for c in truth.cliques)
    x = np.random.default_rng(k).normal(size=size)
    numpy_p = gauge_projector(truth.domain, truth.cliques)(x)
    traced = jax.jit(traced_gauge_projector(truth.domain, truth.cliques))
    np.testing.assert_allclose(np.asarray(traced(x)), numpy_p, atol=1e-13)
    np.testing.assert_allclose(np.asarray(traced(numpy_p)), numpy_p, atol=1e-13)  # idempotent


@pytest.mark.parametrize(
    "cliques",
    [
        [("A", "B", "C"), ("C", "B", "D"), ("A",), ("D", "A")],  # pairs and nested tables
        [("A",), ("B",)],  # nothing shared: the table means alone
    ],
)
def test_traced_gauge_projection_on_mixed_and_unshared_cliques(cliques):
    domain = Domain(list("ABCD"), [2, 3, 4, 2])
    size = sum(domain.size(c) for c in cliques)
    x = np.random.default_rng(0).normal(size=size)
    numpy_p = gauge_projector(domain, tuple(cliques))(x)
    traced = jax.jit(traced_gauge_projector(domain, tuple(cliques)))
    np.testing.assert_allclose(np.asarray(traced(x)), numpy_p, atol=1e-13)


@pytest.mark.slow
def test_a_second_cgm_fit_of_one_structure_compiles_nothing():
    truth = third_order_chain(4, 2, rng=3)
    data = truth.sample(3000, rng=1)
    first = release_marginals(data, truth, budget=PureDP(1.0), rng=2)
    second = release_marginals(data, truth, budget=PureDP(0.3), rng=4)
    CGMEM(estep="nlbp").fit(first, truth)
    compiled = []

    def listener(event, duration, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            compiled.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        fit = CGMEM(estep="nlbp").fit(second, truth)
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert fit.info["converged"]
    assert compiled == []
