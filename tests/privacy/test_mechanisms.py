"""Mechanisms: documented scales, charge-before-draw, validation before anything happens."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from pgm_dp.errors import BudgetExceededError, DataValidationError, PrivacyParameterError
from pgm_dp.privacy import (
    ZCDP,
    Accountant,
    ApproxDP,
    PureDP,
    discrete_gaussian_mechanism,
    discrete_laplace_mechanism,
    exponential_mechanism,
    frank_wolfe_step_budget,
    gaussian_mechanism,
    laplace_mechanism,
    perturb,
    report_noisy_max,
)

N = 200_000


def test_laplace_scale():
    y = laplace_mechanism(np.zeros(N), l1_sensitivity=3.0, budget=PureDP(0.5), rng=0)
    b = 3.0 / 0.5
    assert y.dtype == np.float64
    assert np.mean(np.abs(y)) == pytest.approx(b, rel=0.01)  # E|Lap(b)| = b


def test_gaussian_scales():
    # issue #16: integer queries (float ones pay the accounted lattice-rounding slack)
    y = gaussian_mechanism(np.zeros(N, np.int64), l2_sensitivity=2.0, budget=ZCDP(0.5), rng=1)
    assert y.std() == pytest.approx(2.0, rel=0.01)
    y = gaussian_mechanism(
        np.zeros(N, np.int64),
        l2_sensitivity=1.0,
        budget=ApproxDP(0.5, 1e-5),
        rng=1,
        calibration="classic",
    )
    assert y.std() == pytest.approx(math.sqrt(2 * math.log(1.25e5)) / 0.5, rel=0.01)


def test_discrete_mechanisms_int64_and_scale():
    y = discrete_laplace_mechanism(np.full(N, 7), l1_sensitivity=2, budget=PureDP(1.0), rng=2)
    a = math.exp(-0.5)
    assert y.dtype == np.int64 and (y - 7).var() == pytest.approx(2 * a / (1 - a) ** 2, rel=0.02)
    y = discrete_gaussian_mechanism(np.full(N, 7.0), l2_sensitivity=3, budget=ZCDP(0.5), rng=3)
    assert y.dtype == np.int64 and (y - 7).std() == pytest.approx(3.0, rel=0.01)
    with pytest.raises(DataValidationError):
        discrete_laplace_mechanism([1.5], l1_sensitivity=1, budget=PureDP(1.0), rng=0)


def _all_mechanisms():
    return [
        (laplace_mechanism, dict(l1_sensitivity=1.0, budget=PureDP(0.5))),
        (gaussian_mechanism, dict(l2_sensitivity=1.0, budget=ZCDP(0.5))),
        (discrete_laplace_mechanism, dict(l1_sensitivity=1.0, budget=PureDP(0.5))),
        (discrete_gaussian_mechanism, dict(l2_sensitivity=1.0, budget=ZCDP(0.5))),
    ]


@pytest.mark.parametrize("mech,kw", _all_mechanisms())
def test_charges_accountant_with_scale(mech, kw):
    acc = Accountant(ApproxDP(10.0, 1e-6))
    mech(np.arange(5), rng=0, accountant=acc, what="q", **kw)
    (c,) = acc.charges
    assert (
        c.what == "q"
        and c.cost == kw["budget"]
        and c.scale == pytest.approx(1 / 0.5 if "l1_sensitivity" in kw else 1.0, rel=1e-6)
    )


@pytest.mark.parametrize("mech,kw", _all_mechanisms())
def test_refused_charge_draws_nothing(mech, kw):
    acc = Accountant(ApproxDP(0.1, 1e-9))
    acc.charge(PureDP(0.05), what="before", mechanism="m")
    g = np.random.default_rng(42)
    state = copy.deepcopy(g.bit_generator.state)
    with pytest.raises(BudgetExceededError):
        mech(np.arange(5), rng=g, accountant=acc, **kw)
    assert g.bit_generator.state == state
    assert len(acc.charges) == 1 and acc.spent.epsilon == pytest.approx(0.05)


@pytest.mark.parametrize("mech,kw", _all_mechanisms())
@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf])
def test_bad_sensitivity_spends_nothing(mech, kw, bad):
    acc = Accountant(ApproxDP(10.0, 1e-6))
    key = "l1_sensitivity" if "l1_sensitivity" in kw else "l2_sensitivity"
    kw = {**kw, key: bad}
    g = np.random.default_rng(0)
    state = copy.deepcopy(g.bit_generator.state)
    with pytest.raises(PrivacyParameterError):
        mech(np.arange(3), rng=g, accountant=acc, **kw)
    assert acc.charges == () and g.bit_generator.state == state


@pytest.mark.parametrize("mech,kw", _all_mechanisms())
def test_bad_values_spend_nothing_and_input_unchanged(mech, kw):
    acc = Accountant(ApproxDP(10.0, 1e-6))
    for bad in [np.array([1.0, np.nan]), np.array(["a", "b"]), [1, None]]:
        with pytest.raises(DataValidationError):
            mech(bad, rng=0, accountant=acc, **kw)
    assert acc.charges == ()
    x = np.array([1, 2, 3])
    x0 = x.copy()
    mech(x, rng=0, accountant=acc, **kw)
    np.testing.assert_array_equal(x, x0)


def test_wrong_budget_types():
    with pytest.raises(PrivacyParameterError):
        laplace_mechanism([1.0], l1_sensitivity=1, budget=ZCDP(1.0))  # type: ignore[arg-type]
    with pytest.raises(PrivacyParameterError):
        gaussian_mechanism([1.0], l2_sensitivity=1, budget=PureDP(1.0))  # type: ignore[arg-type]
    with pytest.raises(PrivacyParameterError):
        perturb([1.0], kind="cauchy", sensitivity=1, budget=PureDP(1.0))
    with pytest.raises(PrivacyParameterError):
        laplace_mechanism([1.0], l1_sensitivity=1, budget=PureDP(1.0), accountant="acc")


def test_zero_sensitivity_returns_values():
    y = laplace_mechanism([1.0, 2.0], l1_sensitivity=0.0, budget=PureDP(1.0), rng=0)
    np.testing.assert_array_equal(y, [1.0, 2.0])


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_exponential_mechanism_distribution():
    scores = np.array([0.0, 1.0, 2.0])
    eps, delta_u = 1.0, 1.0
    g = np.random.default_rng(5)
    picks = [
        exponential_mechanism(scores, sensitivity=delta_u, budget=PureDP(eps), rng=g)
        for _ in range(30_000)
    ]
    p = np.exp(eps * scores / (2 * delta_u))
    p /= p.sum()
    freq = np.bincount(picks, minlength=3) / len(picks)
    np.testing.assert_allclose(freq, p, atol=0.012)
    pm = np.exp(eps * scores / delta_u)
    pm /= pm.sum()
    picks = [
        exponential_mechanism(scores, sensitivity=1.0, budget=PureDP(1.0), rng=g, monotonic=True)
        for _ in range(30_000)
    ]
    np.testing.assert_allclose(np.bincount(picks, minlength=3) / 30_000, pm, atol=0.012)


def test_report_noisy_max_and_frank_wolfe_budget():
    acc = Accountant(ZCDP(0.5))
    step = frank_wolfe_step_budget(ZCDP(0.5), 50)
    assert step.epsilon == pytest.approx(math.sqrt(2 * 0.5 / 50))
    g = np.random.default_rng(0)
    for _ in range(50):
        i = report_noisy_max(
            [3.0, -10.0, 2.0], sensitivity=0.01, budget=step, rng=g, accountant=acc, minimize=True
        )
        assert i == 1
    assert acc.spent.rho == pytest.approx(0.5)  # Lemma 2.14 + 2.15
    # issue #16: lattice rounding adds (3 lattice units) <= 2^-19 relative to 2Δ/ε
    assert acc.charges[0].scale == pytest.approx(2 * 0.01 / step.epsilon, rel=2e-6)
    assert acc.charges[0].scale >= 2 * 0.01 / step.epsilon
    with pytest.raises(BudgetExceededError):
        report_noisy_max([1.0, 2.0], sensitivity=1.0, budget=step, rng=g, accountant=acc)
    with pytest.raises(PrivacyParameterError):
        frank_wolfe_step_budget(0.5, 0)
    with pytest.raises(DataValidationError):
        report_noisy_max([], sensitivity=1.0, budget=step, rng=0)
    with pytest.raises(PrivacyParameterError):
        report_noisy_max([1.0], sensitivity=1.0, budget=ZCDP(1.0), rng=0)  # type: ignore[arg-type]


def test_selection_zero_sensitivity_is_argmax():
    assert exponential_mechanism([1.0, 5.0, 2.0], sensitivity=0, budget=PureDP(1.0), rng=0) == 1
    assert report_noisy_max([1.0, 5.0, 2.0], sensitivity=0, budget=PureDP(1.0), rng=0) == 1
