"""A user's table to a private model, end to end: :func:`fit_table`.

The steps, each charged to one accountant before any noise is drawn:

1. **Prepare** (:func:`pgm_dp.prepare.prepare_plan`): columns checked and encoded,
   identifier-like columns refused (or dropped), numeric columns binned (private quantiles
   when only bounds are declared), and the one-way marginals of every column released with
   ``prepare_share`` of the budget, their rare states merged into ``"<rare>"`` (MST's
   ``compress_domain``).
2. **Select and measure** with the rest. ``selection="aim"`` (default): AIM (McKenna,
   Mullins, Sheldon & Miklau 2022, :func:`pgm_dp.select.aim`) chooses marginals
   against ``workload`` round by round, starting from step 1's one-way tables (already paid
   for: AIM's round 0 is not run again). The default workload (:func:`default_workload`)
   is every pair under zCDP; under pure ε, where each table measured divides ε, every
   triple when triples have few cells: a triple answers three pairs for one table's price.
   ``selection="mst"``: MST's spanning tree (:func:`pgm_dp.select.select_cliques`,
   ``mst_fraction`` of the rest), then one release of the chosen pairs (pure ε only).
3. **Fit** a registered release learner (``naive``: naive MLE, Bernstein et al. 2017, Sec.
   3.1; ``cgm``: CGM-EM) to every table measured, one-way tables included.
   No cell is left at zero probability by the noise: the fit is mixed with the private
   independent model on its junction tree at the weight of one noisy cell's expected count
   (:func:`~pgm_dp.workload_check.floored_model`). The model is then expanded back to the
   full domain (:func:`expand_model`): a merged state gets an even share of its group, as
   decoding draws it.
4. **Check** (:mod:`pgm_dp.workload_check`): ``check_share`` of the budget (2 %), held out
   from step 2, measures how much worse the fitted model is on the workload than the
   private independent model (one noisy number); when it looks worse, the independent
   model is returned instead (post-processing). Where that check is not run (its noise
   too large), or finds nothing, the report's misfit check (released tables only,
   penalised by the models' numbers of parameters) still returns the independent model
   when the fit is no better (:func:`~pgm_dp.workload_check.apply_misfit_check`).
5. **Report** (:mod:`pgm_dp.fit_report`): what was selected, the budget per step, the
   expected error, the check, and a
   :class:`~pgm_dp.fit_report.WorseThanIndependentWarning` when the model explains the
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
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ._progress import step
from .errors import PrivacyParameterError
from .prepare._spec import is_drop
from .prepare.persons import PERSON
from .privacy import ZCDP, Accountant, NoisyMarginals, PureDP
from .privacy.budget import Budget, budget_of
from .rng import RngLike, as_generator
from .select.plan import (
    MAX_ONE_WAY_SHARE,
    ONE_WAY_EPSILON,
    ONE_WAY_SHARE,
    TARGET_TVD,
    aim_rounds,
    check_aim_options,
    default_workload,
    most_rounds,
    one_way_share,
    rest_of,
    split_budget,
    usable_workload,
)
from .synth import expand_model, full_codes, sample_table

__all__ = [
    "TableFit",
    "fit_table",
    "expand_model",
    "full_codes",
    "aim_rounds",
    "default_workload",
    "one_way_share",
    "split_budget",
    "one_way_measurements",
    "ONE_WAY_SHARE",
    "ONE_WAY_EPSILON",
    "MAX_ONE_WAY_SHARE",
    "TARGET_TVD",
    "SELECTIONS",
    "refine_steps",
]

#: Stopping tolerance of AIM's in-loop naive MLE (the largest marginal mismatch): on Adult
#: at ε = 1 it selected the same marginals as AIM's default 1e-5 in a third of the time.
LOOP_TOL = 1e-3
#: Cells that one of AIM's in-loop naive fits may calibrate in all: at most
#: ``LOOP_CELLS_ITERS // S`` L-BFGS iterations on a junction tree of ``S`` cells (at least
#: ``MIN_ITERS``, :func:`~pgm_dp.select.estimators.iteration_limit`), so that a round's
#: cost is bounded whatever the model's size; warm-started, a fit rarely needs more.
LOOP_CELLS_ITERS = 20_000_000
#: Mirror-descent steps refining the naive MLE of the measurements (``select``'s), at most.
REFINE_ITERS = 1000
#: Cells calibrated by the refinement in all: ``REFINE_CELL_STEPS // S`` steps (at most
#: ``REFINE_ITERS``) for a junction tree of ``S`` cells (:func:`refine_steps`).
REFINE_CELL_STEPS = 200_000_000
#: The selection mechanisms of :func:`fit_table`.
SELECTIONS = ("aim", "mst")


@dataclass(frozen=True)
class TableFit:
    """What :func:`fit_table` returns: ``fit`` (model on ``plan.full_domain``, rare states
    expanded, :func:`expand_model`; ``info`` holds the
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
        """``n`` synthetic records in the user's own values: :func:`pgm_dp.synth.sample_table`
        of this fit (the same records for the same seed as every other way to sample it;
        derived columns computed from their source, :mod:`pgm_dp.prepare.derived`)."""
        return sample_table(self, n, rng=rng, numbers=numbers, missing=missing)


def one_way_measurements(plan) -> NoisyMarginals:
    """The preparation's noisy one-way tables on its compressed domain as AIM's first
    measurements (round 0), with the one-way release's budget, mechanism and total. A
    ``"<rare>"`` cell holds the sum of its merged noisy counts; its larger variance is not
    kept (a table carries one noise model), which the estimators only use to weigh repeated
    measurements."""
    one = plan.one_way
    tables = plan.compressed_measurements()
    cliques = [(name,) for name in tables]
    return one.with_tables(
        [counts for counts, _ in tables.values()],
        [one.noise[c] for c in cliques],
        domain=plan.domain,
        cliques=cliques,
    )


def _declared_columns(df, spec) -> list:
    """The columns that ``spec`` neither drops nor declares the person."""
    items = spec.items() if isinstance(spec, Mapping) else ()
    drop = {c for c, v in items if is_drop(v) or (isinstance(v, str) and v == PERSON)}
    return [c for c in getattr(df, "columns", ()) if c not in drop]


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


def _check(budget, selection, learner, share, mst_fraction, accountant, held=0.0):
    from . import learners
    from .privacy.accountant import check_accountant

    if selection not in SELECTIONS:
        raise PrivacyParameterError(f"selection must be one of {SELECTIONS}, got {selection!r}")
    share = one_way_share(budget) if share is None else share
    notion, amount, first, rest = split_budget(budget, share)
    if share + held >= 1:
        raise PrivacyParameterError(
            f"the one-way share {share!r} and the check's share {held!r} leave nothing to select"
        )
    if selection == "mst" and not budget.is_pure:
        raise PrivacyParameterError("MST selection runs under pure epsilon-DP; drop delta")
    if not 0 < mst_fraction < 1:
        raise PrivacyParameterError(f"mst_fraction must be in (0, 1), got {mst_fraction!r}")
    spec = learners.get(learner)
    if spec.kind != "release":
        raise PrivacyParameterError(f"learner {learner!r} fits records, not released tables")
    check_accountant(accountant)
    # one notion for every charge: an (ε, δ) budget is held as the ρ its conversion allows
    whole = budget_of(notion, amount)
    acc = accountant if accountant is not None else Accountant(whole)
    acc.check(whole, what="fit_table")
    if not whole.is_pure and acc.total.native() != acc.total:  # an (ε, δ) total
        acc = _PlannedRun(whole, acc)  # the whole spend planned before the first charge
    return spec, (notion, amount, first, rest), acc


def _selection_budget(charges, notion: str, amount: float, held: float, plan):
    """``(rest, check, notes)`` (:func:`_rest`); a check not worth running, judged from the
    released one-way tables (else later, by ``fit_check``), gives its share to selection."""
    from .workload_check import check_skipped

    rest, check = rest_of(charges, notion, amount, held)
    k = plan.max_records_per_person
    skipped = plan.one_way is not None and check_skipped(check, plan.one_way.total, k)
    if skipped:
        rest, check = rest_of(charges, notion, amount, 0.0)
    note = f"the workload check was not run: {skipped}; its share went to selection"
    return rest, check, [note] if skipped else []


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
    ``compress``, ...) go to :func:`~pgm_dp.prepare.prepare_plan`, which spends
    ``prepare_share`` of the budget (default :func:`one_way_share`); ``workload``,
    ``max_model_size``, ``max_rounds`` (default :func:`aim_rounds`) and ``estimator``
    (default naive MLE to :data:`LOOP_TOL`) to AIM; ``learner``
    is a registered release learner. ``check_share`` (default
    :data:`~pgm_dp.workload_check.CHECK_SHARE`; 0: no check) of the budget is held out for
    the private check against the independent model on the workload
    (:mod:`pgm_dp.workload_check`): when the fitted model looks worse, the independent model
    is returned instead and the report says so. Every input error is raised before the
    budget is touched; when the prepared domain leaves AIM nothing to select, the one-way
    tables are fitted, with a note in the report. ``person``: the column of a person, who
    is then protected, with ``max_records_per_person`` rows (module docstring); without it,
    one record is. ``rng``: ``None`` for a real release (seeds: tests).
    """
    from .fit_report import build_report, warn_workload_check
    from .prepare import with_person
    from .prepare.derived import derived_to_json, split_derived
    from .workload_check import apply_check, apply_misfit_check, fit_check
    from .workload_check import check_share as _held_share

    spec, derived = split_derived(df, spec)  # not modelled: computed back in samples
    df = df.drop(columns=[d.name for d in derived]) if derived else df
    held = _held_share(check_share)
    spec_l, (notion, amount, first, rest), acc = _check(
        budget, selection, learner, prepare_share, mst_fraction, accountant, held
    )
    spec, who = with_person(spec, person)
    options = (workload, max_model_size, max_rounds, estimator)
    if selection == "aim":
        check_aim_options(_declared_columns(df, spec), options, prepare_options.get("compress"))
    gen, before, k = as_generator(rng), len(acc.charges), max_records_per_person
    step(f"preparing {len(_declared_columns(df, spec))} columns (the one-way tables)")
    plan, codes = _prepared(df, spec, who, k, first, gen, acc, prepare_options)
    rest, held_budget, notes = _selection_budget(acc.charges[before:], notion, amount, held, plan)
    dom = plan.domain
    run = (codes, plan, rest, notion, gen, acc)
    chosen, release, workload, picked = _select(run, selection, options, mst_fraction, progress)
    notes += picked
    fit, refined, seconds = _fit_release(spec_l, learner, release, dom, chosen)
    step("checking the fit")
    check = fit_check(codes, dom, workload, fit.model, release, held_budget, gen, acc, k)
    report = {
        **build_report(fit.model, release, plan, chosen, acc, learner, budget),
        "fit_cpu_s": seconds,
        "refined": refined,
        "notes": notes,
    }
    if check is not None:
        fit = apply_check(fit, check, report)
        if "workload_check" in report:
            warn_workload_check(report["workload_check"], learner)
    fit = apply_misfit_check(fit, release, report)
    info = {**fit.info, "budget": acc.spent, "report": report, "preparation": plan.to_json()}
    info |= {"derived": derived_to_json(derived)} if derived else {}
    fit = replace(fit, model=expand_model(fit.model, plan), info=info)
    return TableFit(fit, plan, release, report, chosen, derived)


def _select(run: tuple, selection: str, options: tuple, mst_fraction: float, progress):
    """``(chosen, release, workload, notes)``: AIM's selection and measurements (:func:`_aim`)
    or MST's (:func:`_mst`), on ``run = (codes, plan, rest, notion, gen, acc)``."""
    codes, plan, rest, notion, gen, acc = run
    if selection == "aim":
        chosen, notes, workload = _aim(codes, plan, rest, notion, options, gen, acc, progress)
        return chosen, chosen.release, workload, notes
    k = plan.max_records_per_person
    chosen, release = _mst(codes, plan.domain, rest.epsilon, mst_fraction, gen, acc, k)
    return chosen, release, options[0], []


def _prepared(df, spec, who, k, budget, gen, acc, options):
    """``(plan, codes)``: ``df`` prepared with ``budget``, at most ``k`` rows of each person
    ``who`` kept first (:func:`~pgm_dp.prepare.bound_records`), and the codes of those rows."""
    from .prepare import bound_records, prepare_plan

    data = df if who is None else bound_records(df, who, k, gen)
    plan = prepare_plan(
        data, spec, budget=budget, rng=gen, accountant=acc, max_records_per_person=k, **options
    )
    return plan, plan.encode(data)


def refine_steps(model) -> int:
    """The mirror-descent steps refining ``model`` (:func:`_fit_release`): each calibrates
    its junction tree of ``S`` cells, so ``REFINE_CELL_STEPS // S`` steps, at least one and
    at most ``REFINE_ITERS``: the refinement's cost is bounded whatever the model's size
    (up to ``max_model_size``). ``S`` depends only on the measured cliques (released) and
    the public domain. The constant is our choice, from ``benchmarks/bench_cost.py`` and the
    real tables (the benchmarks' README, cost of a table fit): on a large model the first
    steps move the 2-way error most.

    Args:
        model: the fitted :class:`~pgm_dp.models.MarkovRandomField`.
    """
    cells = sum(model.domain.size(c) for c in model.junction_tree().cliques)
    return int(min(REFINE_ITERS, max(1, REFINE_CELL_STEPS // max(cells, 1))))


def _fit_release(spec, learner, release, dom, chosen=None):
    """The learner's fit of every table measured; the naive MLE is then refined by
    Private-PGM's noise-weighted mirror descent (:func:`refine_steps`: ``REFINE_ITERS`` steps
    for a junction tree of at most ``REFINE_CELL_STEPS / REFINE_ITERS`` cells, fewer for a
    larger one, so that its cost is bounded), which weighs each
    table by its noise's standard deviation: AIM's own estimate. That loss is the Gaussian
    likelihood; under Laplace noise (pure ε) we use it as well (our choice: the weights
    matter more than the loss's shape, and on the real tables it lowered the 2-way TVD).
    The naive MLE is solved by the NumPy solver AIM's rounds use
    (:class:`~pgm_dp.select.NaiveMLEEstimator`: the learner's objective, ``l2`` and
    ``tol``): nothing is compiled, where a compiled solver's compile time grows with the
    junction tree (minutes on wide numeric tables under zCDP). Where AIM's last estimate
    of the same tables (``chosen.model``, the naive MLE to ``LOOP_TOL``) is given, the
    refinement starts from it and the naive MLE is not solved again. No cell is then left
    at zero probability by the noise (:func:`~pgm_dp.workload_check.floored_model`).
    Returns the fit, the refinement's info (``None`` when not refined) and the CPU seconds
    of both."""
    from .learners.base import Fit
    from .models import MarkovRandomField
    from .select.estimators import NaiveMLEEstimator, refine_noise_weighted

    step(f"fitting the model ({learner}) to {len(release.cliques)} measured tables")
    start = time.process_time()
    if learner != "naive":
        fit = spec.make().fit(release, MarkovRandomField(dom, release.cliques))
        return _floored(fit, release), None, time.process_time() - start
    naive = spec.make()
    solve = NaiveMLEEstimator(l2=naive.l2, tol=naive.tol, max_iters=naive.max_iters)
    previous = getattr(chosen, "model", None)
    same = getattr(previous, "cliques", None) == tuple(release.cliques)
    first = previous if same else solve(release, release.cliques, dom, final=True)
    steps = refine_steps(first)
    step(f"refining the model ({steps} mirror-descent steps)")
    model, refined = refine_noise_weighted(first, release, steps)
    fit = Fit(model=model, info={"budget": release.budget})
    return _floored(fit, release), refined, time.process_time() - start


def _floored(fit, release):
    """``fit`` with no cell at zero from noise (:func:`~pgm_dp.workload_check.floored_model`)
    where the release has a multi-way table (else the model is the independent one)."""
    from .workload_check import floored_model

    if not any(len(c) > 1 for c in release.cliques):
        return fit
    return replace(fit, model=floored_model(fit.model, release))


def _amount(b: Budget | None) -> float:
    """``b``'s amount in its own notion (``0`` for nothing spent)."""
    return 0.0 if b is None else b.amount


def _one_way_only(plan, measured, rest, notion):
    """AIM's result when it cannot run: the one-way tables paid for by the preparation."""
    from .select import AIMResult, AIMRound, merged_release

    one = plan.one_way
    release = merged_release(
        measured,
        budget=one.budget,
        mechanism=one.mechanism,
        sensitivity=plan.max_records_per_person,
    )
    log = (AIMRound(0, tuple(dict.fromkeys(measured.cliques)), 0.0, None, 0.0, 0.0, 0.0),)
    return AIMResult((), release, log, None, rest, notion, rest.amount, measured)


def _aim(codes, plan, rest, notion, options, gen, acc, progress):
    from .select import NaiveMLEEstimator, aim, candidate_weights, workload_cliques

    asked, size, rounds, estimator = options
    chosen = default_workload(plan.domain, notion) if asked is None else asked
    if estimator is None:  # AIM's fits to 1e-3: the model returned is the learner's
        estimator = NaiveMLEEstimator(
            tol=LOOP_TOL, loop_tol=LOOP_TOL, max_cells_iters=LOOP_CELLS_ITERS
        )
    dom = plan.domain
    measured = one_way_measurements(plan) if plan.one_way is not None else None
    ok, workload, notes = usable_workload(dom, chosen)
    if asked is None and workload == "3way":
        notes.append(
            "AIM's workload: every triple (pure epsilon's default where triples are "
            "small: pgm_dp.workflow.default_workload)"
        )
    if not ok and measured:
        return _one_way_only(plan, measured, rest, notion), notes, workload
    if rounds is None:
        n_hat = plan.one_way.total if plan.one_way is not None else 0.0
        cliques = workload_cliques(dom, workload)
        cells, m = [dom.size(c) for c, _ in cliques], len(candidate_weights(cliques))
        amount, k = rest.amount, plan.max_records_per_person
        rounds = (
            aim_rounds(n_hat, cells, notion, amount, len(dom), k, candidates=m)
            if n_hat
            else most_rounds(notion, len(dom), m)
        )
    result = aim(
        codes,
        dom,
        rest,
        workload,
        rng=gen,
        accountant=acc,
        max_model_size=size,
        max_rounds=rounds,
        measured=measured,
        progress=progress,
        estimator=estimator,
        max_records_per_person=plan.max_records_per_person,
    )
    return result, notes, workload


def _mst(codes, dom, eps, fraction, gen, acc, k):
    from .models import MarkovRandomField
    from .privacy import release_marginals
    from .select import select_cliques, with_one_way

    sel = select_cliques(
        codes, PureDP(eps * fraction), dom, rng=gen, accountant=acc, max_records_per_person=k
    )
    rel = release_marginals(
        codes,
        MarkovRandomField(dom, sel.cliques),
        budget=PureDP(eps * (1 - fraction)),
        mechanism="discrete_laplace",
        rng=gen,
        accountant=acc,
        what="mst: measure",
        max_records_per_person=k,
    )
    return sel, with_one_way(sel, rel)
