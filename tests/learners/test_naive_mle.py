import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pgm_dp import ConvergenceWarning, DomainError, PureDP, release_marginals
from pgm_dp.compare.metrics import kl_divergence
from pgm_dp.learners.naive_mle import NaiveMLE, project_to_simplex
from pgm_dp.models import third_order_chain


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-5, 5), min_size=1, max_size=30))
def test_projection_is_on_simplex_and_closest(values):
    v = np.array(values)
    p = project_to_simplex(v)
    assert p.min() >= 0 and p.sum() == pytest.approx(1.0)
    rng = np.random.default_rng(len(values))
    for q in rng.dirichlet(np.ones(v.size), size=20):  # no simplex point is closer
        assert np.sum((v - p) ** 2) <= np.sum((v - q) ** 2) + 1e-12


def test_naive_mle_recovers_truth_as_noise_vanishes():
    truth = third_order_chain(5, 3, rng=0)
    data = truth.sample(200_000, rng=1)
    release = release_marginals(data, truth, budget=PureDP(1e5), rng=2)
    fit = NaiveMLE(l2=0.0).fit(release, truth)
    assert kl_divergence(truth, fit.model) < 2e-3  # sampling error only: ~ d / (2N)


def test_naive_mle_refuses_mismatched_release():
    truth = third_order_chain(5, 3, rng=0)
    data = truth.sample(100, rng=1)
    release = release_marginals(data, truth.cliques[:3], truth.domain, budget=PureDP(1.0), rng=2)
    with pytest.raises(DomainError):
        NaiveMLE().fit(release, truth)


def test_a_fit_stopped_before_convergence_warns_and_a_converged_one_does_not():
    truth = third_order_chain(4, 3, rng=0)
    release = release_marginals(truth.sample(5000, rng=1), truth, budget=PureDP(1.0), rng=2)
    with pytest.warns(ConvergenceWarning, match="NaiveMLE did not converge"):
        stopped = NaiveMLE(max_iters=2).fit(release, truth)
    assert not stopped.info["converged"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        assert NaiveMLE().fit(release, truth).info["converged"]
