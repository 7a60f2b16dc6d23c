"""Private choice of the marginals to measure: workload-aware (AIM) or a tree of pairs (MST).

* :mod:`.aim`: AIM (McKenna, Mullins, Sheldon & Miklau 2022), :func:`aim`.
* :mod:`.bounds`: AIM's per-query error bounds (its Sec. 5), :func:`aim_error_bounds`.
* :mod:`.mst`: MST's maximum spanning tree of pairs (McKenna, Miklau & Sheldon 2021),
  :func:`select_cliques`.
* :mod:`.workload`: workloads, the candidate set and the model-size filter.
* :mod:`.schedule`: AIM's budget annealing (zCDP, and a pure-DP variant).
* :mod:`.estimators`: the measurements as one release; the estimators refitted each round.
* :mod:`.mle`: the MLE from clique marginals on a NumPy junction-tree calibration
  (:mod:`pgm_dp.inference.queries`; AIM's in-loop fits).

A layer above the learners it calls (:class:`LearnerEstimator` refits any learner each
round) and below the workflow. Its MLE stays apart from the compiled solver of
:mod:`pgm_dp.learners.mle`: AIM changes the junction tree every round, where one compile per
round would outweigh the solve, and the two solvers' optima agree only to their tolerances.
"""

from .aim import (
    AIMResult,
    AIMRound,
    ScoredRound,
    aim,
    model_marginals,
    select_marginal,
    should_anneal,
)
from .bounds import ErrorBound, aim_error_bounds, bound_intervals
from .estimators import LearnerEstimator, NaiveMLEEstimator, merged_release
from .mle import fit_tables
from .mst import Selection, pair_scores, select_cliques, with_one_way
from .schedule import Schedule
from .workload import (
    WORKLOAD_MAX_CELLS,
    Workload,
    candidate_weights,
    downward_closure,
    filter_candidates,
    junction_tree_cliques,
    model_size_mb,
    resolve_workload,
    workload_cliques,
)

__all__ = [
    "aim",
    "AIMResult",
    "AIMRound",
    "ScoredRound",
    "ErrorBound",
    "aim_error_bounds",
    "bound_intervals",
    "select_marginal",
    "should_anneal",
    "model_marginals",
    "Schedule",
    "merged_release",
    "NaiveMLEEstimator",
    "LearnerEstimator",
    "fit_tables",
    "Selection",
    "select_cliques",
    "pair_scores",
    "with_one_way",
    "WORKLOAD_MAX_CELLS",
    "Workload",
    "resolve_workload",
    "workload_cliques",
    "downward_closure",
    "candidate_weights",
    "junction_tree_cliques",
    "model_size_mb",
    "filter_candidates",
]
