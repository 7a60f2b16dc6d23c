"""The Laplace fit as one compiled program over releases: the same answer batched and one by
one, and scipy's L-BFGS-B's MAP to its tolerance."""

from __future__ import annotations

import importlib

import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize

from pgm_dp import Domain, MarkovRandomField
from pgm_dp.bayes import posterior, site_name
from pgm_dp.bayes.batch import marginal_draws
from pgm_dp.bayes.compiled import compiled_functions, posterior_problem
from pgm_dp.bayes.laplace import laplace_fits
from pgm_dp.bayes.model import PRIOR_SCALE, prepare
from pgm_dp.bayes.problem import ExactCovariance, stack
from pgm_dp.privacy import ZCDP, PureDP, release_marginals

fit_module = importlib.import_module("pgm_dp.bayes.fit")

pytestmark = pytest.mark.slow  # each structure's programs compile for ~10-20 s


@pytest.fixture(scope="module")
def releases():
    """Two Laplace and two Gaussian releases of one binary chain on 3 variables
    (8 cells), much noise (the scale mixture matters) and little."""
    dom = Domain(["A", "B", "C"], [2, 2, 2])
    cliques = [("A", "B"), ("B", "C")]
    truth = MarkovRandomField(dom, cliques, [np.array([[1.0, -1.0], [-1.0, 1.0]])] * 2)
    data = truth.sample(800, rng=0)
    lap = [release_marginals(data, truth, budget=PureDP(e), rng=i) for i, e in enumerate([0.2, 5])]
    gau = [
        release_marginals(data, truth, budget=ZCDP(r), mechanism="gaussian", rng=i)
        for i, r in enumerate([0.02, 0.5])
    ]
    return truth, lap, gau


@pytest.mark.parametrize("aware", [True, False])
def test_batched_draws_equal_one_by_one_posteriors(releases, aware):
    """``marginal_draws`` of all releases at once against ``posterior`` per release with
    the same rng: the fits differ only by rounding (stated tolerance 1e-6 on a marginal)."""
    truth, lap, _ = releases
    kw = {"method": "laplace", "num_samples": 200, "noise_aware": aware}
    batched = marginal_draws(lap, truth, rngs=[5, 6], **kw)
    for rel, rng, draws in zip(lap, [5, 6], batched, strict=True):
        idata = posterior(rel, truth, num_chains=1, rng=rng, **kw)
        for c in truth.cliques:
            one = np.asarray(idata.posterior[site_name(c)])[0]
            assert draws[c].shape == one.shape == (200, 2, 2)
            assert np.abs(draws[c] - one).max() < 1e-6


def test_batched_map_is_scipys_to_its_tolerance(releases):
    """The compiled fit's MAP against scipy's L-BFGS-B (the fit it replaced) one release at
    a time, both with scipy's default stopping rule: within 0.01 posterior sd everywhere
    (measured: under 2e-3), and the covariances within 1 %."""
    truth, lap, gau = releases
    for rels in (lap, gau):
        problems = [prepare(r, truth) for r in rels]
        fns = compiled_functions(problems[0], PRIOR_SCALE, ExactCovariance())
        datas = [posterior_problem(p, True, ExactCovariance()) for p in problems]
        x0 = np.stack([fit_module._map_start(fns, data) for data in datas])
        fit = laplace_fits(fns, x0, stack(datas))
        for i, data in enumerate(datas):

            def fun(x, data=data, fns=fns):
                value, grad = fns.value_and_grad(jnp.asarray(x), data)
                return float(value), np.asarray(grad, dtype=np.float64)

            ref = scipy.optimize.minimize(fun, x0[i], jac=True, method="L-BFGS-B").x
            sd = np.sqrt(np.diag(fit.cov[i]))
            assert np.max(np.abs(fit.x[i] - ref) / sd) < 0.01
            ref_cov = np.linalg.inv(np.asarray(fns.hessian(jnp.asarray(ref), data)))
            assert np.allclose(np.diag(fit.cov[i]), np.diag(ref_cov), rtol=0.01)


def test_mixed_noise_kinds_and_bad_rngs(releases):
    """Releases of both kinds in one call are fitted by one program (the kinds are data),
    in the given order; a wrong number of rngs is a ValueError."""
    truth, lap, gau = releases
    mixed = marginal_draws([gau[0], lap[0]], truth, method="laplace", num_samples=50)
    alone = marginal_draws([lap[0]], truth, method="laplace", num_samples=50, rngs=[1])
    assert np.abs(mixed[1][("A", "B")] - alone[0][("A", "B")]).max() < 1e-6
    with pytest.raises(ValueError, match="rngs"):
        marginal_draws(lap, truth, rngs=[0])
    with pytest.raises(ValueError, match="method"):
        marginal_draws(lap, truth, method="gibbs")
