"""CGM-EM's Gaussian prior spread over large tables (``CGMEM.prior_cells``)."""

import numpy as np
import pytest
from scipy.special import polygamma

from pgm_dp import Domain, MarkovRandomField, PureDP
from pgm_dp.learners.cgm import CGMEM
from pgm_dp.learners.cgm.em import DEFAULT_PRIOR_PRECISION, MIN_SPREAD_PRECISION
from pgm_dp.privacy import release_marginals


def test_small_tables_keep_the_dirichlet_1_prior_large_ones_spread_it():
    dom = Domain(list("ABC"), [10, 10, 40])
    mrf = MarkovRandomField(dom, [("A", "B"), ("B", "C"), ("A",)])
    taus = CGMEM().prior_precisions(mrf)
    assert taus.shape == (100 + 400 + 10,)
    np.testing.assert_allclose(taus[:100], DEFAULT_PRIOR_PRECISION)  # the papers' k = 10
    np.testing.assert_allclose(taus[500:], DEFAULT_PRIOR_PRECISION)
    # 400 cells: Dirichlet(1/4) entries, log-variance psi'(1/4)
    want = DEFAULT_PRIOR_PRECISION * polygamma(1, 1.0) / polygamma(1, 0.25)
    np.testing.assert_allclose(taus[100:500], want)
    assert MIN_SPREAD_PRECISION < want < DEFAULT_PRIOR_PRECISION
    np.testing.assert_allclose(
        CGMEM(prior_cells=None).prior_precisions(mrf), DEFAULT_PRIOR_PRECISION
    )
    big = MarkovRandomField(Domain(["A", "B"], [100, 100]), [("A", "B")])
    np.testing.assert_allclose(CGMEM().prior_precisions(big), MIN_SPREAD_PRECISION)
    # a smaller prior_precision is its own floor
    np.testing.assert_allclose(CGMEM(prior_precision=1e-3).prior_precisions(big), 1e-3)


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), "100"])
def test_bad_prior_cells_are_refused_before_the_fit(bad):
    dom = Domain(["A", "B"], [2, 2])
    mrf = MarkovRandomField(dom, [("A", "B")])
    release = release_marginals(np.zeros((10, 2), dtype=int), mrf, budget=PureDP(1.0), rng=0)
    with pytest.raises(ValueError, match="prior_cells"):
        CGMEM(prior_cells=bad).fit(release, mrf)


@pytest.mark.slow
def test_the_spread_prior_leaves_a_sparse_tables_empty_cells_nearly_empty():
    """A 30 x 30 table whose records lie on 60 cells: the Dirichlet(1) prior on every cell
    fills the 840 empty ones with the mass it pulls up; spread, they stay nearly empty."""
    dom = Domain(["A", "B"], [30, 30])
    g = np.random.default_rng(0)
    a = g.integers(0, 30, size=5000)
    data = np.stack([a, (a + g.integers(0, 2, size=a.size)) % 30], axis=1)
    mrf = MarkovRandomField(dom, [("A", "B")])
    release = release_marginals(data, mrf, budget=PureDP(0.5), rng=1, total="public")
    support = np.zeros((30, 30), dtype=bool)
    support[data[:, 0], data[:, 1]] = True

    def empty_mass(learner):
        fit = learner.fit(release, mrf)
        assert fit.info["converged"]
        return float(np.asarray(fit.model.marginal(("A", "B")))[~support].sum())

    spread, uniform = empty_mass(CGMEM()), empty_mass(CGMEM(prior_cells=None))
    assert spread < 0.5 * uniform, (spread, uniform)


@pytest.mark.slow
def test_models_of_tables_up_to_100_cells_fit_exactly_as_before():
    """The papers' models (pairs of k <= 10 states) keep the Dirichlet(1) prior: the fit is
    the one with ``prior_cells=None``."""
    from pgm_dp.models import third_order_chain

    truth = third_order_chain(4, 10, rng=0)
    release = release_marginals(truth.sample(3000, rng=1), truth, budget=PureDP(1.0), rng=2)
    new, old = CGMEM().fit(release, truth), CGMEM(prior_cells=None).fit(release, truth)
    assert new.info["iterations"] == old.info["iterations"]
    for a, b in zip(new.model.log_potentials, old.model.log_potentials, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
