"""The MLE solver as one compiled program: same optimum as a scipy-driven L-BFGS-B, no
recompilation for new data of one structure, and ``fit_many`` equal to fits one by one."""

import jax
import numpy as np
import pytest
import scipy.optimize
from conftest import random_model

from pgm_dp.learners import NaiveMLE
from pgm_dp.learners.mle import _value_and_grad, fit_many, fit_marginals
from pgm_dp.learners.naive_mle import noisy_pseudo_marginals
from pgm_dp.models import third_order_chain
from pgm_dp.privacy import PureDP, release_marginals
from pgm_dp.tables import flatten_tables, unflatten_tables


def scipy_reference(mrf, targets, l2, tol=1e-10):
    """The solver this package used before: scipy's L-BFGS-B on the same objective."""
    shapes = tuple(mrf.domain.sizes(c) for c in mrf.cliques)
    fn = jax.jit(_value_and_grad(mrf.junction_tree(), shapes))
    target = flatten_tables([targets[c] for c in mrf.cliques])

    def value_and_grad(x):
        value, grad = fn(x, target, l2)
        return float(value), np.asarray(grad)

    res = scipy.optimize.minimize(
        value_and_grad,
        np.zeros(target.size),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 5000, "gtol": tol, "ftol": 0.0, "maxcor": 20},
    )
    return mrf.replace(unflatten_tables(res.x, shapes)), float(res.fun)


def noisy_targets(truth, eps, seed):
    data = truth.sample(3000, rng=seed)
    release = release_marginals(data, truth, budget=PureDP(eps), rng=seed + 1)
    return noisy_pseudo_marginals(release, project=True)


@pytest.mark.parametrize(
    "case",
    [
        lambda: (random_model(np.random.default_rng(3), 4, 3), None),
        lambda: (third_order_chain(5, 3, rng=0), 1.0),
        lambda: (third_order_chain(4, 2, rng=1), 0.1),
    ],
)
def test_compiled_fit_equals_the_scipy_reference(case):
    truth, eps = case()
    targets = truth.marginals() if eps is None else noisy_targets(truth, eps, 5)
    structure = truth.replace(None)
    ref, ref_value = scipy_reference(structure, targets, l2=1e-4)
    fit = fit_marginals(structure, targets, l2=1e-4, tol=1e-8)
    assert fit.converged and fit.max_gradient <= 1e-8
    assert fit.objective == pytest.approx(ref_value, rel=1e-12, abs=1e-12)
    # both stop with max |grad| <= 1e-8 on a 2e-4-strongly convex objective: potentials
    # within 1e-8 / 2e-4 of the optimum; the marginals (the gradient minus the L2 term) of
    # the two within a few 1e-8, more where XLA's summation order differs between runs
    np.testing.assert_allclose(
        flatten_tables(fit.model.log_potentials), flatten_tables(ref.log_potentials), atol=1e-4
    )
    for c, m in fit.model.marginals().items():
        np.testing.assert_allclose(np.asarray(m), np.asarray(ref.marginal(c)), atol=1e-7)


def test_a_second_fit_of_one_structure_compiles_nothing():
    truth = third_order_chain(4, 3, rng=4)
    first, second = noisy_targets(truth, 1.0, 7), noisy_targets(truth, 0.5, 9)
    fit_marginals(truth.replace(None), first, l2=1e-4)
    compiled = []

    def listener(event, duration, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            compiled.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        fit = fit_marginals(truth.replace(None), second, l2=1e-4, tol=1e-7, max_iters=900)
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert fit.converged
    assert compiled == []


def test_fit_many_equals_the_fits_one_by_one():
    truth = third_order_chain(4, 3, rng=2)
    sets = [noisy_targets(truth, eps, seed) for eps, seed in [(0.3, 1), (1.0, 3), (3.0, 5)]]
    structure = truth.replace(None)
    many = fit_many(structure, sets, l2=1e-4, tol=1e-8)
    assert len(many) == 3
    for targets, batch in zip(sets, many, strict=True):
        one = fit_marginals(structure, targets, l2=1e-4, tol=1e-8)
        assert batch.converged and one.converged
        assert batch.objective == pytest.approx(one.objective, rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(
            flatten_tables(batch.model.log_potentials),
            flatten_tables(one.model.log_potentials),
            atol=1e-4,  # rounding differs in the batch: same bound as the scipy reference
        )
        for c, m in batch.model.marginals().items():
            np.testing.assert_allclose(np.asarray(m), np.asarray(one.model.marginal(c)), atol=2e-8)
    assert fit_many(structure, [], l2=1e-4) == []


def test_naive_mle_fit_many_equals_its_fits_one_by_one():
    truth = third_order_chain(4, 2, rng=6)
    data = truth.sample(2000, rng=1)
    releases = [
        release_marginals(data, truth, budget=PureDP(eps), rng=seed)
        for eps, seed in [(0.5, 2), (1.0, 3), (2.0, 4), (1.0, 5)]
    ]
    learner = NaiveMLE()
    fits = learner.fit_many(releases, truth)
    assert len(fits) == 4
    for release, batch in zip(releases, fits, strict=True):
        one = learner.fit(release, truth)
        assert batch.info["converged"] and batch.info["budget"] == release.budget
        for c, m in batch.model.marginals().items():
            np.testing.assert_allclose(np.asarray(m), np.asarray(one.model.marginal(c)), atol=2e-8)
