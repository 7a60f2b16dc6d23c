"""The ``"<missing>"`` state of a complete column: kept with chance at most
``MISSING_KEEP_RATE`` (1/1200) per column, so fewer than 1 % of complete 12-column tables
keep one (:func:`pgm_dp.prepare._steps.noise_tail_point`)."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom

from pgm_dp.prepare import prepare_plan
from pgm_dp.prepare._steps import MISSING_KEEP_RATE, noise_tail_point
from pgm_dp.privacy import PureDP
from pgm_dp.privacy.noise import NoiseModel


def _tail(noise: NoiseModel, t: float) -> float:
    """``P(noise >= t)`` exactly (a sum over the integers for the discrete kinds)."""
    b = noise.scale
    if noise.kind == "laplace":
        return 0.5 * math.exp(-t / b)
    if noise.kind == "gaussian":
        return 0.5 * math.erfc(t / (b * math.sqrt(2)))
    k = np.arange(-int(60 * b) - 60, int(60 * b) + 61)
    if noise.kind == "discrete_laplace":
        w = np.exp(-np.abs(k) / b)
    else:
        w = np.exp(-(k.astype(float) ** 2) / (2 * b * b))
    return float(w[k >= t].sum() / w.sum())


@pytest.mark.parametrize("kind", ["laplace", "discrete_laplace", "gaussian", "discrete_gaussian"])
@pytest.mark.parametrize("scale", [0.3, 1.0, 7.5, 42.0])
def test_the_tail_point_holds_the_rate(kind, scale):
    noise = NoiseModel(kind, scale)
    t = noise_tail_point(noise, MISSING_KEEP_RATE)
    assert _tail(noise, t) <= MISSING_KEEP_RATE * (1 + 1e-12)  # rounding of the closed forms
    if kind == "discrete_laplace":  # the smallest such integer
        assert t == 1 or _tail(noise, t - 1) > MISSING_KEEP_RATE
    if kind in ("laplace", "gaussian"):  # exact
        assert _tail(noise, t) == pytest.approx(MISSING_KEEP_RATE, rel=1e-9)


def _complete(columns: int, n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({f"c{j}": rng.choice(["a", "b"], n) for j in range(columns)})


def test_complete_columns_rarely_keep_a_missing_state():
    """Statistical: 2,400 complete columns (two tables of 1,200, seeded) keep at most a
    handful of ``"<missing>"`` states: at the rate 1/1200 the count is Binomial(2400, 1/1200)
    (mean 2), and 9 or more has chance 2.5e-4; the former rule (3 noise standard
    deviations: 0.72 % per column under Laplace noise) gave about 17. The Gaussian kinds'
    rate is checked exactly above."""
    kept = 0
    for seed in (0, 1):
        df = _complete(1200, 50, seed)
        spec = {c: ["a", "b"] for c in df.columns}
        plan = prepare_plan(df, spec, budget=PureDP(1.0), rng=seed)
        kept += sum(c.missing for c in plan.columns)
    assert binom.sf(8, 2400, MISSING_KEEP_RATE) < 3e-4
    assert kept <= 8, kept


def test_a_column_with_missing_values_keeps_its_state():
    df = _complete(3, 4000, 0)
    df.loc[:799, "c0"] = None  # 20 % missing: far above the threshold
    plan = prepare_plan(df, {c: ["a", "b"] for c in df.columns}, budget=PureDP(1.0), rng=0)
    assert plan.column("c0").missing and not plan.column("c1").missing
