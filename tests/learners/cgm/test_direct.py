"""CGM-EM's direct solver (``solver="direct"``): without priors it reaches EM's optimum, the
maximum of the noise log-likelihood over the marginal polytope."""

import functools

import numpy as np
import pytest

from pgm_dp import ZCDP, Domain, MarkovRandomField, PureDP, release_marginals
from pgm_dp.compare.metrics import kl_divergence
from pgm_dp.learners.cgm import CGMEM
from pgm_dp.learners.naive_mle import project_to_simplex

release_marginals = functools.partial(release_marginals, total="public")
NO_PRIOR = {"prior_precision": 0.0, "pseudo_count": 0.0}
TIGHT = {"tol": 1e-8, "count_tol": 1e-4}


def _tree(seed: int) -> MarkovRandomField:
    gen = np.random.default_rng(seed)
    dom = Domain(["A", "B", "C"], [2, 3, 2])
    tables = [gen.normal(scale=0.5, size=(2, 3)), gen.normal(scale=0.5, size=(3, 2))]
    return MarkovRandomField(dom, cliques=[("A", "B"), ("B", "C")], log_potentials=tables)


def test_direct_and_em_reach_one_optimum_without_priors():
    truth = _tree(0)
    data = truth.sample(20000, rng=1)
    release = release_marginals(data, truth, budget=PureDP(1.0), mechanism="laplace", rng=2)
    direct = CGMEM(solver="direct", **NO_PRIOR, **TIGHT).fit(release, truth)
    em = CGMEM(solver="lbfgs", **NO_PRIOR, **TIGHT).fit(release, truth)
    assert direct.info["converged"] and em.info["converged"]
    assert kl_divergence(direct.model, em.model) < 1e-7
    for c in truth.cliques:  # the models' counts, and EM's E-step there, agree
        direct_n = 20000 * np.asarray(direct.model.marginals()[c])
        np.testing.assert_allclose(direct_n, 20000 * em.model.marginals()[c], atol=0.01)
        np.testing.assert_allclose(direct_n, em.info["inferred_statistics"][c], atol=0.01)


def test_direct_fit_of_one_table_is_the_release_projected_onto_the_simplex():
    # One clique, Gaussian noise, no prior: max_mu log N(y; N mu, s^2) over the simplex is
    # the Euclidean projection of y / N (interior here: every cell well above the noise).
    dom = Domain(["A", "B"], [2, 3])
    truth = MarkovRandomField(dom, cliques=[("A", "B")])
    data = truth.sample(30000, rng=3)
    release = release_marginals(data, truth, budget=ZCDP(1.0), mechanism="gaussian", rng=4)
    fit = CGMEM(solver="direct", **NO_PRIOR, **TIGHT).fit(release, truth)
    assert fit.info["converged"]
    y = np.asarray(release.noisy[("A", "B")], dtype=np.float64)
    expected = project_to_simplex(y / 30000)
    assert expected.min() > 0.1
    np.testing.assert_allclose(fit.model.marginals()[("A", "B")], expected, atol=1e-7)


def test_direct_fit_recovers_the_model_as_the_noise_vanishes():
    truth = _tree(5)
    data = truth.sample(50000, rng=6)
    release = release_marginals(data, truth, budget=PureDP(1000.0), rng=7)
    fit = CGMEM(solver="direct").fit(release, truth)
    assert fit.info["converged"]
    assert kl_divergence(truth, fit.model) < 2e-4


def test_direct_solver_needs_exact_inference():
    truth = _tree(0)
    release = release_marginals(truth.sample(1000, rng=1), truth, budget=PureDP(1.0), rng=2)
    with pytest.raises(ValueError, match="direct"):
        CGMEM(solver="direct", inference="loopy_bp").fit(release, truth)
