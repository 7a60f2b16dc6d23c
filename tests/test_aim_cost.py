"""The cost caps of ``fit_table``'s AIM plan (:mod:`pgm_dp.select.plan`): the rounds are
bounded by the public width of the workload, whatever the (estimated) number of records."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from pgm_dp.privacy import ApproxDP
from pgm_dp.select.aim import ROUNDS_PER_VARIABLE
from pgm_dp.select.plan import ROUND_CANDIDATES, aim_rounds, most_rounds
from pgm_dp.table.fit import REFINE_CELL_STEPS, REFINE_ITERS, fit_table, refine_steps
from pgm_dp.table.selection import LOOP_CELLS_ITERS


def _pairs_and_one_ways(d: int) -> int:
    return len(list(combinations(range(d), 2))) + d


@pytest.mark.parametrize("d", [3, 5, 10, 14, 20, 30])
def test_planned_rounds_at_most_the_cost_cap_for_any_n_hat(d):
    m = _pairs_and_one_ways(d)
    for n_hat in (1e3, 1e5, 1e7, 1e12):
        for notion, amount in (("zcdp", 0.5), ("pure", 3.0)):
            t = aim_rounds(n_hat, [100] * m, notion, amount, d, candidates=m)
            assert d <= t <= most_rounds(notion, d, m) <= ROUNDS_PER_VARIABLE[notion] * d
            assert t == d or t * m <= ROUND_CANDIDATES


def test_cost_cap_depends_on_the_width_only():
    # a huge N-hat reaches the cap, the same for every N-hat above it; no cap: AIM's 16 d
    d, m = 20, _pairs_and_one_ways(20)
    capped = {aim_rounds(n, [64], "zcdp", 0.1, d, candidates=m) for n in (1e6, 1e8, 1e12)}
    assert capped == {max(d, ROUND_CANDIDATES // m)} == {most_rounds("zcdp", d, m)}
    assert aim_rounds(1e12, [64], "zcdp", 0.1, d) == ROUNDS_PER_VARIABLE["zcdp"] * d
    # more candidates, fewer rounds; never below one per variable
    caps = [most_rounds("zcdp", 8, m) for m in (10, 100, 1000, 10_000)]
    assert caps == sorted(caps, reverse=True) and caps[-1] == 8


class _Planned(Exception):
    pass


@pytest.mark.parametrize("compress", [True, False])
def test_fit_table_plans_the_capped_rounds(monkeypatch, compress):
    # a wide table with many records at a large budget: the plan is the width's cap (with
    # or without the one-way tables that estimate N)
    import pgm_dp.table.selection as selection

    def planned(*args, max_rounds=None, **kwargs):
        raise _Planned(max_rounds)

    monkeypatch.setattr(selection, "aim", planned)
    rng = np.random.default_rng(0)
    n, d = 20_000, 16
    df = pd.DataFrame({f"c{j}": rng.integers(0, 3, n) for j in range(d)})
    spec = {c: {"categories": [0, 1, 2], "missing": False} for c in df}
    with pytest.raises(_Planned) as got:
        fit_table(df, spec, budget=ApproxDP(50.0, 1e-6), rng=0, compress=compress)
    m = _pairs_and_one_ways(d)
    assert got.value.args[0] == most_rounds("zcdp", d, m) == ROUND_CANDIDATES // m < 16 * d


def test_refine_steps_bounded_by_the_model_cells():
    from pgm_dp import Domain
    from pgm_dp.models import MarkovRandomField

    small = MarkovRandomField(Domain(list("abc"), [4, 4, 4]), [("a", "b"), ("b", "c")])
    assert refine_steps(small) == REFINE_ITERS
    for k in (60, 100, 300):  # junction trees of 2 k^2 .. k^3 cells
        dom = Domain(list("abcd"), [k] * 4)
        for cliques in ([("a", "b"), ("c", "d")], [("a", "b"), ("b", "c"), ("a", "c")]):
            mrf = MarkovRandomField(dom, cliques)
            cells = sum(dom.size(c) for c in mrf.junction_tree().cliques)
            steps = refine_steps(mrf)
            assert 1 <= steps <= REFINE_ITERS
            assert steps * cells <= max(REFINE_CELL_STEPS, cells)
            assert steps == min(REFINE_ITERS, REFINE_CELL_STEPS // cells)


def test_pure_default_workload_keeps_to_pairs_when_triples_break_the_cap():
    from pgm_dp import Domain
    from pgm_dp.select.plan import default_workload
    from pgm_dp.select.workload import candidate_weights, resolve_workload, workload_cliques

    for d in (6, 10, 13, 14, 20):
        dom = Domain([f"x{i}" for i in range(d)], [2] * d)  # triples always cheap in cells
        m = len(candidate_weights(workload_cliques(dom, "3way")))
        want = resolve_workload(dom, "3way") if m * d <= ROUND_CANDIDATES else None
        assert default_workload(dom, "pure") == want
    six = Domain([f"x{i}" for i in range(6)], [2] * 6)
    assert default_workload(six, "pure") == resolve_workload(six, "3way")
    assert default_workload(Domain([f"x{i}" for i in range(20)], [2] * 20), "pure") is None


def test_in_loop_iterations_bounded_by_the_model_cells():
    from pgm_dp import Domain
    from pgm_dp.models import MarkovRandomField
    from pgm_dp.select.estimators import MIN_ITERS, NaiveMLEEstimator, iteration_limit

    small = MarkovRandomField(Domain(list("abc"), [4, 4, 4]), [("a", "b"), ("b", "c")])
    assert iteration_limit(small, 2000, None) == iteration_limit(small, 2000, 1e9) == 2000
    for k in (30, 100, 300):
        mrf = MarkovRandomField(Domain(list("abc"), [k] * 3), [("a", "b"), ("b", "c")])
        cells = sum(mrf.domain.size(c) for c in mrf.junction_tree().cliques)
        iters = iteration_limit(mrf, 2000, LOOP_CELLS_ITERS)
        assert MIN_ITERS <= iters <= 2000
        assert iters == MIN_ITERS or iters * cells <= LOOP_CELLS_ITERS
    with pytest.raises(ValueError):
        NaiveMLEEstimator(max_cells_iters=0)
