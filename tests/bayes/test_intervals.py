"""AIM's per-query error bounds and the intervals of the data's workload marginals.

Brute force: the data's own tables are counted and compared with the bounds; no posterior is
fitted (the ``table:`` sites are made by hand), so the file runs in a few seconds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from arviz_base import from_dict

from pgm_dp import Domain
from pgm_dp.bayes import workload_intervals
from pgm_dp.bayes.labels import posterior_dims
from pgm_dp.bayes.model import table_name
from pgm_dp.errors import DomainError
from pgm_dp.privacy import ZCDP, PureDP
from pgm_dp.privacy.noise import NoiseModel
from pgm_dp.select import aim
from pgm_dp.select.bounds import ErrorBound, aim_error_bounds, bound_intervals, l1_noise_bound

DOM = Domain(["A", "B", "C", "D"], [3, 3, 2, 2])


def _data(seed: int, n: int = 4000) -> pd.DataFrame:
    """A chain A - B - C with a strong A - C dependence besides, D independent."""
    gen = np.random.default_rng(seed)
    a = gen.integers(0, 3, n)
    b = (a + gen.integers(0, 2, n)) % 3
    c = np.where(gen.random(n) < 0.7, a % 2, (b + (gen.random(n) < 0.2)) % 2)
    return pd.DataFrame({"A": a, "B": b, "C": c, "D": gen.integers(0, 2, n)})


def _table(df: pd.DataFrame, r) -> np.ndarray:
    t = np.zeros(DOM.sizes(r))
    np.add.at(t, tuple(df[v].to_numpy() for v in r), 1.0)
    return t


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_l1_noise_bound_fails_at_most_as_often_as_stated(kind):
    """Monte Carlo: ``||z||_1`` of 12 cells exceeds the 90 % bound in at most 10 % of 20,000
    draws (plus 1 % for the simulation's own error; seeded)."""
    gen = np.random.default_rng(0)
    noise = NoiseModel(kind, 3.0)
    z = gen.laplace(0, 3.0, (20_000, 12)) if kind == "laplace" else gen.normal(0, 3.0, (20_000, 12))
    bound = l1_noise_bound(noise, 12, 0.1)
    assert np.mean(np.abs(z).sum(1) > bound) <= 0.11
    assert np.mean(np.abs(z).sum(1) > 0.7 * bound) > 0.05  # not vacuous


@pytest.mark.parametrize("budget", [PureDP(1.0), ZCDP(0.05)])
def test_aim_bounds_hold_for_measured_and_unmeasured_marginals(budget):
    """On a tiny model whose selection leaves a real dependence out: every workload pair's
    L1 error of the model AIM's bound is about is within the bound (seeds 0-2), so the
    per-cell intervals contain the data's proportions; the unmeasured bounds are not
    trivial (below ``2 N``)."""
    unmeasured = 0
    for seed in range(3):
        df = _data(seed)
        res = aim(df, DOM, budget, rng=seed, max_rounds=6)
        bounds = aim_error_bounds(res, res.model)
        for r, b in bounds.items():
            truth = _table(df, b.clique)
            assert np.abs(truth - b.total * b.center).sum() <= b.l1, (seed, r)
            lo, hi = bound_intervals(b)
            assert np.all((lo <= truth / len(df) + 1e-9) & (truth / len(df) <= hi + 1e-9))
            if not b.supported:
                unmeasured += 1
                assert b.l1 < 2 * b.total
    assert unmeasured > 0


def _idata(tables: dict, draws: int = 400, seed: int = 0):
    """A posterior-like DataTree with ``table:`` sites drawn around ``tables`` (proportions),
    Dirichlet draws of concentration 4000."""
    gen = np.random.default_rng(seed)
    post = {}
    for c, t in tables.items():
        d = gen.dirichlet(4000 * np.ravel(t) + 1e-3, size=(1, draws))
        post[table_name(c)] = d.reshape(1, draws, *t.shape)
    dims, coords = posterior_dims(DOM, list(tables), list(post))
    return from_dict({"posterior": post}, dims=dims, coords=coords)


def test_unmeasured_intervals_contain_the_data_marginal_a_model_lacks():
    """The model of A-B, B-C (the chain) lacks A-C: its intervals for A-C come from AIM's
    bound and the one-way tables' Fréchet bounds, lie inside both, and contain the data's
    A-C table; a measured pair's interval is its ``table:`` site's quantiles."""
    df = _data(0)
    n = len(df)
    res = aim(df, DOM, PureDP(1.0), rng=0, max_rounds=6)
    cliques = [("A",), ("B",), ("C",), ("D",), ("A", "B"), ("B", "C")]
    idata = _idata({c: _table(df, c) / n for c in cliques})
    bounds = aim_error_bounds(res, res.model, cliques=[("C", "A")])
    out = workload_intervals(idata, cliques, [("C", "A"), ("A", "B")], bounds)
    iv = out[("C", "A")]
    truth = _table(df, ("C", "A")) / n
    assert not iv.supported and iv.lower.shape == (2, 3)
    assert np.all((iv.lower <= truth) & (truth <= iv.upper))
    lo_b, hi_b = bound_intervals(bounds[("C", "A")])
    order = [bounds[("C", "A")].clique.index(v) for v in ("C", "A")]
    assert np.all(iv.upper <= np.transpose(hi_b, order) + 1e-12)
    assert np.all(iv.lower >= np.transpose(lo_b, order) - 1e-12)
    draws = idata.posterior[table_name(("A", "B"))].values.reshape(-1, 3, 3)
    assert out[("A", "B")].supported
    np.testing.assert_allclose(out[("A", "B")].lower, np.quantile(draws, 0.05, axis=0))
    with pytest.raises(DomainError, match="AIM bound"):
        workload_intervals(idata, cliques, [("A", "D")])
    with pytest.raises(DomainError, match="level"):
        workload_intervals(idata, cliques, [("A", "B")], level=1.5)


def test_bound_intervals_hold_for_every_table_within_the_bound_whatever_its_sum():
    """Brute force: every table ``a >= 0`` with ``||a - N̂ c||_1 <= l1`` (its own sum ``N``,
    not ``N̂``) has its proportions ``a / N`` inside :func:`bound_intervals`, and both ends
    are attained; the former ``c ± l1 / (2 N̂)`` missed ``a = (50, 40)`` below."""
    center = np.array([0.5, 0.5])
    bound = ErrorBound(("A",), 10.0, 100.0, center, False, 0.9)
    lo, hi = bound_intervals(bound)
    assert 50 / 90 <= hi[0] + 1e-12 and 0.5 + 10 / 200 < 50 / 90
    gen = np.random.default_rng(0)
    for _ in range(60):
        c = gen.dirichlet(np.ones(3))
        total, l1 = 100.0, float(gen.uniform(1, 80))
        lo, hi = bound_intervals(ErrorBound(("A",), l1, total, c, False, 0.9))
        seen_lo, seen_hi = np.ones(3), np.zeros(3)
        for _ in range(200):
            d = gen.laplace(size=3)
            a = np.maximum(total * c + d / np.abs(d).sum() * l1 * gen.uniform(0, 1), 0.0)
            if np.abs(a - total * c).sum() > l1 or a.sum() <= 0:
                continue
            p = a / a.sum()
            assert np.all((lo - 1e-12 <= p) & (p <= hi + 1e-12))
        for j in range(3):  # the extreme tables of the derivation
            for x in (0.0, l1):
                for sign in (1, -1):
                    a = total * c.copy()
                    a[j] += sign * x
                    rest, take = [i for i in range(3) if i != j], l1 - x
                    for i in rest:  # move the rest of the L1 budget the other way
                        step = min(take, a[i]) if sign > 0 else take
                        a[i] += -step if sign > 0 else step
                        take -= step
                    if a[j] < 0 or a.sum() <= 0:
                        continue
                    seen_lo[j] = min(seen_lo[j], a[j] / a.sum())
                    seen_hi[j] = max(seen_hi[j], a[j] / a.sum())
        assert np.all(seen_hi <= hi + 1e-9) and np.all(seen_lo >= lo - 1e-9)
        attained = np.isclose(seen_hi, hi) | (hi == 1.0)
        assert attained.all()


def test_the_residual_is_the_last_choice_s_misfit_per_root_cell():
    """``ErrorBound.residual`` of an unmeasured pair is the misfit scale the last selection
    implies, ``((||ỹ_T - N̂ m_T||_1 - b n_T)_+ / Σ sqrt(m_T) + b n_r / Σ sqrt(c_r)) / (N̂
    sqrt(2/π))``, recomputed here; a measured pair has none."""
    from pgm_dp.select.aim import model_marginals

    df = _data(0)
    res = aim(df, DOM, PureDP(1.0), rng=0, max_rounds=6)
    bounds = aim_error_bounds(res, res.model)
    scored, chosen = res.last_scored, res.rounds[-1].cliques[0]
    y_t = np.asarray(res.measurements.tables()[-1], dtype=float)
    m_t = model_marginals(scored.model, [chosen])[0]
    beyond = max(np.abs(y_t - scored.total * m_t).sum() - scored.noise_bias * y_t.size, 0.0)
    unsupported = [b for b in bounds.values() if not b.supported]
    assert unsupported
    for b in unsupported:
        own = scored.noise_bias * b.center.size / np.sqrt(b.center).sum()
        want = (beyond / np.sqrt(m_t).sum() + own) / (scored.total * np.sqrt(2 / np.pi))
        assert np.isclose(b.residual, want)
    assert all(b.residual is None for b in bounds.values() if b.supported)


def test_an_unmeasured_interval_is_the_allowance_inside_the_guaranteed_sets():
    """Inside the guaranteed sets (AIM's bound, the one-way tables' Fréchet bounds) always;
    ``c ± z s sqrt(c)`` in the cells where that allowance lies inside them; with an allowance
    far outside a tight L1 bound, the bound's intervals."""
    center = np.array([[0.4, 0.1, 0.0], [0.2, 0.2, 0.1]])
    cliques = [("C",), ("A",)]
    idata = _idata({("C",): center.sum(1), ("A",): center.sum(0)}, draws=2000)
    bound = ErrorBound(("C", "A"), 300.0, 1000.0, center, False, 0.9, residual=0.05)
    iv = workload_intervals(idata, cliques, [("A", "C")], {("C", "A"): bound})[("A", "C")]
    half = 1.6448536 * 0.05 * np.sqrt(center.T)  # z of 90 % times s sqrt(c)
    lo_a, hi_a = center.T - half, center.T + half
    lo_b, hi_b = (x.T for x in bound_intervals(bound))
    ones = {
        v: idata.posterior[table_name((v,))].values.reshape(-1, 2 if v == "C" else 3) for v in "AC"
    }
    hi_f = np.minimum.outer(np.quantile(ones["A"], 0.95, 0), np.quantile(ones["C"], 0.95, 0))
    lo_g, hi_g = lo_b, np.minimum(hi_b, hi_f)  # the guaranteed sets (Fréchet's lower end: 0)
    assert np.all(iv.lower >= lo_g - 1e-12) and np.all(iv.upper <= hi_g + 1e-12)
    inside = (lo_a >= lo_g) & (hi_a <= hi_g)
    assert inside.sum() >= 3 and (~inside).any()
    assert np.allclose(iv.lower[inside], lo_a[inside]) and np.allclose(
        iv.upper[inside], hi_a[inside]
    )
    assert np.all(iv.lower <= center.T) and np.all(center.T <= iv.upper)
    far = ErrorBound(("C", "A"), 10.0, 1000.0, center, False, 0.9, residual=0.5)
    wide = workload_intervals(idata, cliques, [("A", "C")], {("C", "A"): far})[("A", "C")]
    lo_b, hi_b = (x.T for x in bound_intervals(far))
    assert np.all(wide.lower >= lo_b - 1e-12) and np.all(wide.upper <= hi_b + 1e-12)
