import numpy as np
import pytest
from conftest import all_states, joint_log_table, random_model

from pgm_dp import Domain, DomainError, MarkovRandomField
from pgm_dp.compare.metrics import kl_divergence, log_likelihood, marginal_l1_error, marginal_mse
from pgm_dp.models import third_order_chain


def _brute_kl(p, q):
    lp, lq = joint_log_table(p).ravel(), joint_log_table(q).ravel()
    lp = lp - np.logaddexp.reduce(lp)
    lq = lq - np.logaddexp.reduce(lq)
    return float(np.sum(np.exp(lp) * (lp - lq)))


def test_kl_of_model_with_itself_is_zero():
    p = third_order_chain(10, 10, rng=0)
    assert abs(kl_divergence(p, p)) < 1e-10


def test_kl_matches_brute_force_and_is_positive(rng):
    p = random_model(rng, 5, 4)
    q = MarkovRandomField(
        p.domain,
        [("V0", "V1"), ("V2",), ("V3", "V4", "V1")],
        [rng.normal(size=p.domain.sizes(c)) for c in [("V0", "V1"), ("V2",), ("V3", "V4", "V1")]],
    )
    kl = kl_divergence(p, q)
    assert kl == pytest.approx(_brute_kl(p, q), abs=1e-10)
    assert kl > 0
    assert kl_divergence(q, p) == pytest.approx(_brute_kl(q, p), abs=1e-10)


def test_kl_needs_one_domain():
    with pytest.raises(DomainError):
        kl_divergence(third_order_chain(4, 2, rng=0), third_order_chain(5, 2, rng=0))


def test_log_likelihood_is_mean_log_prob(rng):
    p = random_model(rng, 4, 3)
    states = all_states(p.domain)
    lp = joint_log_table(p).ravel()
    lp = lp - np.logaddexp.reduce(lp)
    assert log_likelihood(p, states) == pytest.approx(lp.mean(), abs=1e-10)


def test_marginal_errors():
    a = {("A",): np.array([0.5, 0.5])}
    b = {("A",): np.array([1.0, 0.0])}
    assert marginal_l1_error(a, b) == pytest.approx(1.0)
    assert marginal_mse(a, b) == pytest.approx(0.25)
    with pytest.raises(DomainError):
        marginal_mse(a, {("B",): np.ones(2)})


def test_kl_with_impossible_states_follows_0_log_0():
    dom = Domain(["A", "B"], [2, 2])
    p = MarkovRandomField(dom, [("A", "B")], [np.array([[0.0, -np.inf], [0.0, 1.0]])])
    uniform = MarkovRandomField(dom, [("A", "B")])
    probs = np.array([1.0, 0.0, 1.0, np.e]) / (2 + np.e)
    mask = probs > 0
    brute = float(np.sum(probs[mask] * np.log(probs[mask] * 4)))
    assert kl_divergence(p, p) == pytest.approx(0.0, abs=1e-12)
    assert kl_divergence(p, uniform) == pytest.approx(brute, rel=1e-12)
    assert kl_divergence(uniform, p) == np.inf  # q has a zero where p has mass
