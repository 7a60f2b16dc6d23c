"""A user's table to a private model, end to end: :func:`fit_table`.

The steps, each charged to one accountant before any noise is drawn:

0. **Plan** (:func:`plan_table`): every option checked once, before anything is read, into
   one :class:`TablePlan` that holds the budget's split as :class:`~pgm_dp.privacy.Budget`
   values.
1. **Prepare** (:func:`pgm_dp.prepare.prepare_table`, in one pass over the table): the
   table's columns held against the plan, then checked and encoded,
   identifier-like columns refused (or dropped), numeric columns binned (private quantiles
   when only bounds are declared), and the one-way marginals of every column released with
   ``prepare_share`` of the budget, their rare states merged into ``"<rare>"`` (MST's
   ``compress_domain``).
2. **Select and measure** with the rest (:mod:`pgm_dp.table.selection`): AIM (McKenna,
   Mullins, Sheldon & Miklau 2022) against ``workload``, starting from step 1's one-way
   tables, or MST's spanning tree (pure ε only). The default workload
   (:func:`~pgm_dp.select.plan.default_workload`) is every pair under zCDP; under pure ε,
   where each table measured divides ε, every triple when triples have few cells: a triple
   answers three pairs for one table's price.
3. **Fit** a registered release learner (``naive``: naive MLE, Bernstein et al. 2017, Sec.
   3.1; ``cgm``: CGM-EM) to every table measured, one-way tables included.
   No cell is left at zero probability by the noise: the fit is mixed with the private
   independent model on its junction tree at the weight of one noisy cell's expected count
   (:func:`~pgm_dp.table.check.floored_model`). The model is then expanded back to the
   full domain (:func:`~pgm_dp.table.synth.expand_model`): a merged state gets an even share
   of its group, as decoding draws it.
4. **Check** (:mod:`pgm_dp.table.check`): ``check_share`` of the budget (2 %), held out
   from step 2, measures how much worse the fitted model is on the workload than the
   private independent model (one noisy number); when it looks worse, the independent
   model is returned instead (post-processing). Where that check is not run (its noise
   too large), or finds nothing, the report's misfit check (released tables only,
   penalised by the models' numbers of parameters) still returns the independent model
   when the fit is no better (:func:`~pgm_dp.table.check.apply_misfit_check`).
5. **Report** (:mod:`pgm_dp.table.report`): what was selected, the budget per step, the
   expected error, the check, and a
   :class:`~pgm_dp.table.report.WorseThanIndependentWarning` when the model explains the
   noisy tables, or the workload (step 4), worse than the private independent model does.

Budget split (data-independent, decided before anything is read): the one-way tables get
:func:`~pgm_dp.select.plan.one_way_share` of the budget, AIM plans its rounds with
:func:`~pgm_dp.select.plan.aim_rounds`; :mod:`pgm_dp.select.plan` states the rules.

Persons: with a person column (``person=``, or a spec entry ``"person"``) the budget protects
one person (:mod:`pgm_dp.prepare.persons`): at most ``K = max_records_per_person`` of their
rows are kept first, and every step's sensitivity is ``K`` times one record's.

Budgets: ``PureDP(ε)`` runs AIM's pure variant (discrete Laplace); ``ApproxDP(ε, δ)``
runs everything in zCDP at the largest ``ρ`` whose conversion fits (discrete Gaussian
noise, :func:`pgm_dp.privacy.zcdp_rho_within`), its accountant holding that ``ZCDP(ρ)``
(the report gives both); ``ZCDP(ρ)`` as is.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from .. import learners
from .._progress import step
from ..errors import PrivacyParameterError
from ..learners.base import Fit
from ..models import MarkovRandomField
from ..prepare._spec import is_drop
from ..prepare.derived import check_derived, derived_to_json, parse_derived
from ..prepare.persons import PERSON, with_person
from ..prepare.table import Preparation, PreparedTable, prepare_table
from ..privacy import ZCDP, Accountant, NoisyMarginals
from ..privacy.accountant import check_accountant
from ..privacy.budget import Budget, budget_of
from ..rng import RngLike, as_generator
from ..select.estimators import NaiveMLEEstimator, iteration_limit, refine_noise_weighted
from ..select.plan import check_of, one_way_share, rest_of, split_budget
from .check import (
    apply_check,
    apply_misfit_check,
    check_share,
    check_skipped,
    fit_check,
    floored_model,
)
from .report import build_report, warn_workload_check
from .selection import Chosen, SelectionPlan, choose
from .synth import expand_model, sample_table

__all__ = ["TableFit", "TablePlan", "fit_table", "plan_table", "REFINE_ITERS", "refine_steps"]

#: Mirror-descent steps refining the naive MLE of the measurements (``select``'s).
REFINE_ITERS = 1000
#: Cells calibrated by the refinement in all: ``REFINE_CELL_STEPS // S`` steps (at most
#: ``REFINE_ITERS``) for a junction tree of ``S`` cells (:func:`refine_steps`).
REFINE_CELL_STEPS = 200_000_000


@dataclass(frozen=True)
class TableFit:
    """What :func:`fit_table` returns: ``fit`` (model on ``plan.full_domain``, rare states
    expanded, :func:`~pgm_dp.table.synth.expand_model`; ``info`` holds the
    ``budget`` spent, the ``report`` and the ``preparation`` as JSON), the ``plan``, the
    ``release`` of every table the fit used, the ``report`` (dict) and the ``selection``
    result (:class:`~pgm_dp.select.AIMResult` or MST's
    :class:`~pgm_dp.select.Selection`); ``derived``: the derived columns declared in the
    spec (:mod:`pgm_dp.prepare.derived`), not modelled."""

    fit: Any
    plan: Any
    release: NoisyMarginals
    report: dict
    selection: Any
    derived: tuple = ()

    def sample(
        self, n: int, rng: RngLike = None, *, numbers: str = "interval", missing: str = "model"
    ):
        """``n`` synthetic records in the user's own values:
        :func:`pgm_dp.table.synth.sample_table` of this fit (the same records for the same
        seed as every other way to sample it; derived columns computed from their source,
        :mod:`pgm_dp.prepare.derived`)."""
        return sample_table(self, n, rng=rng, numbers=numbers, missing=missing)


@dataclass(frozen=True)
class TablePlan:
    """A run of :func:`fit_table`, every option checked (:func:`plan_table`) before anything
    is read or spent.

    Args:
        spec: the preparation's spec, the person declared in it, derived columns left out.
        derived: the derived columns (:mod:`pgm_dp.prepare.derived`), not modelled.
        person: the person column, or ``None`` (one record is protected).
        max_records_per_person: ``K``, the rows kept of each person.
        learner: the registered release learner's name.
        selection: the selection's options (:class:`~pgm_dp.table.selection.SelectionPlan`).
        budget: the budget as asked (the report's guarantee).
        whole: the run's budget in one notion: ``ZCDP(ρ)`` for an ``(ε, δ)`` budget.
        prepare: the preparation's share of ``whole``.
        check: the budget held out of ``whole`` for the workload check (``None``: none;
            :func:`~pgm_dp.select.plan.check_of`).
        prepare_options: :func:`~pgm_dp.prepare.prepare_table`'s other options.
    """

    spec: Mapping | None
    derived: tuple
    person: Hashable | None
    max_records_per_person: int
    learner: str
    selection: SelectionPlan
    budget: Budget
    whole: Budget
    prepare: Budget
    check: Budget | None
    prepare_options: Mapping


def plan_table(
    spec: Mapping | None,
    budget: Budget,
    *,
    learner: str,
    selection: str,
    workload: Any,
    max_model_size: float,
    max_rounds: int | None,
    estimator: Any,
    mst_fraction: float,
    progress: bool,
    prepare_share: float | None,
    check_share_: float | None,
    accountant: Accountant | None,
    person: Hashable | None,
    max_records_per_person: int,
    prepare_options: Mapping,
) -> TablePlan:
    """The :class:`TablePlan` of :func:`fit_table`'s arguments: every option checked here,
    before anything is read or spent; the plan depends on the budget and the declarations
    alone (the preparation then holds the table's columns against it). The budget is
    cut once (:func:`~pgm_dp.select.plan.split_budget`): the preparation's share (default
    :func:`~pgm_dp.select.plan.one_way_share`) and the check's (default
    :data:`~pgm_dp.table.check.CHECK_SHARE`); the caller's ``accountant`` must afford it.

    Args:
        spec, budget, learner, selection, workload, max_model_size, max_rounds, estimator,
            mst_fraction, progress, prepare_share, accountant, person,
            max_records_per_person: as :func:`fit_table` takes them.
        check_share_: :func:`fit_table`'s ``check_share``.
        prepare_options: :func:`fit_table`'s other options, for
            :func:`~pgm_dp.prepare.prepare_table`.
    """
    spec, derived = parse_derived(spec)  # not modelled: computed back in samples
    held = check_share(check_share_)
    chooser = SelectionPlan(
        how=selection,
        workload=workload,
        max_model_size=max_model_size,
        max_rounds=max_rounds,
        estimator=estimator,
        mst_fraction=mst_fraction,
        progress=progress,
    )
    chooser.check_how()
    share = one_way_share(budget) if prepare_share is None else prepare_share
    notion, amount, first, _ = split_budget(budget, share)
    if share + held >= 1:
        raise PrivacyParameterError(
            f"the one-way share {share!r} and the check's share {held!r} leave nothing to select"
        )
    chooser.check_budget(budget)
    if learners.get(learner).kind != "release":
        raise PrivacyParameterError(f"learner {learner!r} fits records, not released tables")
    check_accountant(accountant)
    whole = budget_of(notion, amount)  # one notion for every charge: (ε, δ) held as its ρ
    if accountant is not None:
        accountant.check(whole, what="fit_table")
    spec, person = with_person(spec, person)
    return TablePlan(
        spec=spec,
        derived=derived,
        person=person,
        max_records_per_person=max_records_per_person,
        learner=learner,
        selection=chooser,
        budget=budget,
        whole=whole,
        prepare=first,
        check=check_of(whole, held),
        prepare_options=prepare_options,
    )


def _kept_columns(columns, derived: tuple, spec: Mapping | None) -> list:
    """The ``columns`` that the model will hold: not derived, not dropped by ``spec``, not
    the person."""
    items = spec.items() if isinstance(spec, Mapping) else ()
    left_out = {c for c, v in items if is_drop(v) or (isinstance(v, str) and v == PERSON)}
    left_out |= {d.name for d in derived}
    return [c for c in columns if c not in left_out]


class _PlannedRun(Accountant):
    """A run held in zCDP for a caller's ``(ε, δ)`` accountant, which would add pure charges
    (private quantiles) to ``ε`` apart from ``ρ``: the planned ``ZCDP(ρ)`` is charged there
    once, at the first step; the steps are recorded here (pure ``ε`` as ``ε²/2``)."""

    def __init__(self, whole: ZCDP, outer: Accountant):
        super().__init__(whole)
        self._outer, self._paid = outer, False

    def charge(self, cost, **kwargs):
        self.check(cost, what=kwargs.get("what", ""))
        if not self._paid:
            self._outer.charge(
                self.total,
                what="fit_table: the whole run, planned in zCDP",
                mechanism="zCDP composition of the steps",
                scale=None,
            )
            self._paid = True
        return super().charge(cost, **kwargs)


def _run_accountant(whole: Budget, accountant: Accountant | None) -> Accountant:
    """The accountant every step charges: the caller's, a new one for ``whole``, or, for a
    caller's ``(ε, δ)`` accountant, a :class:`_PlannedRun` of the whole spend."""
    if accountant is None:
        return Accountant(whole)
    if not whole.is_pure and accountant.total.native() != accountant.total:  # an (ε, δ) total
        return _PlannedRun(whole, accountant)
    return accountant


def fit_table(
    df: Any,
    spec: Mapping | None = None,
    *,
    budget: Budget,
    rng: RngLike = None,
    learner: str = "naive",
    selection: str = "aim",
    workload: Any = None,
    max_model_size: float = 80.0,
    max_rounds: int | None = None,
    estimator: Any = None,
    prepare_share: float | None = None,
    mst_fraction: float = 0.5,
    check_share: float | None = None,
    accountant: Accountant | None = None,
    progress: bool = False,
    person: Hashable | None = None,
    max_records_per_person: int = 1,
    **prepare_options: Any,
) -> TableFit:
    """A private model of the pandas DataFrame ``df`` (module docstring). ``spec`` and
    ``prepare_options`` (``categories``, ``bounds``, ``missing``, ``drop_identifiers``,
    ``compress``, ...) go to :func:`~pgm_dp.prepare.prepare_table`, which spends
    ``prepare_share`` of the budget (default :func:`~pgm_dp.select.plan.one_way_share`);
    ``selection``, ``workload``, ``max_model_size``, ``max_rounds``, ``estimator``,
    ``mst_fraction`` and ``progress`` to the selection
    (:class:`~pgm_dp.table.selection.SelectionPlan`); ``learner`` is a registered release
    learner. ``check_share`` (default :data:`~pgm_dp.table.check.CHECK_SHARE`; 0: no check)
    of the budget is held out for the private check against the independent model on the
    workload (:mod:`pgm_dp.table.check`): when the fitted model looks worse, the independent
    model is returned instead and the report says so. Every input error is raised before
    the budget is touched (:func:`plan_table`); when the prepared domain leaves AIM nothing
    to select, the one-way tables are fitted, with a note in the report. ``person``: the
    column of a person, who is then protected, with ``max_records_per_person`` rows (module
    docstring); without it, one record is. ``rng``: ``None`` for a real release (seeds:
    tests).
    """
    plan = plan_table(
        spec,
        budget,
        learner=learner,
        selection=selection,
        workload=workload,
        max_model_size=max_model_size,
        max_rounds=max_rounds,
        estimator=estimator,
        mst_fraction=mst_fraction,
        progress=progress,
        prepare_share=prepare_share,
        check_share_=check_share,
        accountant=accountant,
        person=person,
        max_records_per_person=max_records_per_person,
        prepare_options=prepare_options,
    )
    acc, gen = _run_accountant(plan.whole, accountant), as_generator(rng)
    table = _prepare(df, spec, plan, gen, acc)
    prepared, codes = table.preparation, table.codes
    rest, held, notes = _selection_budget(plan, prepared)
    chosen = choose(codes, prepared, plan.selection, rest, gen, acc)
    fit, refined, seconds = _fit_release(plan.learner, chosen, prepared.domain)
    step("checking the fit")
    dom, k = prepared.domain, prepared.max_records_per_person
    check = fit_check(codes, dom, chosen.workload, fit.model, chosen.release, held, gen, acc, k)
    report = {
        **build_report(fit.model, chosen.release, prepared, chosen.result, acc, learner, budget),
        "fit_cpu_s": seconds,
        "refined": refined,
        "notes": [*notes, *chosen.notes],
    }
    if check is not None:
        fit = apply_check(fit, check, report)
        if "workload_check" in report:
            warn_workload_check(report["workload_check"], learner)
    fit = apply_misfit_check(fit, chosen.release, report)
    info = {**fit.info, "budget": acc.spent, "report": report, "preparation": prepared.to_json()}
    info |= {"derived": derived_to_json(plan.derived)} if plan.derived else {}
    fit = replace(fit, model=expand_model(fit.model, prepared), info=info)
    return TableFit(fit, prepared, chosen.release, report, chosen.result, plan.derived)


def _prepare(df, spec: Mapping | None, plan: TablePlan, gen, acc) -> PreparedTable:
    """Step 1: ``df``'s columns held against ``plan`` (the derived columns declared in
    ``spec``, :func:`~pgm_dp.prepare.derived.check_derived`, and the selection's options,
    such as the workload's columns,
    :meth:`~pgm_dp.table.selection.SelectionPlan.check_options`), then ``df`` prepared with
    ``plan.prepare`` in one pass (:func:`~pgm_dp.prepare.prepare_table`: at most ``K`` rows
    of each person kept first, once, and the codes of those rows). Every input error is
    raised before the budget is touched."""
    check_derived(df, spec, plan.derived)
    kept = _kept_columns(df.columns, plan.derived, plan.spec)
    plan.selection.check_options(kept, plan.prepare_options.get("compress"))
    if plan.derived:  # not modelled
        df = df.drop(columns=[d.name for d in plan.derived])
    step(f"preparing {len(kept)} columns (the one-way tables)")
    return prepare_table(
        df,
        plan.spec,
        budget=plan.prepare,
        rng=gen,
        accountant=acc,
        max_records_per_person=plan.max_records_per_person,
        **plan.prepare_options,
    )


def _selection_budget(plan: TablePlan, prepared: Preparation) -> tuple:
    """``(rest, check, notes)``: the check's budget (``plan.check``) and what the
    preparation's charges and the check leave of ``plan.whole`` for the selection
    (:func:`~pgm_dp.select.plan.rest_of`); a check not worth running, judged from the
    released one-way tables (else later, by ``fit_check``), gives its share to selection."""
    check, k = plan.check, prepared.max_records_per_person
    skipped = prepared.one_way is not None and check_skipped(check, prepared.one_way.total, k)
    if skipped:
        check = None
    rest = rest_of(prepared.charges, plan.whole, check)
    note = f"the workload check was not run: {skipped}; its share went to selection"
    return rest, check, [note] if skipped else []


def _fit_release(learner: str, chosen: Chosen, domain) -> tuple[Fit, Any, float]:
    """Step 3: the learner's fit of every table measured (``_FITS``: the naive MLE refined,
    else the learner's own fit), no cell left at zero probability by the noise
    (:func:`~pgm_dp.table.check.floored_model`); the model on the prepared ``domain``.
    Returns the fit, the refinement's info (``None`` when not refined) and the CPU
    seconds."""
    release = chosen.release
    step(f"fitting the model ({learner}) to {len(release.cliques)} measured tables")
    start = time.process_time()
    fit, refined = _FITS.get(learner, _learner_fit)(learners.get(learner), chosen, domain)
    if any(len(c) > 1 for c in release.cliques):  # else the model is the independent one
        fit = replace(fit, model=floored_model(fit.model, release))
    return fit, refined, time.process_time() - start


def _learner_fit(spec, chosen: Chosen, domain) -> tuple[Fit, None]:
    """The registered learner's own fit of the release."""
    release = chosen.release
    return spec.make().fit(release, MarkovRandomField(domain, release.cliques)), None


def refine_steps(model) -> int:
    """The mirror-descent steps refining ``model`` (:func:`_naive_refined`): each calibrates
    its junction tree of ``S`` cells, so ``REFINE_CELL_STEPS // S`` steps, at least one and
    at most ``REFINE_ITERS``: the refinement's cost is bounded whatever the model's size
    (up to ``max_model_size``). ``S`` depends only on the measured cliques (released) and
    the public domain. The constant is our choice, from ``benchmarks/bench_cost.py`` and the
    real tables (the benchmarks' README, cost of a table fit): on a large model the first
    steps move the 2-way error most.

    Args:
        model: the fitted :class:`~pgm_dp.models.MarkovRandomField`.
    """
    return iteration_limit(model, REFINE_ITERS, REFINE_CELL_STEPS, least=1)


def _naive_refined(spec, chosen: Chosen, domain) -> tuple[Fit, Any]:
    """The naive MLE refined by Private-PGM's noise-weighted mirror descent
    (:func:`refine_steps`: ``REFINE_ITERS`` steps for a junction tree of at most
    ``REFINE_CELL_STEPS / REFINE_ITERS`` cells, fewer for a larger one, so that its cost is
    bounded), which weighs each table by its noise's standard deviation:
    AIM's own estimate. That loss is the Gaussian likelihood; under Laplace noise (pure ε)
    we use it as well (our choice: the weights matter more than the loss's shape, and on
    the real tables it lowered the 2-way TVD). The naive MLE is solved by the NumPy solver
    AIM's rounds use (:class:`~pgm_dp.select.NaiveMLEEstimator`: the learner's objective,
    ``l2`` and ``tol``): nothing is compiled, where a compiled solver's compile time grows
    with the junction tree (minutes on wide numeric tables under zCDP). Where AIM's last
    estimate of the same tables (the naive MLE to :data:`~pgm_dp.table.selection.LOOP_TOL`)
    is at hand, the refinement starts from it and the naive MLE is not solved again."""
    release = chosen.release
    naive = spec.make()
    previous = getattr(chosen.result, "model", None)
    if getattr(previous, "cliques", None) != tuple(release.cliques):
        solve = NaiveMLEEstimator(l2=naive.l2, tol=naive.tol, max_iters=naive.max_iters)
        previous = solve(release, release.cliques, domain, final=True)
    steps = refine_steps(previous)
    step(f"refining the model ({steps} mirror-descent steps)")
    model, refined = refine_noise_weighted(previous, release, steps)
    return Fit(model=model, info={"budget": release.budget}), refined


#: How a learner's fit is made in the table path (by name; the learner's own fit otherwise).
_FITS: dict[str, Callable] = {"naive": _naive_refined}
