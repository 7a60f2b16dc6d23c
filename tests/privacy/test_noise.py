"""Noise calibration formulas and NoiseModel densities."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate

from pgm_dp.errors import PrivacyParameterError
from pgm_dp.privacy import (
    ZCDP,
    ApproxDP,
    NoiseModel,
    PureDP,
    calibrate_discrete_gaussian,
    calibrate_discrete_laplace,
    calibrate_gaussian,
    calibrate_laplace,
    zcdp_rho_within,
    zcdp_to_approx_dp,
)


def test_laplace_scale_formula():
    assert calibrate_laplace(3.0, PureDP(0.5)) == NoiseModel("laplace", 6.0)
    assert calibrate_discrete_laplace(3, PureDP(0.5)).scale == 6.0
    assert calibrate_discrete_laplace(1, PureDP(0.3)).scale == pytest.approx(1 / 0.3, rel=1e-6)
    assert calibrate_discrete_laplace(1, PureDP(0.3)).scale >= 1 / 0.3


def test_gaussian_zcdp_formula():
    assert calibrate_gaussian(2.0, ZCDP(0.5)).scale == pytest.approx(2.0)
    assert calibrate_gaussian(math.sqrt(5), ZCDP(0.1)).scale == pytest.approx(
        math.sqrt(5) / math.sqrt(0.2)
    )
    m = calibrate_discrete_gaussian(3, ZCDP(0.5))
    assert m.scale == 3.0 and m.kind == "discrete_gaussian"
    m = calibrate_discrete_gaussian(1, ZCDP(0.3))
    assert m.scale**2 >= 1 / 0.6 and m.scale == pytest.approx(math.sqrt(1 / 0.6), rel=1e-6)


def test_gaussian_approx_classic_and_analytic():
    b = ApproxDP(0.5, 1e-5)
    classic = calibrate_gaussian(2.0, b, "classic").scale
    assert classic == pytest.approx(2.0 * math.sqrt(2 * math.log(1.25 / 1e-5)) / 0.5)
    analytic = calibrate_gaussian(2.0, b).scale
    assert analytic < classic
    # analytic Gaussian (Balle & Wang 2018, Thm 8): delta(eps) at sigma equals the target
    from scipy.stats import norm

    s, e = analytic / 2.0, 0.5
    delta = norm.cdf(1 / (2 * s) - e * s) - math.exp(e) * norm.cdf(-1 / (2 * s) - e * s)
    assert delta == pytest.approx(1e-5, rel=1e-6)
    with pytest.raises(PrivacyParameterError):
        calibrate_gaussian(1.0, ApproxDP(1.5, 1e-5), "classic")
    with pytest.raises(PrivacyParameterError):
        calibrate_gaussian(1.0, ApproxDP(0.5, 0.0))
    with pytest.raises(PrivacyParameterError):
        calibrate_gaussian(1.0, ApproxDP(0.5, 1e-5), "other")


def test_analytic_gaussian_never_exceeds_delta():
    from scipy.stats import norm

    for eps in (0.01, 0.1, 0.5, 1.0, 3.0):
        for delta in (1e-3, 1e-6, 1e-9):
            s = calibrate_gaussian(1.0, ApproxDP(eps, delta)).scale
            got = norm.cdf(1 / (2 * s) - eps * s) - math.exp(eps) * norm.cdf(-1 / (2 * s) - eps * s)
            assert got <= delta


def test_discrete_gaussian_variance_covers_the_squared_sensitivity():
    """``release_marginals`` passes ``sqrt(|C|)`` as a float, whose square can fall below
    ``|C|`` (e.g. 3 and 198): the variance still covers ``|C| / (2 rho)`` exactly."""
    from fractions import Fraction

    from pgm_dp.privacy.noise import discrete_gaussian_parameter

    for cells in range(1, 300):
        for rho in (0.3, 1.0):
            var = discrete_gaussian_parameter(math.sqrt(cells), ZCDP(rho))
            assert var >= Fraction(cells) / (2 * Fraction(rho))


def test_wrong_budget_notion_and_bad_sensitivity():
    with pytest.raises(PrivacyParameterError):
        calibrate_laplace(1.0, ZCDP(1.0))  # type: ignore[arg-type]
    with pytest.raises(PrivacyParameterError):
        calibrate_gaussian(1.0, PureDP(1.0))  # type: ignore[arg-type]
    for bad in [-1.0, math.nan, math.inf, "x", None]:
        with pytest.raises(PrivacyParameterError):
            calibrate_laplace(bad, PureDP(1.0))  # type: ignore[arg-type]
        with pytest.raises(PrivacyParameterError):
            calibrate_gaussian(bad, ZCDP(1.0))  # type: ignore[arg-type]


def test_zcdp_rho_within():
    b = ApproxDP(1.0, 1e-6)
    rho = zcdp_rho_within(b)
    assert zcdp_to_approx_dp(rho, 1e-6).epsilon <= 1.0
    assert zcdp_to_approx_dp(rho * 1.001, 1e-6).epsilon > 1.0
    m = calibrate_discrete_gaussian(1, b)
    assert m.scale**2 >= 1 / (2 * rho)
    with pytest.raises(PrivacyParameterError):
        zcdp_rho_within(ApproxDP(1.0, 0.0))


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_continuous_log_density_normalised(kind):
    m = NoiseModel(kind, 1.7)
    val, _ = integrate.quad(lambda x: math.exp(m.log_density(x, 0.0)), -60, 60, points=[0])
    assert val == pytest.approx(1.0, abs=1e-7)
    var, _ = integrate.quad(lambda x: x * x * math.exp(m.log_density(x, 0.0)), -80, 80, points=[0])
    assert var == pytest.approx(m.variance, rel=1e-6)


@pytest.mark.parametrize("kind", ["discrete_laplace", "discrete_gaussian"])
@pytest.mark.parametrize("scale", [0.4, 2.0, 9.0])
def test_discrete_log_pmf_normalised(kind, scale):
    m = NoiseModel(kind, scale)
    k = np.arange(-2000, 2001)
    p = np.exp(m.log_density(k, 0))
    assert p.sum() == pytest.approx(1.0, abs=1e-9)
    assert (p * k * k).sum() == pytest.approx(m.variance, rel=1e-8)


def test_grad_log_density_matches_finite_differences():
    y = np.array([3.0, -1.0, 0.5])
    t = np.array([1.0, 0.2, -0.7])
    for kind in ["laplace", "gaussian", "discrete_laplace", "discrete_gaussian"]:
        m = NoiseModel(kind, 1.3)
        h = 1e-6
        fd = (m.log_density(y, t + h) - m.log_density(y, t - h)) / (2 * h)
        np.testing.assert_allclose(m.grad_log_density(y, t), fd, rtol=1e-5)


def test_noise_model_validation_and_dict():
    with pytest.raises(PrivacyParameterError):
        NoiseModel("cauchy", 1.0)  # type: ignore[arg-type]
    with pytest.raises(PrivacyParameterError):
        NoiseModel("laplace", -1.0)
    m = NoiseModel("discrete_laplace", 2)
    assert m.to_dict() == {"kind": "discrete_laplace", "scale": 2.0} and m.is_discrete
    assert NoiseModel("laplace", 0.0).variance == 0.0
    with pytest.raises(PrivacyParameterError):
        NoiseModel("laplace", 0.0).log_density(1.0, 0.0)


@pytest.mark.parametrize("scale", [0.05, 0.3, 0.999, 1.0, 1.1, 1.38, 3.7, 40.0])
def test_discrete_gaussian_moments_match_direct_sums(scale):
    """The bounded-length forms (direct sum below 1, Poisson summation above) against long
    direct sums over |k| <= 60 s + 20."""
    m = NoiseModel("discrete_gaussian", scale)
    k = np.arange(-int(60 * scale) - 20, int(60 * scale) + 21, dtype=np.float64)
    w = np.exp(-(k * k) / (2 * scale * scale))
    assert m.variance == pytest.approx(np.sum(k * k * w) / np.sum(w), rel=1e-13, abs=1e-300)
    assert -m.log_density(0.0, 0.0) == pytest.approx(math.log(np.sum(w)), rel=1e-13, abs=1e-15)


def test_discrete_gaussian_variance_allocates_nothing_scale_sized():
    """A crafted noise model with a huge scale: variance and log_density are instant and
    allocate under 64 kB (the old normaliser built ~80 scale floats)."""
    import time
    import tracemalloc

    m = NoiseModel("discrete_gaussian", 1e5)
    big = NoiseModel("discrete_gaussian", 1e300)
    start = time.perf_counter()
    tracemalloc.start()
    try:
        var = m.variance
        dens = m.log_density(np.array([0.0, 3.0]), 0.0)
        huge = big.variance, big.log_density(0.0, 0.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64_000 and time.perf_counter() - start < 1.0
    assert var == 1e10 and huge[0] == math.inf and math.isfinite(huge[1])
    assert dens[0] == pytest.approx(-math.log(math.sqrt(2 * math.pi) * 1e5), rel=1e-15)
