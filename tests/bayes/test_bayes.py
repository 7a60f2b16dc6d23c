"""The noise-aware posterior: exactness on a tiny model, PPC, learner, input checks."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from scipy.stats import binom

from pgm_dp import Domain, MarkovRandomField
from pgm_dp.bayes import PRIOR_SCALE, posterior, posterior_marginals
from pgm_dp.bayes.checks import predictive_check
from pgm_dp.bayes.compiled import compiled_functions, posterior_problem
from pgm_dp.bayes.model import prepare
from pgm_dp.bayes.problem import ExactCovariance
from pgm_dp.learners import get
from pgm_dp.privacy import ZCDP, PureDP, release_marginals


def _exact_posterior_mean_sd(y, n_total, b):
    """Exact posterior of mu_1 for one binary variable: delta = theta_1 - theta_0 ~
    N(0, 2 s^2), n ~ Binomial(N, sigmoid(delta)), y = (N - n, n) + Laplace(b) (grid)."""
    delta = np.linspace(-8, 8, 4001)
    mu = 1 / (1 + np.exp(-delta))
    n = np.arange(n_total + 1)
    noise = -(np.abs(y[0] - (n_total - n)) + np.abs(y[1] - n)) / b
    lik = np.exp(noise - noise.max()) @ binom.pmf(n[:, None], n_total, mu[None, :])
    w = lik * np.exp(-(delta**2) / (4 * PRIOR_SCALE**2))
    w /= w.sum()
    mean = float(w @ mu)
    return mean, float(np.sqrt(w @ (mu - mean) ** 2))


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_clt_and_scale_mixture_match_exact_enumeration():
    dom = Domain(["A"], [2])
    mrf = MarkovRandomField(dom, [("A",)], [np.array([0.0, 0.7])])
    data = mrf.sample(60, rng=3)
    rel = release_marginals(data, mrf, budget=PureDP(0.5), rng=4)  # Laplace, b = 2
    idata = posterior(rel, mrf, num_warmup=300, num_samples=1000, num_chains=2, rng=1)
    draws = np.asarray(idata.posterior["marginal:A"])[..., 1].ravel()
    mean, sd = _exact_posterior_mean_sd(np.asarray(rel.noisy[("A",)]), 60, 2.0)
    # stated tolerances: mean within 0.25 posterior sd, sd within 15 %
    assert abs(draws.mean() - mean) < 0.25 * sd
    assert abs(draws.std() / sd - 1) < 0.15
    assert int(idata.sample_stats.diverging.sum()) == 0
    assert {"posterior", "posterior_predictive", "observed_data", "sample_stats"} <= set(
        idata.children
    )


@pytest.fixture(scope="module")
def chain():
    dom = Domain(["A", "B", "C", "D"], [2, 2, 2, 2])
    strong = np.array([[1.5, -1.5], [-1.5, 1.5]])
    cliques = [("A", "B"), ("B", "C"), ("C", "D")]
    truth = MarkovRandomField(dom, cliques, [strong] * 3)
    rel = release_marginals(truth.sample(2000, rng=0), truth, budget=PureDP(2.0), rng=1)
    return truth, rel


def test_ppc_flags_missing_edge_and_passes_truth(chain):
    truth, rel = chain
    missing = MarkovRandomField(
        truth.domain,
        [("A", "B"), ("C", "D")],
        [truth.log_potentials[0], truth.log_potentials[2]],
    )
    good = predictive_check(rel, truth, replicates=60, rng=5)
    bad = predictive_check(rel, missing, replicates=60, rng=5)
    assert good.min_p > 0.05
    assert bad.p_values[("B", "C")] == 0.0


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_bayes_learner_and_posterior_ppc(chain):
    truth, rel = chain
    fit = get("bayes").make(num_samples=300).fit(rel, truth)
    for c in truth.cliques:
        assert np.abs(np.asarray(fit.model.marginal(c)) - truth.marginal(c)).max() < 0.05
    idata = fit.info["idata"]
    assert "marginal:B,C" in idata.posterior
    assert predictive_check(rel, idata, rng=0).min_p > 0.01


def test_bad_input_is_a_value_error(chain):
    truth, rel = chain
    with pytest.raises(ValueError, match="method"):
        posterior(rel, truth, method="gibbs")
    with pytest.raises(ValueError, match="num_chains"):
        posterior(rel, truth, num_chains=0)
    with pytest.raises(ValueError, match="num_warmup"):
        posterior(rel, truth, num_warmup=-1)
    with pytest.raises(ValueError, match="laplace_noise"):
        posterior(rel, truth, laplace_noise="mixture")
    other = MarkovRandomField(truth.domain, [("A", "B")])
    with pytest.raises(ValueError):
        posterior(rel, other)


def test_one_program_serves_every_release_kind(chain):
    """The noise kinds are data of the compiled programs: a Gaussian release, the naive
    model and a Laplace release of one structure share them (nothing compiles again), and
    ``noise_var`` keeps the Laplace cells only (no such site for a Gaussian release)."""
    truth, rel = chain
    data = truth.sample(2000, rng=0)
    gau = release_marginals(data, truth, budget=ZCDP(2.0), mechanism="gaussian", rng=1)
    bundles, trees = [], []
    for r, aware in ((rel, True), (gau, True), (rel, False)):
        problem = prepare(r, truth)
        bundles.append(compiled_functions(problem, PRIOR_SCALE, ExactCovariance()))
        data = posterior_problem(problem, aware, ExactCovariance())
        trees.append(jax.tree.map(lambda a: (a.shape, a.dtype), data))
    assert bundles[0] is bundles[1] is bundles[2]
    assert trees[0] == trees[1] == trees[2]  # the same arguments: nothing traces again
    kw = {"method": "laplace", "num_samples": 50, "num_chains": 1, "covariance": "exact"}
    assert posterior(rel, truth, **kw).posterior["noise_var"].shape == (1, 50, 12)
    assert "noise_var" not in posterior(gau, truth, **kw).posterior


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_plugin_covariance_agrees_with_exact(chain):
    """The plug-in path (Gauss-Newton-whitened MAP, frozen Sigma) against the exact one on a
    model small enough for both: posterior means within 0.01, sds within 25 %."""
    truth, rel = chain
    kw = {"method": "laplace", "num_samples": 2000, "num_chains": 1, "rng": 2}
    exact = posterior(rel, truth, covariance="exact", **kw).posterior
    plug = posterior(rel, truth, covariance="plugin", **kw).posterior
    assert plug.attrs["covariance"] == "plugin"
    for c in truth.cliques:
        a, b = exact[f"marginal:{c[0]},{c[1]}"], plug[f"marginal:{c[0]},{c[1]}"]
        assert float(np.abs(a.mean(("chain", "draw")) - b.mean(("chain", "draw"))).max()) < 0.01
        ratio = b.std(("chain", "draw")) / a.std(("chain", "draw"))
        assert float(np.abs(ratio - 1).max()) < 0.25


@pytest.mark.slow  # two NUTS runs of 1000 draws: an audit of the latent-count path
def test_plugin_latent_counts_keep_laplace_noise_exact(chain):
    """The plug-in path with Laplace noise (latent counts, the exact Laplace density) against
    the exact path (the scale mixture), NUTS on both, on a release where the noise matters
    (b = 15): means within 0.25 posterior sd, sds within 15 %."""
    truth, _ = chain
    rel = release_marginals(truth.sample(2000, rng=0), truth, budget=PureDP(0.2), rng=1)
    kw = {"num_warmup": 300, "num_samples": 1000, "num_chains": 2, "rng": 2}
    exact = posterior(rel, truth, covariance="exact", **kw).posterior
    plug = posterior(rel, truth, covariance="plugin", laplace_noise="exact", **kw)
    assert "count_deviation" in plug.posterior and int(plug.sample_stats.diverging.sum()) == 0
    for c in truth.cliques:
        name = f"marginal:{c[0]},{c[1]}"
        a, b = exact[name], plug.posterior[name]
        sd = a.std(("chain", "draw"))
        gap = np.abs(a.mean(("chain", "draw")) - b.mean(("chain", "draw"))) / sd
        assert float(gap.max()) < 0.25
        assert float(np.abs(b.std(("chain", "draw")) / sd - 1).max()) < 0.15


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_frozen_gaussian_matches_multivariate_normal_and_its_gradients():
    """``FrozenGaussian`` (precision, one-read custom JVP) against NumPyro's
    ``MultivariateNormal``: log density, gradient and Hessian in the location."""
    import jax
    import jax.numpy as jnp
    import numpyro.distributions as dist

    from pgm_dp.bayes.model import FrozenGaussian

    rng = np.random.default_rng(3)
    a = rng.normal(size=(5, 5))
    cov = a @ a.T + 5 * np.eye(5)
    chol = np.linalg.cholesky(cov)
    value = rng.normal(size=5)

    def ours(loc):
        return FrozenGaussian(loc, jnp.asarray(chol), jnp.asarray(np.linalg.inv(cov))).log_prob(
            value
        )

    def ref(loc):
        return dist.MultivariateNormal(loc, scale_tril=jnp.asarray(chol)).log_prob(value)

    loc = jnp.asarray(rng.normal(size=5))
    np.testing.assert_allclose(ours(loc), ref(loc), rtol=1e-10)
    np.testing.assert_allclose(jax.grad(ours)(loc), jax.grad(ref)(loc), rtol=1e-8)
    np.testing.assert_allclose(jax.hessian(ours)(loc), jax.hessian(ref)(loc), rtol=1e-8)
    batch = jnp.stack([loc, 2 * loc])
    np.testing.assert_allclose(jax.vmap(ours)(batch), jax.vmap(ref)(batch), rtol=1e-10)
    # NUTS's float32 matrices (large models): same value and gradient to float32's precision
    prec32 = jnp.asarray(np.linalg.inv(cov), dtype=jnp.float32)

    def low(loc):
        return FrozenGaussian(loc, jnp.asarray(chol), prec32).log_prob(value)

    assert low(loc).dtype == jnp.float64
    np.testing.assert_allclose(low(loc), ref(loc), rtol=1e-6)
    np.testing.assert_allclose(jax.grad(low)(loc), jax.grad(ref)(loc), rtol=1e-5)


def test_gauge_split_spans_exactly_the_directions_that_change_no_marginal():
    """``gauge_split``: ``[B, G]`` is orthonormal and complete, moving ``theta`` along ``G``
    leaves every marginal unchanged, along ``B`` it does not; latent coordinates stay in ``B``.
    (NUTS samples ``B``'s coordinates; the gauge gets the prior exactly.)"""
    from pgm_dp.bayes.model import plugin_covariance, prepare
    from pgm_dp.bayes.nuts import gauge_split, sigma_eigen

    dom = Domain(["A", "B", "C"], [2, 3, 2])
    rng = np.random.default_rng(0)
    mrf = MarkovRandomField(
        dom, [("A", "B"), ("B", "C")], [rng.normal(size=(2, 3)), rng.normal(size=(3, 2))]
    )
    rel = release_marginals(mrf.sample(500, rng=1), mrf, budget=PureDP(1.0), rng=2)
    problem = prepare(rel, mrf)
    theta = np.concatenate([np.ravel(t) for t in mrf.log_potentials])
    basis, gauge = gauge_split(sigma_eigen(plugin_covariance(problem, theta)), problem.size + 3)
    full = np.hstack([basis, gauge])
    np.testing.assert_allclose(full.T @ full, np.eye(problem.size + 3), atol=1e-10)
    # 12 cells; the indicators span 6 + 6 - 3 (functions of B in both) = 9 dimensions, one
    # of them the constant: 8 identifiable directions and 4 gauge directions
    assert gauge.shape[1] == 4 and np.all(gauge[problem.size :] == 0)

    def marginals(t):
        at, tables = 0, []
        for c in mrf.cliques:
            size = math.prod(dom.sizes(c))
            tables.append(t[at : at + size].reshape(dom.sizes(c)))
            at += size
        model = MarkovRandomField(dom, mrf.cliques, tables)
        return np.concatenate([np.ravel(model.marginal(c)) for c in mrf.cliques])

    moved = theta + 2.0 * gauge[: problem.size] @ np.ones(gauge.shape[1])
    np.testing.assert_allclose(marginals(moved), marginals(theta), atol=1e-10)
    assert np.abs(marginals(theta + basis[: problem.size, 0]) - marginals(theta)).max() > 1e-3


def test_plugin_covariance_is_gauge_invariant_at_large_potentials():
    """``Sigma(theta)`` does not depend on the gauge, also far along it, where the
    probability-space pass overflows (its derivative there was silently zero)."""
    from pgm_dp.bayes.model import plugin_covariance, prepare

    dom = Domain(["A", "B", "C"], [3, 3, 3])
    rng = np.random.default_rng(1)
    tables = [rng.normal(size=(3, 3)), rng.normal(size=(3, 3))]
    mrf = MarkovRandomField(dom, [("A", "B"), ("B", "C")], tables)
    rel = release_marginals(mrf.sample(200, rng=1), mrf, budget=PureDP(1.0), rng=2)
    problem = prepare(rel, mrf)
    theta = np.concatenate([np.ravel(t) for t in tables])
    f = np.array([0.0, 800.0, -800.0])  # + f(B) on A,B and - f(B) on B,C: a gauge direction
    shift = np.concatenate([np.tile(f, 3), np.repeat(-f, 3)])
    reference = plugin_covariance(problem, theta)
    assert np.abs(reference).max() > 0.1
    np.testing.assert_allclose(plugin_covariance(problem, theta + shift), reference, atol=1e-8)


@pytest.mark.slow  # NUTS compiles for ~25 s
def test_posterior_speaks_the_domain_labels_and_fits_a_subset_of_a_wide_domain():
    """Named dims and coords from the domain's labels (codes where a variable has none), and
    a release over two variables of a domain of 2 * 3 * 20^3 = 48000 joint states: the exact
    covariance enumerates only the 6 states of the variables the release touches."""
    import arviz_stats

    labels = {"A": ["no", "yes"], "B": ["lo", "mid", "hi"]}
    dom = Domain(["A", "B", "W1", "W2", "W3"], [2, 3, 20, 20, 20], labels=labels)
    truth = MarkovRandomField(dom, [("A", "B"), ("B",)])
    rel = release_marginals(truth.sample(400, rng=0), truth, budget=PureDP(1.0), rng=1)
    idata = posterior(rel, truth, method="laplace", num_samples=200, num_chains=2, rng=0)
    post = idata.posterior
    assert post.attrs["covariance"] == "exact"
    assert post["marginal:A,B"].dims == ("chain", "draw", "A", "B")
    assert list(post["marginal:B"].dims) == ["chain", "draw", "B"]
    assert list(post.coords["A"].values) == ["no", "yes"]
    assert list(post.coords["B"].values) == ["lo", "mid", "hi"]
    assert list(post.coords["cell"].values[:2]) == ["A=no,B=lo", "A=no,B=mid"]
    assert idata.posterior_predictive["y"].dims == ("chain", "draw", "cell")
    table = arviz_stats.summary(idata, var_names=["marginal:A,B"])
    assert "marginal:A,B[yes, hi]" in table.index
    cell = float(post["marginal:A,B"].sel(A="yes", B="hi").mean())
    assert cell == pytest.approx(float(table.loc["marginal:A,B[yes, hi]", "mean"]), abs=0.01)
    means = posterior_marginals(idata, truth)
    assert means[("A", "B")].shape == (2, 3)
    assert means[("B",)] == pytest.approx(means[("A", "B")].sum(0), abs=0.02)
