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
