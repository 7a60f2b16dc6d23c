"""DP-SGD accounting wrapper vs direct dp_accounting computations."""

from __future__ import annotations

import dp_accounting
import pytest
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant

from pgm_dp.errors import PrivacyParameterError
from pgm_dp.privacy import (
    Accountant,
    ApproxDP,
    DPSGDCost,
    calibrate_noise_multiplier,
    dpsgd_cost,
    dpsgd_epsilon,
)


def direct(z: float, q: float, steps: int, delta: float, acc) -> float:
    ev = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z)), steps
    )
    return acc.compose(ev).get_epsilon(delta)


@pytest.mark.parametrize("z,q,steps", [(1.1, 0.01, 1000), (0.8, 0.05, 200), (2.0, 1.0, 5)])
def test_rdp_epsilon_equals_direct(z, q, steps):
    assert dpsgd_epsilon(z, q, steps, 1e-5) == direct(z, q, steps, 1e-5, RdpAccountant())


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_pld_epsilon_equals_direct_and_is_tighter():
    got = dpsgd_epsilon(1.1, 0.01, 300, 1e-5, accountant="pld")
    ref = direct(1.1, 0.01, 300, 1e-5, PLDAccountant(value_discretization_interval=1e-4))
    assert got == pytest.approx(ref, rel=1e-12)
    assert got < dpsgd_epsilon(1.1, 0.01, 300, 1e-5)


def test_calibration_round_trip_rdp():
    eps = dpsgd_epsilon(1.3, 0.02, 500, 1e-6)
    z = calibrate_noise_multiplier(ApproxDP(eps, 1e-6), 0.02, 500)
    assert z == pytest.approx(1.3, abs=1e-5)
    assert dpsgd_epsilon(z, 0.02, 500, 1e-6) <= eps


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_calibration_pld_meets_target():
    target = ApproxDP(2.0, 1e-5)
    kw = dict(pld_discretization=1e-3)  # coarser grid: still a valid (pessimistic) PLD bound
    z = calibrate_noise_multiplier(target, 0.05, 20, accountant="pld", tol=1e-3, **kw)
    assert dpsgd_epsilon(z, 0.05, 20, 1e-5, "pld", **kw) <= 2.0
    assert dpsgd_epsilon(z - 2e-3, 0.05, 20, 1e-5, "pld", **kw) > 2.0
    assert z <= calibrate_noise_multiplier(target, 0.05, 20)
    with pytest.raises(PrivacyParameterError):
        dpsgd_epsilon(1.0, 0.05, 20, 1e-5, "pld", pld_discretization=0.0)


def test_cost_charges_accountant():
    cost = DPSGDCost(1.1, 0.01, 100, 1e-6)
    assert cost.cost == dpsgd_cost(1.1, 0.01, 100, 1e-6)
    acc = Accountant(ApproxDP(5.0, 1e-5))
    acc.charge(cost.cost, what="dpsgd", mechanism="dp-sgd", scale=cost.noise_multiplier)
    assert acc.spent.epsilon == pytest.approx(cost.cost.epsilon)


@pytest.mark.parametrize(
    "args",
    [
        (0.0, 0.1, 10, 1e-5),
        (1.0, 0.0, 10, 1e-5),
        (1.0, 1.5, 10, 1e-5),
        (1.0, 0.1, 0, 1e-5),
        (1.0, 0.1, 10, 0.0),
        (1.0, 0.1, 2.5, 1e-5),
        (float("nan"), 0.1, 10, 1e-5),
    ],
)
def test_bad_parameters(args):
    with pytest.raises(PrivacyParameterError):
        dpsgd_epsilon(*args)
    with pytest.raises(PrivacyParameterError):
        DPSGDCost(*args)


def test_bad_accountant_and_target():
    with pytest.raises(PrivacyParameterError):
        dpsgd_epsilon(1.0, 0.1, 10, 1e-5, accountant="moments")  # type: ignore[arg-type]
    with pytest.raises(PrivacyParameterError):
        calibrate_noise_multiplier(ApproxDP(1.0, 0.0), 0.1, 10)
    with pytest.raises(PrivacyParameterError):
        calibrate_noise_multiplier(1.0, 0.1, 10)  # type: ignore[arg-type]
