"""Findings of the privacy audit of issue 37, each on a neighbouring pair (one record
replaced, the relation the learners claim) or a crafted input: a data-dependent step count
(Zhang et al.'s Alg. 3), a Newton iteration count and a refusal that depend on the data,
refusals after a charge (``fit_table``, PSGD), a saved file that widens a memory limit, a
spent budget printed above the total. Each test failed before its fix; none has a false-alarm
rate (the assertions are about what is released, not about noise)."""

from __future__ import annotations

import numpy as np
import pytest

from pgm_dp.learners.zhang import learn_pairwise
from pgm_dp.privacy import ZCDP, Accountant


# -- 1. Alg. 3's T from the smallest |S_uv| -----------------------------------------------------
def _pair_of_tables() -> tuple[np.ndarray, np.ndarray]:
    """``k = 3``, ``p = 2``, ``n = 186``: node 0 has 31, 31, 124 records in states 0, 1, 2
    (smallest ``|S_uv| = 62``); the neighbour moves one record of node 0 from 2 to 0 (63)."""
    node0 = np.repeat([0, 1, 2], [31, 31, 124])
    node1 = np.tile([0, 1, 2], 62)
    d = np.stack([node0, node1], axis=1)
    d2 = d.copy()
    d2[-1, 0] = 0  # one record replaced
    return d, d2


def test_pairwise_steps_and_scale_do_not_depend_on_the_subset_sizes():
    """Before: T = 7 on D and 8 on D' on every draw (eps = inf against rho-zCDP)."""
    d, d2 = _pair_of_tables()
    a = learn_pairwise(d, 3, 1.0, 1.0, rng=0)
    b = learn_pairwise(d2, 3, 1.0, 1.0, rng=0)
    assert a.steps == b.steps
    assert a.sum_scale == b.sum_scale


def test_pairwise_fit_info_is_the_same_function_of_public_numbers_on_neighbours():
    from pgm_dp import Domain
    from pgm_dp.learners.zhang import ZhangPairwise

    dom = Domain(["a", "b"], [3, 3])
    infos = []
    for data in _pair_of_tables():
        acc = Accountant(ZCDP(1.0))
        fit = ZhangPairwise().fit(data, dom, budget=ZCDP(1.0), rng=0, accountant=acc)
        infos.append(({k: v for k, v in fit.info.items() if k not in ("W", "Theta")},
                      [(c.what, c.scale, c.cost) for c in acc.charges]))  # fmt: skip
    assert infos[0] == infos[1]


def test_a_pairwise_subset_without_records_is_not_refused():
    """Before: D' (S_12 of node 0 empty) refused, D (one record in it) released."""
    d = np.zeros((40, 2), dtype=int)
    d[:, 1] = np.arange(40) % 3
    d[0, 0] = 1
    d2 = d.copy()
    d2[0, 0] = 0
    a = learn_pairwise(d, 3, 1.0, 1.0, rng=0)
    b = learn_pairwise(d2, 3, 1.0, 1.0, rng=0)
    assert a.steps == b.steps and np.all(np.isfinite(b.W))


# -- 3, 4. ising_logistic: Newton's iteration count, its refusal, debias, the relation ------------
def _spins_pair(n: int = 31, p: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    z = np.where(np.random.default_rng(seed).random((n, p)) < 0.5, -1.0, 1.0)
    z2 = z.copy()
    z2[0] = -z2[0]  # one record replaced
    return z, z2


def test_logistic_releases_no_iteration_count_and_the_same_public_fields():
    from dataclasses import fields

    from pgm_dp.learners.zhang import OutputPerturbationIsing
    from pgm_dp.learners.zhang.logistic import LogisticEstimate
    from pgm_dp.models import ising

    assert {f.name for f in fields(LogisticEstimate)} == {"A", "theta", "lam2", "sigma", "spent"}
    truth = ising(np.zeros((3, 3)), np.zeros(3))
    infos = []
    for z in _spins_pair():
        fit = OutputPerturbationIsing().fit(((z + 1) / 2).astype(int), truth, budget=ZCDP(1.0),
                                            rng=0)  # fmt: skip
        infos.append({k: v for k, v in fit.info.items() if k not in ("A", "theta")})
    assert infos[0] == infos[1] and set(infos[0]) == {"lam2", "sigma", "spent", "budget"}


def test_logistic_is_not_refused_on_one_data_set_and_released_on_its_neighbour():
    """Before: lam2 = 1e-12, max_iter = 9 refused some data sets ("Newton did not reach")
    and released their neighbours, and debias raised LinAlgError after the charge at such a
    lam2. Now both sides are released, with the same public fields and charges."""
    from pgm_dp.learners.zhang.logistic import learn_ising_logistic

    for seed in range(4):
        seen = []
        for z in _spins_pair(seed=seed):
            acc = Accountant(ZCDP(1.0))
            est = learn_ising_logistic(z, 1.0, lam2=1e-12, max_iter=9, rng=0, accountant=acc)
            seen.append((est.lam2, est.sigma, est.spent, [(c.what, c.cost) for c in acc.charges]))
        assert seen[0] == seen[1]


def test_logistic_solver_is_within_its_stated_accuracy_even_when_newton_stops_early():
    """Newton cut at one step: the certified gradient descent finishes (no refusal) within
    ``gamma / (2 lam2)`` of the minimiser that Newton reaches in full."""
    from pgm_dp.learners.zhang.logistic import _fit

    z = np.where(np.random.default_rng(3).random((400, 4)) < 0.3, -1.0, 1.0)
    full = _fit(z, 0.05, 0.01, 100)
    cut = _fit(z, 0.05, 0.01, 1)
    gamma = 0.01 * 2.0 / 400
    assert np.max(np.linalg.norm(full - cut, axis=1)) <= gamma / 0.05


def test_debias_never_raises_on_extreme_released_weights():
    """Before: LinAlgError (singular H) after the charge, at lam2 = 1e-9's noise."""
    from pgm_dp.learners.zhang.logistic import debias

    W = np.random.default_rng(0).normal(0.0, 1e6, (4, 5))
    out = debias(W, 1e-9)
    assert out.shape == W.shape and np.all(np.isfinite(out))
