"""Step 2 of :func:`~pgm_dp.table.fit.fit_table`: the marginals chosen and measured on the
prepared table, with what is left of the budget after the preparation.

``"aim"`` (default): AIM (McKenna, Mullins, Sheldon & Miklau 2022,
:func:`pgm_dp.select.aim`) chooses marginals against the workload round by round, starting
from the preparation's one-way tables (already paid for: AIM's round 0 is not run again;
:func:`one_way_measurements`). Its defaults are set here: the workload
(:func:`~pgm_dp.select.plan.default_workload`), the rounds
(:func:`~pgm_dp.select.plan.aim_rounds`) and the in-loop estimator (the naive MLE to
:data:`LOOP_TOL`). When the prepared domain leaves AIM nothing to select, the result is the
one-way tables (:func:`one_way_only`), with a note. ``"mst"``: MST's spanning tree
(:func:`pgm_dp.select.select_cliques`, ``mst_fraction`` of the rest), then one release of
the chosen pairs (pure ε only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import PrivacyParameterError
from ..models import MarkovRandomField
from ..privacy import NoisyMarginals, PureDP, release_marginals
from ..privacy.budget import Budget
from ..select import (
    AIMResult,
    AIMRound,
    NaiveMLEEstimator,
    Workload,
    aim,
    merged_release,
    resolve_workload,
    select_cliques,
    with_one_way,
)
from ..select.plan import (
    aim_rounds,
    check_aim_options,
    default_workload,
    most_rounds,
    usable_workload,
)

__all__ = [
    "LOOP_TOL",
    "SELECTIONS",
    "SelectionPlan",
    "Chosen",
    "choose",
    "one_way_measurements",
    "one_way_only",
]

#: Stopping tolerance of AIM's in-loop naive MLE (the largest marginal mismatch): on Adult
#: at ε = 1 it selected the same marginals as AIM's default 1e-5 in a third of the time.
LOOP_TOL = 1e-3
#: Cells that one of AIM's in-loop naive fits may calibrate in all: at most
#: ``LOOP_CELLS_ITERS // S`` L-BFGS iterations on a junction tree of ``S`` cells (at least
#: ``MIN_ITERS``, :func:`~pgm_dp.select.estimators.iteration_limit`), so that a round's
#: cost is bounded whatever the model's size; warm-started, a fit rarely needs more.
LOOP_CELLS_ITERS = 20_000_000
#: The selection mechanisms of :func:`~pgm_dp.table.fit.fit_table`.
SELECTIONS = ("aim", "mst")


@dataclass(frozen=True)
class SelectionPlan:
    """The selection's options, checked before anything is read (``check_*``, in
    :func:`~pgm_dp.table.fit.plan_table`).

    Args:
        how: ``"aim"`` or ``"mst"``.
        workload: AIM's workload (``None``: :func:`~pgm_dp.select.plan.default_workload`).
        max_model_size: AIM's largest model, in MB.
        max_rounds: AIM's rounds (``None``: :func:`~pgm_dp.select.plan.aim_rounds`).
        estimator: AIM's in-loop estimator (``None``: the naive MLE to :data:`LOOP_TOL`).
        mst_fraction: MST's share of the rest for its selection, in ``(0, 1)``.
        progress: whether AIM shows its rounds.
    """

    how: str = "aim"
    workload: Any = None
    max_model_size: float = 80.0
    max_rounds: int | None = None
    estimator: Any = None
    mst_fraction: float = 0.5
    progress: bool = False

    def check_how(self) -> None:
        """The selection's name, checked first."""
        if self.how not in SELECTIONS:
            raise PrivacyParameterError(f"selection must be one of {SELECTIONS}, got {self.how!r}")

    def check_budget(self, budget: Budget) -> None:
        """MST's budget (pure ε only) and its fraction."""
        if self.how == "mst" and not budget.is_pure:
            raise PrivacyParameterError("MST selection runs under pure epsilon-DP; drop delta")
        if not 0 < self.mst_fraction < 1:
            raise PrivacyParameterError(
                f"mst_fraction must be in (0, 1), got {self.mst_fraction!r}"
            )

    def check_options(self, columns: list, compress: bool | None) -> None:
        """AIM's options against the declared ``columns`` (AIM checks them again on the
        prepared domain; :func:`~pgm_dp.select.plan.check_aim_options`)."""
        if self.how == "aim":
            options = (self.workload, self.max_model_size, self.max_rounds, self.estimator)
            check_aim_options(columns, options, compress)


@dataclass(frozen=True)
class Chosen:
    """What the selection gives the fit: ``result`` (:class:`~pgm_dp.select.AIMResult` or
    MST's :class:`~pgm_dp.select.Selection`), the ``release`` of every table measured, the
    ``workload`` (as AIM used it: resolved, :class:`~pgm_dp.select.Workload`, when AIM ran)
    and the ``notes`` for the report."""

    result: Any
    release: NoisyMarginals
    workload: Any
    notes: tuple[str, ...] = ()


def choose(codes, prepared, plan: SelectionPlan, rest: Budget, gen, acc) -> Chosen:
    """The marginals chosen and measured on the prepared table's ``codes`` with ``rest``
    (module docstring), every charge on ``acc``."""
    if plan.how == "aim":
        return _aim(codes, prepared, plan, rest, gen, acc)
    k = prepared.max_records_per_person
    sel = select_cliques(
        codes,
        PureDP(rest.epsilon * plan.mst_fraction),
        prepared.domain,
        rng=gen,
        accountant=acc,
        max_records_per_person=k,
    )
    rel = release_marginals(
        codes,
        MarkovRandomField(prepared.domain, sel.cliques),
        budget=PureDP(rest.epsilon * (1 - plan.mst_fraction)),
        mechanism="discrete_laplace",
        rng=gen,
        accountant=acc,
        what="mst: measure",
        max_records_per_person=k,
    )
    return Chosen(sel, with_one_way(sel, rel), plan.workload)


def one_way_measurements(prepared) -> NoisyMarginals:
    """The preparation's noisy one-way tables on its compressed domain as AIM's first
    measurements (round 0), with the one-way release's budget, mechanism and total. A
    ``"<rare>"`` cell holds the sum of its merged noisy counts; its larger variance is not
    kept (a table carries one noise model), which the estimators only use to weigh repeated
    measurements."""
    one = prepared.one_way
    tables = prepared.compressed_measurements()
    cliques = [(name,) for name in tables]
    return one.with_tables(
        [counts for counts, _ in tables.values()],
        [one.noise[c] for c in cliques],
        domain=prepared.domain,
        cliques=cliques,
    )


def one_way_only(prepared, measured: NoisyMarginals, rest: Budget) -> AIMResult:
    """AIM's result when it has nothing to select: the one-way tables ``measured`` by the
    preparation, as round 0; ``rest`` is not spent."""
    one = prepared.one_way
    release = merged_release(
        measured,
        budget=one.budget,
        mechanism=one.mechanism,
        sensitivity=prepared.max_records_per_person,
    )
    first = AIMRound(
        round=0,
        cliques=tuple(dict.fromkeys(measured.cliques)),
        scale=0.0,
        selection_epsilon=None,
        measure_cost=0.0,
        select_cost=0.0,
        used=0.0,
    )
    return AIMResult(
        cliques=(),
        release=release,
        rounds=(first,),
        model=None,
        budget=rest,
        notion=rest.notion,
        total=rest.amount,
        measurements=measured,
    )


def _aim(codes, prepared, plan: SelectionPlan, rest: Budget, gen, acc) -> Chosen:
    dom, asked = prepared.domain, plan.workload
    measured = one_way_measurements(prepared) if prepared.one_way is not None else None
    wanted = default_workload(dom, rest.notion) if asked is None else asked
    resolved, workload, notes = usable_workload(dom, wanted)
    if asked is None and wanted is not None:
        notes.append(
            "AIM's workload: every triple (pure epsilon's default where triples are "
            "small: pgm_dp.select.plan.default_workload)"
        )
    if resolved is None and measured:
        result = one_way_only(prepared, measured, rest)
        return Chosen(result, result.release, workload, tuple(notes))
    if resolved is None:  # nothing measured yet: AIM's own refusal
        resolved = resolve_workload(dom, workload)
    rounds = _rounds(prepared, plan.max_rounds, resolved, rest)
    estimator = plan.estimator  # AIM's fits to LOOP_TOL: the model returned is the learner's
    if estimator is None:
        estimator = NaiveMLEEstimator(
            tol=LOOP_TOL, loop_tol=LOOP_TOL, max_cells_iters=LOOP_CELLS_ITERS
        )
    result = aim(
        codes,
        dom,
        rest,
        resolved,
        rng=gen,
        accountant=acc,
        max_model_size=plan.max_model_size,
        max_rounds=rounds,
        measured=measured,
        progress=plan.progress,
        estimator=estimator,
        max_records_per_person=prepared.max_records_per_person,
    )
    return Chosen(result, result.release, resolved, tuple(notes))


def _rounds(prepared, asked: int | None, workload: Workload, rest: Budget) -> int | None:
    """AIM's rounds: as asked, else :func:`~pgm_dp.select.plan.aim_rounds` from the records
    the one-way tables estimate, or :func:`~pgm_dp.select.plan.most_rounds` (the cost cap)
    without them; the cells and candidates of the resolved ``workload``."""
    if asked is not None:
        return asked
    dom = prepared.domain
    cells, m = list(workload.cells), len(workload.candidates)
    n_hat = prepared.one_way.total if prepared.one_way is not None else 0.0
    if not n_hat:
        return most_rounds(rest.notion, len(dom), m)
    k = prepared.max_records_per_person
    return aim_rounds(n_hat, cells, rest.notion, rest.amount, len(dom), k, candidates=m)
