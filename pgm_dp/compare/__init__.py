"""Learners compared at one privacy budget: on models sampled from known graphs
(:mod:`pgm_dp.compare.graphs`, Bernstein et al. 2017, Fig. 2), on a user's table
(:mod:`pgm_dp.compare.table`), beside Private-PGM's MST and AIM
(:mod:`pgm_dp.compare.peers`), every model scored the same way as a calibrated junction
tree (:mod:`pgm_dp.compare.calibrated_tree`). ``pgm-dp compare`` drives them.
"""

from __future__ import annotations

from .graphs import (
    LEARNERS,
    CompareResult,
    budget_for,
    column_labels,
    columns_of,
    models_of,
    plot_compare,
    print_result,
    print_times,
    run_compare,
)

__all__ = [
    "LEARNERS",
    "CompareResult",
    "budget_for",
    "column_labels",
    "columns_of",
    "models_of",
    "plot_compare",
    "print_result",
    "print_times",
    "run_compare",
]
