"""Private Frank-Wolfe (Zhang et al. 2020, Alg. 1): convergence, noise scale, budget, audit."""

import math
from dataclasses import fields

import numpy as np
import pytest
from scipy.optimize import minimize

from pgm_dp.errors import BudgetExceededError, DataValidationError
from pgm_dp.learners import private_frank_wolfe
from pgm_dp.learners.zhang.frank_wolfe import (
    frank_wolfe_batch,
    lemma33_steps,
    pfw_lipschitz,
    pfw_noise_scale,
)
from pgm_dp.privacy import ZCDP, Accountant, PureDP, frank_wolfe_step_budget, report_noisy_min
from pgm_dp.privacy.audit import audit_categorical


def _problem(n=300, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d))
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-X @ np.array([2.0, -1.0, 0.0, 0.5]))), 1, -1)
    return X, y.astype(float)


def _loss(w, X, y):
    return float(np.mean(np.logaddexp(0.0, -y * (X @ w))))


def test_noiseless_frank_wolfe_reaches_the_constrained_optimum():
    X, y = _problem()
    radius = 1.5  # the unconstrained optimum lies outside: the constraint is active
    fw = private_frank_wolfe(X, y, radius=radius, rho=None, steps=3000).w
    d = X.shape[1]

    def f(uv):  # w = u - v, u, v >= 0, sum(u + v) <= radius: the L1 ball as a polytope
        return _loss(uv[:d] - uv[d:], X, y)

    cons = [{"type": "ineq", "fun": lambda uv: radius - uv.sum()}]
    ref = minimize(f, np.full(2 * d, 0.01), bounds=[(0, None)] * 2 * d, constraints=cons,
                   method="SLSQP", options={"ftol": 1e-12, "maxiter": 500})  # fmt: skip
    assert np.abs(fw).sum() <= radius + 1e-9
    assert _loss(fw, X, y) - ref.fun < 1e-3
    assert _loss(fw, X, y) >= ref.fun - 1e-6
    np.testing.assert_allclose(fw, ref.x[:d] - ref.x[d:], atol=0.05)


def test_noise_scale_steps_and_budget_are_the_papers():
    X, y = _problem(n=500)
    acc = Accountant(ZCDP(0.5))
    res = private_frank_wolfe(X, y, radius=2.0, rho=0.5, rng=0, accountant=acc)
    L1 = 2 * math.sqrt(2) * 1.0  # logistic loss, ||x||_inf <= 1 (module docstring)
    T = math.ceil((2.0**2) ** (2 / 3) * (500 * math.sqrt(0.5)) ** (2 / 3) / (L1 * 2.0 ** (2 / 3)))
    assert res.steps == T == lemma33_steps(500, 0.5, L1, 2.0)
    assert res.sum_scale / 500 == pytest.approx(L1 * 2.0 * math.sqrt(T) / (500 * math.sqrt(0.5)))
    assert res.sum_scale == pytest.approx(pfw_noise_scale(pfw_lipschitz(1.0), 2.0, T, 1, 0.5))
    assert res.spent == ZCDP(0.5) and acc.spent.rho == pytest.approx(0.5)
    # per step: eps = sqrt(2 rho / T) -> rho / T zCDP (Lemma 2.14); T steps: rho (Lemma 2.15)
    eps = frank_wolfe_step_budget(0.5, T).epsilon
    assert T * eps**2 / 2 == pytest.approx(0.5)


def test_batch_spends_rho_per_problem_and_returns_no_count_of_the_data():
    """``rho`` per problem; what a batch returns besides the noisy ``w`` is the same for two
    tables that differ in each problem's number of records ``n_b`` (no per-problem scale,
    which would give each ``n_b`` exactly)."""
    X, y = _problem(n=400)
    out = []
    for cut in (200, 150):
        rows = np.ones((400, 2))
        rows[cut:, 1] = 0.0
        acc = Accountant(ZCDP(1.0))
        res = frank_wolfe_batch(X, np.stack([y, y], 1), radius=1.0, rho=0.25, rows=rows, rng=1,
                                accountant=acc)  # fmt: skip
        assert acc.spent.rho == pytest.approx(0.5)
        out.append({f.name: getattr(res, f.name) for f in fields(res) if f.name != "w"})
    assert out[0] == out[1]
    want = pfw_noise_scale(pfw_lipschitz(1.0), 1.0, out[0]["steps"], 1, 0.25)
    assert out[0]["sum_scale"] == pytest.approx(want)


def test_bad_input_spends_nothing_and_data_are_not_mutated():
    X, y = _problem(n=50)
    X0, y0 = X.copy(), y.copy()
    acc = Accountant(ZCDP(1.0))
    with pytest.raises(DataValidationError):
        private_frank_wolfe(2 * X, y, radius=1.0, rho=0.1, accountant=acc)
    with pytest.raises(DataValidationError):
        private_frank_wolfe(X, np.zeros(50), radius=1.0, rho=0.1, accountant=acc)
    with pytest.raises(BudgetExceededError):
        private_frank_wolfe(X, y, radius=1.0, rho=2.0, accountant=acc)
    assert acc.spent.rho == 0.0
    private_frank_wolfe(X, y, radius=1.0, rho=0.1, rng=0)
    assert np.array_equal(X, X0) and np.array_equal(y, y0)


def _fw_selection(scores, scale_divisor, trials, rng):
    """The noisy-min step of Alg. 1 as the learner runs it (scale ``2 Delta / eps``), with an
    optional under-noised copy (scale divided by ``scale_divisor``)."""
    eps = 1.0
    delta = 0.5 / scale_divisor  # report_noisy_min's scale is 2 * delta / eps
    tiled = np.tile(scores, (trials, 1))
    return report_noisy_min(tiled, sensitivity=delta, budget=PureDP(eps), rng=rng)


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
@pytest.mark.parametrize("divisor, caught", [(1.0, False), (3.0, True)])
def test_audit_of_the_noisy_min_step(divisor, caught):
    """Neighbouring gradients differ by the sensitivity 0.5 on the two +-C e_1 scores (the
    worst case); the claim is eps = 1. False-alarm rate of the audit: alpha = 1e-3."""
    a = np.array([0.0, 0.0, 0.0, 0.0])
    b = np.array([0.5, -0.5, 0.0, 0.0])  # <+C e_1, g'>, <-C e_1, g'> move in opposite ways
    n = 40_000
    out_a = _fw_selection(a, divisor, n, 0)
    out_b = _fw_selection(b, divisor, n, 1)
    res = audit_categorical(out_a, out_b, categories=range(4), alpha=1e-3)
    assert res.consistent_with(1.0) != caught


def _old_loop(F, Y, mask, radius, steps, sensitivity, budget):
    """The Python loop the compiled program replaced: one report-noisy-min call per step."""
    import jax
    import jax.numpy as jnp

    from pgm_dp.learners.zhang.frank_wolfe import LOGISTIC

    slope = jax.vmap(jax.grad(LOGISTIC.value))
    idx = np.stack([np.flatnonzero(m) for m in mask])
    width, b = idx.shape[1], np.arange(Y.shape[1])
    w, margins = np.zeros((F.shape[1], Y.shape[1])), np.zeros(Y.shape)
    for t in range(1, steps):
        dl = np.asarray(slope(jnp.asarray(margins.ravel()), jnp.asarray(Y.ravel())))
        g = (F.T @ dl.reshape(Y.shape)).T[b[:, None], idx]  # summed scores (module doc)
        score = radius * np.concatenate([g, -g], axis=1)
        k = report_noisy_min(score, sensitivity=sensitivity, budget=budget, rng=0)
        cols, signs = idx[b, k % width], np.where(k < width, radius, -radius)
        mu = 2.0 / (t + 2)
        vertex = np.zeros_like(w)
        vertex[cols, b] = signs
        w, margins = (1 - mu) * w + mu * vertex, (1 - mu) * margins + mu * F[:, cols] * signs
    return w.T


def test_compiled_loop_equals_the_python_loop_given_the_same_noise(monkeypatch):
    """Both paths get the same exact discrete Laplace draws (in lattice units): the compiled
    program must select the same vertices, hence the same iterates."""
    import pgm_dp.learners.zhang.frank_wolfe as fw
    import pgm_dp.privacy.argmax as sel
    from pgm_dp.privacy.samplers import sample_discrete_laplace

    X, y = _problem(n=400, d=4, seed=3)
    Y = np.stack([y, -y, np.sign(X[:, 0] + 1e-9)], axis=1)
    mask = np.array([[1, 1, 1, 0], [0, 1, 1, 1], [1, 0, 1, 1]], bool)
    steps, rho, radius = 40, 0.3, 1.5
    res_steps = fw.frank_wolfe_batch(X, Y, radius=radius, rho=rho, cols=mask, steps=steps)
    assert res_steps.steps == steps
    budget = frank_wolfe_step_budget(rho, steps)
    delta = pfw_noise_scale(pfw_lipschitz(1.0), radius, steps, 1, rho) * budget.epsilon / 2
    t = sel.noisy_min_lattice(delta, budget)[1]
    noise = sample_discrete_laplace(t, (steps - 1, 3, 6), np.random.default_rng(7))
    calls = iter(noise)
    monkeypatch.setattr(sel, "sample_discrete_laplace", lambda t, shape, gen: next(calls))
    monkeypatch.setattr(fw, "sample_discrete_laplace", lambda t, shape, gen: noise[: shape[0]])
    old = _old_loop(X, Y, mask, radius, steps, delta, budget)
    new = fw.frank_wolfe_batch(X, Y, radius=radius, rho=rho, cols=mask, steps=steps, rng=1).w
    np.testing.assert_allclose(new, old, rtol=0, atol=1e-12)
    # the noise matters here: without it the selections differ
    clean = fw.frank_wolfe_batch(X, Y, radius=radius, rho=None, cols=mask, steps=steps).w
    assert not np.allclose(clean, new)
