"""Samplers: reproducibility, exact distributions (vs closed-form pmfs and OpenDP)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from pgm_dp.errors import PrivacyParameterError
from pgm_dp.privacy import samplers as S
from pgm_dp.privacy.samplers import (
    as_generator,
    discrete_gaussian_rational_variance,
    discrete_laplace_rational_scale,
    sample_discrete_gaussian,
    sample_discrete_laplace,
    sample_gaussian,
    sample_laplace,
)


def dlap_pmf(x: np.ndarray, b: float) -> np.ndarray:
    a = math.exp(-1 / b)
    return (1 - a) / (1 + a) * a ** np.abs(x)


def dgauss_pmf(x: np.ndarray, sigma2: float) -> np.ndarray:
    k = np.arange(-int(50 * math.sqrt(sigma2)) - 20, int(50 * math.sqrt(sigma2)) + 21)
    z = np.exp(-(k**2) / (2 * sigma2)).sum()
    return np.exp(-(np.asarray(x, float) ** 2) / (2 * sigma2)) / z


def gof_pvalue(samples: np.ndarray, pmf) -> float:
    """Chi-square goodness of fit with tail bins merged (expected count >= 20 per bin)."""
    lo, hi = int(samples.min()), int(samples.max())
    support = np.arange(lo, hi + 1)
    p = pmf(support)
    obs = np.bincount(samples - lo, minlength=support.size).astype(float)
    # fold the out-of-range mass into the end bins
    p[0] += max(0.0, pmf(np.arange(lo - 10000, lo)).sum())
    p[-1] += max(0.0, pmf(np.arange(hi + 1, hi + 10001)).sum())
    exp = p / p.sum() * samples.size
    keep = exp >= 20
    o = np.concatenate([obs[keep], [obs[~keep].sum()]])
    e = np.concatenate([exp[keep], [exp[~keep].sum()]])
    if e[-1] < 20:
        o, e = o[:-1], e[:-1]
        e *= o.sum() / e.sum()
    return float(stats.chisquare(o, e).pvalue)


def test_as_generator():
    g = np.random.default_rng(0)
    assert as_generator(g) is g
    assert as_generator(5).integers(1 << 30) == np.random.default_rng(5).integers(1 << 30)
    assert isinstance(as_generator(None), np.random.Generator)
    assert isinstance(as_generator(np.int64(3)), np.random.Generator)
    with pytest.raises(TypeError):
        as_generator("seed")
    with pytest.raises(TypeError):
        as_generator(True)
    with pytest.raises(ValueError):
        as_generator(-1)


@pytest.mark.parametrize(
    "fn", [sample_laplace, sample_gaussian, sample_discrete_laplace, sample_discrete_gaussian]
)
def test_reproducible_shape_dtype(fn):
    a, b = fn(1.5, (3, 4), 7), fn(1.5, (3, 4), np.random.default_rng(7))
    assert a.shape == (3, 4) and np.array_equal(a, b)
    want = np.int64 if "discrete" in fn.__name__ else np.float64
    assert a.dtype == want
    assert np.array_equal(fn(0.0, 5, 1), np.zeros(5))


@pytest.mark.parametrize(
    "fn", [sample_laplace, sample_gaussian, sample_discrete_laplace, sample_discrete_gaussian]
)
@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf, "x", True])
def test_bad_scale(fn, bad):
    with pytest.raises(PrivacyParameterError):
        fn(bad, 3, 0)


def test_continuous_moments():
    x = sample_laplace(2.0, 200_000, 0)
    assert abs(x.var() / 8.0 - 1) < 0.03
    y = sample_gaussian(3.0, 200_000, 0)
    assert abs(y.std() / 3.0 - 1) < 0.01


def test_rational_parameters_round_up():
    assert discrete_laplace_rational_scale(2.5) == Fraction(5, 2)
    assert discrete_laplace_rational_scale(Fraction(10, 3)) == Fraction(10, 3)
    for s in [1 / 0.3, 0.1, 7.123456789, 1e6 / 7]:
        q = discrete_laplace_rational_scale(s)
        assert Fraction(s) <= q <= Fraction(s) + Fraction(1, 2**20)
    assert discrete_gaussian_rational_variance(3.0) == 9
    for s in [0.1, 1.7, 123.456, 4000.5]:
        v = discrete_gaussian_rational_variance(s)
        assert Fraction(s) ** 2 <= v <= Fraction(s) ** 2 * (1 + Fraction(1, 2**20))
    with pytest.raises(PrivacyParameterError):
        discrete_laplace_rational_scale(2.0**41)


@pytest.mark.parametrize("scale", [0.3, 1.0, 2.5, 10 / 3, 40.0])
def test_discrete_laplace_exact_pmf(scale):
    x = sample_discrete_laplace(scale, 200_000, rng=11)
    b = float(discrete_laplace_rational_scale(scale))
    assert gof_pvalue(x, lambda k: dlap_pmf(k, b)) > 1e-4


@pytest.mark.parametrize("sigma", [0.4, 1.0, 3.0, 25.0])
def test_discrete_gaussian_exact_pmf(sigma):
    x = sample_discrete_gaussian(sigma, 200_000, rng=12)
    v = float(discrete_gaussian_rational_variance(sigma))
    assert gof_pvalue(x, lambda k: dgauss_pmf(k, v)) > 1e-4


def test_bernoulli_exp_exact_helpers():
    g = np.random.default_rng(3)
    got = S._bern_exp(np.full(200_000, 7), 4, g).mean()  # exp(-1.75)
    assert abs(got - math.exp(-1.75)) < 4 * math.sqrt(0.2 / 200_000)
    got = np.mean([S._bern_exp_scalar(3, 2, g) for _ in range(20_000)])
    assert abs(got - math.exp(-1.5)) < 4 * math.sqrt(0.2 / 20_000)
    big = 2**70 + 12345  # uniform below a number beyond 64 bits
    u = [S._uniform_below(big, g) for _ in range(2000)]
    assert all(0 <= v < big for v in u) and np.mean(np.array(u, float) / big) == pytest.approx(
        0.5, abs=0.05
    )


def test_discrete_gaussian_big_sigma_uses_exact_python_path():
    sigma = 60_000.0  # integers of CKS Alg. 3 exceed int64: per-element Python path
    x = sample_discrete_gaussian(sigma, 400, rng=5)
    assert x.dtype == np.int64 and 0.8 < x.std() / sigma < 1.2


@pytest.fixture(scope="module")
def opendp():
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    return dp


def _two_sample_tv_and_p(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    lo = min(a.min(), b.min())
    hi = max(a.max(), b.max())
    ca = np.bincount(a - lo, minlength=hi - lo + 1)
    cb = np.bincount(b - lo, minlength=hi - lo + 1)
    tv = 0.5 * np.abs(ca / a.size - cb / b.size).sum()
    keep = (ca + cb) >= 40
    table = np.array([np.append(ca[keep], ca[~keep].sum()), np.append(cb[keep], cb[~keep].sum())])
    table = table[:, table.sum(axis=0) > 0]
    return float(tv), float(stats.chi2_contingency(table).pvalue)


def test_discrete_laplace_matches_opendp(opendp):
    dp = opendp
    n, scale = 40_000, 2.0
    meas = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int), scale)
    ref = np.asarray(meas([0] * n), dtype=np.int64)
    ours = sample_discrete_laplace(scale, n, rng=21)
    tv, p = _two_sample_tv_and_p(ours, ref)
    assert p > 1e-4 and tv < 0.03


def test_discrete_gaussian_matches_opendp(opendp):
    dp = opendp
    n, sigma = 30_000, 2.0
    meas = dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T=int)), dp.l2_distance(T=int), sigma)
    ref = np.asarray(meas([0] * n), dtype=np.int64)
    ours = sample_discrete_gaussian(sigma, n, rng=22)
    tv, p = _two_sample_tv_and_p(ours, ref)
    assert p > 1e-4 and tv < 0.03
