"""Budgets: validation, conversions (Zhang et al. Lemma 2.14, CKS 2020) and composition."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import RdpAccountant

from pgm_dp.errors import PrivacyParameterError
from pgm_dp.privacy import ZCDP, ApproxDP, PureDP, compose, zcdp_to_approx_dp


@pytest.mark.parametrize("eps", [0, -1, math.nan, math.inf, "a", None, True])
def test_bad_epsilon(eps):
    with pytest.raises(PrivacyParameterError):
        PureDP(eps)
    with pytest.raises(PrivacyParameterError):
        ApproxDP(eps, 1e-6)


@pytest.mark.parametrize("delta", [-1e-9, 1.0, 1.5, math.nan, math.inf])
def test_bad_delta(delta):
    with pytest.raises(PrivacyParameterError):
        ApproxDP(1.0, delta)


@pytest.mark.parametrize("rho", [0, -0.1, math.nan, math.inf])
def test_bad_rho(rho):
    with pytest.raises(PrivacyParameterError):
        ZCDP(rho)


def test_values_are_frozen_floats():
    b = ApproxDP(1, 0)
    assert isinstance(b.epsilon, float) and b.delta == 0.0
    with pytest.raises(AttributeError):
        b.epsilon = 2.0  # type: ignore[misc]
    assert PureDP(2) == PureDP(2.0) and hash(PureDP(2)) == hash(PureDP(2.0))


def test_pure_to_zcdp_lemma_2_14():
    assert PureDP(1.0).to_zcdp() == ZCDP(0.5)
    assert PureDP(0.2).to_zcdp().rho == pytest.approx(0.02)
    assert PureDP(0.3).to_approx_dp() == ApproxDP(0.3, 0.0)


def test_zcdp_to_dp_lemma_2_14_hand_value():
    rho, delta = 0.5, 1e-6
    want = rho + 2 * math.sqrt(rho * math.log(1 / delta))
    got = ZCDP(rho).to_approx_dp(delta, method="lemma_2_14")
    assert got == ApproxDP(want, delta)
    assert want == pytest.approx(5.75652, abs=1e-5)
    # the paper's form: (eps^2/2 + eps*sqrt(2 log(1/delta)), delta) for rho = eps^2/2
    e = 1.0
    paper = e**2 / 2 + e * math.sqrt(2 * math.log(1 / delta))
    assert zcdp_to_approx_dp(e**2 / 2, delta, "lemma_2_14").epsilon == pytest.approx(paper)


@pytest.mark.parametrize("rho", [1e-4, 0.01, 0.5, 3.0, 50.0])
@pytest.mark.parametrize("delta", [1e-9, 1e-5, 0.01])
def test_cks_is_tighter_and_matches_dp_accounting_rdp(rho, delta):
    lemma = zcdp_to_approx_dp(rho, delta, "lemma_2_14").epsilon
    cks = zcdp_to_approx_dp(rho, delta).epsilon
    assert cks <= lemma
    # A Gaussian with noise multiplier z is exactly (alpha, alpha/(2 z^2))-RDP, i.e. rho-zCDP
    # with rho = 1/(2 z^2); dp_accounting converts RDP with the same CKS formula, on a grid
    # of orders, so it can only be (slightly) larger.
    z = 1 / math.sqrt(2 * rho)
    orders = np.concatenate([1.0 + np.logspace(-2, 6, 4000)])
    acc = RdpAccountant(orders=orders).compose(dp_accounting.GaussianDpEvent(z))
    ref = acc.get_epsilon(delta)
    assert cks <= ref + 1e-9
    assert cks == pytest.approx(max(ref, 0.0), rel=2e-3, abs=1e-6)


def test_ckks_alias_and_bad_method():
    assert zcdp_to_approx_dp(0.1, 1e-5, "ckks") == zcdp_to_approx_dp(0.1, 1e-5, "cks")
    with pytest.raises(PrivacyParameterError):
        zcdp_to_approx_dp(0.1, 1e-5, "advanced")  # type: ignore[arg-type]
    with pytest.raises(PrivacyParameterError):
        zcdp_to_approx_dp(0.1, 0.0)


def test_composition():
    assert compose(PureDP(0.5), PureDP(0.25)) == PureDP(0.75)
    assert (PureDP(0.5) + PureDP(0.5)).epsilon == 1.0
    assert compose(ZCDP(0.1), ZCDP(0.2), ZCDP(0.3)).rho == pytest.approx(0.6)
    got = compose(ApproxDP(0.5, 1e-6), ApproxDP(0.25, 2e-6))
    assert got.epsilon == 0.75 and got.delta == pytest.approx(3e-6)
    assert compose(*[PureDP(0.1)] * 10) == PureDP(1.0)  # exact summation (fsum)
    with pytest.raises(PrivacyParameterError):
        compose(PureDP(1.0), ZCDP(1.0))
    with pytest.raises(PrivacyParameterError):
        compose()


def test_a_budget_knows_its_notion_amount_and_split():
    from pgm_dp.privacy.budget import budget_of, zcdp_rho_within

    rho = zcdp_rho_within(ApproxDP(1.0, 1e-6))
    cases = [
        (PureDP(0.8), "pure", 0.8, PureDP(0.8 * 0.25)),
        (ZCDP(0.3), "zcdp", 0.3, ZCDP(0.3 * 0.25)),
        (ApproxDP(0.8, 0.0), "pure", 0.8, ApproxDP(0.8 * 0.25, 0.0)),
        (ApproxDP(1.0, 1e-6), "zcdp", rho, ApproxDP(0.25, 0.25e-6)),
    ]
    for budget, notion, amount, quarter in cases:
        assert (budget.notion, budget.amount) == (notion, amount)
        assert budget.split(0.25) == quarter
        assert budget_of(budget.notion, budget.amount) == budget.native()
    assert ApproxDP(1.0, 1e-6).native() == ZCDP(rho) and ApproxDP(2.0, 0).native() == PureDP(2.0)
    with pytest.raises(PrivacyParameterError):
        budget_of("renyi", 1.0)


def test_a_budget_knows_the_scales_and_steps_it_buys():

    assert PureDP(0.5).scale_for("laplace", 3.0) == 3.0 / 0.5
    assert PureDP(0.5).scale_for("gaussian", 3.0) is None
    assert ZCDP(0.5).scale_for("gaussian", 3.0) == 3.0 / math.sqrt(2 * 0.5)
    assert ZCDP(0.5).scale_for("laplace", 3.0) is None
    assert ApproxDP(1.0, 1e-6).scale_for("gaussian", 3.0) is None
    assert PureDP(1.0).pure_steps(4) == PureDP(0.25)
    assert ZCDP(0.5).pure_steps(4) == PureDP(math.sqrt(2 * 0.5 / 4))
    assert ZCDP(1.0).cost_of_pure(PureDP(0.5), 4) == ZCDP(4 * 0.5**2 / 2)
    assert PureDP(1.0).cost_of_pure(PureDP(0.5), 4) == PureDP(2.0)
    assert ZCDP(0.2).rho_within() == 0.2
    for refused in (
        lambda: PureDP(1.0).rho_within(),
        lambda: ApproxDP(1.0, 0).rho_within(),
        lambda: ApproxDP(1.0, 1e-6).pure_steps(2),
    ):
        with pytest.raises(PrivacyParameterError):
            refused()


def test_require_budget_refuses_another_notion_with_the_callers_message():
    from pgm_dp.privacy.budget import require_budget

    require_budget(PureDP(1.0), PureDP | ZCDP, "unused")
    with pytest.raises(PrivacyParameterError, match="^needs zCDP$"):
        require_budget(PureDP(1.0), ZCDP, "needs zCDP")
    with pytest.raises(TypeError, match="typed"):
        require_budget(0.5, ApproxDP, "typed", TypeError)


def test_each_notion_holds_its_formulas():
    """The notion's constants and formulas on its type (issue #38): mechanisms, the scale a
    cost buys, the exponential mechanism's charge, and measurements_within as the inverse."""
    from pgm_dp.privacy.budget import notion_type

    assert notion_type("pure") is PureDP and notion_type("zcdp") is ZCDP
    with pytest.raises(PrivacyParameterError):
        notion_type("approx")
    assert ApproxDP(1.0, 0.0).is_pure and not ApproxDP(1.0, 1e-6).is_pure
    assert ApproxDP(1.0, 0.0).default_mechanism == PureDP(1.0).default_mechanism
    assert ApproxDP(1.0, 1e-6).default_mechanism == ZCDP(1.0).default_mechanism
    assert PureDP.noise_scale(0.5) == 2.0 and ZCDP.noise_scale(0.5) == 1.0
    assert PureDP.selection_cost(0.3) == PureDP(0.3)
    for rho in (1e-3, 0.01, 0.37):
        eps = ZCDP.selection_epsilon(rho)
        assert ZCDP.selection_cost(eps).rho <= rho
    for unit in (PureDP(0.8), ZCDP(0.8)):
        m = unit.measurements_within(3.0)  # m measurements of amount/m each: E|noise| = 3
        scale = unit.noise_scale(unit.amount / m)
        assert unit.expected_abs_noise(scale) == pytest.approx(3.0)
        assert unit.noise_scale(0.2 * unit.halving_cost) == pytest.approx(unit.noise_scale(0.2) / 2)
