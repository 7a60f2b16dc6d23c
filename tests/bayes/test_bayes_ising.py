"""The posterior of PrIsing's beta: the noise laws, the release sampler, coverage, input checks."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate

from pgm_dp.bayes import ScoreReference, prising_posterior, score_reference
from pgm_dp.bayes.ising import PrIsingRelease, noise_log_density, noise_log_survival
from pgm_dp.errors import DataValidationError, DomainError
from pgm_dp.ising import (
    erdos_renyi_graph,
    gibbs_ising,
    prising,
    prising_batch,
    prising_calibration,
    scale_erdos_renyi,
)

N_NODES, P_EDGE = 100, 0.1


@pytest.fixture(scope="module")
def network():
    J = scale_erdos_renyi(erdos_renyi_graph(N_NODES, P_EDGE, rng=0), P_EDGE)
    ref = score_reference(J, betas=np.linspace(0, 2, 21), draws=200, sweeps=100, rng=1)
    return J, ref


@pytest.mark.parametrize("kind", ["gaussian", "laplace"])
def test_noise_convolution_is_a_law_with_its_survival(kind):
    var, scale, x0 = 4.0, 3.0, 1.7

    def density(x):
        return float(jnp.exp(noise_log_density(x, var, kind, scale)))

    assert integrate.quad(density, -np.inf, np.inf)[0] == pytest.approx(1.0, abs=1e-6)
    tail = integrate.quad(density, x0, np.inf)[0]
    assert float(jnp.exp(noise_log_survival(x0, var, kind, scale))) == pytest.approx(tail, 1e-6)
    assert np.isfinite(float(noise_log_survival(300.0, var, kind, scale)))


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_release_sampler_runs_algorithm_1(network):
    J, ref = network
    cal = prising_calibration(J, 20.0, 1e-3)
    sig = gibbs_ising(J, beta=0.8, n_chains=1000, n_sweeps=100, rng=5)
    actual = prising_batch(sig, J, 20.0, 1e-3, rng=6)
    law = PrIsingRelease(jnp.float64(0.8), ref.arrays(), cal.Delta, cal.mechanism, cal.noise_scale)
    sim = np.asarray(law.sample(jax.random.PRNGKey(0), (1000,)))
    assert abs((sim == 0).mean() - (actual == 0).mean()) < 0.06
    assert abs(np.median(sim) - np.median(actual)) < 0.15
    assert float(jnp.exp(law.log_prob(0.0))) == pytest.approx((actual == 0).mean(), abs=0.06)


@pytest.mark.slow  # a calibration audit over 30 releases per setting
@pytest.mark.parametrize(("epsilon", "delta"), [(20.0, 1e-3), (10.0, 0.0)])
def test_central_intervals_cover_beta_drawn_from_the_prior(network, epsilon, delta):
    J, ref = network
    rng = np.random.default_rng(2)
    covered, errors = [], []
    for r in range(30):
        beta = rng.uniform(0, 2)
        sigma = gibbs_ising(J, beta=beta, n_chains=1, n_sweeps=100, rng=rng)[0]
        release = prising(sigma, J, epsilon, delta, rng=rng)
        draws = np.asarray(
            prising_posterior(release, ref, num_samples=250, num_chains=2, rng=r).posterior.beta
        ).ravel()
        lo, hi = np.quantile(draws, [0.1, 0.9])
        covered.append(lo <= beta <= hi)
        errors.append(abs(draws.mean() - beta))
    # 80 % intervals over 30 releases: 24 expected, Binomial sd 2.2
    assert 18 <= sum(covered) <= 30
    assert np.mean(errors) < 0.4  # the prior mean's error is 0.5


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_nuts_gives_an_arviz_datatree(network):
    J, ref = network
    sigma = gibbs_ising(J, beta=1.2, n_chains=1, n_sweeps=100, rng=3)[0]
    release = prising(sigma, J, 20.0, 1e-3, rng=4)
    idata = prising_posterior(
        release, ref, method="nuts", num_warmup=200, num_samples=300, num_chains=2, rng=1
    )
    assert set(idata.children) >= {"posterior", "posterior_predictive", "observed_data"}
    assert idata.posterior.beta.shape == (2, 300)
    assert int(idata.sample_stats.diverging.sum()) == 0
    grid = prising_posterior(release, ref, num_samples=2000, rng=0).posterior.beta
    # same posterior; tolerance about a third of its sd (0.45), NUTS draws are correlated
    assert float(idata.posterior.beta.mean()) == pytest.approx(float(grid.mean()), abs=0.15)


def test_bad_inputs_are_refused(network):
    J, ref = network
    release = prising(np.ones(N_NODES), J, 5.0, 0.0, rng=0)
    with pytest.raises(DataValidationError):
        prising_posterior(0.7, ref)
    small = ScoreReference(ref.betas, ref.fields[:, :, :10], ref.energy)
    with pytest.raises(DomainError):
        prising_posterior(release, small)
    with pytest.raises(DomainError):
        prising_posterior(release, ref, method="mcmc")
    with pytest.raises(DomainError):
        score_reference(J, betas=[0.5, 0.2])
    with pytest.raises(DomainError):
        score_reference(J, draws=1)


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_cli_posterior_and_coverage(tmp_path, capsys):
    import pandas as pd

    from pgm_dp.cli import main

    edges = [(i, (i + d) % 12) for i in range(12) for d in (1, 2)]  # a 4-regular ring
    pd.DataFrame(edges, columns=["source", "target"]).to_csv(tmp_path / "g.csv", index=False)
    signs = [1 if i % 3 else -1 for i in range(12)]
    pd.DataFrame({"node": range(12), "outcome": signs}).to_csv(tmp_path / "o.csv", index=False)
    t = str(tmp_path)
    assert main(["prising", "estimate", "--graph", f"{t}/g.csv", "--outcomes", f"{t}/o.csv",
                 "--epsilon", "50", "--seed", "0", "--out", f"{t}/e.json"]) == 0  # fmt: skip
    argv = ["prising", "posterior", "--graph", f"{t}/g.csv", "--estimate", f"{t}/e.json",
            "--grid", "5", "--draws", "20", "--sweeps", "20", "--out", f"{t}/post.nc"]  # fmt: skip
    assert main(argv) == 0
    assert "posterior of beta: mean" in capsys.readouterr().out
    assert (tmp_path / "post.nc").exists()
    from reproductions._cli import main as reproduce  # the coverage study: a reproduction

    argv = ["chakraborty2024", "coverage", "--n", "30", "--p", "0.3", "--releases", "2",
            "--sweeps", "20", "--out", f"{t}/cov.csv"]  # fmt: skip
    assert reproduce(argv) == 0
    assert "cov90" in capsys.readouterr().out
    assert len(pd.read_csv(tmp_path / "cov.csv")) == 2
