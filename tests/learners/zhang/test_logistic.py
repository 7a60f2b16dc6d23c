"""Private Ising learning by per-node logistic regression with output perturbation
(Chaudhuri, Monteleoni & Sarwate 2011): noise scale, sensitivity bound, recovery, refusals."""

import math

import numpy as np
import pytest

from pgm_dp.compare.graphs import budget_for
from pgm_dp.errors import DataValidationError, PrivacyParameterError
from pgm_dp.ising import gibbs_ising
from pgm_dp.learners import get, learn_ising_logistic, make
from pgm_dp.learners.zhang.logistic import _fit, debias, default_lam2, output_sensitivity
from pgm_dp.models import ising
from pgm_dp.privacy import ZCDP, Accountant

A = np.array(
    [[0.0, 0.6, 0.0, -0.4], [0.6, 0.0, 0.5, 0.0], [0.0, 0.5, 0.0, 0.3], [-0.4, 0.0, 0.3, 0.0]]
)
THETA = np.array([0.2, 0, -0.1, 0])


@pytest.fixture(scope="module")
def spins():
    return gibbs_ising(A, theta=THETA, n_chains=15_000, n_sweeps=30, rng=0)


def test_noise_scale_and_budget_are_the_output_perturbation_formula(spins):
    n, p = spins.shape
    acc = Accountant(ZCDP(1.0))
    est = learn_ising_logistic(spins, 0.5, rng=1, accountant=acc)
    assert acc.spent.rho == pytest.approx(0.5) and est.spent == ZCDP(0.5)
    lam2 = 2.0 * math.sqrt(p / (n * math.sqrt(2 * 0.5)))  # default_lam2, scale 2
    assert est.lam2 == pytest.approx(lam2) == default_lam2(n, p, 0.5)
    # node: 2 xi (1 + tol) / (n lam2), xi = sqrt(p); p nodes: sqrt(p) times; sigma: D / sqrt(2 rho)
    delta = math.sqrt(p) * 2 * math.sqrt(p) * 1.01 / (n * lam2)
    assert delta == pytest.approx(math.sqrt(p) * output_sensitivity(n, p, lam2, 0.01))
    sigma = delta / math.sqrt(2 * 0.5)
    assert sigma <= est.sigma <= sigma * 1.001  # the lattice's rounding slack only


def test_solutions_move_by_at_most_the_stated_sensitivity(spins):
    """Chaudhuri et al. 2011, Cor. 8: replacing one record moves each node's minimiser by at
    most 2 xi / (n lam2); the solver keeps it within (1 + tol) of that (Newton's test, or the
    certified gradient descent: module doc)."""
    z = spins[:2000].copy()
    n, p = z.shape
    lam2 = 0.05
    w = _fit(z, lam2, 0.01, 100)
    worst = 0.0
    for row in range(5):  # the most different replacement: every spin flipped
        z2 = z.copy()
        z2[row] = -z2[row]
        w2 = _fit(z2, lam2, 0.01, 100)
        worst = max(worst, float(np.max(np.linalg.norm(w - w2, axis=1))))
    assert 0 < worst <= output_sensitivity(n, p, lam2, 0.01)


def test_recovers_the_couplings_privately_and_without_noise(spins):
    est = learn_ising_logistic(spins, 2.0, rng=3)
    assert np.max(np.abs((est.A + est.A.T) / 2 - A)) < 0.1
    assert np.max(np.abs(est.theta - THETA)) < 0.1
    ref = learn_ising_logistic(spins, None)
    assert ref.spent is None and ref.sigma == 0.0
    assert np.max(np.abs(ref.A - A)) < 0.06


def test_shrinkage_correction_moves_toward_the_unregularised_fit(spins):
    lam2 = 0.05
    w_reg = _fit(spins, lam2, 0.01, 100)
    w_free = _fit(spins, 1e-6, 0.01, 100)
    fixed = debias(w_reg, lam2)
    assert np.max(np.abs(fixed - w_free)) < 0.3 * np.max(np.abs(w_reg - w_free))


def test_bad_input_spends_nothing(spins):
    acc = Accountant(ZCDP(1.0))
    for kwargs in ({"lam2": -1.0}, {"lam2": float("nan")}, {"tol": 0.0}, {"max_iter": 0}):
        with pytest.raises(DataValidationError):
            learn_ising_logistic(spins, 0.5, accountant=acc, **kwargs)
    with pytest.raises(PrivacyParameterError):
        learn_ising_logistic(spins, -1.0, accountant=acc)
    with pytest.raises(DataValidationError):
        learn_ising_logistic(np.zeros((10, 3)), 0.5, accountant=acc)
    assert acc.spent.rho == 0.0


def test_registered_learner_gives_an_mrf_of_the_given_structure(spins):
    truth = ising(A, THETA)
    codes = ((spins + 1) / 2).astype(int)
    fit = make("ising_logistic").fit(codes, truth, budget=ZCDP(4.0), rng=2)
    assert fit.model.cliques == truth.cliques
    assert abs(float(fit.model.potentials[("X0", "X1")][1, 1]) - 0.6) < 0.1
    assert fit.info["spent"] == ZCDP(4.0)
    assert isinstance(budget_for(get("ising_logistic"), 1.0, 1000), ZCDP)
