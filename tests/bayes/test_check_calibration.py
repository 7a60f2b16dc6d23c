"""The predictive check's false alarms on well-specified releases and its power against a
model that lacks a dependence of the data (statistical audits over many seeded releases)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats
from arviz_base import from_dict

from pgm_dp import Domain, MarkovRandomField
from pgm_dp.bayes import predictive_check
from pgm_dp.bayes.batch import marginal_draws
from pgm_dp.bayes.labels import posterior_dims
from pgm_dp.bayes.model import site_name
from pgm_dp.privacy import PureDP, release_marginals

DOM = Domain(["A", "B", "C"], [3, 3, 2])
CLIQUES = [("A", "B"), ("B", "C")]
TRUTH = MarkovRandomField(
    DOM, CLIQUES, [np.log([[3, 1, 1], [1, 3, 1], [1, 1, 3]]), np.log([[2, 1], [1, 1], [1, 2]])]
)


def _alarms_allowed(n: int, rate: float = 0.01, risk: float = 0.01) -> int:
    """The largest count of p-values below ``rate`` that ``n`` uniform p-values exceed with
    probability at most ``risk``: more alarms than this say the false-alarm rate is above
    ``rate``."""
    return int(scipy.stats.binom.ppf(1.0 - risk, n, rate))


def _releases(count: int, n: int = 1500, eps: float = 1.0, first: int = 0):
    return [
        release_marginals(TRUTH.sample(n, s).to_numpy(), TRUTH, budget=PureDP(eps), rng=1000 + s)
        for s in range(first, first + count)
    ]


@pytest.mark.slow  # 60 checks of 100 simulated releases each: over a minute
def test_the_true_model_is_flagged_at_the_stated_rate():
    """A fixed model checked against releases it generated: 120 p-values of 60 releases,
    uniform (Kolmogorov-Smirnov p > 0.01) and no more below 0.01 than a 1 % rate allows."""
    ps = np.array(
        [
            p
            for i, rel in enumerate(_releases(60, n=500))
            for p in predictive_check(rel, TRUTH, replicates=100, rng=i).p_values.values()
        ]
    )
    assert np.sum(ps < 0.01) <= _alarms_allowed(ps.size), ps
    # p-values on a grid of 1/100: compare with the uniform up to that grid
    assert scipy.stats.kstest(ps + 0.005, "uniform").pvalue > 0.01


def test_an_independence_model_of_a_correlated_table_is_flagged():
    """Power: the product of the noisy one-way tables (the independence model naive MLE fits)
    against releases of ``A, B`` whose dependence is moderate (Cramér's V about 0.3, the
    truth's) is flagged below 0.01 on the pair in 5 of 5 releases at ε = 1, N = 1500."""
    flags = 0
    for i, rel in enumerate(_releases(5)):
        ab = np.clip(rel.noisy[("A", "B")], 1.0, None)
        marg = [ab.sum(1) / ab.sum(), ab.sum(0) / ab.sum(), np.full(2, 0.5)]
        product = MarkovRandomField(DOM, [("A",), ("B",), ("C",)], [np.log(m) for m in marg])
        flags += predictive_check(rel, product, replicates=100, rng=i).p_values[("A", "B")] < 0.01
    assert flags == 5


def _idata(draws: dict):
    """A posterior DataTree of ``marginal:`` sites from :func:`marginal_draws`' output."""
    post = {site_name(c): d[None] for c, d in draws.items()}
    dims, coords = posterior_dims(DOM, list(draws), list(post))
    return from_dict({"posterior": post}, dims=dims, coords=coords)


@pytest.mark.slow  # 150 Laplace posteriors of a small release: minutes
def test_the_sampled_posterior_p_value_has_at_most_the_stated_false_alarms():
    """Well-specified releases (data from a fixed model with a dependence, both tables
    released at ε = 1, the posterior of the true structure, Laplace method): 300 sampled
    posterior p-values of 150 releases, no more below 0.01 than a 1 % rate allows and
    uniform (Kolmogorov-Smirnov p > 0.01)."""
    releases = _releases(150)
    draws = marginal_draws(releases, TRUTH, method="laplace", num_samples=20)
    ps = np.array(
        [
            p
            for i, (rel, d) in enumerate(zip(releases, draws, strict=True))
            for p in predictive_check(rel, _idata(d), rng=i).p_values.values()
        ]
    )
    assert np.sum(ps < 0.01) <= _alarms_allowed(ps.size), ps
    assert scipy.stats.kstest(ps + 0.005, "uniform").pvalue > 0.01
