"""NUTS's pilot: the rescaled whitening, the pilot's input check, and the posterior with a
pilot against the one without."""

from __future__ import annotations

import numpy as np
import pytest

from pgm_dp import Domain, MarkovRandomField
from pgm_dp.bayes import posterior
from pgm_dp.bayes.nuts import MAX_RESCALE, rescaled_covariance
from pgm_dp.privacy import PureDP, release_marginals


def test_rescaled_covariance_widens_marginals_and_keeps_correlations():
    """With ``B = I``: each variance becomes the pilot's where wider (clipped at
    MAX_RESCALE^2 times), never narrower, and the correlations are the Laplace ones."""
    cov = np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 0.2], [0.0, 0.2, 4.0]])
    draws = np.random.default_rng(0).normal(size=(200_000, 3)) * np.array([3.0, 0.5, 1e3])
    out = rescaled_covariance(cov, np.eye(3), draws)
    sd = np.sqrt(np.diag(out))
    assert np.allclose(sd, [3.0, 1.0, 2.0 * MAX_RESCALE], rtol=0.01)
    assert np.allclose(out / np.outer(sd, sd), cov / np.sqrt(np.outer(np.diag(cov), np.diag(cov))))


def test_bad_pilot_is_a_value_error():
    dom = Domain(["A", "B"], [2, 2])
    mrf = MarkovRandomField(dom, [("A", "B")])
    rel = release_marginals(mrf.sample(100, rng=0), mrf, budget=PureDP(1.0), rng=1)
    for bad in (-1, 1.5, "yes", True):
        with pytest.raises(ValueError, match="pilot"):
            posterior(rel, mrf, pilot=bad)


@pytest.mark.slow  # three NUTS compilations
def test_pilot_keeps_the_posterior():
    """The pilot changes NUTS's metric, not its target: on a 3-clique chain (12 cells) the
    posterior means with and without a pilot agree within 0.2 posterior sd, sds within
    15 %, with no divergences."""
    dom = Domain(["A", "B", "C", "D"], [2, 2, 2, 2])
    strong = np.array([[1.5, -1.5], [-1.5, 1.5]])
    truth = MarkovRandomField(dom, [("A", "B"), ("B", "C"), ("C", "D")], [strong] * 3)
    rel = release_marginals(truth.sample(2000, rng=0), truth, budget=PureDP(0.5), rng=1)
    kw = {"num_warmup": 200, "num_samples": 1000, "num_chains": 2, "rng": 3}
    plain = posterior(rel, truth, **kw).posterior
    piloted = posterior(rel, truth, pilot=100, **kw)
    assert int(piloted.sample_stats.diverging.sum()) == 0
    for c in truth.cliques:
        name = f"marginal:{c[0]},{c[1]}"
        a, b = plain[name], piloted.posterior[name]
        sd = a.std(("chain", "draw"))
        gap = np.abs(a.mean(("chain", "draw")) - b.mean(("chain", "draw"))) / sd
        assert float(gap.max()) < 0.2
        assert float(np.abs(b.std(("chain", "draw")) / sd - 1).max()) < 0.15
