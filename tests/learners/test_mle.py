import numpy as np
import pytest
from conftest import random_model

from pgm_dp import DomainError
from pgm_dp.compare.metrics import kl_divergence
from pgm_dp.learners.mle import fit_marginals
from pgm_dp.models import third_order_chain


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_recovers_model_from_its_exact_marginals(rng):
    truth = random_model(rng, 5, 5)
    fit = fit_marginals(truth.replace(None), truth.marginals(), tol=1e-8)
    assert fit.converged
    assert kl_divergence(truth, fit.model) < 1e-12
    for cl, m in fit.model.marginals().items():
        np.testing.assert_allclose(np.asarray(m), np.asarray(truth.marginal(cl)), atol=1e-8)


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_chain_moment_matching():
    truth = third_order_chain(6, 4, rng=2)
    fit = fit_marginals(truth.replace(None), truth.marginals(), tol=1e-8)
    assert fit.converged and fit.max_gradient <= 1e-8
    assert kl_divergence(truth, fit.model) < 1e-10


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_l2_shrinks_towards_uniform(rng):
    truth = random_model(rng, 4, 3, scale=2.0)
    weak = fit_marginals(truth.replace(None), truth.marginals(), l2=1e-6)
    strong = fit_marginals(truth.replace(None), truth.marginals(), l2=10.0)
    uniform = truth.replace(None)
    assert kl_divergence(strong.model, uniform) < kl_divergence(weak.model, uniform)


def test_refuses_mismatched_marginals():
    truth = third_order_chain(4, 2, rng=0)
    margs = truth.marginals()
    del margs[truth.cliques[0]]
    with pytest.raises(DomainError, match="do not match"):
        fit_marginals(truth, margs)
    bad = truth.marginals()
    bad[truth.cliques[0]] = np.ones((3, 3))
    with pytest.raises(DomainError, match="shape"):
        fit_marginals(truth, bad)
    with pytest.raises(ValueError):
        fit_marginals(truth, truth.marginals(), l2=-1.0)
