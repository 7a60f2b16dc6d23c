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

Budget split (data-independent, decided before anything is read):

* **One-way tables: a third of the budget** (``ONE_WAY_SHARE``), MST's rule (McKenna,
  Miklau & Sheldon 2021, Alg. 1 and private-pgm ``mechanisms/mst.py``: ``ρ/3`` measures
  the one-way marginals, which also decide the compression), **and at least**
  ``ONE_WAY_EPSILON`` **of a pure ε, up to half of it** (:func:`one_way_share`): at a
  small ε a third leaves the one-way tables so noisy that the compression merges states
  that carry real mass (expanded back evenly) and the model's one-way marginals are worse
  than the private independent model's. **Under zCDP** (``--delta``) the tables compose
  as squares and AIM itself measures the one-way tables at its rounds' noise (about 6 % of
  ``ρ`` with ``16 d`` rounds): there they get ``ZCDP_ONE_WAY_SHARE`` (0.15) of ``ρ``, at
  least ``ONE_WAY_RHO`` up to a third. A smaller pure share would compress columns with
  many states too coarsely. The constants are our choice, set from the real tables of
  ``benchmarks/bench_realdata.py`` (its README has the measurements), not derived. When
  some numeric column needs private quantiles, ``prepare_plan``'s ``quantile_share``
  (half) of that share pays for them.
  The share depends on the budget only, never on the data, and is never near zero.
* **AIM's rounds from N, the domain and ε.** With the one-way tables released, ``N`` is
  estimated from them (post-processing, :attr:`~pgm_dp.privacy.NoisyMarginals.total`), and
  AIM plans ``T`` rounds (:func:`aim_rounds`): as many as keep the first rounds' noise on
  a typical workload marginal (median cells ``n``) below ``TARGET_TVD`` in total
  variation, ``n · E|noise| / (2 N̂) <= TARGET_TVD``, at least one per variable (a
  spanning tree needs ``d - 1`` pairs) and at most AIM's default (``16 d`` for zCDP,
  ``2 d`` pure). Few records or a small ε give fewer, less noisy rounds; AIM's annealing
  (its Sec. 4) then adapts within them.

Budgets: ``PureDP(ε)`` runs AIM's pure variant (discrete Laplace); ``ApproxDP(ε, δ)``
runs everything in zCDP at the largest ``ρ`` whose conversion fits (discrete Gaussian
noise, :func:`pgm_dp.privacy.zcdp_rho_within`), its accountant holding that ``ZCDP(ρ)``
(the report gives both); ``ZCDP(ρ)`` as is.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from .errors import PrivacyParameterError
from .privacy import ZCDP, Accountant, NoisyMarginals, PureDP
from .privacy.budget import Budget, budget_of, require_budget
from .rng import RngLike, as_generator
from .select.plan import TARGET_TVD, aim_rounds, default_workload
from .synth import _decode_full, expand_model, full_codes, sample_fit

__all__ = [
    "TableFit",
    "fit_table",
    "sample_fit",
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
]

#: Share of the budget for the one-way tables (and private quantiles): MST's third, at least.
ONE_WAY_SHARE = 1 / 3
#: Share of a zCDP budget (or ``(ε, δ)``, ``δ > 0``) for the one-way tables, at least.
ZCDP_ONE_WAY_SHARE = 0.15
#: Pure ε that the one-way tables get at least, within :data:`MAX_ONE_WAY_SHARE` of it.
ONE_WAY_EPSILON = 0.15
#: Largest share of a pure ε that :func:`one_way_share` gives the one-way tables.
MAX_ONE_WAY_SHARE = 1 / 2
#: ``ρ`` that :func:`one_way_share` gives the one-way tables at least, within a third.
ONE_WAY_RHO = 5e-4
#: Stopping tolerance of AIM's in-loop naive MLE (the largest marginal mismatch): on Adult
#: at ε = 1 it selected the same marginals as AIM's default 1e-5 in a third of the time.
LOOP_TOL = 1e-3
#: Mirror-descent steps refining the naive MLE of the measurements (``select``'s).
REFINE_ITERS = 1000
#: The selection mechanisms of :func:`fit_table`.
SELECTIONS = ("aim", "mst")


@dataclass(frozen=True)
class TableFit:
    """What :func:`fit_table` returns: ``fit`` (model on ``plan.full_domain``, rare states
    expanded, :func:`expand_model`; ``info`` holds the
    ``budget`` spent, the ``report`` and the ``preparation`` as JSON), the ``plan``, the
    ``release`` of every table the fit used, the ``report`` (dict) and the ``selection``
    result (:class:`~pgm_dp.select.AIMResult` or MST's
    :class:`~pgm_dp.select.Selection`)."""

    fit: Any
    plan: Any
    release: NoisyMarginals
    report: dict
    selection: Any

    def sample(self, n: int, rng: RngLike = None):
        """``n`` synthetic records in the user's own values (``"<rare>"`` expanded)."""
        return _decode_full(self.plan, self.fit.model.sample(n, rng=rng))


def split_budget(budget: Budget, share: float) -> tuple[str, float, Budget, Budget]:
    """``(notion, amount, first, rest)``: the budget in AIM's unit (``"pure"`` ε or
    ``"zcdp"`` ρ; ``(ε, δ)`` converted) cut into ``share`` and ``1 - share``."""
    if not 0 < share < 1:
        raise PrivacyParameterError(f"the one-way share must be in (0, 1), got {share!r}")
    require_budget(budget, Budget, f"budget must be PureDP, ApproxDP or ZCDP, got {budget!r}")
    b = budget.native()
    return b.notion, b.amount, b.split(share), b.split(1 - share)


def one_way_share(budget: Budget) -> float:
    """The default share of ``budget`` for the one-way tables (module docstring): MST's
    third, raised under pure DP (``PureDP``, or ``ApproxDP`` with ``δ = 0``) to
    ``ONE_WAY_EPSILON / ε`` when that is more, and to at most :data:`MAX_ONE_WAY_SHARE`.
    A zCDP budget (or ``(ε, δ)`` with ``δ > 0``, as the ``ρ`` it converts to) gives them
    :data:`ZCDP_ONE_WAY_SHARE`, raised to ``ONE_WAY_RHO / ρ`` up to a third (module
    docstring). Depends on the budget only, never on the data.

    >>> one_way_share(PureDP(1.0)), one_way_share(PureDP(0.3)), one_way_share(PureDP(0.1))
    (0.3333333333333333, 0.5, 0.5)
    >>> from pgm_dp.privacy import ZCDP
    >>> one_way_share(ZCDP(0.1)), one_way_share(ZCDP(0.002)), one_way_share(ZCDP(0.001))
    (0.15, 0.25, 0.3333333333333333)
    """
    if not getattr(budget, "is_pure", False):
        rho = budget.native().amount
        return min(ONE_WAY_SHARE, max(ZCDP_ONE_WAY_SHARE, ONE_WAY_RHO / rho))
    return min(MAX_ONE_WAY_SHARE, max(ONE_WAY_SHARE, ONE_WAY_EPSILON / budget.amount))


def one_way_measurements(plan) -> NoisyMarginals:
    """The preparation's noisy one-way tables on its compressed domain as AIM's first
    measurements (round 0), with the one-way release's budget, mechanism and total. A
    ``"<rare>"`` cell holds the sum of its merged noisy counts; its larger variance is not
    kept (a table carries one noise model), which the estimators only use to weigh repeated
    measurements."""
    one = plan.one_way
    tables = plan.compressed_measurements()
    cliques = [(name,) for name in tables]
    return replace(
        one,
        domain=plan.domain,
        cliques=cliques,
        noisy=[counts for counts, _ in tables.values()],
        noise=[one.noise[c] for c in cliques],
    )


def _clique_of(item) -> tuple:
    """The column names of one workload entry (a clique, a name, or ``(clique, weight)``)."""
    weighted = isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], tuple | list)
    raw = item[0] if weighted else item
    return (raw,) if isinstance(raw, str) or not hasattr(raw, "__iter__") else tuple(raw)


def _declared_columns(df, spec) -> list:
    """The columns ``spec`` does not mark ``"drop"`` (``drop_identifiers`` may drop more)."""
    items = spec.items() if isinstance(spec, Mapping) else ()
    drop = {c for c, v in items if isinstance(v, str) and v == "drop"}
    return [c for c in getattr(df, "columns", ()) if c not in drop]


def _check_aim_options(df, spec, options, compress=None) -> None:
    """AIM's options ``(workload, max_model_size, max_rounds, estimator)``, checked before the
    preparation spends anything (AIM checks them again on the prepared domain): everything
    the declaration decides."""
    workload, max_model_size, max_rounds, estimator = options
    if estimator is not None and not callable(estimator):
        raise PrivacyParameterError(f"estimator must be callable, got {estimator!r}")
    size = max_model_size
    if isinstance(size, bool) or not isinstance(size, int | float) or not 0 < size < math.inf:
        raise PrivacyParameterError(f"max_model_size must be a positive number, got {size!r}")
    if max_rounds is not None and (
        isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1
    ):
        raise PrivacyParameterError(f"max_rounds must be a positive integer, got {max_rounds!r}")
    kept = _declared_columns(df, spec)
    if workload is None or isinstance(workload, str):
        if workload not in (None, "2way", "3way"):
            raise PrivacyParameterError(f"workload must be '2way', '3way' or cliques: {workload!r}")
        k = 3 if workload == "3way" else 2
        if len(kept) < k:
            raise PrivacyParameterError(
                f"a {workload or '2way'} workload needs {k} columns or more; the declaration "
                f"keeps {len(kept)}"
            )
        used = set(kept)
    else:
        items = workload.keys() if isinstance(workload, Mapping) else workload
        used = {v for item in items for v in _clique_of(item)}
        unknown = sorted(map(str, used - set(kept)))
        if unknown:
            raise PrivacyParameterError(f"the workload names columns not in the data: {unknown}")
    if compress is False and max_rounds is not None and max_rounds < len(used):
        raise PrivacyParameterError(  # without compression AIM measures every one-way first
            f"max_rounds={max_rounds} is below the {len(used)} one-way marginals measured first"
        )


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
            self._outer.charge(self.total, what="fit_table: the whole run, planned in zCDP",
                               mechanism="zCDP composition of the steps", scale=None)  # fmt: skip
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


def _rest(charges, notion: str, amount: float, held: float = 0.0) -> tuple[Budget, Budget | None]:
    """What is left of ``amount`` after ``charges`` and the check's share ``held`` of it,
    rounded down (the exact sum <= budget), and the check's budget (``None``: no check)."""
    from .select.schedule import float_below

    parts = [c.cost.to_zcdp().rho if c.cost.notion != notion else c.cost.amount for c in charges]
    check = float_below(Fraction(amount) * Fraction(held))
    left = float_below(Fraction(amount) - sum(map(Fraction, parts), Fraction(check)))
    return budget_of(notion, left), budget_of(notion, check) if check > 0 else None


def _selection_budget(charges, notion: str, amount: float, held: float, plan):
    """``(rest, check, notes)`` (:func:`_rest`); a check not worth running, judged from the
    released one-way tables (else later, by ``fit_check``), gives its share to selection."""
    from .workload_check import check_skipped

    rest, check = _rest(charges, notion, amount, held)
    skipped = plan.one_way is not None and check_skipped(check, plan.one_way.total)
    if skipped:
        rest, check = _rest(charges, notion, amount, 0.0)
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
    tables are fitted, with a note in the report. ``rng``: ``None`` for a real release
    (seeds: tests).
    """
    from .fit_report import build_report, warn_workload_check
    from .prepare import prepare_plan
    from .workload_check import apply_check, apply_misfit_check, fit_check, floored_model
    from .workload_check import check_share as _held_share

    held = _held_share(check_share)
    spec_l, (notion, amount, first, rest), acc = _check(
        budget, selection, learner, prepare_share, mst_fraction, accountant, held
    )
    options = (workload, max_model_size, max_rounds, estimator)
    if selection == "aim":
        _check_aim_options(df, spec, options, prepare_options.get("compress"))
    gen = as_generator(rng)
    before = len(acc.charges)
    plan = prepare_plan(df, spec, budget=first, rng=gen, accountant=acc, **prepare_options)
    rest, held_budget, notes = _selection_budget(acc.charges[before:], notion, amount, held, plan)
    codes = plan.encode(df)
    dom = plan.domain
    if selection == "aim":
        chosen, aim_notes, workload = _aim(codes, plan, rest, notion, options, gen, acc, progress)
        notes += aim_notes
        release = chosen.release
    else:
        chosen, release = _mst(codes, dom, rest.epsilon, mst_fraction, gen, acc)
    start = time.process_time()
    fit, refined = _fit_release(spec_l, learner, release, dom, getattr(chosen, "model", None))
    if any(len(c) > 1 for c in release.cliques):  # no cell at zero from noise
        fit = replace(fit, model=floored_model(fit.model, release))
    seconds = time.process_time() - start
    check = fit_check(codes, dom, workload, fit.model, release, held_budget, gen, acc)
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
    fit = replace(fit, model=expand_model(fit.model, plan), info=info)
    return TableFit(fit, plan, release, report, chosen)


def _fit_release(spec, learner, release, dom, previous=None):
    """The learner's fit of every table measured; the naive MLE is then refined by
    Private-PGM's noise-weighted mirror descent (``REFINE_ITERS`` steps), which weighs each
    table by its noise's standard deviation: AIM's own estimate. That loss is the Gaussian
    likelihood; under Laplace noise (pure ε) we use it as well (our choice: the weights
    matter more than the loss's shape, and on the real tables it lowered the 2-way TVD).
    The naive MLE is solved by the NumPy solver AIM's rounds use
    (:class:`~pgm_dp.select.NaiveMLEEstimator`: the learner's objective, ``l2`` and
    ``tol``): nothing is compiled, where a compiled solver's compile time grows with the
    junction tree (minutes on wide numeric tables under zCDP). Where AIM's last estimate
    of the same tables (``previous``, the naive MLE to ``LOOP_TOL``) is given, the
    refinement starts from it and the naive MLE is not solved again.
    Returns the fit and the refinement's info (``None`` when not refined)."""
    from .learners.base import Fit
    from .models import MarkovRandomField
    from .select.estimators import NaiveMLEEstimator, refine_noise_weighted

    if learner != "naive":
        return spec.make().fit(release, MarkovRandomField(dom, release.cliques)), None
    naive = spec.make()
    solve = NaiveMLEEstimator(l2=naive.l2, tol=naive.tol, max_iters=naive.max_iters)
    same = getattr(previous, "cliques", None) == tuple(release.cliques)
    start = previous if same else solve(release, release.cliques, dom, final=True)
    model, refined = refine_noise_weighted(start, release, REFINE_ITERS)
    return Fit(model=model, info={"budget": release.budget}), refined


def _amount(b: Budget | None) -> float:
    """``b``'s amount in its own notion (``0`` for nothing spent)."""
    return 0.0 if b is None else b.amount


def _usable_workload(dom, workload) -> tuple[bool, Any, list[str]]:
    """``(ok, workload, notes)`` on the prepared domain (``ok``: AIM has something to select),
    for what the declaration could not decide: dropped identifiers, the noisy compression."""
    from .domain import MAX_TABLE_CELLS, check_table_cells
    from .errors import DomainError, ModelTooLargeError
    from .select import workload_cliques
    from .select.workload import candidate_weights

    notes = []
    if workload is not None and not isinstance(workload, str):
        items = list(workload.items()) if isinstance(workload, Mapping) else list(workload)
        names = set(dom.attributes)
        key = (lambda i: i[0]) if isinstance(workload, Mapping) else (lambda i: i)
        keep = [i for i in items if set(_clique_of(key(i))) <= names]
        if len(keep) < len(items):
            notes.append(f"{len(items) - len(keep)} workload marginal(s) left out: dropped")
        workload = dict(keep) if isinstance(workload, Mapping) else keep
    try:
        cliques = workload_cliques(dom, workload)
        check_table_cells(dom, list(candidate_weights(cliques)), MAX_TABLE_CELLS)
    except (DomainError, ModelTooLargeError) as err:
        notes.append(f"AIM did not run ({err}): the one-way tables are fitted (the "
                     "independent model); the rest of the budget is not spent")  # fmt: skip
        return False, workload, notes
    return True, workload, notes


def _one_way_only(plan, measured, rest, notion):
    """AIM's result when it cannot run: the one-way tables paid for by the preparation."""
    from .select import AIMResult, AIMRound, merged_release

    one = plan.one_way
    release = merged_release(measured, budget=one.budget, mechanism=one.mechanism)
    log = (AIMRound(0, tuple(dict.fromkeys(measured.cliques)), 0.0, None, 0.0, 0.0, 0.0),)
    return AIMResult((), release, log, None, rest, notion, rest.amount, measured)


def _aim(codes, plan, rest, notion, options, gen, acc, progress):
    from .select import NaiveMLEEstimator, aim, workload_cliques

    asked, size, rounds, estimator = options
    chosen = default_workload(plan.domain, notion) if asked is None else asked
    if estimator is None:  # AIM's fits to 1e-3: the model returned is the learner's
        estimator = NaiveMLEEstimator(tol=LOOP_TOL, loop_tol=LOOP_TOL)
    dom = plan.domain
    measured = one_way_measurements(plan) if plan.one_way is not None else None
    ok, workload, notes = _usable_workload(dom, chosen)
    if asked is None and workload == "3way":
        notes.append("AIM's workload: every triple (pure epsilon's default where triples are "
                     "small: pgm_dp.workflow.default_workload)")  # fmt: skip
    if not ok and measured:
        return _one_way_only(plan, measured, rest, notion), notes, workload
    if rounds is None:
        n_hat = plan.one_way.total if plan.one_way is not None else 0.0
        cells = [dom.size(c) for c, _ in workload_cliques(dom, workload)]
        amount = rest.amount
        rounds = aim_rounds(n_hat, cells, notion, amount, len(dom)) if n_hat else None
    result = aim(codes, dom, rest, workload, rng=gen, accountant=acc, max_model_size=size,
                 max_rounds=rounds, measured=measured, progress=progress,
                 estimator=estimator)  # fmt: skip
    return result, notes, workload


def _mst(codes, dom, eps, fraction, gen, acc):
    from .models import MarkovRandomField
    from .privacy import release_marginals
    from .select import select_cliques, with_one_way

    sel = select_cliques(codes, PureDP(eps * fraction), dom, rng=gen, accountant=acc)
    rel = release_marginals(
        codes, MarkovRandomField(dom, sel.cliques), budget=PureDP(eps * (1 - fraction)),
        mechanism="discrete_laplace", rng=gen, accountant=acc, what="mst: measure",
    )  # fmt: skip
    return sel, with_one_way(sel, rel)
